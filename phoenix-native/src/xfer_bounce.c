/* Bounce transfers: file <-> pinned slot <-> device, through the device's
 * pinned pool. Each worker keeps a ring of slots in flight per device. A read
 * leaves its host->device copy in flight and is retired when the ring comes
 * back to it, so reading slot k overlaps copying slot k-1. A write starts its
 * device->host copy and is retired (the pwrite) when the ring comes back, so
 * the copy of slot k+1 overlaps the pwrite of slot k: writes pipeline as reads do.
 * A slot goes back to the pool the moment its entry retires, before the task
 * is reported done, so a finished batch never leaves slots behind. */
#include "align.h"
#include "device.h"
#include "device_xfer.h"
#include "engine.h"
#include "error.h"
#include "huge_fill.h"
#include "lifecycle.h"
#include "params.h"
#include "phoenix.h"
#include "pinned.h"
#include "pool.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define RING_MAX 64

struct phx_wctx {
    phx_device_t *d;
    void *stream;
    int nring, next, inflight;
    void *ev[RING_MAX];
    phx_task_t *task[RING_MAX];
    char *slot[RING_MAX];
    size_t len[RING_MAX];   /* bytes the entry moves: read n, or write length */
};

struct phx_bounce_xfer {
    int idx;
    int pending;                       /* entries in flight, over every device */
    phx_wctx_t *active[PHX_MAX_DEVICES];
    phx_huge_fill_t huge;              /* cold buffered reads fill the page cache in huge folios */
};

phx_bounce_xfer_t *phx_bounce_xfer_new(int worker_index, int huge_fill)
{
    phx_bounce_xfer_t *x = calloc(1, sizeof *x);
    if (x) {
        x->idx = worker_index;
        x->huge.enabled = huge_fill;
    }
    return x;
}

void phx_bounce_xfer_free(phx_bounce_xfer_t *x) { free(x); }

int phx_bounce_pending(const phx_bounce_xfer_t *x) { return x->pending; }

phx_wctx_t *phx_wctx_new(phx_device_t *d, int *err)
{
    int dev = d->id;
    phx_wctx_t *c = calloc(1, sizeof *c);
    if (!c) { *err = phx_fail(ENOMEM, "device %d: out of memory", dev); return NULL; }
    const phx_params_t *p = phx_params();
    c->d = d;
    c->nring = p->slots > RING_MAX ? RING_MAX : p->slots;
    int rc = phx_conn->enter(dev, NULL);
    if (rc) { free(c); *err = rc; return NULL; }
    rc = phx_conn->stream_create(dev, &c->stream);
    for (int i = 0; !rc && i < c->nring; i++) rc = phx_conn->event_create(&c->ev[i]);
    phx_conn->leave();
    if (rc) {
        phx_wctx_free(c);
        *err = rc;
        return NULL;
    }
    return c;
}

void phx_wctx_free(phx_wctx_t *c)
{
    if (!c) return;
    for (int i = 0; i < c->nring; i++)
        if (c->ev[i]) phx_conn->event_destroy(c->ev[i]);
    if (c->stream) phx_conn->stream_destroy(c->stream);
    free(c);
}

static int aligned2(uint64_t a, uint64_t b) { return ((a | b) & (PHX_ALIGN - 1)) == 0; }

/* Waits for entry i, does a write's pwrite, returns the slot, reports the task. */
static void retire(phx_bounce_xfer_t *x, phx_wctx_t *c, int i)
{
    phx_task_t *t = c->task[i];
    if (!t) return;
    phx_req_state_t *rs = t->rs;
    ssize_t res = phx_conn->event_sync(c->ev[i]);
    if (res == 0) res = (ssize_t)c->len[i];
    if (res >= 0 && rs->is_write) {
        off_t off = rs->req->f_offset + (off_t)t->rel;
        size_t head = rs->direct ? (size_t)off & (PHX_ALIGN - 1) : 0;
        int fd = rs->direct && !aligned2((uint64_t)off, t->len) ? rs->alt_fd : rs->req->fd;
        res = phx_rw_full(fd, 1, c->slot[i] + head, t->len, off);
    }
    c->task[i] = NULL;
    phx_pinned_give(phx_slot_pool(c->d), c->slot[i]);
    c->slot[i] = NULL;
    c->inflight--;
    x->pending--;
    if (!c->inflight) x->active[c->d->id] = NULL;
    phx_task_done(t, res);
}

