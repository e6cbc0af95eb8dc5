/* The worker pool (workers.c), batches (batch.c) and the two transfer kinds
 * the workers run (xfer_host.c, xfer_bounce.c). */
#ifndef PHX_POOL_H
#define PHX_POOL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "phoenix.h"
#include "device.h"
#include "engine.h"
#include "fresh_fill.h"
#include "huge_fill.h"
#include "params.h"

#define PHX_MAX_GRAB 64

typedef struct phx_batch_state phx_batch_state_t;
typedef struct phx_worker phx_worker_t;
typedef void (*phx_batch_cb)(phx_batch_state_t *b, int result, void *arg);

typedef struct {
    phxfs_io_req_t *req;
    int is_write;
    atomic_int err;
    _Atomic int64_t end;   /* lowest file position where a read stopped short */
    int direct;
    int alt_fd;            /* buffered reopen for unaligned writes to O_DIRECT files */
    int bounce;
    uintptr_t target;
    uintptr_t hold_base;
    phx_device_t *dev;     /* with a use taken, until the batch finishes */
    int cancel_counted;    /* pool lock */
} phx_req_state_t;

typedef struct {
    phx_req_state_t *rs;
    phx_batch_state_t *b;
    uint64_t rel;
    size_t len;
} phx_task_t;

struct phx_batch_state {
    int n;
    phx_req_state_t *rs;
    phx_task_t *tasks;
    size_t ntasks, next;   /* next: first task no worker has taken (pool lock) */
    int cancelled;         /* pool lock */
    atomic_size_t remaining;
    _Atomic int64_t bytes_done;
    atomic_int refs;       /* the owner's handle + the finisher's */
    atomic_int released;   /* the requests' holds and device uses are given back */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, result;      /* under lock */
    char msg[512];         /* the first failure, for the waiter's phxfs_last_error */
    /* CLOCK_MONOTONIC ns: queued, first task taken, last task ended (phxfs_batch_times) */
    _Atomic int64_t t_queued, t_first, t_finished;
    phx_batch_cb cb;
    void *cb_arg;
    phx_batch_state_t *qnext;
};

/* CLOCK_MONOTONIC in nanoseconds, the clock phxfs_batch_times reports */
static inline int64_t phx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* batch.c */
/* Runs reqs (ops[i] PHXFS_OP_*, ops NULL: all is_write) and returns without
 * waiting; may_inline lets small host-memory batches complete on the calling
 * thread before returning. cb runs once when the batch finishes. */
phx_batch_state_t *phx_batch_start(phxfs_io_req_t *reqs, const uint8_t *ops, int n, int is_write, int may_inline,
                                   phx_batch_cb cb, void *cb_arg, int *err);
int phx_batch_state_wait(phx_batch_state_t *b);
int phx_batch_state_done(phx_batch_state_t *b);
int64_t phx_batch_state_bytes(phx_batch_state_t *b);
int phx_batch_state_cancel(phx_batch_state_t *b);
void phx_batch_state_free(phx_batch_state_t *b);
/* a task has finished: res bytes or -errno */
void phx_task_done(phx_task_t *t, ssize_t res);

/* workers.c */
int phx_pool_start(const phx_params_t *p);
int phx_pool_workers(void);
int phx_pool_engine(void);
void phx_pool_enqueue(phx_batch_state_t *b);
/* Marks b cancelled; returns how many requests still had work no worker had taken. */
int phx_pool_cancel(phx_batch_state_t *b);
/* the last task finished: results, releases, wake-ups and the callback */
void phx_batch_finish(phx_batch_state_t *b);

/* xfer_host.c: straight into host (or host-connector device) memory */
typedef struct {
    phx_engine_t *eng;
    char *scratch;
    size_t scratch_len;
    phx_fresh_t fresh; /* reads into pages that do not exist yet (workers only) */
    phx_huge_fill_t huge; /* cold buffered reads fill the page cache in huge folios (workers only) */
} phx_host_xfer_t;
void phx_host_tasks(phx_host_xfer_t *x, phx_task_t **ts, int k);
void phx_host_xfer_free(phx_host_xfer_t *x);

/* xfer_bounce.c: pinned slots of the device pool + async copies, pipelined */
typedef struct phx_bounce_xfer phx_bounce_xfer_t;
phx_bounce_xfer_t *phx_bounce_xfer_new(int worker_index, int huge_fill);
void phx_bounce_task(phx_bounce_xfer_t *x, phx_task_t *t);
int phx_bounce_pending(const phx_bounce_xfer_t *x);
/* retires everything in flight */
void phx_bounce_drain(phx_bounce_xfer_t *x);
void phx_bounce_xfer_free(phx_bounce_xfer_t *x);
/* xfer_inline.c: small synchronous device transfers on the caller's thread, through a
 * bounded set of copy contexts per device (phx_inline_t, device_xfer.h) and the device's
 * pinned pool. 1: r ran here (r->result set, and on failure the error message); 0: not taken, run it as
 * a batch (too large, not bounce mode, not valid, or every context or slot busy) */
int phx_inline_io(phxfs_io_req_t *r, int is_write);

#endif
