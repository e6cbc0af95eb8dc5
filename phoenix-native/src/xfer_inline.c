/* Small synchronous device transfers on the caller's thread (bounce mode).
 *
 * Handing a 4 KiB read to a worker costs a queue hop and two wake-ups, about 25 us on the
 * H200 host, against a few us for the pread and the copy themselves. A request of at most
 * inline_kb whose file span fits one slot therefore runs here: pread into a slot of the
 * device's pinned pool, one async copy on a copy context, a stream sync, done.
 *
 * Bounded whatever the number of caller threads (core-2): the slot comes from the device's
 * one pinned pool, and the copy context (a stream) from a fixed set per device, made on
 * first use and kept until the device closes. Neither is waited for: when every context
 * or every free slot is taken the request goes to the workers as before. A caller's thread
 * holds a slot and a context only for the length of its call and never blocks on another
 * caller. */
#include "align.h"
#include "device.h"
#include "device_xfer.h"
#include "engine.h"
#include "error.h"
#include "lifecycle.h"
#include "params.h"
#include "phoenix.h"
#include "pinned.h"
#include "pool.h"
#include "registry.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* How many small transfers of one device may run on callers' threads at once; the rest go
 * to the workers. As many as the default pool has workers: more would only add streams. */
#define INLINE_CTX 8

typedef struct {
    void *stream;   /* NULL until first used */
} inline_ctx_t;

struct phx_inline {
    pthread_mutex_t lock;
    int nfree;
    inline_ctx_t *free_ctx[INLINE_CTX];
    inline_ctx_t ctx[INLINE_CTX];
};

phx_inline_t *phx_inline_new(void)
{
    phx_inline_t *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    pthread_mutex_init(&x->lock, NULL);
    for (int i = 0; i < INLINE_CTX; i++) x->free_ctx[i] = &x->ctx[i];
    x->nfree = INLINE_CTX;
    return x;
}

/* At the device's last close: no call holds a context then (each holds a device use). */
void phx_inline_free(phx_inline_t *x)
{
    if (!x) return;
    for (int i = 0; i < INLINE_CTX; i++)
        if (x->ctx[i].stream) phx_conn->stream_destroy(x->ctx[i].stream);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

static inline_ctx_t *ctx_take(phx_inline_t *x)
{
    pthread_mutex_lock(&x->lock);
    inline_ctx_t *c = x->nfree ? x->free_ctx[--x->nfree] : NULL;
    pthread_mutex_unlock(&x->lock);
    return c;
}

static void ctx_give(phx_inline_t *x, inline_ctx_t *c)
{
    pthread_mutex_lock(&x->lock);
    x->free_ctx[x->nfree++] = c;
    pthread_mutex_unlock(&x->lock);
}

static int aligned2(uint64_t a, uint64_t b) { return ((a | b) & (PHX_ALIGN - 1)) == 0; }

/* The transfer itself, with dev's context current and a slot and a context held: bytes
 * moved or -errno. O_DIRECT as the workers do it (xfer_bounce.c): a read is widened to the
 * aligned span around it (slots are aligned), an unaligned write goes through alt_fd. */
static ssize_t move(int dev, phxfs_io_req_t *r, int is_write, int direct, int alt_fd, inline_ctx_t *c, char *slot,
                    char *target)
{
    int rc = c->stream ? 0 : phx_conn->stream_create(dev, &c->stream);
    if (rc) return rc;
    off_t off = r->f_offset;
    size_t len = r->nbytes, head = direct ? (size_t)off & (PHX_ALIGN - 1) : 0;
    if (!is_write) {
        size_t span = direct ? phx_align_up(head + len, PHX_ALIGN) : len;
        ssize_t got = phx_rw_full(r->fd, 0, slot, span, off - (off_t)head);
        if (got < 0) return got;
        size_t n = (size_t)got > head ? (size_t)got - head : 0;
        if (n > len) n = len;
        if (n == 0) return 0; /* at or past the end of the file */
        rc = phx_conn->htod_async(target, slot + head, n, c->stream);
        /* also after a failed enqueue: nothing may still be copying out of the slot */
        int rc2 = phx_conn->stream_sync(c->stream);
        return rc ? rc : rc2 ? rc2 : (ssize_t)n;
    }
    rc = phx_conn->dtoh_async(slot + head, target, len, c->stream);
    int rc2 = phx_conn->stream_sync(c->stream);
    if (rc || rc2) return rc ? rc : rc2;
    int fd = direct && !aligned2((uint64_t)off, len) ? alt_fd : r->fd;
    return phx_rw_full(fd, 1, slot + head, len, off);
}

int phx_inline_io(phxfs_io_req_t *r, int is_write)
{
    if (phx_lib_init() < 0) return 0;
    const phx_params_t *p = phx_params();
    /* the batch path validates and reports everything this path does not take */
    if (r->device_id < 0 || !phx_conn->is_accelerator || r->nbytes == 0 || r->nbytes > p->inline_bytes ||
        r->f_offset < 0 || r->buf_offset < 0 || (uint64_t)r->f_offset > (uint64_t)INT64_MAX - r->nbytes)
        return 0;
    int fl = fcntl(r->fd, F_GETFL);
    if (fl < 0) return 0;
    int acc = fl & O_ACCMODE;
    if ((is_write && acc == O_RDONLY) || (!is_write && acc == O_WRONLY)) return 0;
    int direct = (fl & O_DIRECT) != 0, err, alt_fd = -1, held = 0, done = 0;
    size_t head = direct ? (size_t)r->f_offset & (PHX_ALIGN - 1) : 0;
    size_t span = direct ? phx_align_up(head + r->nbytes, PHX_ALIGN) : r->nbytes;
    uintptr_t target = 0, hold = 0;
    inline_ctx_t *c = NULL;
    char *slot = NULL;
    ssize_t res = 0;
    phx_device_t *d = phx_device_acquire(r->device_id, &err);
    if (!d) {
        phx_clear_error(); /* the batch path reports it */
        return 0;
    }
    if (d->mode != PHXFS_MODE_BOUNCE || !d->inl || span > d->pinned.slot_bytes) goto out;
    /* held like a batch's request: a deregmem meanwhile is refused with EBUSY */
    if (phx_registry_resolve(&d->reg, (uintptr_t)r->buf, (uint64_t)r->buf_offset, r->nbytes, 1, &target, &hold))
        goto out;
    held = 1;
    if (is_write && direct && !aligned2((uint64_t)r->f_offset, r->nbytes)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", r->fd);
        if ((alt_fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) goto out;
    }
    /* never waits: a caller that finds every context or every free slot taken goes to the workers */
    if (!(c = ctx_take(d->inl)) || !(slot = phx_pinned_take(&d->pinned, 0))) goto out;
    if (phx_conn->enter(d->id, NULL)) goto out;
    res = move(d->id, r, is_write, direct, alt_fd, c, slot, (char *)target);
    phx_conn->leave();
    done = 1;
    r->result = res;
    if (res < 0)
        phx_fail(EIO, "%s of %zu bytes at file offset %lld (fd %d, request 0 of 1) failed: %s", /* as batch.c says it */
                 is_write ? "write" : "read", r->nbytes, (long long)r->f_offset, r->fd, strerror((int)-res));
out:
    if (slot) phx_pinned_give(&d->pinned, slot);
    if (c) ctx_give(d->inl, c);
    if (alt_fd >= 0) close(alt_fd);
    if (held) phx_registry_release(&d->reg, hold);
    phx_device_release(d);
    if (done) return 1;
    /* not taken: whatever failed here the batch path meets again and reports in its words */
    phx_clear_error();
    return 0;
}
