/* Reads into host memory whose pages do not exist yet.
 *
 * A pread into fresh anonymous memory makes the kernel allocate and zero each page on its
 * first write, from inside the copy, and then copy the file bytes over the zeros. On the
 * 2-core build machine (a VM that hands freed memory back to its host) that ran at about
 * 0.5 GB/s, where pread into a reused buffer ran at 13-14 GB/s. userfaultfd's UFFDIO_COPY
 * installs pages already filled from a source buffer, with no zeroing: reading 1 MiB of the
 * file into a buffer that stays in the CPU cache, then copying it into the missing pages, ran
 * at 8.0-8.7 GB/s there (phoenix-native/tests/probe/host_cow.c, docs/benchmarks.md).
 *
 * The pages are ordinary anonymous memory afterwards: unlike a private mapping of the file,
 * nothing ties them to the file, so a later truncation of the file cannot take them away.
 *
 * Which way is faster depends on the machine, so the path is opt-in (fresh_fill=1, PHX_FRESH_FILL):
 * on the build machine one-shot `phoenix load --host --copy` ran 3-8x faster with it; on the
 * H200 host, where fresh pages fault in quickly, 8-16 % slower, and it leaves 4 KiB pages where
 * the plain read into memory advised for huge pages leaves 2 MiB ones. A per-worker choice by
 * timing the first 1 MiB of each read was tried and dropped: on the H200 host it was slower
 * than either way (a huge page's whole zeroing lands in the first 1 MiB it touches), on the
 * build machine between the two (docs/benchmarks.md).
 *
 * Only an interior whose pages are all missing is filled this way, and only while it is
 * registered with this worker's userfaultfd. The descriptor handles user-mode faults only, so
 * a kernel access to a missing page fails with EFAULT instead of waiting for a handler; a user
 * thread touching the interior meanwhile waits until the unregister at the end of the read.
 * Any refusal falls back to the plain read after unregistering, so the bytes are the same
 * either way; if unregistering ever failed, closing the descriptor drops the registration. */
