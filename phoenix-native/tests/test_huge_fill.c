/* Cold buffered reads bring their range into the page cache in huge folios first (huge_fill.c):
 * the bytes are exact at odd offsets, into host memory and into a device (the bounce path under
 * the fake connector), past the end of the file (the populate fails there, the read does not),
 * and as an unprivileged user; a sparse tmpfs file keeps its holes and a character device is
 * left alone. "huge_fill_bytes" counts what was filled: with PHX_HUGE_FILL=1 a
 * cold range with a whole 2 MiB piece is, a warm range and a small one are not; without it (the
 * default) nothing is. Where the file system keeps 2 MiB folios (a control shows it), a file read cold this way
 * then maps mostly with 2 MiB entries (FilePmdMapped in /proc/self/smaps). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

static int mode;
static size_t fsize;
static unsigned char *ref;
static void *dev_mem;
static size_t dev_len;

struct cs_range { uint64_t off, len; };
struct cs { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };

/* pages of fd in the page cache, or -1 when cachestat is refused here */
static long long cached_pages(int fd)
{
    struct cs_range r = {0, 0}; /* len 0: to the end of the file */
    struct cs s;
    if (syscall(__NR_cachestat, fd, &r, &s, 0)) return -1;
    return (long long)s.nr_cache;
}

static void evict(int fd)
{
    fsync(fd);
    /* pages still under a readahead the last read started (past what it needed) are locked,
     * and the advice passes them by: again until none is left */
    for (int i = 0; i < 200; i++) {
        CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        if (cached_pages(fd) == 0) return;
        usleep(10000);
    }
    CHECK_EQ(cached_pages(fd), 0);
}

static unsigned long long filled(void)
{
    char v[32];
    CHECK(phxfs_get_config("huge_fill_bytes", v, sizeof v) > 0);
    return strtoull(v, NULL, 10);
}

/* reads n bytes of fd at off into dev (-1: host memory) at buffer offset 7; checks the bytes */
static ssize_t read_check(int fd, int dev, size_t n, off_t off, const char *what)
{
    unsigned char *host = malloc(n + 7);
    unsigned char *buf = dev < 0 ? host : dev_mem;
    if (dev >= 0 && n + 7 > dev_len) { fprintf(stderr, "%s: device buffer too small\n", what); exit(2); }
    ssize_t r = phxfs_read(fd, dev, buf, 7, (ssize_t)n, off);
    size_t want = (size_t)off >= fsize ? 0 : fsize - (size_t)off < n ? fsize - (size_t)off : n;
    CHECK_EQ(r, want);
    if (r > 0) {
        if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_host(dev, host + 7, (char *)dev_mem + 7, (size_t)r), 0);
        if (memcmp(host + 7, ref + off, (size_t)r)) {
            fprintf(stderr, "%s: bytes differ\n", what);
            th_failures++;
        }
    }
    free(host);
    return r;
}

/* the smallest task of a read into dev: whether it always holds a whole 2 MiB-aligned piece */
static int tasks_hold_a_huge_page(int dev)
{
    char v[32];
    phxfs_device_info_t info;
    if (dev < 0 || (phxfs_get_device_info(dev, &info) == 0 && !strcmp(info.connector, "host"))) return 1; /* 8 MiB chunks */
    CHECK(phxfs_get_config("slot_kb", v, sizeof v) > 0);
    return atoll(v) >= 4096;
}

static void cold_and_warm(int fd, int dev, const char *who)
{
    char what[96];
    snprintf(what, sizeof what, "%s, device %d, cold", who, dev);
    evict(fd);
    unsigned long long before = filled();
    read_check(fd, dev, fsize - 1000, 1000, what);
    unsigned long long cold = filled() - before;
    printf("%s: %llu bytes filled\n", what, cold);
    if (mode && tasks_hold_a_huge_page(dev)) CHECK(cold >= (2u << 20));
    else CHECK_EQ(cold, 0);
    snprintf(what, sizeof what, "%s, device %d, warm", who, dev);
    before = filled();
    read_check(fd, dev, fsize - 1000, 1000, what);
    CHECK_EQ(filled() - before, 0); /* warm: nothing to fill */
    /* cold, but no whole 2 MiB piece: left to the read */
    evict(fd);
    before = filled();
    snprintf(what, sizeof what, "%s, device %d, small", who, dev);
    read_check(fd, dev, (2u << 20) + 4096, (1u << 20) + 5, what);
    CHECK_EQ(filled() - before, 0);
}

/* 48 MiB from 5 MiB + 3 before the end: the populates run into and past the end of the file,
 * several tasks a worker (on io_uring: populate-and-read pairs in one ring) */
static void past_end(int fd, int dev)
{
    evict(fd);
    unsigned long long before = filled();
    read_check(fd, dev, 48u << 20, (off_t)(fsize - (5u << 20) - 3), "past the end");
    if (!mode) CHECK_EQ(filled() - before, 0);
}

