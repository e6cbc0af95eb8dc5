/* Cold buffered reads bring their range into the page cache in huge folios.
 *
 * The page cache keeps a file in the folios its readers made. Workers reading a cold file
 * in 8 MiB pieces from several threads leave it mostly in 4 KiB folios: each pread lands at
 * a place its descriptor's readahead state did not expect, and the kernel then starts its
 * readahead at order 0 (mm/readahead.c). Every later use of those bytes pays for that: on
 * the build machine a host load's mapping of 2 GB took 7-230 ms against 1-3 ms for the same
 * file in 2 MiB folios, on the H200 host 131-305 ms against 3-4 ms for 5 GB, and one thread's
 * pread of it ran 15 % slower there (phoenix-native/tests/probe/cache_fill.c,
 * docs/benchmarks.md). A fault in a MADV_HUGEPAGE mapping of a file reads the file in
 * PMD-sized folios whatever the descriptor's readahead state, so a cold interior is first
 * populated through such a mapping (MADV_POPULATE_READ, which reports a page past the end of
 * the file as an error instead of a SIGBUS, and never touches the bytes), and the read that
 * follows copies from the cache.
 *
 * Only whole 2 MiB-aligned pieces are filled (a smaller read would make the fault read a
 * whole huge folio it does not need), and only when the interior's first and last pages are
 * missing: warm data costs two cachestat calls (about 1 us) and nothing else. Linux answers
 * cachestat only to a caller that owns the file or may write it, so a reader of someone
 * else's read-only file gets the plain read (populating without knowing would map every
 * page of warm data, 0.5 ms per 8 MiB of 4 KiB folios on the build machine). The mapping sits
 * at a 2 MiB-aligned address, so that each folio is mapped by one PMD entry and unmapped as
 * cheaply.
 *
 * Opt-in (huge_fill=1, PHX_HUGE_FILL). On the H200 host a cold `load --host` of 5.2 GB ran
 * as fast with it (2.8-3.9 s against 3.2-3.4 s) and the next warm load took 24-29 ms against
 * 118-135 ms. On the 2-core build machine the cold load ran 2.1-2.6x slower (12.9-14.5 s
 * against 5.2-6.9 s), all of it system time spent zeroing the destination's fresh huge pages
 * (folio_zero_user in the workers' kernel stacks; 22.9 s of system time against 5.1 s): that
 * VM's fresh memory is slow to touch, and more so with the page cache in 2 MiB folios too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "huge_fill.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same on every architecture (Linux 6.5) */
#endif

#define HUGE_BYTES ((size_t)2 << 20)
#define PAGE_BYTES ((size_t)4096) /* a probe granule only: cachestat rounds to the real page */
#define MAX_INTERIOR ((uint64_t)1 << 30)

_Atomic uint64_t phx_huge_fill_bytes;

struct cachestat_range {
    uint64_t off, len;
};
struct cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* File systems the fill must leave alone: on tmpfs and ramfs a fault allocates a hole that
 * pread would have read as zeroes (a sparse file would fill its memory), hugetlbfs has no
 * page cache to speak of, and on overlayfs cachestat looks at the overlay's empty mapping, so
 * warm data would count as cold and be populated on every read. */
static int fill_allowed(int fd)
{
    struct stat st;
    struct statfs fs;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fstatfs(fd, &fs)) return 0;
    switch ((unsigned long)fs.f_type) {
    case 0x01021994UL: /* TMPFS_MAGIC */
    case 0x858458f6UL: /* RAMFS_MAGIC */
    case 0x958458f6UL: /* HUGETLBFS_MAGIC */
    case 0x794c7630UL: /* OVERLAYFS_SUPER_MAGIC */
        return 0;
    default:
        return 1;
    }
}

/* 1: the page at `at` is in the page cache, 0: it is not, -1: this kernel has no cachestat.
 * Any other refusal counts as cached (no fill): EPERM for a file the caller neither owns nor
 * may write (Linux keeps page-cache residency from other users), EBADF, EOPNOTSUPP. */
static int cached(int fd, uint64_t at)
{
    struct cachestat_range r = {at, PAGE_BYTES};
    struct cachestat s;
    if (syscall(__NR_cachestat, fd, &r, &s, 0) != 0) return errno == ENOSYS ? -1 : 1;
    return s.nr_cache > 0;
}

int phx_huge_fill_map(phx_huge_fill_t *h, int fd, off_t off, size_t len, phx_huge_span_t *s)
{
    if (!h->enabled || h->state < 0 || off < 0) return 0;
    uint64_t from = ((uint64_t)off + HUGE_BYTES - 1) & ~(uint64_t)(HUGE_BYTES - 1);
    uint64_t to = ((uint64_t)off + len) & ~(uint64_t)(HUGE_BYTES - 1);
    if (to <= from) return 0;
    if (to - from > MAX_INTERIOR) to = from + MAX_INTERIOR; /* an io_uring madvise takes 32 bits */
    size_t n = (size_t)(to - from);
    int first = cached(fd, from);
    if (first < 0) {
        h->state = -1;
        return 0;
    }
    if (first || cached(fd, to - PAGE_BYTES) || !fill_allowed(fd)) return 0;
    /* a reservation one huge page larger, so that the file can go at an aligned address in it */
    size_t rn = n + HUGE_BYTES;
    char *res = mmap(NULL, rn, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED) return 0;
    char *at = (char *)(((uintptr_t)res + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    if (mmap(at, n, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)from) == MAP_FAILED) {
        munmap(res, rn);
        return 0;
    }
    if (madvise(at, n, MADV_HUGEPAGE) != 0) {
        if (errno == EINVAL || errno == ENOSYS) h->state = -1; /* no transparent huge pages in this kernel */
        munmap(res, rn);
        return 0;
    }
    h->state = 1;
    *s = (phx_huge_span_t){res, rn, at, n};
    return 1;
}

void phx_huge_fill_unmap(phx_huge_fill_t *h, phx_huge_span_t *s, int populate_res)
{
    if (populate_res == 0) atomic_fetch_add_explicit(&phx_huge_fill_bytes, s->len, memory_order_relaxed);
    /* a kernel without MADV_POPULATE_READ (before 5.14): never again on this worker */
    if (populate_res == -EINVAL || populate_res == -ENOSYS || populate_res == -EOPNOTSUPP) h->state = -1;
    munmap(s->reservation, s->reservation_len);
    *s = (phx_huge_span_t){0};
}

void phx_huge_fill(phx_huge_fill_t *h, int fd, off_t off, size_t len)
{
    phx_huge_span_t s;
    if (!phx_huge_fill_map(h, fd, off, len, &s)) return;
    /* EFAULT past the end of the file (a truncation meanwhile): the read then sees it */
    phx_huge_fill_unmap(h, &s, madvise(s.at, s.len, PHX_MADV_POPULATE_READ) ? -errno : 0);
}
