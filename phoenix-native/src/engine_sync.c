#include "engine.h"
#include "huge_fill.h"
#include "params.h"
#include "phoenix.h"
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
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

void phx_rw_run(phx_rw_t *op)
{
    if (op->populate) op->populate_res = madvise(op->populate, op->populate_len, PHX_MADV_POPULATE_READ) ? -errno : 0;
    op->result = phx_rw_full(op->fd, op->is_write, op->buf, op->len, op->off);
}

static int sync_run(phx_engine_t *e, phx_rw_t *ops, int n)
{
    (void)e;
    for (int i = 0; i < n; i++) phx_rw_run(&ops[i]);
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
