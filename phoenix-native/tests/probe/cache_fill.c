/* How the way a file came into the page cache changes what a warm load of it costs: the file
 * is evicted (fsync + POSIX_FADV_DONTNEED), brought back one way, and then timed three times
 * as a host load maps it (mmap + MADV_POPULATE_READ in 64 MiB steps, by T threads) and as the
 * bounce path reads it (pread, 16 MiB at a time, into one reused buffer). The page cache keeps
 * the folios its filler made: large ones map with few entries and copy with less per-page work.
 *   gcc -O2 -Wall -Wextra -o /tmp/cache_fill phoenix-native/tests/probe/cache_fill.c -lpthread
 *   /tmp/cache_fill FILE [THREADS [FILLER]]    (one filler; as-is: the file as the cache holds it now)
 * Fillers: read64m (read(2), 64 MiB), read128k (as cat), mmap (faults of a populated mapping,
 * as a cold host load), willneed (POSIX_FADV_WILLNEED), readahead (readahead(2)); by name only:
 * tasksN[-fd] (THREADS threads take N MiB pieces in file order, as libphoenix's workers read a
 * cold file through the page cache: one shared descriptor, or -fd one each; -huge: each piece
 * first populated in a MADV_HUGEPAGE mapping of the whole file, then read; -each: in a mapping
 * of its own, as libphoenix's huge_fill does; -fresh: read into new anonymous memory, as a host
 * load's copy, instead of one reused buffer). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    exit(1);
}

static const char *path;
static size_t size;

static void evict(void)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    fsync(fd);
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) die("fadvise");
    close(fd);
}

static size_t task_bytes;
static int own_fd;
static int shared_fd;
static size_t next_task; /* atomic */

static char *huge_map; /* tasks*-huge: populate the task's range of this first */
static char *fresh_dst; /* tasks*-fresh: each piece read into its place in new anonymous memory */
static int per_task_map; /* tasks*-huge-each: the piece's own 2 MiB-aligned mapping, made and dropped per piece */

/* as libphoenix's huge_fill.c does it: the piece's interior mapped at an aligned address,
 * advised, populated, unmapped */
static void populate_piece(int fd, size_t off, size_t n)
{
    size_t huge = 2u << 20;
    size_t from = (off + huge - 1) & ~(huge - 1), to = (off + n) & ~(huge - 1);
    if (to <= from) return;
    char *res = mmap(NULL, to - from + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED) die("mmap reservation");
    char *at = (char *)(((uintptr_t)res + huge - 1) & ~(uintptr_t)(huge - 1));
    if (mmap(at, to - from, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)from) == MAP_FAILED) die("mmap piece");
    if (madvise(at, to - from, MADV_HUGEPAGE) || madvise(at, to - from, MADV_POPULATE_READ)) die("madvise piece");
    munmap(res, to - from + huge);
}

static void *pull_tasks(void *arg)
{
    (void)arg;
    int fd = own_fd ? open(path, O_RDONLY) : shared_fd;
    if (fd < 0) die("open");
    char *buf = malloc(task_bytes);
    if (!buf) die("malloc");
    for (;;) {
        size_t off = __atomic_fetch_add(&next_task, task_bytes, __ATOMIC_RELAXED);
        if (off >= size) break;
        if (per_task_map) populate_piece(fd, off, size - off < task_bytes ? size - off : task_bytes);
        if (huge_map) {
            size_t n = size - off < task_bytes ? size - off : task_bytes;
            size_t page = off % 4096;
            if (madvise(huge_map + off - page, n + page, MADV_POPULATE_READ)) die("madvise populate");
        }
        if (pread(fd, fresh_dst ? fresh_dst + off : buf, size - off < task_bytes ? size - off : task_bytes, (off_t)off) < 0)
            die("pread");
    }
    free(buf);
    if (own_fd) close(fd);
    return NULL;
}

/* as libphoenix's workers read a cold file through the page cache: T threads, TASK-sized
 * pieces taken in file order */
static void read_tasks(int threads, size_t task, int own, int huge, int fresh, int each)
{
    huge_map = NULL;
    per_task_map = each;
    fresh_dst = NULL;
    if (fresh) {
        fresh_dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh_dst == MAP_FAILED) die("mmap destination");
        if (getenv("DST_HUGE") && madvise(fresh_dst, size, MADV_HUGEPAGE)) die("madvise destination");
    }
    if (huge) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) die("open");
        huge_map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (huge_map == MAP_FAILED) die("mmap");
        if (madvise(huge_map, size, MADV_HUGEPAGE)) die("madvise hugepage");
        close(fd);
    }
    task_bytes = task;
    own_fd = own;
    next_task = 0;
    shared_fd = open(path, O_RDONLY);
    if (shared_fd < 0) die("open");
    pthread_t th[64];
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, pull_tasks, NULL);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    close(shared_fd);
    if (huge_map) munmap(huge_map, size);
    if (fresh_dst) munmap(fresh_dst, size);
}

