/* Batches: requests validated and resolved, split into tasks at file offsets
 * that are multiples of the chunk (host) or slot (bounce) size, so only a
 * request's first and last task can be unaligned; then queued for the
 * workers, or run on the caller's thread when small and host-only. The last
 * task to finish completes the batch: results, releases, waiters, callback. */
#include "align.h"
#include "device.h"
#include "engine.h"
#include "error.h"
#include "lifecycle.h"
#include "params.h"
#include "phoenix.h"
#include "pool.h"
#include "registry.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int aligned3(uintptr_t a, uint64_t b, uint64_t c) { return ((a | b | c) & (PHX_ALIGN - 1)) == 0; }

void phx_task_done(phx_task_t *t, ssize_t res)
{
    phx_req_state_t *rs = t->rs;
    if (res < 0) {
        int zero = 0;
        atomic_compare_exchange_strong(&rs->err, &zero, (int)res);
    } else if ((size_t)res < t->len) {
        int64_t pos = (int64_t)rs->req->f_offset + (int64_t)t->rel + res;
        int64_t cur = atomic_load(&rs->end);
        while (pos < cur && !atomic_compare_exchange_weak(&rs->end, &cur, pos)) {}
    }
    phx_batch_state_t *b = t->b;
    if (res > 0) atomic_fetch_add_explicit(&b->bytes_done, res, memory_order_relaxed);
    if (atomic_fetch_sub(&b->remaining, 1) == 1) phx_batch_finish(b);
}

static int prepare_request(phx_req_state_t *rs, phxfs_io_req_t *r, int is_write)
{
    rs->req = r;
    rs->is_write = is_write;
    rs->alt_fd = -1;
    atomic_init(&rs->err, 0);
    atomic_init(&rs->end, 0);
    /* the buffer's end too: a late-bound buf_offset near INT64_MAX (cuFileReadAsync's cell, read
     * when the stream gets there) pointed the transfer at base + offset wrapped around, and its
     * size then sized the task list (security-1's fuzz test) */
    if (r->nbytes > (size_t)SSIZE_MAX || r->f_offset < 0 || r->buf_offset < 0 ||
        (uint64_t)r->f_offset + r->nbytes > (uint64_t)INT64_MAX || (uint64_t)r->buf_offset + r->nbytes > (uint64_t)INT64_MAX ||
        (uintptr_t)r->buf + (uint64_t)r->buf_offset + r->nbytes < (uintptr_t)r->buf)
        return phx_fail(EINVAL, "request: nbytes %zu, file offset %lld or buffer offset %lld out of range",
                        r->nbytes, (long long)r->f_offset, (long long)r->buf_offset);
    /* only once the range is known to fit (it overflowed for a file end past INT64_MAX) */
    atomic_store_explicit(&rs->end, (int64_t)r->f_offset + (int64_t)r->nbytes, memory_order_relaxed);
    int fl = fcntl(r->fd, F_GETFL);
    if (fl < 0) return phx_fail(EBADF, "request: fd %d is not an open file", r->fd);
    int acc = fl & O_ACCMODE;
    if ((is_write && acc == O_RDONLY) || (!is_write && acc == O_WRONLY))
        return phx_fail(EBADF, "request: fd %d is not open for %s", r->fd, is_write ? "writing" : "reading");
    rs->direct = (fl & O_DIRECT) != 0;
    if (r->device_id >= 0) {
        int err;
        phx_device_t *d = phx_device_acquire(r->device_id, &err);
        if (!d) return err;
        int rc = phx_registry_resolve(&d->reg, (uintptr_t)r->buf, (uint64_t)r->buf_offset, r->nbytes, 1,
                                      &rs->target, &rs->hold_base);
        if (rc) { phx_device_release(d); return rc; }
        rs->dev = d;
        /* p2p: the registration's target is a phxfs window, the file DMAs straight into it */
        rs->bounce = phx_conn->is_accelerator && d->mode != PHXFS_MODE_P2P;
    } else {
        if (!r->buf) return phx_fail(EFAULT, "request: host buffer is NULL");
        rs->target = (uintptr_t)r->buf + (uintptr_t)r->buf_offset;
    }
    if (is_write && rs->direct) {
        uintptr_t mem = rs->bounce ? 0 : rs->target;
        if (!aligned3(mem, (uint64_t)r->f_offset, r->nbytes)) {
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", r->fd);
            rs->alt_fd = open(path, O_WRONLY | O_CLOEXEC);
            if (rs->alt_fd < 0) return phx_fail(errno, "request: cannot reopen fd %d without O_DIRECT for an unaligned write", r->fd);
        }
    }
    return 0;
}

static void release_request(phx_req_state_t *rs)
{
    if (rs->dev) {
        phx_registry_release(&rs->dev->reg, rs->hold_base);
        phx_device_release(rs->dev);
        rs->dev = NULL;
    }
    if (rs->alt_fd >= 0) close(rs->alt_fd);
    rs->alt_fd = -1;
}

