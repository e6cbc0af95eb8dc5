/* Stream-ordered I/O: checks, then one of two ways. Bounce and staging
 * operations are queued whole by stream_ring.c (with a late size or buffer
 * offset: when the registered room is at most PHX_STREAM_LATE_ROOM_MAX). The
 * rest (p2p, host buffers, late values over a larger room) are three stream
 * entries: a host function (kick) that hands the operation to the worker pool
 * when the stream reaches it, a wait that holds the stream until the workers
 * set the operation's flag, and a host function (release) that returns the
 * flag. The workers move the bytes through the device's pinned pool like any
 * batch, so stream I/O takes pinned slots as it runs, never when queued, and
 * never more than the pool. Host functions make no accelerator calls, as
 * cuLaunchHostFunc requires, and the flag is set on every path, so a failed
 * operation never stalls the stream. */
#include "cell.h"
#include "device.h"
#include "error.h"
#include "lifecycle.h"
#include "phoenix.h"
#include "pinned.h"
#include "pool.h"
#include "registry.h"
#include "stream_ring.h"
#include "transfer.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline, no_sanitize_thread)) size_t phx_cell_size(const size_t *p) { return *(const volatile size_t *)p; }
__attribute__((noinline, no_sanitize_thread)) off_t phx_cell_off(const off_t *p) { return *(const volatile off_t *)p; }

typedef struct {
    phxfs_io_req_t req;
    int is_write;
    unsigned late;           /* PHXFS_STREAM_LATE_*: which cells the kick reads */
    const size_t *nbytes_p;
    const off_t *buf_offset_p;
    const off_t *f_offset_p;
    ssize_t *bytes_done;
    phxfs_stream_result_fn result_fn; /* or NULL */
    phx_device_t *dev;       /* the stream's device, with a use taken until release runs */
    phx_flag_t *flag;
    /* one reference for the enqueuer, one for a queued kick: the last one out reports */
    atomic_int refs;
    ssize_t result;
    int enqueue_err;         /* set by the enqueuer before it drops its reference */
    int release_queued, wait_queued;
    /* The wait could not be queued: nothing on the stream would hold later work (or the
     * caller's synchronize) back from this I/O, so the kick must not start it, and the
     * enqueuer waits until the kick has run before it reports. */
    atomic_int abandoned;
} stream_op_t;

typedef struct {
    phx_device_t *dev;
    phx_flag_t *flag;
} release_t;

static void op_finish(stream_op_t *op)
{
    /* a failed enqueue is reported by stream_io, once, with the error the call returns */
    if (!op->enqueue_err) *op->bytes_done = phx_stream_result(op->result_fn, op->result);
    __atomic_store_n(op->flag->word, 1, __ATOMIC_RELEASE);
    if (!op->release_queued) {
        /* nothing on the stream will return the flag: return it here unless a queued wait
         * may still read it (then it stays out: 4 bytes, only after a failed launch) */
        if (!op->wait_queued) phx_flag_give(&op->dev->pinned, op->flag);
        phx_device_release(op->dev);
    }
    free(op);
}

static void op_unref(stream_op_t *op)
{
    if (atomic_fetch_sub(&op->refs, 1) == 1) op_finish(op);
}

/* The kick side lets go: its last touch of op is the decrement, so an enqueuer that waits
 * for the count to reach its own reference alone (an abandoned op) is then the last holder
 * and reports before its call returns. */
static void kick_release(stream_op_t *op) { op_unref(op); }

static void op_done(phx_batch_state_t *b, int result, void *arg)
{
    (void)result;
    stream_op_t *op = arg;
    op->result = op->req.result;
    phx_batch_state_free(b);
    kick_release(op);
}

static void kick(void *arg)
{
    stream_op_t *op = arg;
    if (atomic_load(&op->abandoned)) {
        op->result = -ECANCELED;
        kick_release(op);
        return;
    }
    if (op->late & PHXFS_STREAM_LATE_NBYTES) op->req.nbytes = phx_cell_size(op->nbytes_p);
    if (op->late & PHXFS_STREAM_LATE_BUF_OFFSET) op->req.buf_offset = phx_cell_off(op->buf_offset_p);
    if (op->late & PHXFS_STREAM_LATE_F_OFFSET) op->req.f_offset = phx_cell_off(op->f_offset_p);
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(&op->req, NULL, 1, op->is_write, 0, op_done, op, &err);
    if (!b) {
        op->result = err;
        kick_release(op);
    }
}

static void release(void *arg)
{
    release_t *r = arg;
    phx_flag_give(&r->dev->pinned, r->flag);
    phx_device_release(r->dev);
    free(r);
}

