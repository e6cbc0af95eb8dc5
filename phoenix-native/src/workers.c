/* The worker pool: a queue of batches and the threads that take tasks from
 * it. A worker takes a fair share of host tasks at once (they go to the
 * engine together) and bounce tasks singly (each is pipelined through the
 * worker's slots); it drains what it has in flight whenever the queue runs dry. */
#include "engine.h"
#include "error.h"
#include "params.h"
#include "phoenix.h"
#include "pool.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct phx_worker {
    pthread_t th;
    phx_host_xfer_t host;
    phx_bounce_xfer_t *bounce;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    phx_batch_state_t *head, *tail;
    int n, stop, engine;
    int queue_depth;
    phx_worker_t *w;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static atomic_int uring_warned;

int phx_pool_workers(void) { return pool.n; }
int phx_pool_engine(void) { return pool.engine; }

static void pop_head_locked(void)
{
    pool.head = pool.head->qnext;
    if (!pool.head) pool.tail = NULL;
}

static void *worker_main(void *arg)
{
    phx_worker_t *w = arg;
    phx_task_t *ts[PHX_MAX_GRAB];
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        while (!pool.head && !pool.stop) {
            if (phx_bounce_pending(w->bounce)) {
                pthread_mutex_unlock(&pool.lock);
                phx_bounce_drain(w->bounce);
                pthread_mutex_lock(&pool.lock);
                continue;
            }
            pthread_cond_wait(&pool.cond, &pool.lock);
        }
        if (!pool.head) {
            pthread_mutex_unlock(&pool.lock);
            break;
        }
        phx_batch_state_t *b = pool.head;
        if (b->ntasks == 0) {
            /* nothing to move, but the callback still belongs on a library thread */
            pop_head_locked();
            pthread_mutex_unlock(&pool.lock);
            phx_batch_finish(b);
            continue;
        }
        size_t left = b->ntasks - b->next;
        size_t share = left / (size_t)pool.n;
        int cap = pool.queue_depth < PHX_MAX_GRAB ? pool.queue_depth : PHX_MAX_GRAB;
        int k = 0;
        if (b->next == 0) atomic_store_explicit(&b->t_first, phx_now_ns(), memory_order_relaxed);
        do {
            ts[k++] = &b->tasks[b->next++];
        } while (k < cap && (size_t)k < share && b->next < b->ntasks && !ts[k - 1]->rs->bounce &&
                 !b->tasks[b->next].rs->bounce);
        if (b->next == b->ntasks) pop_head_locked();
        int cancelled = b->cancelled;
        pthread_mutex_unlock(&pool.lock);
        if (cancelled) {
            for (int i = 0; i < k; i++) phx_task_done(ts[i], -ECANCELED);
        } else if (ts[0]->rs->bounce) {
            phx_bounce_task(w->bounce, ts[0]);
        } else {
            phx_host_tasks(&w->host, ts, k);
        }
    }
    phx_bounce_drain(w->bounce);
    return NULL;
}

int phx_pool_start(const phx_params_t *p)
{
    int n = p->workers;
    pool.queue_depth = p->queue_depth;
    pool.w = calloc((size_t)n, sizeof *pool.w);
    if (!pool.w) return phx_fail(ENOMEM, "worker pool: out of memory");
    pool.engine = p->engine;
    for (int i = 0; i < n; i++) {
        phx_worker_t *w = &pool.w[i];
        if (pool.engine == PHXFS_ENGINE_URING) {
            w->host.eng = phx_engine_uring_create(256);
            if (!w->host.eng) {
                int e = errno;
                phx_warn_once(&uring_warned, "io_uring unavailable (%s%s); using the sync engine", strerror(e),
                              e == EPERM ? ", see /proc/sys/kernel/io_uring_disabled or seccomp" : "");
                pool.engine = PHXFS_ENGINE_SYNC;
                for (int j = 0; j < i; j++) {
                    pool.w[j].host.eng->destroy(pool.w[j].host.eng);
                    pool.w[j].host.eng = phx_engine_sync_create();
                }
            }
        }
        if (!w->host.eng) w->host.eng = phx_engine_sync_create();
        w->host.fresh.enabled = p->fresh_fill;
        w->host.huge.enabled = p->huge_fill;
        w->bounce = phx_bounce_xfer_new(i, p->huge_fill);
        if (!w->host.eng || !w->bounce) return phx_fail(ENOMEM, "worker pool: out of memory");
    }
    for (int i = 0; i < n; i++) {
        if (pthread_create(&pool.w[i].th, NULL, worker_main, &pool.w[i]))
            return phx_fail(EAGAIN, "worker pool: cannot start thread %d", i);
        pool.n++;
    }
    return 0;
}

void phx_pool_enqueue(phx_batch_state_t *b)
{
    pthread_mutex_lock(&pool.lock);
    b->qnext = NULL;
    if (pool.tail) pool.tail->qnext = b; else pool.head = b;
    pool.tail = b;
    /* one task needs one worker; waking them all only makes them contend for the lock */
    if (b->ntasks <= 1) pthread_cond_signal(&pool.cond);
    else pthread_cond_broadcast(&pool.cond);
    pthread_mutex_unlock(&pool.lock);
}

int phx_pool_cancel(phx_batch_state_t *b)
{
    pthread_mutex_lock(&pool.lock);
    int count = 0;
    if (!b->cancelled) {
        b->cancelled = 1;
        /* tasks of a request need not be adjacent (writes are interleaved): count each once */
        for (size_t i = b->next; i < b->ntasks; i++)
            if (!b->tasks[i].rs->cancel_counted) {
                b->tasks[i].rs->cancel_counted = 1;
                count++;
            }
    }
    pthread_mutex_unlock(&pool.lock);
    return count;
}
