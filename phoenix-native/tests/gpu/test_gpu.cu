// GPU tests of libphoenix in bounce mode with cudaMalloc'd buffers: batch,
// async batch, write round trip, and stream ordering where a kernel consumes
// the data a stream read produced with no host synchronisation in between.
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "phoenix.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #c, phxfs_last_error()); failures++; } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { fprintf(stderr, "%s:%d: %s = %lld, expected %lld (%s)\n", __FILE__, __LINE__, #a, a_, b_, phxfs_last_error()); failures++; } } while (0)
#define CU(x) do { cudaError_t e_ = (x); if (e_) { fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(2); } } while (0)

static unsigned char byte_at(size_t x) { return (unsigned char)((x * 2654435761u >> 13) ^ (x >> 12) ^ 0x3c); }

static const char *make_file(const char *dir, size_t size)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/phx_gpu_test.bin", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    unsigned char *buf = (unsigned char *)malloc(1 << 20);
    for (size_t off = 0; off < size; off += 1 << 20) {
        size_t n = size - off < (1u << 20) ? size - off : (1u << 20);
        for (size_t i = 0; i < n; i++) buf[i] = byte_at(off + i);
        if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) { perror("pwrite"); exit(2); }
    }
    free(buf);
    close(fd);
    return path;
}

// position-weighted checksum so misplaced bytes change the result
__global__ void checksum(const unsigned char *p, size_t n, unsigned long long base, unsigned long long *out)
{
    unsigned long long acc = 0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc += (unsigned long long)p[i] * (base + i + 1);
    atomicAdd(out, acc);
}

