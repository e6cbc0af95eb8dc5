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
 * on the build machine one-shot `phoenix load --host --copy` ran 5-7x faster with it; on the
 * H200 host, where fresh pages fault in quickly, 8-15 % slower, and it leaves 4 KiB pages where
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
#include "internal.h"
#include "fresh_fill.h"
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* 1 MiB pieces beat 256 KiB and 64 KiB in the probe (8.0-8.7 against 7.6-7.9 and 6.5-6.7
 * GB/s): fewer ioctls, and still cache-resident between the read and the copy */
#define STAGE_BYTES (1u << 20)
/* below this the registration's cost (two VMA splits under the mmap lock) is not repaid */
#define MIN_INTERIOR (1u << 20)
_Atomic uint64_t phx_fresh_bytes;

static int open_uffd(phx_fresh_t *f)
{
    if (f->state) return f->state > 0;
    f->state = -1;
#ifdef SYS_userfaultfd
    long page = sysconf(_SC_PAGESIZE);
    /* user-mode faults only: allowed to unprivileged users (vm.unprivileged_userfaultfd=0 does
     * not refuse it since Linux 5.11), and a kernel fault never blocks on us */
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0 || page <= 0) {
        if (fd >= 0) close(fd);
        return 0;
    }
    struct uffdio_api api = {.api = UFFD_API, .features = 0};
    if (ioctl(fd, UFFDIO_API, &api) || !(api.ioctls & (1ull << _UFFDIO_REGISTER))) {
        close(fd);
        return 0;
    }
    f->stage = aligned_alloc((size_t)page, STAGE_BYTES);
    if (!f->stage) {
        close(fd);
        return 0;
    }
    f->uffd = fd;
    f->page = (size_t)page;
    f->state = 1;
    return 1;
#else
    return 0;
#endif
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

/* Never leaves a range registered that nobody serves: if unregistering fails, closing the
 * descriptor drops every registration, and this worker stops using the path. */
static void unregister(phx_fresh_t *f, uintptr_t a, size_t len)
{
    struct uffdio_range r = {a, len};
    if (!ioctl(f->uffd, UFFDIO_UNREGISTER, &r)) return;
    close(f->uffd);
    f->state = -1;
}

static ssize_t uffd_read(phx_fresh_t *f, int fd, char *dst, size_t len, off_t off, uintptr_t a, uintptr_t b);

int phx_fresh_read(phx_fresh_t *f, int fd, char *dst, size_t len, off_t off, ssize_t *result)
{
    if (!f->enabled || len < MIN_INTERIOR || !open_uffd(f)) return 0;
    size_t page = f->page;
    uintptr_t a = ((uintptr_t)dst + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t b = ((uintptr_t)dst + len) & ~(uintptr_t)(page - 1);
    if (b <= a || b - a < MIN_INTERIOR || !all_missing(a, b - a, page)) return 0;
    *result = uffd_read(f, fd, dst, len, off, a, b);
    return 1;
}

/* the read through UFFDIO_COPY, for dst's interior [a, b) whose pages are all missing */
static ssize_t uffd_read(phx_fresh_t *f, int fd, char *dst, size_t len, off_t off, uintptr_t a, uintptr_t b)
{
    size_t page = f->page;
    struct uffdio_register reg = {.range = {a, b - a}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    if (ioctl(f->uffd, UFFDIO_REGISTER, &reg)) /* not anonymous memory, or already registered */
        return phx_rw_full(fd, 0, dst, len, off);

    size_t done = 0, head = a - (uintptr_t)dst; /* done: bytes of dst in place, from its start */
    int registered = 1, eof = 0;
    ssize_t err = 0;
    ssize_t r = head ? phx_rw_full(fd, 0, dst, head, off) : 0;
    if (r < 0) err = r;
    else if ((size_t)r < head) done = (size_t)r, eof = 1;
    else done = head;
    uint64_t copied = 0;
    while (!err && !eof && (uintptr_t)dst + done < b) {
        size_t want = b - ((uintptr_t)dst + done); /* a whole number of pages, as STAGE_BYTES is */
        if (want > STAGE_BYTES) want = STAGE_BYTES;
        r = phx_rw_full(fd, 0, f->stage, want, off + (off_t)done);
        if (r <= 0) {
            err = r < 0 ? r : 0;
            eof = 1;
            break;
        }
        size_t got = (size_t)r, span = (got + page - 1) & ~(page - 1);
        memset(f->stage + got, 0, span - got); /* past end of file: what a fresh page holds */
        struct uffdio_copy c = {.dst = (uintptr_t)dst + done, .src = (uintptr_t)f->stage, .len = span, .mode = 0};
        size_t placed = got;
        if (ioctl(f->uffd, UFFDIO_COPY, &c)) {
            /* a page appeared meanwhile (EEXIST) or the mappings are changing (EAGAIN): let
             * ordinary faults place the rest of this piece, and the plain read the remainder */
            placed = c.copy > 0 ? (size_t)c.copy : 0;
            if (placed > got) placed = got;
            unregister(f, a, b - a);
            registered = 0;
            memcpy(dst + done + placed, f->stage + placed, got - placed);
        }
        copied += placed;
        done += got;
        if (got < want) eof = 1;
        if (!registered) break;
    }
    if (registered) unregister(f, a, b - a);
    atomic_fetch_add_explicit(&phx_fresh_bytes, copied, memory_order_relaxed);
    if (err) return err;
    if (eof || done == len) return (ssize_t)done;
    ssize_t t = phx_rw_full(fd, 0, dst + done, len - done, off + (off_t)done);
    return t < 0 ? t : (ssize_t)(done + (size_t)t);
}

void phx_fresh_free(phx_fresh_t *f)
{
    if (f->state > 0) close(f->uffd);
    free(f->stage);
    memset(f, 0, sizeof *f);
}
