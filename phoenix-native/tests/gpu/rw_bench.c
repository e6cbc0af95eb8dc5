/* Device <-> page cache, both directions on the same bytes in one run: phxfs
 * reads of a 4 GiB file into one device buffer, and phxfs writes of that buffer
 * back (overwriting the cached file), each the median of 5; then the same
 * buffer written as 8 files of 512 MiB. Beside them, the kernel's own ceilings
 * measured the same way from host memory: as many threads as Phoenix has
 * workers (RW_THREADS to change it) pread / pwrite the same file(s), and the
 * pwrite rows again with twice as many threads; the ceiling is the faster.
 * ext4 takes an exclusive inode lock for every buffered write, so one file
 * cannot take parallel writes; the 8-file rows show what the page cache allows
 * when it can. Usage: rw_bench DIR [GiB] */
#define _GNU_SOURCE
#include "phoenix.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REQ (64ull << 20)
#define FILES 8
static int threads = 8; /* RW_THREADS: the kernel rows' thread count */
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp); return v[n / 2]; }

static size_t total;
static int fds1[1], fds8[FILES];

/* one batch over nf files covering `total` bytes of the device buffer */
static double phx_pass(int dev, void *buf, int *fds, int nf, int is_write)
{
    size_t per = total / (size_t)nf;
    int n = (int)(total / REQ);
    phxfs_io_req_t *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
        size_t off = (size_t)i * REQ;
        r[i] = (phxfs_io_req_t){fds[off / per], dev, buf, (off_t)off, REQ, (off_t)(off % per), 0};
    }
    double t0 = now();
    int rc = is_write ? phxfs_write_batch(r, n) : phxfs_read_batch(r, n);
    double dt = now() - t0;
    if (rc) { fprintf(stderr, "batch failed: %d %s\n", rc, phxfs_last_error()); exit(1); }
    free(r);
    return total / dt / 1e9;
}