static unsigned long long host_checksum(size_t file_off, size_t n)
{
    unsigned long long acc = 0;
    for (size_t i = 0; i < n; i++) acc += (unsigned long long)byte_at(file_off + i) * (i + 1);
    return acc;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    size_t fsize = (512u << 20) + 4099;
    const char *path = make_file(dir, fsize);
    CHECK_EQ(phxfs_open(0), 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    printf("device 0: %s, mode %s, connector %s, workers %d\n", info.name, phxfs_mode_name(info.mode), info.connector, info.workers);
    CHECK_EQ(info.mode, PHXFS_MODE_BOUNCE);
    int fd = phxfs_file_open(path, O_RDWR, 0, 0, NULL);
    CHECK(fd >= 0);
    unsigned char *d = NULL;
    CU(cudaMalloc(&d, fsize));
    CHECK_EQ(phxfs_regmem(0, d, fsize, NULL), 0);
    unsigned char *h = (unsigned char *)malloc(fsize);

    // 1. one large read, verified byte for byte
    CHECK_EQ(phxfs_read(fd, 0, d, 0, (ssize_t)fsize, 0), (ssize_t)fsize);
    CU(cudaMemcpy(h, d, fsize, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < fsize; i++) bad += h[i] != byte_at(i);
    CHECK_EQ(bad, 0);

    // 2. batches: 8 x 512 x 128 KiB at shuffled offsets, sync then async
    const int NR = 512;
    const size_t RS = 128u << 10;
    phxfs_io_req_t *reqs = (phxfs_io_req_t *)calloc(NR, sizeof *reqs);
    for (int round = 0; round < 8; round++) {
        CU(cudaMemset(d, 0, (size_t)NR * RS));
        for (int i = 0; i < NR; i++) {
            size_t src = (size_t)((i * 37 + round * 11) % NR) * RS + (size_t)round;
            reqs[i] = (phxfs_io_req_t){fd, 0, d, (off_t)((size_t)i * RS), RS, (off_t)src, 0};
        }
        if (round % 2) {
            phxfs_batch_t *b = phxfs_batch_submit_read(reqs, NR);
            CHECK(b != NULL);
            CHECK_EQ(phxfs_batch_wait(b), 0);
            phxfs_batch_destroy(b);
        } else {
            CHECK_EQ(phxfs_read_batch(reqs, NR), 0);
        }
        CU(cudaMemcpy(h, d, (size_t)NR * RS, cudaMemcpyDeviceToHost));
        size_t wrong = 0;
        for (int i = 0; i < NR; i++) {
            CHECK_EQ(reqs[i].result, (long long)RS);
            for (size_t k = 0; k < RS; k += 97) wrong += h[(size_t)i * RS + k] != byte_at((size_t)reqs[i].f_offset + k);
        }
        CHECK_EQ(wrong, 0);
    }

    // 3. write round trip: device -> new file -> compare
    char out[600];
    snprintf(out, sizeof out, "%s.out", path);
    int wfd = phxfs_file_open(out, O_CREAT | O_TRUNC | O_RDWR, 0644, 1, NULL);
    CHECK(wfd >= 0);
    CHECK_EQ(phxfs_read(fd, 0, d, 0, (ssize_t)fsize, 0), (ssize_t)fsize);
    CHECK_EQ(phxfs_write(wfd, 0, d, 0, (ssize_t)fsize, 0), (ssize_t)fsize);
    memset(h, 0, fsize);
    int plain = open(out, O_RDONLY);
    CHECK_EQ(pread(plain, h, fsize, 0), (ssize_t)fsize);
    bad = 0;
    for (size_t i = 0; i < fsize; i++) bad += h[i] != byte_at(i);
    CHECK_EQ(bad, 0);
    close(plain);
    close(wfd);
    unlink(out);

    // 4. stream ordering: read -> kernel -> read (same buffer) -> kernel, no host sync between
    cudaStream_t s1, s2;
    CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    unsigned long long *sums;
    CU(cudaMalloc(&sums, 8 * sizeof *sums));
    CU(cudaMemset(sums, 0, 8 * sizeof *sums));
    size_t n = (48u << 20) + 5;  // several bounce slots
    off_t bo = 0, offA = 4097, offB = 100u << 20, offC = (off_t)fsize + 10, offD = 200u << 20;
    ssize_t doneA = -1, doneB = -1, doneC = 0, doneD = -1;
    CHECK_EQ(phxfs_read_stream(fd, 0, d, &n, &bo, &offA, &doneA, s1), 0);
    checksum<<<264, 256, 0, s1>>>(d, n, 0, &sums[0]);
    CHECK_EQ(phxfs_read_stream(fd, 0, d, &n, &bo, &offB, &doneB, s1), 0);
    checksum<<<264, 256, 0, s1>>>(d, n, 0, &sums[1]);
    // a read past EOF returns 0 bytes and keeps the buffer; a read from a write-only fd is refused
    int wo = open(path, O_WRONLY);
    CHECK_EQ(phxfs_read_stream(fd, 0, d, &n, &bo, &offC, &doneC, s1), 0);
    ssize_t doneF = 0;
    CHECK_EQ(phxfs_read_stream(wo, 0, d, &n, &bo, &offA, &doneF, s1), -EBADF); // refused at enqueue
    checksum<<<264, 256, 0, s1>>>(d, n, 0, &sums[2]);
    // a second stream on another part of the buffer, concurrently
    size_t n2 = 24u << 20;
    off_t bo2 = 256u << 20;
    CHECK_EQ(phxfs_read_stream(fd, 0, d, &n2, &bo2, &offD, &doneD, s2), 0);
    checksum<<<264, 256, 0, s2>>>(d + bo2, n2, 0, &sums[3]);
    CU(cudaStreamSynchronize(s1));
    CU(cudaStreamSynchronize(s2));
    unsigned long long got[8];
    CU(cudaMemcpy(got, sums, sizeof got, cudaMemcpyDeviceToHost));
    CHECK_EQ(doneA, (long long)n);
    CHECK_EQ(doneB, (long long)n);
    CHECK_EQ(doneC, 0);
    CHECK(doneF < 0);
    CHECK_EQ(doneD, (long long)n2);
    CHECK(got[0] == host_checksum((size_t)offA, n));
    CHECK(got[1] == host_checksum((size_t)offB, n));
    CHECK(got[2] == host_checksum((size_t)offB, n)); // failed and empty reads left B's bytes in place
    CHECK(got[3] == host_checksum((size_t)offD, n2));

    // 5. stream write: kernel-free round trip through a file
    size_t wn = (20u << 20) + 3;
    off_t wbo = 5, wfo = 1;
    ssize_t wdone = -1;
    int sfd = phxfs_file_open(out, O_CREAT | O_TRUNC | O_RDWR, 0644, 0, NULL);
    CHECK_EQ(phxfs_read_stream(fd, 0, d, &wn, &wbo, &offB, &doneB, s1), 0);
    CHECK_EQ(phxfs_write_stream(sfd, 0, d, &wn, &wbo, &wfo, &wdone, s1), 0);
    CU(cudaStreamSynchronize(s1));
    CHECK_EQ(wdone, (long long)wn);
    memset(h, 0, wn);
    CHECK_EQ(pread(sfd, h, wn, 1), (ssize_t)wn);
    bad = 0;
    for (size_t i = 0; i < wn; i++) bad += h[i] != byte_at((size_t)offB + i);
    CHECK_EQ(bad, 0);
    close(sfd);
    unlink(out);

    close(wo);
    CHECK_EQ(phxfs_deregmem(0, d, fsize), 0);
    cudaFree(d);
    close(fd);
    unlink(path);
    if (failures) { fprintf(stderr, "test_gpu: %d check(s) failed\n", failures); return 1; }
    printf("test_gpu: ok\n");
    return 0;
}
