#include "internal.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static ssize_t single(int fd, int dev, void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset, int is_write)
{
    phx_clear_error();
    if (nbytes < 0) return phx_fail(EINVAL, "%s: negative length %zd", is_write ? "write" : "read", nbytes);
    phxfs_io_req_t req = {fd, dev, buf, buf_offset, (size_t)nbytes, file_offset, 0};
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(&req, NULL, 1, is_write, 1, NULL, NULL, &err);
    if (!b) return err;
    phx_batch_state_wait(b);
    phx_batch_state_free(b);
    return req.result;
}

ssize_t phxfs_read(int fd, int dev, void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset)
{
    return single(fd, dev, buf, buf_offset, nbytes, file_offset, 0);
}

ssize_t phxfs_write(int fd, int dev, const void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset)
{
    return single(fd, dev, (void *)buf, buf_offset, nbytes, file_offset, 1);
}

static int run_batch(phxfs_io_req_t *reqs, int n, int is_write)
{
    phx_clear_error();
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(reqs, NULL, n, is_write, 1, NULL, NULL, &err);
    if (!b) return err;
    int failed = phx_batch_state_wait(b);
    phx_batch_state_free(b);
    return failed;
}

int phxfs_read_batch(phxfs_io_req_t *reqs, int n) { return run_batch(reqs, n, 0); }
int phxfs_write_batch(phxfs_io_req_t *reqs, int n) { return run_batch(reqs, n, 1); }

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

int phxfs_batch_destroy(phxfs_batch_t *h)
{
    if (!h) return phx_fail(EINVAL, "batch_destroy: handle is NULL");
    phx_batch_state_free((phx_batch_state_t *)h);
    return 0;
}

/* The public callback takes the public handle; the internal one the state. */
typedef struct {
    phxfs_batch_done_fn fn;
    void *arg;
} user_cb_t;

static void user_cb(phx_batch_state_t *b, int result, void *arg)
{
    user_cb_t u = *(user_cb_t *)arg;
    free(arg);
    u.fn((phxfs_batch_t *)b, result, u.arg);
}

phxfs_batch_t *phxfs_batch_submit(phxfs_io_req_t *reqs, const uint8_t *ops, int n, phxfs_batch_done_fn done, void *arg)
{
    phx_clear_error();
    user_cb_t *u = NULL;
    if (done) {
        u = malloc(sizeof *u);
        if (!u) { errno = -phx_fail(ENOMEM, "batch_submit: out of memory"); return NULL; }
        *u = (user_cb_t){done, arg};
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
