/* A private copy of a warm file in fresh memory, made by the kernel's copy-on-write instead of
 * zero-fill plus pread (issue 13, host copies; docs/benchmarks.md). Rounds alternate:
 *   dd        16 MiB preads into one reused buffer (what `dd bs=16M` does)
 *   fresh4k   preads into fresh anonymous 4 KiB-page memory, 2 threads
 *   freshthp  the same with MADV_HUGEPAGE
 *   popw      fresh 4 KiB-page memory faulted in by MADV_POPULATE_WRITE (2 threads), then the preads
 *   cowN      MAP_PRIVATE writable mapping of the file, MADV_POPULATE_WRITE by N threads over
 *             their parts: each page is copied from the page cache into a new anonymous page
 *             (no zeroing, no second pass), after which the memory no longer follows the file
 * Each fresh region is checked against the file (sampled) and, for cow, that it is anonymous.
 *   gcc -O2 -o /tmp/host_cow phoenix-native/tests/probe/host_cow.c -lpthread && /tmp/host_cow FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int fd;
static size_t size;

struct part { char *dst; size_t lo, hi; int cow; };
static int memfd = -1;
static const char *srcmap;

/* mode 2: sendfile into this thread's own open file description of the memfd; mode 3: pwrite
 * from a read-only mapping of the file into the memfd */
static int uffd = -1;

/* mode 4: UFFDIO_COPY from a read-only mapping of the file into missing pages of fresh
 * anonymous memory: the kernel allocates each page and copies into it, without zeroing it */
static void uffd_copy(struct part *p)
{
    if (getenv("STAGE")) {
        /* pread into a small staging buffer that stays in the CPU cache, then UFFDIO_COPY it
         * into the missing pages: any file offset, any alignment, no mapping of the file */
        size_t st = (size_t)atoi(getenv("STAGE")) << 10;
        char *stage = aligned_alloc(4096, st);
        for (size_t o = p->lo; o < p->hi; o += st) {
            size_t n = p->hi - o < st ? p->hi - o : st;
            if (pread(fd, stage, n, (off_t)o) != (ssize_t)n) { perror("pread stage"); exit(1); }
            struct uffdio_copy c = {.dst = (unsigned long)(p->dst + o), .src = (unsigned long)stage,
                                    .len = (n + 4095) & ~(size_t)4095, .mode = 0};
            if (ioctl(uffd, UFFDIO_COPY, &c)) { perror("UFFDIO_COPY"); exit(1); }
        }
        free(stage);
        return;
    }
    if (getenv("POPR")) madvise((char *)srcmap + p->lo, p->hi - p->lo, 22 /* MADV_POPULATE_READ */);
    for (size_t o = p->lo; o < p->hi; o += 8u << 20) {
        size_t n = p->hi - o < (8u << 20) ? p->hi - o : (8u << 20);
        struct uffdio_copy c = {.dst = (unsigned long)(p->dst + o), .src = (unsigned long)(srcmap + o),
                                .len = (n + 4095) & ~(size_t)4095, .mode = 0};
        if (ioctl(uffd, UFFDIO_COPY, &c)) { perror("UFFDIO_COPY"); exit(1); }
    }
}

static void shm_copy(struct part *p)
{
    if (p->cow == 4) { uffd_copy(p); return; }
    if (p->cow == 2) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
        int out = open(path, O_RDWR);
        off_t in = (off_t)p->lo;
        if (out < 0 || lseek(out, (off_t)p->lo, SEEK_SET) < 0) { perror("memfd reopen"); exit(1); }
        while ((size_t)in < p->hi) {
            ssize_t n = sendfile(out, fd, &in, p->hi - (size_t)in < (8u << 20) ? p->hi - (size_t)in : (8u << 20));
            if (n <= 0) { perror("sendfile"); exit(1); }
        }
        close(out);
        return;
    }
    for (size_t o = p->lo; o < p->hi; o += 8u << 20) {
        size_t n = p->hi - o < (8u << 20) ? p->hi - o : (8u << 20);
        if (pwrite(memfd, srcmap + o, n, (off_t)o) != (ssize_t)n) { perror("pwrite memfd"); exit(1); }
    }
}

static void *work(void *a)
{
    struct part *p = a;
    if (p->cow >= 2) { shm_copy(p); return NULL; }
    if (p->cow) {
        if (p->hi > p->lo && madvise(p->dst + p->lo, p->hi - p->lo, MADV_POPULATE_WRITE)) { perror("MADV_POPULATE_WRITE"); exit(1); }
        return NULL;
    }
    for (size_t o = p->lo; o < p->hi; o += 8u << 20) {
        size_t n = p->hi - o < (8u << 20) ? p->hi - o : (8u << 20);
        if (pread(fd, p->dst + o, n, (off_t)o) != (ssize_t)n) { perror("pread"); exit(1); }
    }
    return NULL;
}

