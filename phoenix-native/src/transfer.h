/* A caller's synchronous transfers (transfer.c): the work behind phxfs_read, phxfs_write
 * and their batch forms, for the API and for internal callers alike. */
#ifndef PHX_TRANSFER_H
#define PHX_TRANSFER_H
#include <sys/types.h>
#include "phoenix.h"

/* One read or write, waited for: bytes moved (short only at EOF) or -errno. */
ssize_t phx_transfer_one(int fd, int dev, void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset, int is_write);
/* n requests of one direction, waited for: 0, or nonzero when any failed (see each result). */
int phx_transfer_batch(phxfs_io_req_t *reqs, int n, int is_write);

#endif
