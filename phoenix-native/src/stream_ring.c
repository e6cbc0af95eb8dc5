/* Stream-ordered bounce I/O with every accelerator call made at enqueue.
 *
 * Why: once a stream waits on a flag that only our threads can set, any
 * accelerator call those threads still need can deadlock. CUDA loads kernels
 * lazily (the default since 12.2), and loading one synchronises the context:
 * a caller that launches a kernel not loaded yet after queuing our read stops
 * every later copy, while the stream it waits for waits on ours (seen on the
 * H200: the read never completes; with CUDA_MODULE_LOADING=EAGER it does). So
 * here the caller's thread queues the whole operation when it calls, and after
 * that only file I/O and flag stores remain, which no context state can block.
 *
 * A read of P pieces (slot-sized) through a ring of R pinned slots queues:
 *   kick | for each piece j: wait(ready[j%R]); copy slot -> device; [piece_done] | finish
 * with a piece_done after every R/2 pieces (a host function costs the stream a trip to a CPU
 * thread). The kick (a host function, run when the stream gets there) reads the late file
 * offset and starts the preads of the first R pieces; each pread sets its slot's ready flag;
 * piece_done, which runs once its group's copies are done, clears their flags and starts the
 * preads of pieces k+R into the same slots. A write mirrors it: copy device -> slot;
 * piece_done starts the group's pwrites, whose ends set the flags that the copies of pieces
 * k+R wait on; a last wait on the op's flag holds the stream until every pwrite has ended.
 *
 * The ring's slots come from the device's pinned pool when the operation is
 * queued (the copies name them), at most STREAM_RING per operation and half the pool, and go
 * back when the stream passes it. Host functions make no accelerator calls. */
#include "stream_ring.h"
#include "cell.h"
#include "connector.h"
#include "device.h"
#include "error.h"
#include "phoenix.h"
#include "pinned.h"
#include "pool.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* Pieces in flight per operation: each is one worker's pread, so the ring sets how many
 * workers one stream operation keeps busy (a worker copies ~5 GB/s out of the page cache) */
#define STREAM_RING 16

enum { KICK_QUEUED, KICK_RUNNING, KICK_DONE, KICK_ABANDONED };

typedef struct ring_op ring_op_t;

typedef struct {
    ring_op_t *op;
    int j;
    int prefill;             /* read: the slot holds the destination's bytes before the pread */
    size_t rel;              /* where the piece's file I/O starts, from the operation's first byte */
    phxfs_io_req_t req;      /* the piece's file I/O (host memory: the slot) */
} piece_t;

struct ring_op {
    phx_device_t *dev;
    phx_pinned_pool_t *pool;
    int fd, is_write, staging;
    const off_t *f_offset_p; /* NULL: f_offset was bound at enqueue */
    off_t f_offset;
    ssize_t *bytes_done;     /* NULL once the enqueue failed (the caller stores that error) */
    phxfs_stream_result_fn result_fn; /* or NULL */
    char *dst;               /* device address of byte 0 (read: destination; write: source) */
    size_t n, piece;
    int npieces, nring;
    int group;               /* pieces per piece_done: half the ring */
    char *slot[STREAM_RING];
    phx_flag_t *flag[STREAM_RING]; /* read: slot filled; write: slot written out */
    phx_flag_t *done;        /* write: every pwrite has ended */
    piece_t *pieces;
    atomic_int kick_state;
    atomic_int abandoned;    /* queuing failed: let every queued wait pass, move nothing more */
    atomic_int refs;         /* the enqueuer, each queued host function, each piece in flight */
    atomic_int writes_left;  /* write: pieces whose pwrite has not ended */
    atomic_int err;          /* the first failure */
    _Atomic int64_t end;     /* read: the lowest byte where a piece stopped short */
    int tail_queued;         /* a wait or copy was queued after the last host function */
    /* which slots have file I/O in flight: a call-off must not open their waits (the copy
     * after the wait would read a slot a pread is still writing) */
    pthread_mutex_t mu;
    unsigned char busy[STREAM_RING];
    int nbusy;
    /* late mode: the size or buffer offset is read when the stream gets there, so the copies
     * cover the whole registered room from dst (region_len bytes) and the kick picks the
     * part [a0, a0 + n) of it that the file I/O fills */
    int late_mode;
    int run;                 /* late mode: slot[0] spans this many adjacent slots (0: one slot) */
    int released;            /* release_resources ran */
    const size_t *nbytes_p;  /* late size, or NULL */
    const off_t *bo_p;       /* late buffer offset (from dst), or NULL */
    size_t region_len, a0;
    int finish_queued;
};

