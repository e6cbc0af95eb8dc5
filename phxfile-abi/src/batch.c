/* The batch API over libphoenix's asynchronous batches. Each cuFileBatchIOSubmit
 * becomes one libphoenix batch with a completion callback; the callback turns
 * its requests into events that cuFileBatchIOGetStatus hands out, each once.
 * A handle holds at most the nr it was set up with of submitted requests whose
 * events have not been collected yet. */
#include "shim.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 100 years in seconds: more than any monotonic clock has counted */
#define CF_FOREVER_S (100L * 365 * 24 * 3600)

typedef struct cf_batch cf_batch_t;

typedef struct cf_sub {
    cf_batch_t *owner;
    phxfs_batch_t *pb;
    unsigned n;
    phxfs_io_req_t *reqs;
    uint8_t *ops;
    void **cookies;
    cf_target_t *targets;
    struct cf_sub *next;
} cf_sub_t;

struct cf_batch {
    unsigned cap;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned outstanding;      /* submitted, events not yet collected */
    CUfileIOEvents_t *ready;   /* ring of cap events */
    unsigned head, nready;
    cf_sub_t *subs;            /* in flight */
};

/* Handles are slot numbers with a generation, as file handles are (handles.c), not the
 * batch's address: malloc hands a freed batch's memory to the next SetUp, so an address
 * handle destroyed and used again by a buggy client would silently drive someone else's new
 * batch. A slot's generation goes up each time it is handed out, so a stale handle never
 * equals a live one and is refused (CU_FILE_INVALID_VALUE, as a made-up one) without any
 * memory being read through it. */
#define BATCH_SLOT_BITS 20
#define BATCH_MAX_SLOTS ((1u << BATCH_SLOT_BITS) - 1)
typedef struct {
    cf_batch_t *b;  /* NULL: free */
    uint64_t gen;
} batch_slot_t;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static batch_slot_t *slots;
static size_t nslots, slots_cap;   /* [0, nslots) handed out at least once */
static uint32_t *free_slots;
static size_t nfree, free_cap;

static CUfileBatchHandle_t batch_encode(uint32_t idx, uint64_t gen)
{
    return (CUfileBatchHandle_t)(uintptr_t)((gen << BATCH_SLOT_BITS) | (idx + 1));
}

/* The slot a handle names, if that handle is live: its index, or -1 (made up: out of range;
 * stale: free or a newer generation) with *stale saying which. Under live_lock. */
static long batch_slot(CUfileBatchHandle_t h, int *stale)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    uint64_t idx = v & BATCH_MAX_SLOTS;
    *stale = 0;
    if (idx == 0 || idx > nslots) return -1;
    batch_slot_t *sl = &slots[idx - 1];
    if (!sl->b || sl->gen != v >> BATCH_SLOT_BITS) {
        *stale = (v >> BATCH_SLOT_BITS) <= sl->gen; /* it was handed out once */
        return -1;
    }
    return (long)(idx - 1);
}

/* A new handle for b, or NULL when out of memory or slots. */
static CUfileBatchHandle_t live_add(cf_batch_t *b)
{
    pthread_mutex_lock(&live_lock);
    uint32_t idx;
    if (nfree) {
        idx = free_slots[--nfree];
    } else {
        /* the free list must be able to take every slot back, so a Destroy never fails */
        if (nslots == BATCH_MAX_SLOTS) { pthread_mutex_unlock(&live_lock); return NULL; }
        if (nslots == slots_cap) {
            size_t c = slots_cap ? slots_cap * 2 : 16;
            batch_slot_t *v = realloc(slots, c * sizeof *v);
            if (!v) { pthread_mutex_unlock(&live_lock); return NULL; }
            slots = v;
            uint32_t *f = realloc(free_slots, c * sizeof *f);
            if (!f) { pthread_mutex_unlock(&live_lock); return NULL; }
            free_slots = f;
            slots_cap = free_cap = c;
        }
        idx = (uint32_t)nslots;
        slots[nslots++] = (batch_slot_t){NULL, 0};
    }
    batch_slot_t *sl = &slots[idx];
    sl->gen++;
    sl->b = b;
    CUfileBatchHandle_t h = batch_encode(idx, sl->gen);
    pthread_mutex_unlock(&live_lock);
    return h;
}

/* The batch behind a live handle (remove: and the handle dies), or NULL; *stale as above. */
static cf_batch_t *live_get(CUfileBatchHandle_t h, int remove, int *stale)
{
    int st = 0;
    pthread_mutex_lock(&live_lock);
    long i = batch_slot(h, &st);
    cf_batch_t *b = i >= 0 ? slots[i].b : NULL;
    if (b && remove) {
        slots[i].b = NULL;
        free_slots[nfree++] = (uint32_t)i; /* room for every slot: see live_add */
    }
    pthread_mutex_unlock(&live_lock);
    if (stale) *stale = st;
    return b;
}