/* Once, whoever gets here first: the finisher (callback batches) or the first waiter. */
static void release_all(phx_batch_state_t *b)
{
    if (atomic_exchange(&b->released, 1)) return;
    for (int i = 0; i < b->n; i++) release_request(&b->rs[i]);
}

static void batch_unref(phx_batch_state_t *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1) return;
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    free(b->tasks);
    free(b->rs);
    free(b);
}

void phx_batch_finish(phx_batch_state_t *b)
{
    atomic_store_explicit(&b->t_finished, phx_now_ns(), memory_order_relaxed);
    int failed = 0, first_i = -1, first_err = 0;
    for (int i = 0; i < b->n; i++) {
        phx_req_state_t *rs = &b->rs[i];
        int e = atomic_load(&rs->err);
        if (e) {
            rs->req->result = e;
            if (!failed++) { first_err = e; first_i = i; }
        } else {
            rs->req->result = (ssize_t)(atomic_load(&rs->end) - (int64_t)rs->req->f_offset);
        }
    }
    /* A handle someone will wait on keeps its registrations and devices until that wait
     * (phoenix.h); a batch with a callback has no such wait, so it lets go now. */
    if (b->cb) release_all(b);
    pthread_mutex_lock(&b->lock);
    if (failed && !b->msg[0]) {
        phxfs_io_req_t *r = b->rs[first_i].req;
        snprintf(b->msg, sizeof b->msg, "%s of %zu bytes at file offset %lld (fd %d, request %d of %d) failed: %s",
                 b->rs[first_i].is_write ? "write" : "read", r->nbytes, (long long)r->f_offset, r->fd, first_i, b->n,
                 strerror(-first_err));
    }
    b->result = failed;
    b->done = 1;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    if (b->cb) b->cb(b, failed, b->cb_arg);
    batch_unref(b);
}

/* Small host-memory batches run on the caller's thread with its own engine:
 * handing 4 KiB reads to a worker costs a wake-up that dwarfs the copy. Only
 * host memory here, so a caller's thread never owns streams, events or pinned
 * memory; small synchronous device transfers have their own path over
 * resources the device shares (xfer_inline.c, tried before a batch is made). */
#define INLINE_MAX_BYTES (256u << 10)
static pthread_key_t inline_key;
static pthread_once_t inline_once = PTHREAD_ONCE_INIT;

static void inline_free(void *p)
{
    phx_host_xfer_free(p);
    free(p);
}

static void inline_key_init(void) { pthread_key_create(&inline_key, inline_free); }

static phx_host_xfer_t *inline_xfer(void)
{
    pthread_once(&inline_once, inline_key_init);
    phx_host_xfer_t *x = pthread_getspecific(inline_key);
    if (x) return x;
    x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->eng = phx_pool_engine() == PHXFS_ENGINE_URING ? phx_engine_uring_create(64) : NULL;
    if (!x->eng) x->eng = phx_engine_sync_create();
    if (!x->eng) { free(x); return NULL; }
    pthread_setspecific(inline_key, x);
    return x;
}

/* Buffered writes to one file serialise on its inode lock (ext4, xfs, tmpfs), so workers
 * taking a write batch's tasks in file order would all queue on the first request's file:
 * 8 files were written at 4.7 GB/s on the H200 host, where 8 threads writing them in
 * parallel reach 28. Writes are dealt round-robin over the requests instead. */
static void interleave_writes(phx_batch_state_t *b, int n)
{
    int writes = 0;
    for (int i = 0; i < n; i++) writes |= b->rs[i].is_write;
    if (!writes || n < 2 || b->ntasks < 2) return;
    phx_task_t *out = malloc(b->ntasks * sizeof *out);
    size_t *at = malloc((size_t)n * 2 * sizeof *at);
    if (!out || !at) { free(out); free(at); return; } /* file order still works */
    /* each request's tasks are contiguous: [at[2i], at[2i+1]) */
    for (int i = 0; i < n; i++) at[2 * i] = at[2 * i + 1] = 0;
    for (size_t t = b->ntasks; t-- > 0;) {
        int i = (int)(b->tasks[t].rs - b->rs);
        if (at[2 * i + 1] == 0) at[2 * i + 1] = t + 1;
        at[2 * i] = t;
    }
    size_t k = 0;
    while (k < b->ntasks)
        for (int i = 0; i < n; i++)
            if (at[2 * i] < at[2 * i + 1]) out[k++] = b->tasks[at[2 * i]++];
    free(b->tasks);
    b->tasks = out;
    free(at);
}

