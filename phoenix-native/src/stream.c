/* Stream-ordered I/O. In bounce mode each slot-sized piece becomes four
 * stream operations: device->slot copy (so bytes past a short read keep their
 * contents), a host function doing the file I/O on the slot, slot->device
 * copy, and a host function that recycles the slot. Host functions make no
 * accelerator calls, as cuLaunchHostFunc requires, and always return, so a
 * failed read never stalls the stream. */
#include "internal.h"
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int fd, is_write, direct;
    const off_t *f_offset_p;
    ssize_t *bytes_done;
    off_t f_off;           /* snapshot taken by the first piece */
    size_t total;
    atomic_int outstanding; /* queued pieces + 1 for the enqueuer; 0 finishes the op */
    size_t slot_bytes;
    atomic_int err;
    atomic_size_t done;
    int eof;
    phx_device_t *dev;
    uintptr_t hold_base;
    char *host_dst;        /* host/immediate path */
} stream_op_t;

typedef struct {
    stream_op_t *op;
    phx_slot_t *slot;
    size_t rel, len;
    int index;
} piece_t;

static void finish_op(stream_op_t *op)
{
    int e = atomic_load(&op->err);
    *op->bytes_done = e ? e : (ssize_t)atomic_load(&op->done);
    if (op->dev) {
        phx_registry_release(&op->dev->reg, op->hold_base);
        atomic_fetch_sub(&op->dev->users, 1);
    }
    free(op);
}

/* File I/O on a slot; O_DIRECT files get an aligned span when needed. */
static ssize_t slot_io(stream_op_t *op, char *slot, size_t len, off_t off)
{
    if (!op->direct || ((off | (off_t)len) & (PHX_ALIGN - 1)) == 0)
        return phx_rw_full(op->fd, op->is_write, slot, len, off);
    if (op->is_write) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", op->fd);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) return -errno;
        ssize_t r = phx_rw_full(fd, 1, slot, len, off);
        close(fd);
        return r;
    }
    /* the upper half of the slot takes the aligned span, so bytes past a
     * short read in the lower half keep the device's contents */
    char *span = slot + op->slot_bytes + PHX_ALIGN;
    off_t a = (off_t)phx_align_down((size_t)off, PHX_ALIGN);
    size_t head = (size_t)(off - a);
    ssize_t r = phx_rw_full(op->fd, 0, span, phx_align_up(head + len, PHX_ALIGN), a);
    if (r < 0) return r;
    size_t got = (size_t)r > head ? (size_t)r - head : 0;
    if (got > len) got = len;
    memcpy(slot, span + head, got);
    return (ssize_t)got;
}

static void piece_io(void *arg)
{
    piece_t *p = arg;
    stream_op_t *op = p->op;
    if (p->index == 0) op->f_off = *op->f_offset_p;
    if (atomic_load(&op->err) || op->eof) return;
    if (op->f_off < 0) {
        atomic_store(&op->err, -EINVAL);
        return;
    }
    ssize_t r = slot_io(op, p->slot->mem, p->len, op->f_off + (off_t)p->rel);
    if (r < 0) {
        int zero = 0;
        atomic_compare_exchange_strong(&op->err, &zero, (int)r);
        return;
    }
    atomic_fetch_add(&op->done, (size_t)r);
    if ((size_t)r < p->len) op->eof = 1;
}

static void piece_release(void *arg)
{
    piece_t *p = arg;
    stream_op_t *op = p->op;
    phx_slot_put(p->slot);
    free(p);
    if (atomic_fetch_sub(&op->outstanding, 1) == 1) finish_op(op);
}

static void host_io(void *arg)
{
    stream_op_t *op = arg;
    op->f_off = *op->f_offset_p;
    /* through the batch path, which handles O_DIRECT alignment; host memory needs no accelerator call */
    ssize_t r = op->f_off < 0 ? -EINVAL
                : op->is_write ? phxfs_write(op->fd, -1, op->host_dst, 0, (ssize_t)op->total, op->f_off)
                               : phxfs_read(op->fd, -1, op->host_dst, 0, (ssize_t)op->total, op->f_off);
    if (r < 0) atomic_store(&op->err, (int)r);
    else atomic_store(&op->done, (size_t)r);
    finish_op(op);
}