static void set_flag(phx_flag_t *f, uint32_t v) { __atomic_store_n(f->word, v, __ATOMIC_RELEASE); }

/* Slots, flags and the device use go back once: from finish, when the stream has passed the
 * operation (a caller that synchronises the stream and closes the device then finds them
 * returned, although a worker may still hold the op itself for a moment), or from op_free. */
static void release_resources(ring_op_t *op, int safe)
{
    if (op->released) return;
    op->released = 1;
    if (op->run && op->slot[0]) {
        for (int k = 0; k < op->run; k++) {
            char *sl = op->slot[0] + (size_t)k * op->pool->slot_bytes;
            safe ? phx_pinned_give(op->pool, sl) : phx_pinned_lose(op->pool, sl);
        }
        op->slot[0] = NULL;
    }
    for (int i = 0; i < op->nring; i++) {
        if (op->slot[i]) safe ? phx_pinned_give(op->pool, op->slot[i]) : phx_pinned_lose(op->pool, op->slot[i]);
        if (op->flag[i] && safe) phx_flag_give(&op->dev->pinned, op->flag[i]);
    }
    if (op->done && safe) phx_flag_give(&op->dev->pinned, op->done);
    phx_device_release(op->dev);
}

static void op_free(ring_op_t *op)
{
    pthread_mutex_destroy(&op->mu);
    /* Slots and flags go back only when nothing queued can still touch them: after finish
     * ran, or when nothing was queued after the last host function. Otherwise they stay out
     * (a copy may yet read the slot): a few MiB, only after the accelerator refused a call. */
    release_resources(op, op->finish_queued || !op->tail_queued);
    free(op->pieces);
    free(op);
}

static void op_unref(ring_op_t *op)
{
    if (atomic_fetch_sub(&op->refs, 1) == 1) op_free(op);
}

static void fail(ring_op_t *op, int e)
{
    int zero = 0;
    atomic_compare_exchange_strong(&op->err, &zero, e);
}

/* Slot i is about to have file I/O: its flag goes down. Refused once the op is called off. */
static int claim(ring_op_t *op, int i)
{
    pthread_mutex_lock(&op->mu);
    int ok = !atomic_load(&op->abandoned);
    if (ok) {
        set_flag(op->flag[i], 0);
        op->busy[i] = 1;
        op->nbusy++;
    }
    pthread_mutex_unlock(&op->mu);
    return ok;
}

/* Slot i's file I/O has ended: its flag goes up (and, called off, the op's last one opens the
 * final wait). */
static void unclaim(ring_op_t *op, int i)
{
    pthread_mutex_lock(&op->mu);
    op->busy[i] = 0;
    op->nbusy--;
    set_flag(op->flag[i], 1);
    if (atomic_load(&op->abandoned) && op->done && op->nbusy == 0) set_flag(op->done, 1);
    pthread_mutex_unlock(&op->mu);
}

/* Calls the operation off: no more file I/O starts, and every wait the stream may be stopped
 * on opens, those of slots with I/O in flight when it ends. */
