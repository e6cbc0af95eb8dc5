// Diagnosis on the GPU machine: abi_check's stream section straight on libphoenix (no cuFile
// shim). A kernel holds a non-blocking stream, a late-bound stream read of 300000 bytes at
// file offset 54321 into registered device memory + 100 follows, then a kernel sums the
// bytes. Modes (argv[2]): "plain" (nothing else first), "after-sync" (the same reads as
// abi_check's synchronous section first). Exit 0 when the sum is right.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "phoenix.h"

__global__ void spin(long long cycles) { long long t0 = clock64(); while (clock64() - t0 < cycles) {} }
__global__ void sum_bytes(const unsigned char *p, size_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += p[i];
    atomicAdd(out, s);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    const char *mode = argc > 2 ? argv[2] : "plain";
    const size_t fsize = (64u << 20) + 12345;
    unsigned char *ref = (unsigned char *)malloc(fsize);
    for (size_t i = 0; i < fsize; i++) ref[i] = (unsigned char)((i * 2654435761u + 42) >> 13);
    char path[512];
    snprintf(path, sizeof path, "%s/stream-probe.bin", dir);
    int w = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (w < 0 || pwrite(w, ref, fsize, 0) != (ssize_t)fsize) { perror(path); return 2; }
    close(w);
    int fd = open(path, O_RDONLY);
    cudaFree(0);
    if (phxfs_open(0)) { fprintf(stderr, "open: %s\n", phxfs_last_error()); return 2; }
    unsigned char *d;
    cudaMalloc(&d, fsize + (8u << 20));
    if (phxfs_regmem(0, d, fsize + (8u << 20), NULL)) { fprintf(stderr, "regmem: %s\n", phxfs_last_error()); return 2; }
    if (!strcmp(mode, "after-sync")) {
        printf("sync read %zd\n", (ssize_t)phxfs_read(fd, 0, d, 0, (ssize_t)fsize, 0));
        printf("sync read %zd\n", (ssize_t)phxfs_read(fd, 0, d, 4099, 1000003, 777));
    }
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned long long *dsum;
    cudaMalloc(&dsum, sizeof *dsum);
    // argv[3]: which work precedes the read on the stream: "memset+spin" (abi_check's), "spin", "memset"
    const char *before = argc > 3 ? argv[3] : "memset+spin";
    cudaMemset(dsum, 0, sizeof *dsum);
    if (strstr(before, "memset")) cudaMemsetAsync(d, 0, 1u << 20, s);
    if (strstr(before, "spin")) spin<<<1, 1, 0, s>>>(200000000LL);
    printf("before the read: %s\n", before);
    // argv[6]: "warm" launches sum_bytes once before the read (its code is then loaded);
    // "after" launches it only after the stream has been synchronised
    const char *kmode = argc > 6 ? argv[6] : "";
    if (!strcmp(kmode, "warm")) { sum_bytes<<<1, 32, 0, s>>>(d, 1, dsum); cudaStreamSynchronize(s); cudaMemset(dsum, 0, sizeof *dsum); }
    // argv[4]: bytes to read (300000); argv[5]: "late" (all three cells bound late, sizes set
    // after enqueue) or "early" (values set before enqueue, only the file offset late)
    const size_t want_n = argc > 4 ? strtoull(argv[4], NULL, 0) : 300000;
    const int all_late = !(argc > 5 && !strcmp(argv[5], "early"));
    size_t sz = all_late ? 1 : want_n;
    off_t foff = all_late ? 0 : 54321, boff = all_late ? 0 : 100;
    ssize_t done = -999;
    timespec q0, q1;
    clock_gettime(CLOCK_MONOTONIC, &q0);
    int rc = phxfs_read_stream_ex(fd, 0, d, &sz, &boff, &foff, &done, s, all_late ?
                                  PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET | PHXFS_STREAM_LATE_F_OFFSET
                                  : PHXFS_STREAM_LATE_F_OFFSET);
    clock_gettime(CLOCK_MONOTONIC, &q1);
    printf("queued rc %d (%zu bytes, %s) in %.3f ms\n", rc, want_n, all_late ? "late" : "early",
           (q1.tv_sec - q0.tv_sec) * 1e3 + (q1.tv_nsec - q0.tv_nsec) * 1e-6);
    // late values are set before the next launch: loading sum_bytes lazily synchronises the
    // context, so the stream passes the read during that launch (with "none" ahead of it, the
    // stream may also get there before these stores: the late case needs work ahead)
    sz = want_n; foff = 54321; boff = 100;
    if (strcmp(kmode, "after")) sum_bytes<<<64, 256, 0, s>>>(d + 100, want_n, dsum);
    cudaError_t e = cudaStreamSynchronize(s);
    if (!strcmp(kmode, "after")) { sum_bytes<<<64, 256, 0, s>>>(d + 100, want_n, dsum); cudaStreamSynchronize(s); }
    unsigned long long sum = 0, want = 0;
    cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < want_n; i++) want += ref[54321 + i];
    printf("sync %s, done %zd, sum %llu, want %llu: %s\n", cudaGetErrorString(e), done, sum, want,
           done == (ssize_t)want_n && sum == want ? "ok" : "FAILED");
    unlink(path);
    return done == (ssize_t)want_n && sum == want ? 0 : 1;
}