/* one thread's range [off, off + len) of the bytes, which may span two files */
typedef struct { int *fds; size_t per_file; char *buf; size_t off, len; int write; } job_t;
static void *job(void *a)
{
    job_t *j = a;
    for (size_t p = 0; p < j->len;) {
        size_t at = j->off + p, in_file = j->per_file - at % j->per_file;
        size_t n = j->len - p < (2u << 20) ? j->len - p : (2u << 20);
        if (n > in_file) n = in_file;
        int fd = j->fds[at / j->per_file];
        ssize_t r = j->write ? pwrite(fd, j->buf + at, n, (off_t)(at % j->per_file)) : pread(fd, j->buf + at, n, (off_t)(at % j->per_file));
        if (r != (ssize_t)n) { perror("io"); exit(1); }
        p += n;
    }
    return NULL;
}
/* nt threads, host memory: the kernel's own rate for the same files */
static double host_pass_n(char *host, int *fds, int nf, int is_write, int nt)
{
    pthread_t th[128];
    job_t js[128];
    size_t per_file = total / (size_t)nf, per = (total / (size_t)nt) & ~(size_t)4095;
    double t0 = now();
    for (int i = 0; i < nt; i++) {
        size_t off = (size_t)i * per;
        js[i] = (job_t){fds, per_file, host, off, i == nt - 1 ? total - off : per, is_write};
        pthread_create(&th[i], NULL, job, &js[i]);
    }
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    return total / (now() - t0) / 1e9;
}
static double host_pass(char *host, int *fds, int nf, int is_write) { return host_pass_n(host, fds, nf, is_write, threads); }

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    total = (size_t)(argc > 2 ? atoi(argv[2]) : 4) << 30;
    char p[512];
    snprintf(p, sizeof p, "%s/rw_bench_one.bin", dir);
    fds1[0] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < FILES; i++) {
        snprintf(p, sizeof p, "%s/rw_bench_%d.bin", dir, i);
        fds8[i] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    }
    char *host = aligned_alloc(4096, total);
    for (size_t i = 0; i < total; i += 8) *(uint64_t *)(host + i) = i * 0x9E3779B97F4A7C15ull;
    if (phxfs_open(0)) { fprintf(stderr, "open: %s\n", phxfs_last_error()); return 1; }
    phxfs_device_info_t info;
    phxfs_get_device_info(0, &info);
    threads = getenv("RW_THREADS") ? atoi(getenv("RW_THREADS")) : (int)info.workers;
    if (threads < 1 || threads > 64) { fprintf(stderr, "RW_THREADS: 1..64\n"); return 2; }
    /* the files exist and are cached before anything is timed */
    host_pass(host, fds1, 1, 1);
    host_pass(host, fds8, FILES, 1);
    void *dbuf;
    if (phxfs_mem_alloc(0, total, &dbuf) || phxfs_regmem(0, dbuf, total, NULL)) { fprintf(stderr, "%s\n", phxfs_last_error()); return 1; }
    char pinned[32];
    phxfs_get_config("pinned_mb", pinned, sizeof pinned);
    printf("device %s, connector %s, mode %s, %d workers, slot %llu KiB x %d, pinned pool %s MiB, %zu MiB per pass\n",
           info.name, info.connector, phxfs_mode_name(info.mode), info.workers, (unsigned long long)info.slot_bytes >> 10,
           info.slots_per_worker, pinned, total >> 20);
    enum { R = 5 };
    double v[10][R];
    for (int k = 0; k < R; k++) {
        v[0][k] = phx_pass(0, dbuf, fds1, 1, 0);
        v[1][k] = phx_pass(0, dbuf, fds1, 1, 1);
        v[2][k] = phx_pass(0, dbuf, fds8, FILES, 0);
        v[3][k] = phx_pass(0, dbuf, fds8, FILES, 1);
        v[4][k] = host_pass(host, fds1, 1, 0);
        v[5][k] = host_pass(host, fds1, 1, 1);
        v[6][k] = host_pass(host, fds8, FILES, 0);
        v[7][k] = host_pass(host, fds8, FILES, 1);
        v[8][k] = host_pass_n(host, fds1, 1, 1, 2 * threads);
        v[9][k] = host_pass_n(host, fds8, FILES, 1, 2 * threads);
    }
    /* the bytes came back: the device buffer holds the file */
    char *chk = malloc(64 << 20);
    phxfs_memcpy_to_host(0, chk, (char *)dbuf + total - (64 << 20), 64 << 20);
    int ok = memcmp(chk, host + total - (64 << 20), 64 << 20) == 0;
    const char *rows[] = {"phoenix read  page cache -> device, 1 file ", "phoenix write device -> page cache, 1 file ",
                          "phoenix read  page cache -> device, 8 files", "phoenix write device -> page cache, 8 files",
                          "kernel  pread  host <- page cache, 1 file ", "kernel  pwrite host -> page cache, 1 file ",
                          "kernel  pread  host <- page cache, 8 files", "kernel  pwrite host -> page cache, 8 files",
                          "kernel  pwrite, 2x threads,        1 file ", "kernel  pwrite, 2x threads,        8 files"};
    double m[10];
    for (int i = 0; i < 10; i++) { m[i] = median(v[i], R); printf("%s  %6.2f GB/s (median of %d)\n", rows[i], m[i], R); }
    printf("kernel rows: %d threads (2x rows: %d) from host memory; dir %s\n", threads, 2 * threads, dir);
    double ceil1 = m[5] > m[8] ? m[5] : m[8], ceil8 = m[7] > m[9] ? m[7] : m[9];
    printf("write/read, phoenix, 1 file : %.3f\n", m[1] / m[0]);
    printf("write/read, phoenix, 8 files: %.3f\n", m[3] / m[2]);
    printf("phoenix write / kernel pwrite ceiling (the faster thread count), 1 file : %.3f\n", m[1] / ceil1);
    printf("phoenix write / kernel pwrite ceiling (the faster thread count), 8 files: %.3f\n", m[3] / ceil8);
    printf("bytes verified: %s\n", ok ? "yes" : "NO");
    for (int i = 0; i < FILES; i++) { snprintf(p, sizeof p, "%s/rw_bench_%d.bin", dir, i); unlink(p); }
    snprintf(p, sizeof p, "%s/rw_bench_one.bin", dir);
    unlink(p);
    return ok ? 0 : 1;
}