/* tmpfs: a hole pread reads as zeroes must stay a hole (a fault would allocate it) */
static void sparse_tmpfs(void)
{
    char path[] = "/dev/shm/phx_huge_fill_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        printf("no /dev/shm here: the tmpfs check is skipped\n");
        return;
    }
    size_t n = 16u << 20;
    CHECK_EQ(ftruncate(fd, (off_t)n), 0);
    unsigned char *buf = malloc(n);
    unsigned long long before = filled();
    CHECK_EQ(phxfs_read(fd, -1, buf, 0, (ssize_t)n, 0), n);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += buf[i] != 0;
    CHECK_EQ(nonzero, 0);
    struct stat st;
    CHECK_EQ(fstat(fd, &st), 0);
    CHECK_EQ(st.st_blocks, 0);
    CHECK_EQ(filled() - before, 0);
    free(buf);
    close(fd);
    unlink(path);
}

/* not a regular file: nothing to fill, and nothing mapped */
static void character_device(void)
{
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) return;
    size_t n = 8u << 20;
    unsigned char *buf = malloc(n);
    memset(buf, 1, n);
    unsigned long long before = filled();
    CHECK_EQ(phxfs_read(fd, -1, buf, 0, (ssize_t)n, 0), n);
    CHECK(buf[0] == 0 && buf[n - 1] == 0);
    CHECK_EQ(filled() - before, 0);
    free(buf);
    close(fd);
}

/* FilePmdMapped of the mapping at addr, in KiB (-1: not found) */
static long pmd_mapped_kb(void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)addr >= a && (uintptr_t)addr < b;
            continue;
        }
        if (in && sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb;
}

/* maps fd whole at a 2 MiB-aligned address, populates it: how much is mapped by PMD entries */
static long maps_huge_kb(int fd)
{
    size_t huge = 2u << 20, n = fsize & ~(huge - 1);
    char *res = mmap(NULL, n + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED) return -1;
    char *at = (char *)(((uintptr_t)res + huge - 1) & ~(uintptr_t)(huge - 1));
    long kb = -1;
    /* advised: only then does the kernel map a file's 2 MiB folios with PMD entries (THP "madvise") */
    if (mmap(at, n, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED && !madvise(at, n, MADV_HUGEPAGE) &&
        !madvise(at, n, MADV_POPULATE_READ))
        kb = pmd_mapped_kb(at);
    munmap(res, n + huge);
    return kb;
}

static void folios(int fd)
{
    /* the control: a cold file populated through an advised mapping, as the library does it
     * (64 MiB reads would not show it: the kernel's own readahead reaches 2 MiB folios only
     * some tens of MiB into a file) */
    evict(fd);
    long control = maps_huge_kb(fd);
    if (control <= 0) {
        printf("no 2 MiB page-cache folios here (FilePmdMapped %ld): the folio check is skipped\n", control);
        return;
    }
    evict(fd);
    read_check(fd, -1, fsize, 0, "folios");
    long kb = maps_huge_kb(fd);
    printf("FilePmdMapped after a cold read: %ld KiB of %zu (control %ld)\n", kb, fsize >> 10, control);
    if (mode) CHECK(kb >= (long)(fsize >> 10) / 2);
}

int main(void)
{
    const char *env = getenv("PHX_HUGE_FILL");
    mode = env ? atoi(env) : 0;
    fsize = (40u << 20) + 4099;
    char path[256];
    int fd = th_open_reference(fsize, 5, path, sizeof path, &ref);
    if (cached_pages(fd) < 0) {
        printf("cachestat refused here (Linux < 6.5, or seccomp): the fill cannot run\n");
        close(fd);
        unlink(path);
        return 77;
    }
    /* two workers, 8 MiB chunks: the tasks the counts above expect */
    CHECK_EQ(phxfs_set_config("workers", "2"), 0);
    CHECK_EQ(phxfs_set_config("chunk_mb", "8"), 0);

    /* an unprivileged user (the library not yet started in this process when forked) */
    pid_t child = geteuid() == 0 ? fork() : -1;
    if (child == 0) {
        /* its own file, as a user's downloaded checkpoint is (cachestat answers only the owner
         * or a writer); then the file goes back to root */
        if (fchown(fd, 65534, 65534) || setgid(65534) || setuid(65534)) { perror("setuid"); _exit(2); }
        CHECK_EQ(phxfs_open(0), 0);
        cold_and_warm(fd, -1, "unprivileged");
        _exit(th_failures ? 1 : 0);
    }
    if (child > 0) {
        int st = 0;
        waitpid(child, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        CHECK_EQ(fchown(fd, 0, 0), 0);
    }

    CHECK_EQ(phxfs_open(0), 0);
    char v[8];
    CHECK(phxfs_get_config("huge_fill", v, sizeof v) > 0);
    CHECK_EQ(atoi(v), mode);
    dev_len = fsize + (48u << 20); /* past_end reads 48 MiB */
    CHECK_EQ(phxfs_mem_alloc(0, dev_len, &dev_mem), 0);
    CHECK_EQ(phxfs_regmem(0, dev_mem, dev_len, NULL), 0);
    for (int dev = -1; dev <= 0; dev++) {
        cold_and_warm(fd, dev, "root");
        past_end(fd, dev);
    }
    folios(fd);
    sparse_tmpfs();
    character_device();
    CHECK_EQ(phxfs_deregmem(0, dev_mem, dev_len), 0);
    CHECK_EQ(phxfs_mem_free(0, dev_mem), 0);
    phxfs_close(0);
    close(fd);
    unlink(path);
    free(ref);
    return th_finish(mode ? "test_huge_fill (PHX_HUGE_FILL=1)" : "test_huge_fill (off, the default)");
}