#include "fresh_fill.h"
#include "engine.h"
#include "error.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* PROCMAP_QUERY (Linux 6.11, <linux/fs.h>), for headers older than that */
#ifndef PROCMAP_QUERY
struct procmap_query {
    uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#endif

/* 1 MiB pieces beat 256 KiB and 64 KiB in the probe (8.0-8.7 against 7.6-7.9 and 6.5-6.7
 * GB/s): fewer ioctls, and still cache-resident between the read and the copy */
#define STAGE_BYTES (1u << 20)
/* below this the registration's cost (two VMA splits under the mmap lock) is not repaid */
#define MIN_INTERIOR (1u << 20)
_Atomic uint64_t phx_fresh_bytes;

static atomic_int refused_warned;

static int open_uffd(phx_fresh_t *f)
{
    if (f->state) return f->state > 0;
    f->state = -1;
    f->maps = -1;
    long page = sysconf(_SC_PAGESIZE);
#ifdef SYS_userfaultfd
    /* user-mode faults only: allowed to unprivileged users (vm.unprivileged_userfaultfd=0 does
     * not refuse it since Linux 5.11), and a kernel fault never blocks on us */
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
#else
    int fd = -1;
    errno = ENOSYS;
#endif
    if (fd < 0 || page <= 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        phx_warn_once(&refused_warned, "fresh_fill: userfaultfd refused (%s%s); host reads use the plain read",
                      strerror(e), e == EINVAL ? ", Linux < 5.11" : e == EPERM || e == ENOSYS ? ", seccomp?" : "");
        return 0;
    }
    struct uffdio_api api = {.api = UFFD_API, .features = 0};
    f->stage = ioctl(fd, UFFDIO_API, &api) ? NULL : aligned_alloc((size_t)page, STAGE_BYTES);
    if (!f->stage) {
        close(fd);
        return 0;
    }
    /* the mapping's protection and extent, asked per read: UFFDIO_COPY fills even read-only
     * pages, where the plain read fails with EFAULT */
    f->maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (f->maps < 0) {
        free(f->stage);
        f->stage = NULL;
        close(fd);
        return 0;
    }
    f->uffd = fd;
    f->page = (size_t)page;
    f->state = 1;
    return 1;
}

/* every page of [a, a + len) absent (page-aligned a and len) */
static int all_missing(uintptr_t a, size_t len, size_t page)
{
    unsigned char vec[4096];
    for (size_t done = 0; done < len;) {
        size_t n = len - done < sizeof vec * page ? len - done : sizeof vec * page;
        if (mincore((void *)(a + done), n, vec)) return 0; /* unmapped: the plain read says so */
        for (size_t i = 0; i < n / page; i++)
            if (vec[i] & 1) return 0;
        done += n;
    }
    return 1;
}

/* Ends the registration of [a, a + len). Should that ever fail, the pages from `from` on that
 * are still missing get the zero page, so that no fault can wait for a server, and the
 * descriptor is closed (a forked child may still hold it, so the close alone might not end
 * the registration); this worker then stops using the path. */
static void unregister(phx_fresh_t *f, uintptr_t a, size_t len, uintptr_t from)
{
    struct uffdio_range r = {a, len};
    if (!ioctl(f->uffd, UFFDIO_UNREGISTER, &r)) return;
    for (uintptr_t p = from & ~(uintptr_t)(f->page - 1); p < a + len; p += f->page) {
        struct uffdio_zeropage z = {.range = {p, f->page}, .mode = 0};
        ioctl(f->uffd, UFFDIO_ZEROPAGE, &z); /* EEXIST for a page already there */
    }
    close(f->uffd);
    f->state = -1;
}

int phx_fresh_read(phx_fresh_t *f, int fd, char *dst, size_t len, off_t off, ssize_t *result)
{
    if (!f->enabled || len < MIN_INTERIOR || !open_uffd(f)) return 0;
    size_t page = f->page;
    uintptr_t a = ((uintptr_t)dst + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t b = ((uintptr_t)dst + len) & ~(uintptr_t)(page - 1);
    if (b <= a || b - a < MIN_INTERIOR) return 0;
    /* one writable mapping: the interior ends where the mapping holding its start ends, and
     * memory that is not writable is left to the plain read (and its EFAULT). Where the kernel
     * cannot say (before Linux 6.11), the plain read does it all. */
    struct procmap_query q = {.size = sizeof q, .query_addr = a};
    if (ioctl(f->maps, PROCMAP_QUERY, &q) || !(q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE)) return 0;
    if (q.vma_end < b) b = (uintptr_t)q.vma_end;
    if (b <= a || b - a < MIN_INTERIOR || !all_missing(a, b - a, page)) return 0;
    size_t head = a - (uintptr_t)dst;
    ssize_t r = phx_rw_full(fd, 0, dst, head, off);
    if (r < (ssize_t)head) {
        *result = r; /* an error, or the end of the file */
        return 1;
    }
    struct uffdio_register reg = {.range = {a, b - a}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    if (ioctl(f->uffd, UFFDIO_REGISTER, &reg)) return 0; /* not anonymous or shmem memory: the engine reads it */
    if (!(reg.ioctls & (1ull << _UFFDIO_COPY))) {
        unregister(f, a, b - a, a);
        return 0;
    }
    size_t done = head; /* bytes of dst in place, from its start */
    uint64_t copied = 0;
    ssize_t err = 0;
    int eof = 0, registered = 1;
    while ((uintptr_t)dst + done < b) {
        size_t want = b - ((uintptr_t)dst + done); /* a whole number of pages, as STAGE_BYTES is */
        if (want > STAGE_BYTES) want = STAGE_BYTES;
        r = phx_rw_full(fd, 0, f->stage, want, off + (off_t)done);
        if (r <= 0) {
            err = r; /* 0: the end of the file */
            eof = 1;
            break;
        }
        size_t got = (size_t)r, span = (got + page - 1) & ~(page - 1);
        memset(f->stage + got, 0, span - got); /* past end of file: what a fresh page holds */
        struct uffdio_copy c = {.dst = (uintptr_t)dst + done, .src = (uintptr_t)f->stage, .len = span, .mode = 0};
        if (ioctl(f->uffd, UFFDIO_COPY, &c)) {
            /* a page appeared meanwhile (EEXIST), a partial copy (EAGAIN), a piece that
             * crosses into another mapping (ENOENT), a full tmpfs (ENOSPC): keep what was
             * placed, and the plain read does the rest, reporting what the plain read reports */
            size_t placed = c.copy > 0 ? (size_t)c.copy : 0;
            if (placed > got) placed = got;
            copied += placed;
            done += placed;
            unregister(f, a, b - a, (uintptr_t)dst + done);
            registered = 0;
            break;
        }
        copied += got;
        done += got;
        if (got < want) {
            eof = 1;
            break;
        }
    }
    if (registered) unregister(f, a, b - a, (uintptr_t)dst + done);
    atomic_fetch_add_explicit(&phx_fresh_bytes, copied, memory_order_relaxed);
    if (err) {
        *result = err;
    } else if (eof || done == len) {
        *result = (ssize_t)done;
    } else {
        ssize_t t = phx_rw_full(fd, 0, dst + done, len - done, off + (off_t)done);
        *result = t < 0 ? t : (ssize_t)(done + (size_t)t);
    }
    return 1;
}

void phx_fresh_free(phx_fresh_t *f)
{
    if (f->state > 0) close(f->uffd);
    if (f->state != 0 && f->maps >= 0) close(f->maps);
    free(f->stage);
    memset(f, 0, sizeof *f);
}