static int stream_io(int fd, int dev, void *buf, const size_t *nbytes_p, const off_t *buf_offset_p,
                     const off_t *f_offset_p, ssize_t *bytes_done, void *stream, int is_write)
{
    phx_clear_error();
    const char *what = is_write ? "write_stream" : "read_stream";
    if (!nbytes_p || !buf_offset_p || !f_offset_p || !bytes_done)
        return phx_fail(EINVAL, "%s: nbytes, buf_offset, f_offset and bytes_done must not be NULL", what);
    int rc = phx_lib_init();
    if (rc) return rc;
    size_t n = *nbytes_p;
    off_t bo = *buf_offset_p;
    if (bo < 0 || n > (size_t)SSIZE_MAX) return phx_fail(EINVAL, "%s: buffer offset %lld or size %zu out of range", what, (long long)bo, n);
    if (!stream) {
        ssize_t r = is_write ? phxfs_write(fd, dev, buf, bo, (ssize_t)n, *f_offset_p)
                             : phxfs_read(fd, dev, buf, bo, (ssize_t)n, *f_offset_p);
        *bytes_done = r;
        return 0;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return phx_fail(EBADF, "%s: fd %d is not an open file", what, fd);
    stream_op_t *op = calloc(1, sizeof *op);
    if (!op) return phx_fail(ENOMEM, "%s: out of memory", what);
    op->fd = fd;
    op->is_write = is_write;
    op->direct = (fl & O_DIRECT) != 0;
    op->f_offset_p = f_offset_p;
    op->bytes_done = bytes_done;
    op->total = n;
    uintptr_t target;
    if (dev >= 0) {
        int err;
        phx_device_t *d = phx_device_get(dev, &err);
        if (!d) { free(op); return err; }
        rc = phx_registry_resolve(&d->reg, (uintptr_t)buf, (uint64_t)bo, n, 1, &target, &op->hold_base);
        if (rc) { free(op); return rc; }
        op->dev = d;
        atomic_fetch_add(&d->users, 1);
        rc = phx_conn->bind(dev);
        if (rc) { finish_op(op); return rc; }
    } else {
        if (!buf) { free(op); return phx_fail(EFAULT, "%s: host buffer is NULL", what); }
        target = (uintptr_t)buf + (uintptr_t)bo;
    }
    if (dev < 0 || !phx_conn->is_accelerator) {
        op->host_dst = (char *)target;
        if (dev < 0 && phx_conn->is_accelerator) {
            /* a host buffer on an accelerator stream: still ordered on it */
            rc = phx_conn->launch_host_fn(stream, host_io, op);
            if (rc) finish_op(op);
            return rc;
        }
        host_io(op);
        return 0;
    }
    size_t S = phx_pool_slot_bytes();
    int npieces = n ? (int)((n + S - 1) / S) : 1;
    op->slot_bytes = S;
    atomic_init(&op->outstanding, 1);
    for (int i = 0; i < npieces; i++) {
        piece_t *p = calloc(1, sizeof *p);
        phx_slot_t *slot = p ? phx_slot_get(2 * S + 3 * PHX_ALIGN) : NULL;
        if (!slot) {
            free(p);
            rc = phx_fail(ENOMEM, "%s: no pinned slot", what);
        } else {
            *p = (piece_t){op, slot, (size_t)i * S, 0, i};
            p->len = n - p->rel < S ? n - p->rel : S;
            char *dptr = (char *)target + p->rel;
            atomic_fetch_add(&op->outstanding, 1); /* before the stream can release it */
            if (p->len) rc = phx_conn->dtoh_async(slot->mem, dptr, p->len, stream);
            if (!rc) rc = phx_conn->launch_host_fn(stream, piece_io, p);
            if (!rc && p->len && !is_write) rc = phx_conn->htod_async(dptr, slot->mem, p->len, stream);
            if (!rc) rc = phx_conn->launch_host_fn(stream, piece_release, p);
            if (rc) {
                /* nothing of this piece is queued after a failed launch of its release */
                atomic_fetch_sub(&op->outstanding, 1);
                phx_slot_put(slot);
                free(p);
            }
        }
        if (rc) {
            int zero = 0;
            atomic_compare_exchange_strong(&op->err, &zero, rc);
            break;
        }
    }
    /* the enqueuer's reference: with nothing queued the op finishes here */
    if (atomic_fetch_sub(&op->outstanding, 1) == 1) finish_op(op);
    return rc;
}

int phxfs_read_stream(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                      const off_t *f_offset, ssize_t *bytes_done, void *stream)
{
    return stream_io(fd, dev, buf, nbytes, buf_offset, f_offset, bytes_done, stream, 0);
}

int phxfs_write_stream(int fd, int dev, const void *buf, const size_t *nbytes, const off_t *buf_offset,
                       const off_t *f_offset, ssize_t *bytes_done, void *stream)
{
    return stream_io(fd, dev, (void *)buf, nbytes, buf_offset, f_offset, bytes_done, stream, 1);
}
