/* Cold buffered reads: their range brought into the page cache in huge folios first
 * (huge_fill.c). One per worker thread; zero-initialised means "not tried yet". */
#ifndef PHX_HUGE_FILL_H
#define PHX_HUGE_FILL_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* MADV_POPULATE_READ (Linux 5.14), for headers older than that */
#define PHX_MADV_POPULATE_READ 22

typedef struct {
    int enabled; /* the huge_fill setting, frozen at pool start */
    int state;   /* 0: not tried yet, 1: works here, -1: refused here (kernel, seccomp) */
} phx_huge_fill_t;

/* A cold interior of a read, mapped for MADV_POPULATE_READ at `at` (len bytes, at most 1 GiB),
 * inside a reservation that phx_huge_fill_unmap gives back. */
typedef struct {
    char *reservation;
    size_t reservation_len;
    char *at;
    size_t len;
} phx_huge_span_t;

/* Bytes brought into the page cache this way since the library started
 * (phxfs_get_config("huge_fill_bytes")). */
extern _Atomic uint64_t phx_huge_fill_bytes;

/* Before a buffered read of len bytes of fd at off: 1 when the range holds at least one whole
 * 2 MiB-aligned piece of the file and that interior is not in the page cache, with *s the
 * interior mapped so that populating it reads it in as huge folios; 0 (nothing to undo) when
 * there is nothing to do or it cannot be done here (no cachestat or MADV_HUGEPAGE, not a
 * regular file, tmpfs, ramfs, hugetlbfs or overlayfs, a file that cannot be mapped). Each 1
 * takes one phx_huge_fill_unmap, after the populate. */
int phx_huge_fill_map(phx_huge_fill_t *h, int fd, off_t off, size_t len, phx_huge_span_t *s);
/* Unmaps; populate_res: the populate's result (0 counts the bytes in phx_huge_fill_bytes; a
 * kernel that does not know the advice turns the fill off for h). */
void phx_huge_fill_unmap(phx_huge_fill_t *h, phx_huge_span_t *s, int populate_res);
/* Both, with the populate between them, on this thread. Never changes what the read that
 * follows returns: a failed populate (a truncation meanwhile) leaves the bytes to the read. */
void phx_huge_fill(phx_huge_fill_t *h, int fd, off_t off, size_t len);

#endif