static int stream_io_checked(int fd, int dev, void *buf, const size_t *nbytes_p, const off_t *buf_offset_p,
                     const off_t *f_offset_p, ssize_t *bytes_done, void *stream, int is_write, unsigned late,
                     phxfs_stream_result_fn result_fn)
{
    phx_clear_error();
    const char *what = is_write ? "write_stream" : "read_stream";
    if (!nbytes_p || !buf_offset_p || !f_offset_p || !bytes_done)
        return phx_fail(EINVAL, "%s: nbytes, buf_offset, f_offset and bytes_done must not be NULL", what);
    int rc = phx_lib_init();
    if (rc) return rc;
    size_t n = *nbytes_p;
    off_t bo = *buf_offset_p;
    if (late & ~(unsigned)(PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET | PHXFS_STREAM_LATE_F_OFFSET))
        return phx_fail(EINVAL, "%s: unknown flags 0x%x in late", what, late);
    /* a late cell may hold anything until the stream gets there: checked then, into bytes_done */
    int early = !(late & (PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET));
    if (early && (bo < 0 || n > (size_t)SSIZE_MAX))
        return phx_fail(EINVAL, "%s: buffer offset %lld or size %zu out of range", what, (long long)bo, n);
    if (stream && dev >= 0 && early) {
        /* resolved now so a bad range fails the call instead of landing in bytes_done; the
         * batch that moves the bytes takes its own hold */
        int err;
        phx_device_t *bd = phx_device_acquire(dev, &err);
        if (!bd) return err;
        uintptr_t target, base;
        rc = phx_registry_resolve(&bd->reg, (uintptr_t)buf, (uint64_t)bo, n, 0, &target, &base);
        phx_device_release(bd);
        if (rc) return rc;
    }
    /* checked now: on an accelerator the copies are queued at enqueue, and a read that could
     * never succeed must not leave them behind */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return phx_fail(EBADF, "%s: fd %d is not an open file", what, fd);
    if ((fl & O_ACCMODE) == (is_write ? O_RDONLY : O_WRONLY))
        return phx_fail(EBADF, "%s: fd %d is not open for %s", what, fd, is_write ? "writing" : "reading");
    if (!stream || !phx_conn->is_accelerator) {
        /* no stream, or host "streams" that run at enqueue: now, on this thread */
        phx_clear_error(); /* as the public phxfs_read did here: start-up's probing messages are not this call's */
        ssize_t r = phx_transfer_one(fd, dev, buf, bo, (ssize_t)n, *f_offset_p, is_write);
        *bytes_done = phx_stream_result(result_fn, r);
        return 0;
    }
    int sdev = phx_conn->stream_device(stream);
    if (sdev < 0) return sdev;
    if (dev >= 0 && sdev != dev) return phx_fail(EINVAL, "%s: the stream belongs to device %d, the buffer to device %d", what, sdev, dev);
    if (dev < 0 && !buf) return phx_fail(EFAULT, "%s: host buffer is NULL", what);
    phx_device_t *d = phx_device_acquire(sdev, &rc);
    if (!d) return rc;
    /* Bounce and staging move bytes with accelerator copies: queued now, whole, so nothing
     * after this call needs the accelerator (stream_ring.c says why). A late size or buffer
     * offset leaves the copies unknown until the stream gets there: those, and p2p (the file
     * DMAs into device memory, no copies), go through the workers below. */
    if (dev >= 0 && early && n > 0 && (d->mode == PHXFS_MODE_BOUNCE || d->mode == PHXFS_MODE_STAGING)) {
        uintptr_t target, base;
        rc = phx_registry_resolve(&d->reg, (uintptr_t)buf, (uint64_t)bo, n, 0, &target, &base);
        if (rc) {
            phx_device_release(d);
            return rc;
        }
        int late_off = (late & PHXFS_STREAM_LATE_F_OFFSET) != 0;
        return phx_stream_ring_io(d, fd, (void *)target, n, late_off ? 0 : *f_offset_p, late_off ? f_offset_p : NULL,
                                  bytes_done, result_fn, stream, is_write, what);
    }
    if (dev >= 0 && !early && (d->mode == PHXFS_MODE_BOUNCE || d->mode == PHXFS_MODE_STAGING)) {
        /* a late size or buffer offset: the copies cover the registered room, when it is small
         * enough to move twice; larger rooms go through the workers (phoenix.h says what that
         * asks of the caller) */
        int late_bo = (late & PHXFS_STREAM_LATE_BUF_OFFSET) != 0;
        if (!late_bo && bo < 0) {
            phx_device_release(d);
            return phx_fail(EINVAL, "%s: buffer offset %lld out of range", what, (long long)bo);
        }
        uintptr_t region;
        size_t room;
        rc = phx_registry_room(&d->reg, (uintptr_t)buf + (late_bo ? 0 : (uintptr_t)bo), &region, &room);
        if (rc) {
            phx_device_release(d);
            return rc;
        }
        if (room <= PHX_STREAM_LATE_ROOM_MAX) {
            int late_off = (late & PHXFS_STREAM_LATE_F_OFFSET) != 0;
            int late_n = (late & PHXFS_STREAM_LATE_NBYTES) != 0;
            return phx_stream_ring_late_io(d, fd, (void *)region, room, n, late_n ? nbytes_p : NULL,
                                           late_bo ? buf_offset_p : NULL, late_off ? 0 : *f_offset_p,
                                           late_off ? f_offset_p : NULL, bytes_done, result_fn, stream, is_write, what);
        }
    }
    stream_op_t *op = calloc(1, sizeof *op);
    release_t *rel = malloc(sizeof *rel);
    phx_flag_t *flag = op && rel ? phx_flag_take(&d->pinned) : NULL;
    if (!flag) {
        free(op);
        free(rel);
        phx_device_release(d);
        return phx_fail(ENOMEM, "%s: out of memory", what);
    }
    op->req = (phxfs_io_req_t){fd, dev, buf, bo, n, *f_offset_p, 0};
    op->is_write = is_write;
    op->late = late;
    op->nbytes_p = nbytes_p;
    op->buf_offset_p = buf_offset_p;
    op->f_offset_p = f_offset_p;
    op->bytes_done = bytes_done;
    op->result_fn = result_fn;
    op->dev = d;
    op->flag = flag;
    *rel = (release_t){d, flag};
    atomic_init(&op->refs, 2);
    rc = phx_conn->launch_host_fn(stream, kick, op);
    if (rc) {
        atomic_fetch_sub(&op->refs, 1); /* the kick will never run */
    } else {
        rc = phx_conn->wait_flag(stream, flag->word);
        op->wait_queued = rc == 0;
        if (rc) {
            /* the kick is queued but nothing holds the stream for its I/O: call it off and wait
             * for it to have run (it then touches neither the buffer nor the cells), so the
             * caller may free both once this returns */
            atomic_store(&op->abandoned, 1);
            /* an error path only: poll rather than give every op a lock and a condition */
            struct timespec ts = {0, 50000};
            while (atomic_load(&op->refs) > 1) nanosleep(&ts, NULL);
        }
        if (!rc) rc = phx_conn->launch_host_fn(stream, release, rel);
        op->release_queued = rc == 0;
    }
    if (!op->release_queued) free(rel);
    if (rc) {
        op->enqueue_err = rc;
        if (!*phx_last_error()) phx_fail(-rc, "%s: cannot queue on the stream", what);
    }
    op_unref(op);
    return rc;
}