static void abandon(ring_op_t *op)
{
    pthread_mutex_lock(&op->mu);
    atomic_store(&op->abandoned, 1);
    for (int i = 0; i < op->nring; i++)
        if (!op->busy[i]) set_flag(op->flag[i], 1);
    if (op->done && op->nbusy == 0) set_flag(op->done, 1);
    pthread_mutex_unlock(&op->mu);
}

static size_t piece_len(const ring_op_t *op, int j)
{
    size_t at = (size_t)j * op->piece;
    return op->n - at < op->piece ? op->n - at : op->piece;
}

static void write_ended(ring_op_t *op)
{
    if (atomic_fetch_sub(&op->writes_left, 1) == 1) set_flag(op->done, 1);
}

static void piece_io_done(phx_batch_state_t *b, int result, void *arg)
{
    (void)result;
    piece_t *p = arg;
    ring_op_t *op = p->op;
    int i = p->j % op->nring;
    ssize_t res = p->req.result;
    size_t len = p->req.nbytes;
    phx_batch_state_free(b);
    if (res < 0) fail(op, (int)res);
    if (!op->is_write) {
        if (res >= 0 && (size_t)res < len) {
            /* the copy of the whole piece is already queued: past the end of the file the slot
             * holds the destination's own bytes (prefilled), or else zeros rather than an
             * earlier piece's bytes */
            if (!p->prefill) memset(op->slot[i] + res, 0, len - (size_t)res);
            int64_t pos = (int64_t)p->rel + res;
            int64_t cur = atomic_load(&op->end);
            while (pos < cur && !atomic_compare_exchange_weak(&op->end, &cur, pos)) {}
        }
        unclaim(op, i);
    } else {
        unclaim(op, i);
        if (!op->late_mode) write_ended(op);
    }
    op_unref(op);
}

static void submit_piece(ring_op_t *op, piece_t *p);

/* Starts piece j's file I/O unless the op was called off; on failure reports as its end
 * would. */
static void start_piece(ring_op_t *op, int j)
{
    piece_t *p = &op->pieces[j];
    int i = j % op->nring;
    if (!claim(op, i)) return;
    p->rel = (size_t)j * op->piece;
    p->req = (phxfs_io_req_t){op->fd, -1, op->slot[i], 0, piece_len(op, j), op->f_offset + (off_t)p->rel, 0};
    submit_piece(op, p);
}

/* Starts p's file I/O (p->req set, its slot claimed); on failure reports as its end would. */
static void submit_piece(ring_op_t *op, piece_t *p)
{
    int j = p->j, i = j % op->nring;
    atomic_fetch_add(&op->refs, 1);
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(&p->req, NULL, 1, op->is_write, 0, piece_io_done, p, &err);
    if (!b) {
        p->req.result = err ? err : -EIO;
        /* piece_io_done frees the batch it is given: here there is none */
        ring_op_t *o = op;
        fail(o, (int)p->req.result);
        if (!o->is_write && !p->prefill) memset(o->slot[i], 0, piece_len(o, j));
        unclaim(o, i);
        if (o->is_write && !o->late_mode) write_ended(o);
        op_unref(o);
    }
}

static void kick(void *arg)
{
    ring_op_t *op = arg;
    int queued = KICK_QUEUED;
    if (!atomic_compare_exchange_strong(&op->kick_state, &queued, KICK_RUNNING)) {
        abandon(op); /* called off before the stream got here */
        op_unref(op);
        return;
    }
    if (op->f_offset_p) op->f_offset = phx_cell_off(op->f_offset_p);
    if (op->f_offset < 0) {
        fail(op, -EINVAL);
        abandon(op);
    }
    atomic_store(&op->kick_state, KICK_DONE);
    if (!op->is_write) {
        for (int j = 0; j < op->nring && j < op->npieces; j++)
            if (!op->pieces[j].prefill) start_piece(op, j);
    }
    op_unref(op);
}

/* A prefilled piece starts its pread only once the stream has copied the destination's bytes
 * into the slot. */
