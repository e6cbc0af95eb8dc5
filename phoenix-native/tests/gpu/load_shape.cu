// Where does a one-shot weight load lose time against the bounce ceiling? In one process,
// for several rounds, reads a warm file into device memory through libphoenix in the shapes a
// sequence names, each token one timed batch of 64 MiB requests:
//   cK   into a buffer allocated and registered once, from file offset K KiB (c0 is what
//        `phoenix bench` times; c12 is a load's layout when a 12 KiB header is skipped);
//   fK   phxfs_mem_alloc (zeroed) + regmem + the batch + deregmem + free, all timed;
//   rK   the same with cudaMalloc (not zeroed);
//   nK   into a buffer cudaMalloc'd for it, only the batch timed (a load's first touch of
//        fresh device memory, against cK's buffer written before);
//   pK   like cK, submitted asynchronously and polled every 5 ms for bytes done;
//   sN   no transfer: sleep N ms (does a pause after a free change the next transfer?).
// Prints every round and the median per token. Usage: load_shape FILE [rounds] [tokens,...]
// (default sequence f12,c0,c12,r12,p12).
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
            struct timespec ts = {0, 5 * 1000 * 1000};
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

static double fresh_load(int zeroed, off_t start)
{
    double t0 = now();
    void *b;
    if (zeroed) {
        if (phxfs_mem_alloc(0, len, &b) < 0) { fprintf(stderr, "alloc: %s\n", phxfs_last_error()); exit(1); }
    } else if (cudaMalloc(&b, len) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); exit(1); }
    if (phxfs_regmem(0, b, len, NULL) < 0) { fprintf(stderr, "regmem: %s\n", phxfs_last_error()); exit(1); }
    read_into(b, start, 0);
    double s = now() - t0;
    phxfs_deregmem(0, b, len);
    if (zeroed) phxfs_mem_free(0, b); else cudaFree(b);
    return s;
}

static double fresh_read(off_t start)
{
    void *b;
    if (cudaMalloc(&b, len) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); exit(1); }
    if (phxfs_regmem(0, b, len, NULL) < 0) { fprintf(stderr, "regmem: %s\n", phxfs_last_error()); exit(1); }
    double s = read_into(b, start, 0);
    phxfs_deregmem(0, b, len);
    cudaFree(b);
    return s;
}

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s FILE [rounds] [tokens,...]\n", argv[0]); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 6;
    if (rounds < 1 || rounds > 64) rounds = 6;
    char seq[256];
    snprintf(seq, sizeof seq, "%s", argc > 3 ? argv[3] : "f12,c0,c12,r12,p12");
    char *tok[16];
    int ntok = 0;
    for (char *t = strtok(seq, ","); t && ntok < 16; t = strtok(NULL, ",")) {
        if (!strchr("cfnrps", t[0]) || atoi(t + 1) < 0) { fprintf(stderr, "bad token %s\n", t); return 2; }
        tok[ntok++] = t;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    struct stat st;
    fstat(fd, &st);
    n = (size_t)st.st_size;
    len = (n - ((size_t)4 << 20)) & ~(size_t)4095; /* every token moves the same bytes */
    reqs = (phxfs_io_req_t *)calloc(n / (64 << 20) + 2, sizeof *reqs);
    cudaFree(0);
    if (phxfs_open(0) < 0) { fprintf(stderr, "open: %s\n", phxfs_last_error()); return 1; }
    static double gbps[16][64];
    void *a;
    cudaMalloc(&a, n);
    phxfs_regmem(0, a, n, NULL);
    /* the first token of round 0 is the process's first transfer, as in a one-shot load */
    for (int r = 0; r < rounds; r++) {
        printf("round %d:", r);
        for (int k = 0; k < ntok; k++) {
            off_t start = (off_t)atoi(tok[k] + 1) * 1024;
            if (tok[k][0] == 's') {
                struct timespec ts = {start / 1024 / 1000, (start / 1024 % 1000) * 1000000L};
                nanosleep(&ts, NULL);
                gbps[k][r] = 0;
                continue;
            }
            double s = tok[k][0] == 'c' ? read_into(a, start, 0)
                     : tok[k][0] == 'p' ? read_into(a, start, 1)
                     : tok[k][0] == 'n' ? fresh_read(start)
                                        : fresh_load(tok[k][0] == 'f', start);
            gbps[k][r] = len / s / 1e9;
            printf(" %s %.2f", tok[k], gbps[k][r]);
        }
        printf(" GB/s\n");
    }
    printf("median:");
    for (int k = 0; k < ntok; k++) {
        qsort(gbps[k], (size_t)rounds, sizeof(double), cmp);
        printf(" %s %.2f", tok[k], gbps[k][rounds / 2]);
    }
    printf(" GB/s (%zu bytes, %d requests)\n", len, nreq);
    return 0;
}
