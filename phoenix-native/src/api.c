#include "error.h"
#include "phoenix.h"
#include "pool.h"
#include "transfer.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

ssize_t phxfs_read(int fd, int dev, void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset)
{
    phx_clear_error();
    return phx_transfer_one(fd, dev, buf, buf_offset, nbytes, file_offset, 0);
}

ssize_t phxfs_write(int fd, int dev, const void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset)
{
    phx_clear_error();
    return phx_transfer_one(fd, dev, (void *)buf, buf_offset, nbytes, file_offset, 1);
}

int phxfs_read_batch(phxfs_io_req_t *reqs, int n)
{
    phx_clear_error();
    return phx_transfer_batch(reqs, n, 0);
}

int phxfs_write_batch(phxfs_io_req_t *reqs, int n)
{
    phx_clear_error();
    return phx_transfer_batch(reqs, n, 1);
}

static phxfs_batch_t *submit(phxfs_io_req_t *reqs, int n, int is_write)
{
    phx_clear_error();
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(reqs, NULL, n, is_write, 0, NULL, NULL, &err);
    if (!b) errno = -err;
    return (phxfs_batch_t *)b;
}

phxfs_batch_t *phxfs_batch_submit_read(phxfs_io_req_t *reqs, int n) { return submit(reqs, n, 0); }
phxfs_batch_t *phxfs_batch_submit_write(phxfs_io_req_t *reqs, int n) { return submit(reqs, n, 1); }

int phxfs_batch_wait(phxfs_batch_t *h)
{
    if (!h) return phx_fail(EINVAL, "batch_wait: handle is NULL");
    phx_clear_error();
    return phx_batch_state_wait((phx_batch_state_t *)h);
}

int phxfs_batch_poll(phxfs_batch_t *h)
{
    if (!h) return phx_fail(EINVAL, "batch_poll: handle is NULL");
    return phx_batch_state_done((phx_batch_state_t *)h);
}

int64_t phxfs_batch_bytes_done(phxfs_batch_t *h)
{
    if (!h) return phx_fail(EINVAL, "batch_bytes_done: handle is NULL");
    return phx_batch_state_bytes((phx_batch_state_t *)h);
}

int phxfs_batch_times(phxfs_batch_t *h, int64_t times[3])
{
    if (!h || !times) return phx_fail(EINVAL, "batch_times: %s is NULL", h ? "times" : "handle");
    phx_batch_state_t *b = (phx_batch_state_t *)h;
    times[0] = atomic_load_explicit(&b->t_queued, memory_order_relaxed);
    times[1] = atomic_load_explicit(&b->t_first, memory_order_relaxed);
    times[2] = atomic_load_explicit(&b->t_finished, memory_order_relaxed);
    return 0;
}

int phxfs_batch_destroy(phxfs_batch_t *h)
{
    if (!h) return phx_fail(EINVAL, "batch_destroy: handle is NULL");
    phx_batch_state_free((phx_batch_state_t *)h);
    return 0;
}

/* Callers' completion callbacks run on one completion thread, never on a worker: a callback
 * that blocks, or that runs more Phoenix I/O and waits for it, then delays other callbacks
 * but never the transfers themselves (on a worker it could stall or deadlock the pool). */
typedef struct user_cb {
    phxfs_batch_done_fn fn;
    void *arg;
    phx_batch_state_t *b;
    int result;
    struct user_cb *next;
} user_cb_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    user_cb_t *head, *tail;
    pthread_t th;
    int started;
} done_q = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *completion_main(void *unused)
{
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&done_q.lock);
        while (!done_q.head) pthread_cond_wait(&done_q.cond, &done_q.lock);
        user_cb_t *u = done_q.head;
        done_q.head = u->next;
        if (!done_q.head) done_q.tail = NULL;
        pthread_mutex_unlock(&done_q.lock);
        u->fn((phxfs_batch_t *)u->b, u->result, u->arg);
        free(u);
    }
    return NULL;
}

/* Started with the first callback batch; returns -errno when no thread can be had. */
static int completion_start(void)
{
    pthread_mutex_lock(&done_q.lock);
    int rc = 0;
    if (!done_q.started) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&done_q.th, &a, completion_main, NULL) ? -EAGAIN : 0;
        pthread_attr_destroy(&a);
        done_q.started = rc == 0;
    }
    pthread_mutex_unlock(&done_q.lock);
    return rc;
}

static void user_cb(phx_batch_state_t *b, int result, void *arg)
{
    user_cb_t *u = arg;
    u->b = b;
    u->result = result;
    u->next = NULL;
    pthread_mutex_lock(&done_q.lock);
    if (done_q.tail) done_q.tail->next = u; else done_q.head = u;
    done_q.tail = u;
    pthread_cond_signal(&done_q.cond);
    pthread_mutex_unlock(&done_q.lock);
}

phxfs_batch_t *phxfs_batch_submit(phxfs_io_req_t *reqs, const uint8_t *ops, int n, phxfs_batch_done_fn done, void *arg)
{
    phx_clear_error();
    user_cb_t *u = NULL;
    if (done) {
        int rc = completion_start();
        if (rc) { errno = -phx_fail(-rc, "batch_submit: cannot start the completion thread"); return NULL; }
        u = malloc(sizeof *u);
        if (!u) { errno = -phx_fail(ENOMEM, "batch_submit: out of memory"); return NULL; }
        *u = (user_cb_t){done, arg, NULL, 0, NULL};
    }
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(reqs, ops, n, 0, 0, u ? user_cb : NULL, u, &err);
    if (!b) {
        free(u);
        errno = -err;
    }
    return (phxfs_batch_t *)b;
}

int phxfs_batch_cancel(phxfs_batch_t *h)
{
    if (!h) return phx_fail(EINVAL, "batch_cancel: handle is NULL");
    phx_clear_error();
    return phx_batch_state_cancel((phx_batch_state_t *)h);
}
