/*
 * libphoenix through the phxfs module in the guest, beyond its own unit tests: a registration
 * larger than the staging pool, a revoke seen through the library, and the p2p/staging/bounce
 * benchmark (docs/benchmarks.md). The mode is the process's (PHX_MODE); each subcommand prints
 * "@@PHX <name> PASS|FAIL <detail>".
 *
 *   lp_check read DEV MiB SEED MODE @name    read MiB of DEV (pattern SEED) into device memory
 *   lp_check revoke DEV @name                free registered device memory: I/O then fails
 *   lp_check bench DEV MiB ITERS @name       throughput of ITERS reads of MiB
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "phoenix.h"
#include "pattern.h"

#define MiB (1024ull * 1024)
static const char *name = "?";

static int result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int result(int ok, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("@@PHX %s %s %s\n", name, ok ? "PASS" : "FAIL", msg);
    fflush(stdout);
    return ok ? 0 : 1;
}
#define CHECK(c, ...) do { if (!(c)) return result(0, __VA_ARGS__); } while (0)

static long mapped_bytes(void)
{
    char buf[64] = "";
    int fd = open("/sys/class/phxfs/phxfs_dev0/mapped_bytes", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0) close(fd);
    return n > 0 ? atol(buf) : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int c_read(const char *dev, size_t len, uint64_t seed, const char *want_mode)
{
    CHECK(phxfs_open(0) == 0, "open: %s", phxfs_last_error());
    phxfs_device_info_t info;
    phxfs_get_device_info(0, &info);
    CHECK(!strcmp(phxfs_mode_name(info.mode), want_mode), "mode %s, want %s (%s)", phxfs_mode_name(info.mode), want_mode, info.why);
    int fd = phxfs_file_open(dev, O_RDONLY, 0, 1, NULL);
    CHECK(fd >= 0, "open %s: %s", dev, phxfs_last_error());
    void *mem;
    CHECK(phxfs_mem_alloc(0, len, &mem) == 0, "mem_alloc: %s", phxfs_last_error());
    CHECK(phxfs_regmem(0, mem, len, NULL) == 0, "regmem: %s", phxfs_last_error());
    /* one call for the whole registration, then a batch of 1 MiB requests in reverse order */
    ssize_t n = phxfs_read(fd, 0, mem, 0, (ssize_t)len, 0);
    CHECK(n == (ssize_t)len, "read: %zd (%s)", n, phxfs_last_error());
    char *host = malloc(len);
    CHECK(phxfs_memcpy_to_host(0, host, mem, len) == 0, "memcpy_to_host: %s", phxfs_last_error());
    long bad = pat_cmp(host, len, seed, 0);
    CHECK(bad < 0, "read: byte %ld differs", bad);
    int nreq = (int)(len / MiB);
    phxfs_io_req_t *reqs = calloc((size_t)nreq, sizeof *reqs);
    for (int i = 0; i < nreq; i++)
        reqs[i] = (phxfs_io_req_t){fd, 0, mem, (off_t)((nreq - 1 - i) * MiB), MiB, (off_t)((nreq - 1 - i) * MiB), 0};
    memset(host, 0, len);
    CHECK(phxfs_memcpy_to_device(0, mem, host, len) == 0, "clear: %s", phxfs_last_error());
    CHECK(phxfs_read_batch(reqs, nreq) == 0, "batch: %s", phxfs_last_error());
    CHECK(phxfs_memcpy_to_host(0, host, mem, len) == 0, "memcpy_to_host: %s", phxfs_last_error());
    bad = pat_cmp(host, len, seed, 0);
    CHECK(bad < 0, "batch: byte %ld differs", bad);
    CHECK(phxfs_deregmem(0, mem, len) == 0, "deregmem: %s", phxfs_last_error());
    CHECK(phxfs_mem_free(0, mem) == 0, "mem_free: %s", phxfs_last_error());
    close(fd);
    return result(1, "%zu MiB registration read whole and as %d batched requests in %s mode, verified", len >> 20, nreq,
                  phxfs_mode_name(info.mode));
}

