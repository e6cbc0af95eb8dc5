/* Reads into host pages that do not exist yet, without the kernel zeroing them first
 * (fresh_fill.c). One per worker thread; zero-initialised means "not opened yet". */
#ifndef PHX_FRESH_FILL_H
#define PHX_FRESH_FILL_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int enabled; /* the fresh_fill setting, frozen at pool start */
    int state;   /* 0: userfaultfd not opened yet, 1: open, -1: unavailable here */
    int uffd;
    int maps;    /* /proc/self/maps, for PROCMAP_QUERY */
    size_t page;
    char *stage; /* a small buffer the file is read into, still in the CPU cache when copied */
} phx_fresh_t;

/* Bytes placed by UFFDIO_COPY since the library started (phxfs_get_config("fresh_fill_bytes")). */
extern _Atomic uint64_t phx_fresh_bytes;

/* Reads len bytes of fd at off into dst when dst's page-aligned interior is large and has no
 * page yet: returns 1 and the read's result (bytes read, short only at end of file, or
 * -errno) in *result. Returns 0, having done nothing, when the plain read should do it. */
int phx_fresh_read(phx_fresh_t *f, int fd, char *dst, size_t len, off_t off, ssize_t *result);
void phx_fresh_free(phx_fresh_t *f);

#endif
