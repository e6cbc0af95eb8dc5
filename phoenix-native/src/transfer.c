/* A caller's synchronous transfers: a single small device request runs on the calling
 * thread (xfer_inline.c); anything else is a batch for the workers, waited for here. */
#include "transfer.h"
#include "error.h"
#include "phoenix.h"
#include "pool.h"
#include <errno.h>
#include <sys/types.h>

ssize_t phx_transfer_one(int fd, int dev, void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset, int is_write)
{
    if (nbytes < 0) return phx_fail(EINVAL, "%s: negative length %zd", is_write ? "write" : "read", nbytes);
    phxfs_io_req_t req = {fd, dev, buf, buf_offset, (size_t)nbytes, file_offset, 0};
    if (phx_inline_io(&req, is_write)) return req.result;
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(&req, NULL, 1, is_write, 1, NULL, NULL, &err);
    if (!b) return err;
    phx_batch_state_wait(b);
    phx_batch_state_free(b);
    return req.result;
}

int phx_transfer_batch(phxfs_io_req_t *reqs, int n, int is_write)
{
    if (n == 1 && reqs && phx_inline_io(reqs, is_write)) return reqs->result < 0;
    int err = 0;
    phx_batch_state_t *b = phx_batch_start(reqs, NULL, n, is_write, 1, NULL, NULL, &err);
    if (!b) return err;
    int failed = phx_batch_state_wait(b);
    phx_batch_state_free(b);
    return failed;
}