static void prefill_done(void *arg)
{
    piece_t *p = arg;
    ring_op_t *op = p->op;
    start_piece(op, p->j);
    op_unref(op);
}

/* Runs once the copies of pieces (j-group, j] are done: a host function costs the stream a
 * round trip to a CPU thread (~0.1 ms measured on the H200), so one serves a group. */
static void piece_done(void *arg)
{
    piece_t *p = arg;
    ring_op_t *op = p->op;
    int last = p->j, first = last - last % op->group;
    if (!op->is_write) {
        /* the slots of the group take pieces k+R (a prefilled one starts after its prefill) */
        for (int k = first; k <= last; k++)
            if (k + op->nring < op->npieces && !op->pieces[k + op->nring].prefill) start_piece(op, k + op->nring);
    } else {
        for (int k = first; k <= last; k++) start_piece(op, k);
    }
    op_unref(op);
}

static void finish(void *arg)
{
    ring_op_t *op = arg;
    int e = atomic_load(&op->err);
    if (op->bytes_done) {
        int64_t end = atomic_load(&op->end);
        *op->bytes_done = phx_stream_result(op->result_fn, e ? e : op->is_write ? (ssize_t)op->n : (ssize_t)end);
    }
    /* every piece's file I/O has ended (its flag was set, which is the last touch of a slot)
     * and every copy before this point is done */
    release_resources(op, 1);
    op_unref(op);
}

/* The end of an enqueue after the kick was queued: on failure part of the operation is
 * queued. Everything queued still runs: the kick and the host functions let every wait pass
 * and start no more file I/O. The cells are ours to leave before returning, so a kick that
 * is running is waited for. Copies already queued may still write the buffer's range. */
static int queued_end(ring_op_t *op, int rc, const char *what)
{
    if (rc) {
        if (!*phx_last_error()) phx_fail(-rc, "%s: cannot queue on the stream", what);
        atomic_store(&op->abandoned, 1);
        int queued = KICK_QUEUED;
        if (!atomic_compare_exchange_strong(&op->kick_state, &queued, KICK_ABANDONED)) {
            struct timespec ts = {0, 50000};
            while (atomic_load(&op->kick_state) == KICK_RUNNING) nanosleep(&ts, NULL);
            abandon(op);
        }
        op->bytes_done = NULL; /* the caller (stream_io) stores the error */
    }
    op_unref(op);
    return rc;
}