static void sub_free(cf_sub_t *s)
{
    for (unsigned i = 0; s->targets && i < s->n; i++) cf_target_put(&s->targets[i]);
    free(s->reqs);
    free(s->ops);
    free(s->cookies);
    free(s->targets);
    free(s);
}

static void on_done(phxfs_batch_t *pb, int result, void *arg)
{
    (void)result;
    cf_sub_t *s = arg;
    cf_batch_t *b = s->owner;
    pthread_mutex_lock(&b->lock);
    for (unsigned i = 0; i < s->n; i++) {
        ssize_t r = s->reqs[i].result;
        CUfileIOEvents_t *e = &b->ready[(b->head + b->nready++) % b->cap];
        e->cookie = s->cookies[i];
        e->status = r >= 0 ? CUFILE_COMPLETE : r == -ECANCELED ? CUFILE_CANCELED : CUFILE_FAILED;
        e->ret = r == -ECANCELED ? 0 : (size_t)r;
    }
    cf_sub_t **pp = &b->subs;
    while (*pp != s) pp = &(*pp)->next;
    *pp = s->next;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    /* b may be destroyed from here on: only s and pb remain ours */
    phxfs_batch_destroy(pb);
    sub_free(s);
}

CF_API CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr)
{
    if (!batch_idp || nr == 0 || nr > cf_max_batch()) return cf_status(CU_FILE_INVALID_VALUE);
    int rc = cf_ensure_open();
    if (rc) return cf_status((CUfileOpError)rc);
    cf_batch_t *b = calloc(1, sizeof *b);
    CUfileIOEvents_t *ready = calloc(nr, sizeof *ready);
    if (!b || !ready) {
        free(b);
        free(ready);
        return cf_status(CU_FILE_NOMEM_ERROR);
    }
    b->ready = ready;
    b->cap = nr;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    /* published last: another thread may use the handle as soon as it exists */
    CUfileBatchHandle_t h = live_add(b);
    if (!h) {
        pthread_mutex_destroy(&b->lock);
        pthread_cond_destroy(&b->cond);
        free(ready);
        free(b);
        return cf_status(CU_FILE_NOMEM_ERROR);
    }
    *batch_idp = h;
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr, CUfileIOParams_t *iocbp, unsigned int flags)
{
    (void)flags; /* reserved by cuFile */
    cf_batch_t *b = live_get(batch_idp, 0, NULL);
    if (!b || (nr && !iocbp)) return cf_status(CU_FILE_INVALID_VALUE);
    if (nr == 0) return cf_status(CU_FILE_SUCCESS);
    int rc = cf_ensure_open();
    if (rc) return cf_status((CUfileOpError)rc);
    cf_sub_t *s = calloc(1, sizeof *s);
    if (s) {
        s->reqs = calloc(nr, sizeof *s->reqs);
        s->ops = calloc(nr, 1);
        s->cookies = calloc(nr, sizeof *s->cookies);
        s->targets = calloc(nr, sizeof *s->targets);
    }
    if (!s || !s->reqs || !s->ops || !s->cookies || !s->targets) {
        if (s) sub_free(s);
        return cf_status(CU_FILE_NOMEM_ERROR);
    }
    s->owner = b;
    for (unsigned i = 0; i < nr && !rc; i++) {
        CUfileIOParams_t *p = &iocbp[i];
        int fd;
        if (p->mode != CUFILE_BATCH || (p->opcode != CUFILE_READ && p->opcode != CUFILE_WRITE) || !p->u.batch.devPtr_base ||
            p->u.batch.file_offset < 0 || p->u.batch.devPtr_offset < 0 || p->u.batch.size > (size_t)SSIZE_MAX ||
            cf_range_bad(p->u.batch.devPtr_base, p->u.batch.file_offset, p->u.batch.devPtr_offset, p->u.batch.size)) {
            cf_log(CF_LOG_ERROR, "BatchIOSubmit: entry %u has an invalid mode, opcode, buffer, offset or size", i);
            rc = CU_FILE_INVALID_VALUE;
        } else if ((rc = cf_handle_fd(p->fh, &fd)) == 0 &&
                   (rc = cf_target_get(p->u.batch.devPtr_base, p->u.batch.devPtr_offset, p->u.batch.size, &s->targets[i])) == 0) {
            s->n = i + 1; /* targets [0, n) are to be put back */
            cf_target_t *t = &s->targets[i];
            if (t->bounce) {
                cf_log(CF_LOG_ERROR, "BatchIOSubmit: entry %u: unregistered device range overlaps a registration; register the buffer", i);
                rc = CU_FILE_MEMORY_NOT_REGISTERED;
            }
            s->reqs[i] = (phxfs_io_req_t){fd, t->dev, t->buf, t->off, p->u.batch.size, p->u.batch.file_offset, 0};
            s->ops[i] = p->opcode == CUFILE_WRITE ? PHXFS_OP_WRITE : PHXFS_OP_READ;
            s->cookies[i] = p->cookie;
        }
    }
    if (rc) {
        sub_free(s);
        return cf_status((CUfileOpError)rc);
    }
    s->n = nr;
    pthread_mutex_lock(&b->lock);
    if (b->outstanding + nr > b->cap) {
        pthread_mutex_unlock(&b->lock);
        sub_free(s);
        return cf_status(CU_FILE_BATCH_FULL);
    }
    /* under the lock: the callback (on libphoenix's completion thread) waits for it, so it
     * finds s in the list, and a cancel never sees a half-submitted s */
    s->pb = phxfs_batch_submit(s->reqs, s->ops, (int)nr, on_done, s);
    if (!s->pb) {
        pthread_mutex_unlock(&b->lock);
        cf_log(CF_LOG_ERROR, "BatchIOSubmit: %s", phxfs_last_error());
        sub_free(s);
        return cf_status(CU_FILE_BATCH_SUBMIT_FAILED);
    }
    s->next = b->subs;
    b->subs = s;
    b->outstanding += nr;
    pthread_mutex_unlock(&b->lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr, unsigned *nr,
                                            CUfileIOEvents_t *iocbp, struct timespec *timeout)
{
    if (atomic_load(&cf_forked)) return cf_status((CUfileOpError)cf_fork_refused());
    cf_batch_t *b = live_get(batch_idp, 0, NULL);
    if (!b || !nr || (*nr && !iocbp) || min_nr > *nr) return cf_status(CU_FILE_INVALID_VALUE);
    if (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L))
        return cf_status(CU_FILE_INVALID_VALUE);
    struct timespec until;
    /* a timeout beyond any uptime ({LONG_MAX, 0} is a common "forever") is no timeout: the
     * deadline would overflow and end the wait at once */
    if (timeout && timeout->tv_sec >= CF_FOREVER_S) timeout = NULL;
    if (timeout) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout->tv_sec;
        until.tv_nsec += timeout->tv_nsec;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    }
    pthread_mutex_lock(&b->lock);
    /* more than is outstanding can never come */
    unsigned want = min_nr < b->outstanding ? min_nr : b->outstanding;
    while (b->nready < want) {
        if (!timeout) {
            pthread_cond_wait(&b->cond, &b->lock);
            continue;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec)) break;
        /* the condition variable waits on CLOCK_REALTIME: wait in slices of at most 10 ms of
         * the monotonic budget so a clock step cannot stretch the timeout */
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        long slice = 10000000L;
        if (until.tv_sec - now.tv_sec < 1) {
            long left_ns = (until.tv_sec - now.tv_sec) * 1000000000L + (until.tv_nsec - now.tv_nsec);
            if (left_ns < slice) slice = left_ns;
        }
        rt.tv_nsec += slice;
        if (rt.tv_nsec >= 1000000000L) { rt.tv_sec++; rt.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&b->cond, &b->lock, &rt);
    }
    unsigned got = b->nready < *nr ? b->nready : *nr;
    for (unsigned i = 0; i < got; i++) {
        iocbp[i] = b->ready[b->head];
        b->head = (b->head + 1) % b->cap;
    }
    b->nready -= got;
    b->outstanding -= got;
    pthread_mutex_unlock(&b->lock);
    *nr = got;
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp)
{
    if (atomic_load(&cf_forked)) return cf_status((CUfileOpError)cf_fork_refused());
    cf_batch_t *b = live_get(batch_idp, 0, NULL);
    if (!b) return cf_status(CU_FILE_INVALID_VALUE);
    pthread_mutex_lock(&b->lock);
    for (cf_sub_t *s = b->subs; s; s = s->next) phxfs_batch_cancel(s->pb);
    pthread_mutex_unlock(&b->lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp)
{
    /* a fork child would wait for the parent's completions: the handle is left to the process's end */
    if (atomic_load(&cf_forked)) return;
    int stale = 0;
    cf_batch_t *b = live_get(batch_idp, 1, &stale);
    if (!b) {
        /* a second Destroy is a client bug that used to free the batch twice: said at ERROR
         * level, so it shows without configuration */
        if (stale) cf_log(CF_LOG_ERROR, "BatchIODestroy: %p was destroyed already (stale handle); nothing done", batch_idp);
        else cf_log(CF_LOG_WARN, "BatchIODestroy: %p is not a batch handle", batch_idp);
        return;
    }
    pthread_mutex_lock(&b->lock);
    for (cf_sub_t *s = b->subs; s; s = s->next) phxfs_batch_cancel(s->pb);
    while (b->subs) pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    free(b->ready);
    free(b);
}