/* Oldest first. The last retire may finish the last batch on the device, which may then
 * close and free c: c is not touched after it. */
static void drain_ctx(phx_bounce_xfer_t *x, phx_wctx_t *c)
{
    int n = c->nring, start = c->next;
    for (int k = 0; k < n; k++) {
        int i = (start + k) % n;
        if (!c->task[i]) continue;
        int last = c->inflight == 1;
        retire(x, c, i);
        if (last) return;
    }
}

void phx_bounce_drain(phx_bounce_xfer_t *x)
{
    for (int d = 0; d < PHX_MAX_DEVICES && x->pending; d++) {
        phx_wctx_t *c = x->active[d];
        if (!c) continue;
        int dev = c->d->id;
        int rc = phx_conn->enter(dev, NULL);
        drain_ctx(x, c);
        if (!rc) phx_conn->leave();
    }
}

void phx_bounce_task(phx_bounce_xfer_t *x, phx_task_t *t)
{
    phx_req_state_t *rs = t->rs;
    phx_device_t *d = rs->dev;
    phx_wctx_t *c = d->wctx[x->idx];
    int rc = phx_conn->enter(d->id, NULL);
    if (rc) { phx_task_done(t, rc); return; }
    int i = c->next;
    c->next = (i + 1) % c->nring;
    retire(x, c, i);
    phx_pinned_pool_t *pool = phx_slot_pool(d);
    char *slot = phx_pinned_take(pool, 0);
    if (!slot) {
        /* the pool is short: give back what this worker holds before waiting for others */
        phx_bounce_drain(x);
        slot = phx_pinned_take(pool, 1);
    }
    /* staging: the slot is device memory seen through the module's window; the copies run
     * device to device, from the same memory seen as the connector's pointer */
    int staging = d->mode == PHXFS_MODE_STAGING;
    char *slot_dev = staging ? d->stage_dev + (slot - d->stage_win) : slot;
    char *dev_ptr = (char *)rs->target + t->rel;
    off_t off = rs->req->f_offset + (off_t)t->rel;
    /* slots are aligned, so with O_DIRECT only the file span needs widening */
    size_t head = rs->direct ? (size_t)off & (PHX_ALIGN - 1) : 0;
    size_t len = t->len;
    if (!rs->is_write) {
        phx_rw_t op = {.fd = rs->req->fd, .buf = slot + head, .len = t->len, .off = off};
        if (rs->direct)
            op = (phx_rw_t){.fd = op.fd, .buf = slot, .len = phx_align_up(head + t->len, PHX_ALIGN), .off = off - (off_t)head};
        else
            phx_huge_fill(&x->huge, op.fd, off, t->len);
        op.result = phx_rw_full(op.fd, 0, op.buf, op.len, op.off);
        ssize_t n = op.result < 0 ? op.result : (size_t)op.result > head ? (ssize_t)((size_t)op.result - head) : 0;
        if (n > (ssize_t)t->len) n = (ssize_t)t->len;
        if (n <= 0) {
            phx_pinned_give(pool, slot);
            phx_conn->leave();
            phx_task_done(t, n);
            return;
        }
        len = (size_t)n;
        rc = staging ? phx_conn->dtod_async(dev_ptr, slot_dev + head, len, c->stream)
                     : phx_conn->htod_async(dev_ptr, slot + head, len, c->stream);
    } else {
        rc = staging ? phx_conn->dtod_async(slot_dev + head, dev_ptr, len, c->stream)
                     : phx_conn->dtoh_async(slot + head, dev_ptr, len, c->stream);
    }
    if (!rc) rc = phx_conn->event_record(c->ev[i], c->stream);
    if (rc) {
        /* the copy may still be queued: the slot goes back only once the stream is idle */
        phx_conn->stream_sync(c->stream);
        phx_pinned_give(pool, slot);
        phx_conn->leave();
        phx_task_done(t, rc);
        return;
    }
    c->task[i] = t;
    c->slot[i] = slot;
    c->len[i] = len;
    c->inflight++;
    x->pending++;
    x->active[d->id] = c;
    phx_conn->leave();
}
