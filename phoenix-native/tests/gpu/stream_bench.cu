// Stream-ordered I/O against a synchronous read of the same bytes, same run, on the H200:
// a 1 GiB warm file (page cache) read into device memory (a) by phxfs_read, (b) by
// phxfs_read_stream on a stream the caller created (values known at enqueue), (c) by
// phxfs_read_stream_ex with size, buffer offset and file offset bound late (a 192 MiB read
// in a 256 MiB registered room: the late form's round trips), and writes (d) phxfs_write and
// (e) phxfs_write_stream of the 1 GiB buffer to a file. Each figure is the median of 3.
// Prints one JSON object per row. Exit 0 when every read's bytes are right.
#include <algorithm>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>
#include "phoenix.h"

static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
__global__ void spin(long long cycles) { long long t0 = clock64(); while (clock64() - t0 < cycles) {} }
__global__ void sum_bytes(const unsigned char *p, size_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += p[i];
    atomicAdd(out, s);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/dev/shm";
    const size_t n = 1ull << 30, late_room = 256u << 20, late_n = 192u << 20;
    char path[512], wpath[512];
    snprintf(path, sizeof path, "%s/stream-bench.bin", dir);
    snprintf(wpath, sizeof wpath, "%s/stream-bench-out.bin", dir);
    unsigned char *ref = (unsigned char *)malloc(n);
    for (size_t i = 0; i < n; i++) ref[i] = (unsigned char)((i * 2654435761u + 7) >> 11);
    int w = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (w < 0 || pwrite(w, ref, n, 0) != (ssize_t)n) { perror(path); return 2; }
    close(w);
    int fd = open(path, O_RDONLY), wfd = open(wpath, O_CREAT | O_TRUNC | O_RDWR, 0644);
    cudaFree(0);
    if (phxfs_open(0)) { fprintf(stderr, "open: %s\n", phxfs_last_error()); return 2; }
    unsigned char *d, *dl;
    cudaMalloc(&d, n);
    cudaMalloc(&dl, late_room);
    if (phxfs_regmem(0, d, n, NULL) || phxfs_regmem(0, dl, late_room, NULL)) { fprintf(stderr, "regmem: %s\n", phxfs_last_error()); return 2; }
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned long long *dsum, want = 0, want_late = 0;
    cudaMalloc(&dsum, sizeof *dsum);
    for (size_t i = 0; i < n; i++) want += ref[i];
    for (size_t i = 0; i < late_n; i++) want_late += ref[4096 + i];
    int bad = 0;
    auto check = [&](const char *what, const unsigned char *p, size_t len, unsigned long long expect) {
        unsigned long long got = 0;
        cudaMemset(dsum, 0, sizeof *dsum);
        sum_bytes<<<264, 256>>>(p, len, dsum);
        cudaMemcpy(&got, dsum, sizeof got, cudaMemcpyDeviceToHost);
        if (got != expect) { fprintf(stderr, "%s: sum %llu, want %llu\n", what, got, expect); bad = 1; }
    };
    std::vector<double> tsync, tstream, tlate, twsync, twstream;
    // how long the spin that holds the stream takes alone
    spin<<<1, 1, 0, s>>>(1); cudaStreamSynchronize(s);
    double spin_s = 1e9;
    for (int i = 0; i < 3; i++) {
        double t = now();
        spin<<<1, 1, 0, s>>>(20000000LL);
        cudaStreamSynchronize(s);
        spin_s = std::min(spin_s, now() - t);
    }
    for (int rep = 0; rep < 3; rep++) {
        cudaMemset(d, 0, n); cudaDeviceSynchronize();
        double t0 = now();
        ssize_t r = phxfs_read(fd, 0, d, 0, (ssize_t)n, 0);
        tsync.push_back(now() - t0);
        if (r != (ssize_t)n) { fprintf(stderr, "read %zd: %s\n", r, phxfs_last_error()); bad = 1; }
        check("sync read", d, n, want);
        cudaMemset(d, 0, n); cudaDeviceSynchronize();
        size_t sn = n; off_t bo = 0, fo = 0; ssize_t done = -1;
        t0 = now();
        if (phxfs_read_stream(fd, 0, d, &sn, &bo, &fo, &done, s)) { fprintf(stderr, "read_stream: %s\n", phxfs_last_error()); bad = 1; }
        cudaStreamSynchronize(s);
        tstream.push_back(now() - t0);
        if (done != (ssize_t)n) { fprintf(stderr, "stream done %zd\n", done); bad = 1; }
        check("stream read", d, n, want);
        size_t ln = 1; off_t lbo = 0, lfo = 0; ssize_t ldone = -1;
        // hold the stream (spin is loaded at its first launch, before the timed part) so the
        // late values below are set before the stream gets to the read
        spin<<<1, 1, 0, s>>>(rep == 0 ? 1 : 20000000LL);
        cudaStreamSynchronize(s);
        spin<<<1, 1, 0, s>>>(20000000LL); // ~10 ms, subtracted below
        t0 = now();
        if (phxfs_read_stream_ex(fd, 0, dl, &ln, &lbo, &lfo, &ldone, s, PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET | PHXFS_STREAM_LATE_F_OFFSET))
            { fprintf(stderr, "read_stream_ex: %s\n", phxfs_last_error()); bad = 1; }
        ln = late_n; lbo = 0; lfo = 4096;
        cudaStreamSynchronize(s);
        tlate.push_back(now() - t0 - spin_s);
        if (ldone != (ssize_t)late_n) { fprintf(stderr, "late done %zd\n", ldone); bad = 1; }
        check("late stream read", dl, late_n, want_late);
        t0 = now();
        r = phxfs_write(wfd, 0, d, 0, (ssize_t)n, 0);
        twsync.push_back(now() - t0);
        if (r != (ssize_t)n) { fprintf(stderr, "write %zd\n", r); bad = 1; }
        size_t wn = n; off_t wbo = 0, wfo = 0; ssize_t wdone = -1;
        t0 = now();
        if (phxfs_write_stream(wfd, 0, d, &wn, &wbo, &wfo, &wdone, s)) { fprintf(stderr, "write_stream: %s\n", phxfs_last_error()); bad = 1; }
        cudaStreamSynchronize(s);
        twstream.push_back(now() - t0);
        if (wdone != (ssize_t)n) { fprintf(stderr, "write stream done %zd\n", wdone); bad = 1; }
    }
    unsigned char *back = (unsigned char *)malloc(n);
    if (pread(wfd, back, n, 0) != (ssize_t)n || memcmp(back, ref, n)) { fprintf(stderr, "written file differs\n"); bad = 1; }
    auto row = [](const char *what, size_t bytes, double t) {
        printf("{\"row\": \"%s\", \"bytes\": %zu, \"seconds\": %.4f, \"gb_per_s\": %.2f}\n", what, bytes, t, bytes / t / 1e9);
    };
    row("read phxfs_read (sync)", n, median(tsync));
    row("read phxfs_read_stream, caller's stream", n, median(tstream));
    row("read late size+offsets, 256 MiB room", late_n, median(tlate));
    row("write phxfs_write (sync)", n, median(twsync));
    row("write phxfs_write_stream, caller's stream", n, median(twstream));
    printf("stream_bench: %s\n", bad ? "FAILED" : "ok");
    unlink(path); unlink(wpath);
    return bad;
}
