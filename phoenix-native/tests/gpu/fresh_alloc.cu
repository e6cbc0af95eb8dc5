// Does reading into freshly allocated device memory cost more than into memory already
// written once? Times phxfs_read of a whole file into: a fresh cudaMalloc buffer, the same
// buffer again, and a fresh buffer touched by cudaMemset first (memset time reported apart).
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "phoenix.h"

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static double timed_read(int fd, void *d, size_t n)
{
    double t0 = now();
    ssize_t r = phxfs_read(fd, 0, d, 0, (ssize_t)n, 0);
    double s = now() - t0;
    if (r != (ssize_t)n) { fprintf(stderr, "read %zd: %s\n", r, phxfs_last_error()); return -1; }
    return n / s / 1e9;
}

int main(int argc, char **argv)
{
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    fstat(fd, &st);
    size_t n = (size_t)st.st_size;
    cudaFree(0);
    phxfs_open(0);
    for (int round = 0; round < 3; round++) {
        void *a, *b;
        double t0 = now();
        cudaMalloc(&a, n);
        double ta = now() - t0;
        phxfs_regmem(0, a, n, NULL);
        double fresh = timed_read(fd, a, n), again = timed_read(fd, a, n);
        cudaMalloc(&b, n);
        t0 = now();
        cudaMemset(b, 0, n);
        cudaDeviceSynchronize();
        double tm = now() - t0;
        phxfs_regmem(0, b, n, NULL);
        double touched = timed_read(fd, b, n);
        printf("round %d: malloc %.1f ms; fresh %.2f GB/s, again %.2f GB/s, memset %.1f ms then %.2f GB/s\n",
               round, ta * 1e3, fresh, again, tm * 1e3, touched);
        phxfs_deregmem(0, a, n); phxfs_deregmem(0, b, n);
        cudaFree(a); cudaFree(b);
    }
    return 0;
}