static int c_revoke(const char *dev)
{
    CHECK(phxfs_open(0) == 0, "open: %s", phxfs_last_error());
    long base = mapped_bytes();
    int fd = phxfs_file_open(dev, O_RDONLY, 0, 1, NULL);
    void *mem;
    CHECK(phxfs_mem_alloc(0, 4 * MiB, &mem) == 0, "mem_alloc: %s", phxfs_last_error());
    CHECK(phxfs_regmem(0, mem, 4 * MiB, NULL) == 0, "regmem: %s", phxfs_last_error());
    CHECK(phxfs_read(fd, 0, mem, 0, 4 * MiB, 0) == (ssize_t)(4 * MiB), "read: %s", phxfs_last_error());
    /* the "driver" takes the memory back while the registration still maps it */
    CHECK(phxfs_mem_free(0, mem) == 0, "mem_free: %s", phxfs_last_error());
    ssize_t n = 0;
    for (int i = 0; i < 200 && n >= 0; i++) {
        n = phxfs_read(fd, 0, mem, 0, 65536, 0);
        if (n >= 0) usleep(10000);
    }
    CHECK(n == -EFAULT, "read after revoke: %zd, want -EFAULT (%s)", n, phxfs_last_error());
    CHECK(phxfs_deregmem(0, mem, 4 * MiB) == 0, "deregmem after revoke: %s", phxfs_last_error());
    CHECK(mapped_bytes() == base, "mapped_bytes %ld, was %ld", mapped_bytes(), base);
    close(fd);
    return result(1, "freeing registered memory revoked its mapping: read -EFAULT (%s), deregmem ok", phxfs_last_error()[0] ? "reported" : "");
}

static int c_bench(const char *dev, size_t len, int iters)
{
    CHECK(phxfs_open(0) == 0, "open: %s", phxfs_last_error());
    phxfs_device_info_t info;
    phxfs_get_device_info(0, &info);
    int fd = phxfs_file_open(dev, O_RDONLY, 0, 1, NULL);
    void *mem;
    CHECK(phxfs_mem_alloc(0, len, &mem) == 0, "mem_alloc: %s", phxfs_last_error());
    CHECK(phxfs_regmem(0, mem, len, NULL) == 0, "regmem: %s", phxfs_last_error());
    CHECK(phxfs_read(fd, 0, mem, 0, (ssize_t)len, 0) == (ssize_t)len, "warm-up read: %s", phxfs_last_error());
    double t0 = now();
    for (int i = 0; i < iters; i++)
        CHECK(phxfs_read(fd, 0, mem, 0, (ssize_t)len, 0) == (ssize_t)len, "read: %s", phxfs_last_error());
    double dt = now() - t0;
    phxfs_deregmem(0, mem, len);
    phxfs_mem_free(0, mem);
    close(fd);
    return result(1, "mode=%s MBps=%.1f (%d x %zu MiB O_DIRECT reads into emu device memory, %.2f s)", phxfs_mode_name(info.mode),
                  (double)len * iters / dt / 1e6, iters, len >> 20, dt);
}

int main(int argc, char **argv)
{
    if (argc > 2 && argv[argc - 1][0] == '@') name = argv[--argc] + 1;
    if (argc < 3) { fprintf(stderr, "usage: see lp_check.c\n"); return 2; }
    if (!strcmp(argv[1], "read") && argc == 6) return c_read(argv[2], strtoull(argv[3], NULL, 0) * MiB, strtoull(argv[4], NULL, 0), argv[5]);
    if (!strcmp(argv[1], "revoke")) return c_revoke(argv[2]);
    if (!strcmp(argv[1], "bench") && argc == 5) return c_bench(argv[2], strtoull(argv[3], NULL, 0) * MiB, atoi(argv[4]));
    fprintf(stderr, "lp_check: bad arguments\n");
    return 2;
}