phx_batch_state_t *phx_batch_start(phxfs_io_req_t *reqs, const uint8_t *ops, int n, int is_write, int may_inline,
                                   phx_batch_cb cb, void *cb_arg, int *err)
{
    int rc = phx_lib_init();
    if (rc < 0) { *err = rc; return NULL; }
    if (n < 0 || (n > 0 && !reqs)) { *err = phx_fail(EINVAL, "batch: %d requests at %p", n, (void *)reqs); return NULL; }
    for (int i = 0; ops && i < n; i++)
        if (ops[i] > PHXFS_OP_WRITE) { *err = phx_fail(EINVAL, "batch: request %d has op %d (expected PHXFS_OP_READ or PHXFS_OP_WRITE)", i, ops[i]); return NULL; }
    phx_batch_state_t *b = calloc(1, sizeof *b);
    phx_req_state_t *rs = calloc(n ? (size_t)n : 1, sizeof *rs);
    if (!b || !rs) { free(b); free(rs); *err = phx_fail(ENOMEM, "batch: out of memory"); return NULL; }
    b->n = n;
    b->rs = rs;
    b->cb = cb;
    b->cb_arg = cb_arg;
    atomic_init(&b->refs, 2);
    atomic_init(&b->t_queued, 0);
    atomic_init(&b->t_first, 0);
    atomic_init(&b->t_finished, 0);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    const phx_params_t *p = phx_params();
    size_t ntasks = 0, total = 0;
    for (int i = 0; i < n; i++) {
        rc = prepare_request(&rs[i], &reqs[i], ops ? ops[i] == PHXFS_OP_WRITE : is_write);
        if (rc) {
            atomic_store(&rs[i].err, rc);
            if (!b->msg[0]) snprintf(b->msg, sizeof b->msg, "request %d of %d: %s", i, n, phx_last_error());
        } else {
            total += reqs[i].nbytes;
        }
    }
    /* A batch too small to give every worker a full slot is cut finer, so one 1 MiB read
     * still spreads over the pool; 64 KiB keeps the per-task cost small beside the copy. */
    int workers = phx_pool_workers();
    size_t fine = phx_align_up(total / (size_t)(workers ? workers : 1), 64u << 10);
    if (fine == 0) fine = 64u << 10;
    for (int pass = 0; pass < 2; pass++) {
        size_t t = 0;
        for (int i = 0; i < n; i++) {
            if (atomic_load(&rs[i].err)) continue;
            size_t c = rs[i].bounce ? p->slot_bytes : p->chunk_bytes;
            if (fine < c) c = fine;
            uint64_t s = (uint64_t)reqs[i].f_offset, e = s + reqs[i].nbytes;
            if (pass == 0) {
                if (e > s) ntasks += (size_t)((e - 1) / c - s / c + 1);
                continue;
            }
            for (uint64_t q, pos = s; pos < e; pos = q) {
                q = (pos / c + 1) * c;
                if (q > e) q = e;
                b->tasks[t++] = (phx_task_t){&rs[i], b, pos - s, (size_t)(q - pos)};
            }
        }
        if (pass == 0) {
            b->tasks = calloc(ntasks ? ntasks : 1, sizeof *b->tasks);
            if (!b->tasks) {
                for (int i = 0; i < n; i++) release_request(&rs[i]);
                free(rs); free(b);
                *err = phx_fail(ENOMEM, "batch: out of memory for %zu tasks", ntasks);
                return NULL;
            }
        }
    }
    b->ntasks = ntasks;
    atomic_init(&b->remaining, ntasks);
    interleave_writes(b, n);
    atomic_store_explicit(&b->t_queued, phx_now_ns(), memory_order_relaxed);
    if (ntasks == 0 && !cb) {
        phx_batch_finish(b);
        return b;
    }
    if (may_inline && !cb && ntasks <= PHX_MAX_GRAB && total <= INLINE_MAX_BYTES) {
        int host_only = 1;
        for (size_t i = 0; i < ntasks; i++) host_only &= !b->tasks[i].rs->bounce;
        phx_host_xfer_t *x = host_only ? inline_xfer() : NULL;
        if (x) {
            phx_task_t *ts[PHX_MAX_GRAB];
            for (size_t i = 0; i < ntasks; i++) ts[i] = &b->tasks[i];
            b->next = ntasks;
            atomic_store_explicit(&b->t_first, phx_now_ns(), memory_order_relaxed);
            phx_host_tasks(x, ts, (int)ntasks);
            return b;
        }
    }
    phx_pool_enqueue(b);
    return b;
}

int64_t phx_batch_state_bytes(phx_batch_state_t *b) { return atomic_load(&b->bytes_done); }

int phx_batch_state_done(phx_batch_state_t *b)
{
    pthread_mutex_lock(&b->lock);
    int d = b->done;
    pthread_mutex_unlock(&b->lock);
    return d;
}

int phx_batch_state_wait(phx_batch_state_t *b)
{
    pthread_mutex_lock(&b->lock);
    while (!b->done) pthread_cond_wait(&b->cond, &b->lock);
    int r = b->result;
    if (r && b->msg[0]) phx_fail(EIO, "%s", b->msg);
    pthread_mutex_unlock(&b->lock);
    release_all(b);
    return r;
}

int phx_batch_state_cancel(phx_batch_state_t *b) { return phx_pool_cancel(b); }

void phx_batch_state_free(phx_batch_state_t *b)
{
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    while (!b->done) pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
    release_all(b);
    batch_unref(b);
}