int phx_stream_ring_io(phx_device_t *d, int fd, void *target, size_t n, off_t f_offset, const off_t *f_offset_p,
                       ssize_t *bytes_done, phxfs_stream_result_fn result_fn, void *stream, int is_write,
                       const char *what)
{
    ring_op_t *op = calloc(1, sizeof *op);
    if (!op) {
        phx_device_release(d);
        return phx_fail(ENOMEM, "%s: out of memory", what);
    }
    op->dev = d;
    pthread_mutex_init(&op->mu, NULL);
    op->pool = phx_slot_pool(d);
    op->staging = d->mode == PHXFS_MODE_STAGING;
    op->fd = fd;
    op->is_write = is_write;
    op->f_offset = f_offset;
    op->f_offset_p = f_offset_p;
    op->bytes_done = bytes_done;
    op->result_fn = result_fn;
    op->dst = target;
    op->n = n;
    op->piece = op->pool->slot_bytes;
    op->npieces = (int)((n + op->piece - 1) / op->piece);
    atomic_init(&op->end, (int64_t)n);
    atomic_init(&op->writes_left, op->npieces);
    op->pieces = calloc((size_t)op->npieces, sizeof *op->pieces);
    int want = op->npieces < STREAM_RING ? op->npieces : STREAM_RING;
    /* at most half the pool, so two operations in flight never wait for each other's slots */
    if (want > op->pool->nslots / 2) want = op->pool->nslots / 2 > 0 ? op->pool->nslots / 2 : 1;
    int rc = op->pieces ? 0 : phx_fail(ENOMEM, "%s: out of memory", what);
    /* a queued operation needs one slot to move, more to overlap: take what is free, and
     * wait (back-pressure) only when not even one is */
    for (int i = 0; !rc && i < want; i++) {
        op->slot[i] = phx_pinned_take(op->pool, i == 0);
        if (!op->slot[i]) break;
        op->nring++;
    }
    for (int i = 0; !rc && i < op->nring; i++) {
        op->flag[i] = phx_flag_take(&d->pinned);
        if (!op->flag[i]) rc = phx_fail(ENOMEM, "%s: out of memory", what);
        else set_flag(op->flag[i], 0);
    }
    if (!rc && is_write) {
        op->done = phx_flag_take(&d->pinned);
        if (!op->done) rc = phx_fail(ENOMEM, "%s: out of memory", what);
        else set_flag(op->done, 0);
    }
    if (rc) {
        op_free(op); /* also gives the device use back */
        return rc;
    }
    /* a group shorter than the ring, so piece k+R's wait always follows k's piece_done */
    op->group = op->nring / 2 > 0 ? op->nring / 2 : 1;
    /* Set before anything runs: the kick and the host functions read them. A read keeps
     * the destination's bytes past the end of the file (as pread does) by first copying
     * them into the slot of each piece that will end short: predicted from the file's size
     * and the offset the cell holds now. Only if the offset changes before the stream gets
     * there can a piece not predicted end short: its missing bytes then arrive as zeros. */
    off_t predict = f_offset_p ? *f_offset_p : f_offset;
    struct stat st;
    off_t fsize = !is_write && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
    for (int j = 0; j < op->npieces; j++) {
        op->pieces[j].op = op;
        op->pieces[j].j = j;
        if (!is_write)
            op->pieces[j].prefill = fsize < 0 || predict < 0 ||
                                    predict + (off_t)((size_t)j * op->piece + piece_len(op, j)) > fsize;
    }
    atomic_init(&op->refs, 1);
    /* from here every queued host function holds a reference */
    atomic_fetch_add(&op->refs, 1);
    rc = phx_conn->launch_host_fn(stream, kick, op);
    if (rc) {
        if (!*phx_last_error()) phx_fail(-rc, "%s: cannot queue on the stream", what);
        atomic_fetch_sub(&op->refs, 1);
        op_unref(op);
        return rc;
    }
    for (int j = 0; !rc && j < op->npieces; j++) {
        int i = j % op->nring;
        char *slot_dev = op->staging ? d->stage_dev + (op->slot[i] - d->stage_win) : op->slot[i];
        char *dev_ptr = op->dst + (size_t)j * op->piece;
        size_t len = piece_len(op, j);
        if (!is_write && op->pieces[j].prefill) {
            op->tail_queued = 1;
            rc = op->staging ? phx_conn->dtod_async(slot_dev, dev_ptr, len, stream)
                             : phx_conn->dtoh_async(slot_dev, dev_ptr, len, stream);
            if (!rc) {
                atomic_fetch_add(&op->refs, 1);
                rc = phx_conn->launch_host_fn(stream, prefill_done, &op->pieces[j]);
                if (rc) atomic_fetch_sub(&op->refs, 1);
                else op->tail_queued = 0;
            }
        }
        if (rc) break;
        if (!is_write) {
            rc = phx_conn->wait_flag(stream, op->flag[i]->word);
            if (!rc) {
                op->tail_queued = 1;
                rc = op->staging ? phx_conn->dtod_async(dev_ptr, slot_dev, len, stream)
                                 : phx_conn->htod_async(dev_ptr, slot_dev, len, stream);
            }
        } else {
            if (j >= op->nring) {
                rc = phx_conn->wait_flag(stream, op->flag[i]->word);
                if (!rc) op->tail_queued = 1;
            }
            if (!rc) {
                op->tail_queued = 1;
                rc = op->staging ? phx_conn->dtod_async(slot_dev, dev_ptr, len, stream)
                                 : phx_conn->dtoh_async(slot_dev, dev_ptr, len, stream);
            }
        }
        if (!rc && ((j + 1) % op->group == 0 || j == op->npieces - 1)) {
            atomic_fetch_add(&op->refs, 1);
            rc = phx_conn->launch_host_fn(stream, piece_done, &op->pieces[j]);
            if (rc) atomic_fetch_sub(&op->refs, 1);
            else op->tail_queued = 0;
        }
    }
    if (!rc && is_write) {
        rc = phx_conn->wait_flag(stream, op->done->word);
        if (!rc) op->tail_queued = 1;
    }
    if (!rc) {
        atomic_fetch_add(&op->refs, 1);
        rc = phx_conn->launch_host_fn(stream, finish, op);
        if (rc) atomic_fetch_sub(&op->refs, 1);
        else op->finish_queued = 1;
    }
    return queued_end(op, rc, what);
}

