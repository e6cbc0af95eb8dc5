#include "internal.h"
#include <stdlib.h>
#include <unistd.h>

ssize_t phx_rw_full(int fd, int is_write, char *buf, size_t len, off_t off)
{
    size_t done = 0;
    while (done < len) {
        size_t n = len - done;
        size_t cap = phx_max_io_bytes;
        if (n > cap) n = cap;
        ssize_t r = is_write ? pwrite(fd, buf + done, n, off + (off_t)done)
                             : pread(fd, buf + done, n, off + (off_t)done);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (r == 0) {
            if (is_write) return -EIO;
            break; /* end of file */
        }
        done += (size_t)r;
    }
    return (ssize_t)done;
}

static int sync_run(phx_engine_t *e, phx_rw_t *ops, int n)
{
    (void)e;
    for (int i = 0; i < n; i++)
        ops[i].result = phx_rw_full(ops[i].fd, ops[i].is_write, ops[i].buf, ops[i].len, ops[i].off);
    return 0;
}

static void sync_destroy(phx_engine_t *e) { free(e); }

phx_engine_t *phx_engine_sync_create(void)
{
    phx_engine_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->kind = PHXFS_ENGINE_SYNC;
    e->run = sync_run;
    e->destroy = sync_destroy;
    return e;
}
