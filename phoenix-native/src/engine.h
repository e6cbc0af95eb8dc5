/* I/O engines: what moves bytes between files and host memory for the workers
 * (engine_sync.c, engine_uring.c). */
#ifndef PHX_ENGINE_H
#define PHX_ENGINE_H
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    int fd;
    int is_write;
    char *buf;
    size_t len;
    off_t off;
    ssize_t result;      /* out: bytes or -errno; short only at EOF */
    /* reads only, optional: a file mapping to MADV_POPULATE_READ before the read, so that the
     * read finds its bytes in the page cache as huge folios (huge_fill.c) */
    char *populate;
    size_t populate_len;
    int populate_res;    /* out: 0, or -errno when the populate failed or did not run (the read runs anyway) */
} phx_rw_t;

typedef struct phx_engine phx_engine_t;
struct phx_engine {
    int kind;
    int (*run)(phx_engine_t *e, phx_rw_t *ops, int n);
    void (*destroy)(phx_engine_t *e);
};
phx_engine_t *phx_engine_sync_create(void);
/* NULL with errno when io_uring is unavailable */
phx_engine_t *phx_engine_uring_create(unsigned depth);
/* One complete transfer with the sync loop; used by both engines */
ssize_t phx_rw_full(int fd, int is_write, char *buf, size_t len, off_t off);
/* op->populate, when set, then the read or write, on this thread; sets op->result */
void phx_rw_run(phx_rw_t *op);

#endif