/* ---- late mode ---- */

static size_t region_piece_len(const ring_op_t *op, int j)
{
    size_t at = (size_t)j * op->piece;
    return op->region_len - at < op->piece ? op->region_len - at : op->piece;
}

static void late_kick(void *arg)
{
    ring_op_t *op = arg;
    int queued = KICK_QUEUED;
    if (!atomic_compare_exchange_strong(&op->kick_state, &queued, KICK_RUNNING)) {
        abandon(op);
        op_unref(op);
        return;
    }
    if (op->f_offset_p) op->f_offset = phx_cell_off(op->f_offset_p);
    size_t n = op->nbytes_p ? phx_cell_size(op->nbytes_p) : op->n;
    off_t a0 = op->bo_p ? phx_cell_off(op->bo_p) : 0;
    int e = 0;
    if (op->f_offset < 0 || a0 < 0 || n > (size_t)SSIZE_MAX) e = -EINVAL;
    else if ((size_t)a0 > op->region_len || n > op->region_len - (size_t)a0) e = -EFAULT;
    op->n = e ? 0 : n;
    op->a0 = e ? 0 : (size_t)a0;
    atomic_store(&op->end, (int64_t)op->n);
    if (e) {
        fail(op, e);
        abandon(op);
    }
    atomic_store(&op->kick_state, KICK_DONE);
    op_unref(op);
}

/* The slot holds piece j of the region as the destination has it: the file I/O takes the
 * part of it the operation covers (a read overwrites only that part, so the copy back
 * leaves the rest as it was). */
static void late_start(void *arg)
{
    piece_t *p = arg;
    ring_op_t *op = p->op;
    size_t ps = (size_t)p->j * op->piece, pe = ps + region_piece_len(op, p->j);
    size_t x = ps > op->a0 ? ps : op->a0, y = pe < op->a0 + op->n ? pe : op->a0 + op->n;
    if (x >= y) {
        /* no I/O: the wait passes (the previous piece's I/O ended before the stream got here) */
        set_flag(op->flag[0], 1);
    } else if (claim(op, 0)) {
        /* claim lowers the flag the previous piece left up: no host function of its own */
        p->prefill = 1;
        p->rel = x - op->a0;
        p->req = (phxfs_io_req_t){op->fd, -1, op->slot[0] + (x - ps), 0, y - x, op->f_offset + (off_t)p->rel, 0};
        submit_piece(op, p);
    }
    op_unref(op);
}

static int queue_fn(ring_op_t *op, void *stream, phx_host_fn fn, void *arg)
{
    atomic_fetch_add(&op->refs, 1);
    int rc = phx_conn->launch_host_fn(stream, fn, arg);
    if (rc) atomic_fetch_sub(&op->refs, 1);
    else op->tail_queued = 0;
    return rc;
}