static double parts(char *dst, int threads, int cow)
{
    pthread_t t[16];
    struct part p[16];
    size_t per = (size / (size_t)threads + 4095) & ~(size_t)4095;
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        size_t lo = (size_t)i * per, hi = lo + per > size ? size : lo + per;
        p[i] = (struct part){dst, lo, hi, cow};
        pthread_create(&t[i], NULL, work, &p[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    return (double)size / (now() - t0) / 1e9;
}

static void check(const char *what, char *dst)
{
    static char buf[1 << 16];
    for (size_t o = 0; o < size; o += size / 97 + 1) {
        size_t n = size - o < sizeof buf ? size - o : sizeof buf;
        if (pread(fd, buf, n, (off_t)o) != (ssize_t)n || memcmp(buf, dst + o, n)) { printf("%s: BYTES DIFFER at %zu\n", what, o); exit(1); }
    }
}

/* kB of anonymous memory in the mapping that starts at p (from /proc/self/smaps) */
static long anon_kb(char *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0;
    long kb = -1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') == line + strcspn(line, "-")) in = lo == (unsigned long)p;
        else if (in && sscanf(line, "Anonymous: %ld kB", &kb) == 1) break;
    }
    if (f) fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: host_cow FILE\n"); return 2; }
    fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) { perror(argv[1]); return 1; }
    size = (size_t)st.st_size;
    char *dd = malloc(16u << 20);
    for (int round = 1; round <= 3; round++) {
        double t0 = now();
        for (size_t o = 0; o < size; o += 16u << 20) {
            size_t n = size - o < (16u << 20) ? size - o : (16u << 20);
            if (pread(fd, dd, n, (off_t)o) != (ssize_t)n) { perror("pread"); return 1; }
        }
        double ddr = (double)size / (now() - t0) / 1e9;
        double r[8];
        for (int m = 0; m < 8; m++) {
            char *p;
            if (m == 7) {
                double t0 = now();
                size_t len = (size + 4095) & ~(size_t)4095;
                p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                madvise(p, len, MADV_NOHUGEPAGE);
                srcmap = mmap(NULL, len, PROT_READ, MAP_SHARED | (getenv("NOPOP") ? 0 : MAP_POPULATE), fd, 0);
                uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
                struct uffdio_api api = {.api = UFFD_API};
                struct uffdio_register reg = {.range = {(unsigned long)p, len}, .mode = UFFDIO_REGISTER_MODE_MISSING};
                if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) { perror("userfaultfd"); return 1; }
                parts(p, getenv("UT") ? atoi(getenv("UT")) : 2, 4);
                struct uffdio_range ur = {(unsigned long)p, len};
                ioctl(uffd, UFFDIO_UNREGISTER, &ur);
                close(uffd);
                munmap((void *)srcmap, len);
                r[m] = (double)size / (now() - t0) / 1e9;
            } else if (m >= 5) {
                double t0 = now();
                memfd = memfd_create("copy", 0);
                if (memfd < 0 || ftruncate(memfd, (off_t)size)) { perror("memfd"); return 1; }
                srcmap = m == 6 ? mmap(NULL, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0) : NULL;
                parts(NULL, 2, m == 5 ? 2 : 3);
                p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, memfd, 0);
                r[m] = (double)size / (now() - t0) / 1e9;
                if (srcmap) munmap((void *)srcmap, size);
                close(memfd);
            } else if (m == 4) {
                p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                madvise(p, size, MADV_NOHUGEPAGE);
                double t0 = now();
                parts(p, 2, 1);
                parts(p, 2, 0);
                r[m] = (double)size / (now() - t0) / 1e9;
            } else if (m < 2) {
                p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                madvise(p, size, m ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
                r[m] = parts(p, 2, 0);
            } else {
                p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
                r[m] = parts(p, m == 2 ? 1 : 2, 1);
                long kb = anon_kb(p);
                if (kb * 1024 < (long)(size & ~(size_t)4095)) printf("cow: only %ld kB anonymous of %zu\n", kb, size >> 10);
            }
            if (p == MAP_FAILED) { perror("mmap"); return 1; }
            check(m < 2 || m == 4 ? "fresh" : m == 7 ? "uffd" : m >= 5 ? "memfd" : "cow", p);
            munmap(p, size);
        }
        printf("round %d: dd %.2f | fresh4k x2 %.2f (%.2fx) | freshthp x2 %.2f (%.2fx) | cow x1 %.2f (%.2fx) | cow x2 %.2f (%.2fx) | popw x2 %.2f (%.2fx) | memfd sendfile x2 %.2f (%.2fx) | memfd pwrite x2 %.2f (%.2fx) | uffd copy x2 %.2f (%.2fx) GB/s\n",
               round, ddr, r[0], r[0] / ddr, r[1], r[1] / ddr, r[2], r[2] / ddr, r[3], r[3] / ddr, r[4], r[4] / ddr, r[5], r[5] / ddr, r[6], r[6] / ddr, r[7], r[7] / ddr);
        fflush(stdout);
    }
    return 0;
}
