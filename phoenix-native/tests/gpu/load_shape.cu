// Where does a one-shot weight load lose time against the bounce ceiling? In one process,
// interleaved for several rounds, reads a warm file into device memory through libphoenix as:
//   ceiling  one batch of 64 MiB requests from offset 0 into a buffer allocated and
//            registered once (what `phoenix bench` times);
//   shifted  the same into the same buffer, but from file offset 12 KiB (a load's first tensor
//            byte after a safetensors header, 4 KiB aligned);
//   fresh    phxfs_mem_alloc (zeroed) + regmem, the shifted batch, deregmem + free, all timed;
//   raw      cudaMalloc (not zeroed) + regmem, the shifted batch, timed the same way;
//   polled   the shifted batch submitted asynchronously and polled every 50 ms for bytes done.
// Prints every round and the median per shape. Usage: load_shape FILE [rounds]
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "phoenix.h"

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static int fd;
static size_t n, len;
static phxfs_io_req_t *reqs;
static int nreq;

static void build(void *buf, off_t start)
{
    const size_t req = (size_t)64 << 20;
    nreq = 0;
    for (size_t off = 0; off < len; off += req) {
        phxfs_io_req_t r = {};
        r.fd = fd; r.device_id = 0; r.buf = buf; r.buf_offset = (off_t)off;
        r.nbytes = len - off < req ? len - off : req; r.f_offset = start + (off_t)off;
        reqs[nreq++] = r;
    }
}

static double read_into(void *buf, off_t start, int polled)
{
    build(buf, start);
    double t0 = now();
    int rc;
    if (polled) {
        phxfs_batch_t *b = phxfs_batch_submit_read(reqs, nreq);
        if (!b) { fprintf(stderr, "submit: %s\n", phxfs_last_error()); exit(1); }
        while (phxfs_batch_poll(b) == 0) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            (void)phxfs_batch_bytes_done(b);
        }
        rc = phxfs_batch_wait(b);
        phxfs_batch_destroy(b);
    } else {
        rc = phxfs_read_batch(reqs, nreq);
    }
    double s = now() - t0;
    if (rc < 0) { fprintf(stderr, "batch: %s\n", phxfs_last_error()); exit(1); }
    for (int i = 0; i < nreq; i++)
        if (reqs[i].result != (ssize_t)reqs[i].nbytes) { fprintf(stderr, "short read %d\n", i); exit(1); }
    return s;
}

static double fresh_load(int zeroed)
{
    double t0 = now();
    void *b;
    if (zeroed) {
        if (phxfs_mem_alloc(0, len, &b) < 0) { fprintf(stderr, "alloc: %s\n", phxfs_last_error()); exit(1); }
    } else if (cudaMalloc(&b, len) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); exit(1); }
    if (phxfs_regmem(0, b, len, NULL) < 0) { fprintf(stderr, "regmem: %s\n", phxfs_last_error()); exit(1); }
    read_into(b, 12288, 0);
    double s = now() - t0;
    phxfs_deregmem(0, b, len);
    if (zeroed) phxfs_mem_free(0, b); else cudaFree(b);
    return s;
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s FILE [rounds]\n", argv[0]); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 6;
    if (rounds < 1 || rounds > 64) rounds = 6;
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    struct stat st;
    fstat(fd, &st);
    n = (size_t)st.st_size;
    len = (n - 12288) & ~(size_t)4095;
    reqs = (phxfs_io_req_t *)calloc(n / (64 << 20) + 2, sizeof *reqs);
    cudaFree(0);
    if (phxfs_open(0) < 0) { fprintf(stderr, "open: %s\n", phxfs_last_error()); return 1; }
    const char *names[] = {"fresh", "ceiling", "shifted", "raw", "polled"};
    double gbps[5][64];
    void *a;
    cudaMalloc(&a, n);
    phxfs_regmem(0, a, n, NULL);
    // the first shape measured is the process's first transfer, as in a one-shot load
    for (int r = 0; r < rounds; r++) {
        gbps[0][r] = len / fresh_load(1) / 1e9;
        gbps[1][r] = len / read_into(a, 0, 0) / 1e9;
        gbps[2][r] = len / read_into(a, 12288, 0) / 1e9;
        gbps[3][r] = len / fresh_load(0) / 1e9;
        gbps[4][r] = len / read_into(a, 12288, 1) / 1e9;
        printf("round %d:", r);
        for (int k = 0; k < 5; k++) printf(" %s %.2f", names[k], gbps[k][r]);
        printf(" GB/s\n");
    }
    printf("median:");
    for (int k = 0; k < 5; k++) {
        qsort(gbps[k], (size_t)rounds, sizeof(double), cmp);
        printf(" %s %.2f", names[k], gbps[k][rounds / 2]);
    }
    printf(" GB/s (%zu bytes, %d requests)\n", len, nreq);
    return 0;
}