int phx_stream_ring_late_io(phx_device_t *d, int fd, void *region, size_t region_len, size_t n, const size_t *nbytes_p,
                            const off_t *bo_p, off_t f_offset, const off_t *f_offset_p, ssize_t *bytes_done,
                            phxfs_stream_result_fn result_fn, void *stream, int is_write, const char *what)
{
    ring_op_t *op = calloc(1, sizeof *op);
    if (!op) {
        phx_device_release(d);
        return phx_fail(ENOMEM, "%s: out of memory", what);
    }
    op->dev = d;
    pthread_mutex_init(&op->mu, NULL);
    op->pool = phx_slot_pool(d);
    op->staging = d->mode == PHXFS_MODE_STAGING;
    op->fd = fd;
    op->is_write = is_write;
    op->late_mode = 1;
    op->nbytes_p = nbytes_p;
    op->bo_p = bo_p;
    op->n = n;
    op->f_offset = f_offset;
    op->f_offset_p = f_offset_p;
    op->bytes_done = bytes_done;
    op->result_fn = result_fn;
    op->dst = region;
    op->region_len = region_len;
    /* Each piece is a round trip through one span of adjacent slots, in stream order: the
     * wider the span, the fewer entries the stream holds (CUDA blocks the caller when a
     * stream's queue is full, and the stream may then pass the operation before the caller
     * has set the late values). Up to a quarter of the pool, when that many are free. */
    int want = op->pool->nslots / 4 > 16 ? 16 : op->pool->nslots / 4;
    int got = 0;
    op->slot[0] = op->staging ? NULL : phx_pinned_take_run(op->pool, want, &got);
    if (op->slot[0]) op->run = got;
    else op->slot[0] = phx_pinned_take(op->pool, 1);
    op->piece = op->pool->slot_bytes * (size_t)(op->run ? op->run : 1);
    op->npieces = (int)((region_len + op->piece - 1) / op->piece);
    op->pieces = calloc(op->npieces ? (size_t)op->npieces : 1, sizeof *op->pieces);
    int rc = op->pieces ? 0 : phx_fail(ENOMEM, "%s: out of memory", what);
    if (!rc) {
        op->nring = 1; /* one flag; a span of slots goes back through op->run */
        op->flag[0] = phx_flag_take(&d->pinned);
        if (!op->flag[0]) rc = phx_fail(ENOMEM, "%s: out of memory", what);
        else set_flag(op->flag[0], 0);
    }
    if (rc) {
        op_free(op);
        return rc;
    }
    for (int j = 0; j < op->npieces; j++) {
        op->pieces[j].op = op;
        op->pieces[j].j = j;
    }
    atomic_init(&op->refs, 1);
    rc = queue_fn(op, stream, late_kick, op);
    if (rc) {
        if (!*phx_last_error()) phx_fail(-rc, "%s: cannot queue on the stream", what);
        op_unref(op);
        return rc;
    }
    char *slot_dev = op->staging ? d->stage_dev + (op->slot[0] - d->stage_win) : op->slot[0];
    for (int j = 0; !rc && j < op->npieces; j++) {
        char *dev_ptr = op->dst + (size_t)j * op->piece;
        size_t len = region_piece_len(op, j);
        op->tail_queued = 1;
        rc = op->staging ? phx_conn->dtod_async(slot_dev, dev_ptr, len, stream)
                         : phx_conn->dtoh_async(slot_dev, dev_ptr, len, stream);
        if (!rc) rc = queue_fn(op, stream, late_start, &op->pieces[j]);
        if (!rc) {
            rc = phx_conn->wait_flag(stream, op->flag[0]->word);
            if (!rc) op->tail_queued = 1;
        }
        if (!rc && !is_write)
            rc = op->staging ? phx_conn->dtod_async(dev_ptr, slot_dev, len, stream)
                             : phx_conn->htod_async(dev_ptr, slot_dev, len, stream);
    }
    if (!rc) {
        rc = queue_fn(op, stream, finish, op);
        if (!rc) op->finish_queued = 1;
    }
    return queued_end(op, rc, what);
}
