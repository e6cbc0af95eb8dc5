/* io_uring engine: one ring per worker; every op of a call is in flight at
 * once (up to the ring depth) and short completions are resubmitted for the
 * remainder, so the result matches the sync loop byte for byte. An op's
 * populate goes first as a linked madvise, which io_uring runs on its own
 * workers: the batch's reads keep their depth, where populating on the
 * worker thread would let one populate at a time hold the others back. */
#include "engine.h"
#include "huge_fill.h"
#include "params.h"
#include "phoenix.h"
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
/* user_data of an op's populate: its index with this bit */
#define POPULATE_TAG ((__u64)1 << 62)

typedef struct {
    phx_engine_t base;
    struct io_uring ring;
    unsigned depth;
} uring_engine_t;

typedef struct {
    size_t done;
    int retries;
} progress_t;

static void prep(struct io_uring_sqe *sqe, phx_rw_t *op, size_t done, int idx)
{
    size_t n = op->len - done;
    size_t cap = phx_max_io_bytes;
    if (n > cap) n = cap;
    if (n > 0x7ffff000u) n = 0x7ffff000u; /* sqe len is 32-bit */
    if (op->is_write)
        io_uring_prep_write(sqe, op->fd, op->buf + done, (unsigned)n, (__u64)(op->off + (off_t)done));
    else
        io_uring_prep_read(sqe, op->fd, op->buf + done, (unsigned)n, (__u64)(op->off + (off_t)done));
    io_uring_sqe_set_data64(sqe, (__u64)idx);
}

static int uring_run(phx_engine_t *e, phx_rw_t *ops, int n)
{
    uring_engine_t *u = (uring_engine_t *)e;
    progress_t stack_prog[64];
    progress_t *prog = n <= 64 ? stack_prog : calloc((size_t)n, sizeof *prog);
    if (!prog) return -ENOMEM;
    /* inflight: ops whose read is in the ring, against the depth; cqes: completions owed */
    int next = 0, inflight = 0, cqes = 0;
    for (int i = 0; i < n; i++) {
        prog[i].done = 0;
        prog[i].retries = 0;
        ops[i].result = 0;
        ops[i].populate_res = -ECANCELED; /* until its madvise completes (never, on the fallback) */
    }
    while (next < n || cqes > 0) {
        while (next < n && inflight < (int)u->depth) {
            phx_rw_t *op = &ops[next];
            if (op->len == 0) { next++; continue; }
            int pair = op->populate != NULL; /* populate_len fits in 32 bits (huge_fill.c) */
            if (io_uring_sq_space_left(&u->ring) < (unsigned)(pair ? 2 : 1)) break;
            if (pair) {
                struct io_uring_sqe *m = io_uring_get_sqe(&u->ring);
                io_uring_prep_madvise(m, op->populate, (__u32)op->populate_len, PHX_MADV_POPULATE_READ);
                io_uring_sqe_set_data64(m, (__u64)next | POPULATE_TAG);
                /* the read starts once the populate is done; a failed populate (past the end
                 * of the file) does not break the link on Linux 6.18, and a kernel where it did
                 * would hand the read back as -ECANCELED, which is resubmitted below */
                m->flags |= IOSQE_IO_LINK;
                cqes++;
            }
            prep(io_uring_get_sqe(&u->ring), op, 0, next);
            next++;
            inflight++;
            cqes++;
        }
        if (cqes == 0) break;
        int rc = io_uring_submit_and_wait(&u->ring, 1);
        if (rc < 0 && rc != -EINTR) {
            /* ring is unusable: finish the rest synchronously so no op is lost */
            /* every completion first: a populate may still be running in the mapping the
             * caller unmaps after this returns */
            struct io_uring_cqe *c;
            while (cqes > 0) {
                int w = io_uring_wait_cqe(&u->ring, &c);
                if (w == -EINTR) continue;
                if (w) break;
                io_uring_cqe_seen(&u->ring, c);
                cqes--;
            }
            for (int i = 0; i < n; i++)
                ops[i].result = phx_rw_full(ops[i].fd, ops[i].is_write, ops[i].buf, ops[i].len, ops[i].off);
            if (prog != stack_prog) free(prog);
            return 0;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&u->ring, head, cqe) {
            seen++;
            __u64 data = io_uring_cqe_get_data64(cqe);
            cqes--;
            if (data & POPULATE_TAG) {
                ops[data & ~POPULATE_TAG].populate_res = cqe->res;
                continue;
            }
            int i = (int)data;
            phx_rw_t *op = &ops[i];
            int res = cqe->res;
            inflight--;
            if (res == -EINTR || res == -EAGAIN || res == -ECANCELED) {
                /* Interrupted, not failed: signals reaching an io-wq worker cancel its work
                 * (-ECANCELED) as they interrupt a syscall. We never cancel our own requests, so
                 * resubmit; past a bound, finish the op with the sync loop. */
                if (++prog[i].retries > 64) {
                    ssize_t r = phx_rw_full(op->fd, op->is_write, op->buf + prog[i].done, op->len - prog[i].done,
                                            op->off + (off_t)prog[i].done);
                    op->result = r < 0 ? r : (ssize_t)(prog[i].done + (size_t)r);
                    continue;
                }
                res = 0; /* resubmit the same range */
            } else if (res < 0) {
                op->result = res;
                continue;
            } else if (res == 0) {
                op->result = op->is_write ? -EIO : (ssize_t)prog[i].done;
                continue;
            }
            prog[i].done += (size_t)res;
            if (prog[i].done >= op->len) {
                op->result = (ssize_t)prog[i].done;
                continue;
            }
            struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
            if (!sqe) {
                /* ring full of fresh submissions: finish this one synchronously */
                ssize_t r = phx_rw_full(op->fd, op->is_write, op->buf + prog[i].done,
                                        op->len - prog[i].done, op->off + (off_t)prog[i].done);
                op->result = r < 0 ? r : (ssize_t)(prog[i].done + (size_t)r);
                continue;
            }
            prep(sqe, op, prog[i].done, i);
            inflight++;
            cqes++;
        }
        io_uring_cq_advance(&u->ring, seen);
    }
    if (prog != stack_prog) free(prog);
    return 0;
}

static void uring_destroy(phx_engine_t *e)
{
    uring_engine_t *u = (uring_engine_t *)e;
    io_uring_queue_exit(&u->ring);
    free(u);
}

phx_engine_t *phx_engine_uring_create(unsigned depth)
{
    uring_engine_t *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    int rc = io_uring_queue_init(depth, &u->ring, 0);
    if (rc < 0) {
        free(u);
        errno = -rc;
        return NULL;
    }
    u->depth = depth;
    u->base.kind = PHXFS_ENGINE_URING;
    u->base.run = uring_run;
    u->base.destroy = uring_destroy;
    return &u->base;
}