static void read_all(size_t chunk)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    char *buf = malloc(chunk);
    if (!buf) die("malloc");
    while (read(fd, buf, chunk) > 0) {
    }
    free(buf);
    close(fd);
}

struct span {
    char *base;
    size_t from, to;
};

static void *populate(void *arg)
{
    struct span *s = arg;
    for (size_t off = s->from; off < s->to; off += 64 << 20) {
        size_t n = s->to - off < (64u << 20) ? s->to - off : 64u << 20;
        if (madvise(s->base + off, n, MADV_POPULATE_READ)) die("madvise");
    }
    return NULL;
}

static double map_populate(int threads)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    double t = now();
    char *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) die("mmap");
    pthread_t th[64];
    struct span sp[64];
    size_t part = (size / (size_t)threads + (64u << 20) - 1) / (64u << 20) * (64u << 20);
    for (int i = 0; i < threads; i++) {
        sp[i].base = m;
        sp[i].from = part * (size_t)i < size ? part * (size_t)i : size;
        sp[i].to = part * (size_t)(i + 1) < size ? part * (size_t)(i + 1) : size;
        pthread_create(&th[i], NULL, populate, &sp[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    t = now() - t;
    munmap(m, size);
    close(fd);
    return t;
}

static double pread_all(void)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open");
    size_t chunk = 16 << 20;
    char *buf = aligned_alloc(4096, chunk);
    memset(buf, 1, chunk);
    double t = now();
    for (off_t off = 0; (size_t)off < size; off += chunk) {
        if (pread(fd, buf, chunk, off) < 0) die("pread");
    }
    t = now() - t;
    free(buf);
    close(fd);
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [THREADS]\n", argv[0]);
        return 2;
    }
    path = argv[1];
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 64) threads = 1;
    struct stat st;
    if (stat(path, &st)) die("stat");
    size = (size_t)st.st_size;
    const char *fillers[] = {"read64m", "read128k", "mmap", "willneed", "readahead",
                             "as-is", "tasks8m", "tasks8m-fd", "tasks64m", "tasks64m-fd", "tasks8m-huge",
                             "tasks8m-fresh", "tasks8m-huge-fresh", "tasks8m-each-fresh"};
    unsigned nfill = sizeof fillers / sizeof *fillers;
    unsigned only = argc > 3 ? nfill : 0; /* one filler, by name */
    for (unsigned k = 0; argc > 3 && k < nfill; k++)
        if (strcmp(argv[3], fillers[k]) == 0) only = k;
    if (only == nfill) {
        fprintf(stderr, "no filler %s\n", argv[3]);
        return 2;
    }
    printf("%s, %.2f GB, populate by %d thread(s); ms for the fill, then 3 maps and 3 preads (GB/s)\n", path,
           size / 1e9, threads);
    for (unsigned k = only; k < (argc > 3 ? only + 1 : 5); k++) {
        if (k != 5) evict();
        double t = now();
        switch (k) {
        case 0: read_all(64u << 20); break;
        case 1: read_all(128u << 10); break;
        case 2: map_populate(1); break;
        case 3: {
            int fd = open(path, O_RDONLY);
            posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
            read_all(64u << 20); /* waits for it: the rest of the file, if the advice stopped early */
            close(fd);
            break;
        }
        case 6: read_tasks(threads, 8u << 20, 0, 0, 0, 0); break;
        case 7: read_tasks(threads, 8u << 20, 1, 0, 0, 0); break;
        case 8: read_tasks(threads, 64u << 20, 0, 0, 0, 0); break;
        case 9: read_tasks(threads, 64u << 20, 1, 0, 0, 0); break;
        case 10: read_tasks(threads, 8u << 20, 0, 1, 0, 0); break;
        case 11: read_tasks(threads, 8u << 20, 0, 0, 1, 0); break;
        case 12: read_tasks(threads, 8u << 20, 0, 1, 1, 0); break;
        case 13: read_tasks(threads, 8u << 20, 0, 0, 1, 1); break;
        case 4: {
            int fd = open(path, O_RDONLY);
            for (off_t off = 0; (size_t)off < size; off += 64 << 20) readahead(fd, off, 64 << 20);
            read_all(64u << 20);
            close(fd);
            break;
        }
        }
        t = now() - t;
        printf("%-10s fill %7.0f ms; map", fillers[k], t * 1e3);
        for (int r = 0; r < 3; r++) printf(" %7.1f", map_populate(threads) * 1e3);
        printf(" ms; pread");
        for (int r = 0; r < 3; r++) printf(" %6.2f", size / pread_all() / 1e9);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