/* Every error return leaves the error in *bytes_done too, as phoenix.h promises: stored here
 * only, so result_fn sees each call's value exactly once (an error, or what the stream stored). */
static int stream_io(int fd, int dev, void *buf, const size_t *nbytes_p, const off_t *buf_offset_p,
                     const off_t *f_offset_p, ssize_t *bytes_done, void *stream, int is_write, unsigned late,
                     phxfs_stream_result_fn result_fn)
{
    int rc = stream_io_checked(fd, dev, buf, nbytes_p, buf_offset_p, f_offset_p, bytes_done, stream, is_write, late,
                               result_fn);
    if (rc && bytes_done) *bytes_done = phx_stream_result(result_fn, rc);
    return rc;
}

int phxfs_read_stream(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                      const off_t *f_offset, ssize_t *bytes_done, void *stream)
{
    return stream_io(fd, dev, buf, nbytes, buf_offset, f_offset, bytes_done, stream, 0, PHXFS_STREAM_LATE_F_OFFSET, NULL);
}

int phxfs_write_stream(int fd, int dev, const void *buf, const size_t *nbytes, const off_t *buf_offset,
                       const off_t *f_offset, ssize_t *bytes_done, void *stream)
{
    return stream_io(fd, dev, (void *)buf, nbytes, buf_offset, f_offset, bytes_done, stream, 1, PHXFS_STREAM_LATE_F_OFFSET, NULL);
}

int phxfs_read_stream_ex(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                         const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late)
{
    return stream_io(fd, dev, buf, nbytes, buf_offset, f_offset, bytes_done, stream, 0, late, NULL);
}

int phxfs_write_stream_ex(int fd, int dev, const void *buf, const size_t *nbytes, const off_t *buf_offset,
                          const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late)
{
    return stream_io(fd, dev, (void *)buf, nbytes, buf_offset, f_offset, bytes_done, stream, 1, late, NULL);
}

int phxfs_read_stream_ex2(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                          const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late,
                          phxfs_stream_result_fn result_fn)
{
    return stream_io(fd, dev, buf, nbytes, buf_offset, f_offset, bytes_done, stream, 0, late, result_fn);
}

int phxfs_write_stream_ex2(int fd, int dev, const void *buf, const size_t *nbytes, const off_t *buf_offset,
                           const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late,
                           phxfs_stream_result_fn result_fn)
{
    return stream_io(fd, dev, (void *)buf, nbytes, buf_offset, f_offset, bytes_done, stream, 1, late, result_fn);
}
