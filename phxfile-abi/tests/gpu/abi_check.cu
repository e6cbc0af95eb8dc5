// ABI check on the GPU machine: built against NVIDIA's own cufile.h and linked to
// libcufile.so.0, then run with Phoenix's library in its place (LD_LIBRARY_PATH) -
// or with NVIDIA's, to compare. Real device memory throughout: registered,
// unregistered and offset reads, O_DIRECT with unaligned ranges, host memory,
// writes, a batch of 64 mixed requests into device and host buffers, and
// stream-ordered reads whose size and offsets change after enqueue while a
// kernel holds the stream, consumed by a kernel with no host sync in between.
//   abi_check DIR EXPECT   (DIR: scratch directory; EXPECT: a substring of the
//   path libcufile must be loaded from, "" for any)
#include <cufile.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <string>
#include <vector>

// The libcufile this process mapped (dladdr of a symbol would name the executable when it
// holds a canonical PLT entry for it).
static std::string loaded_cufile()
{
    std::string found;
    FILE *m = fopen("/proc/self/maps", "r");
    char line[1024];
    while (m && fgets(line, sizeof line, m)) {
        char *p = strchr(line, '/');
        if (p && strstr(p, "libcufile")) { found = p; found.erase(found.find_last_not_of("\n") + 1); break; }
    }
    if (m) fclose(m);
    return found;
}

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "abi_check:%d: CHECK failed: %s\n", __LINE__, #c); failures++; } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { fprintf(stderr, "abi_check:%d: %s = %lld, expected %lld\n", __LINE__, #a, a_, b_); failures++; } } while (0)
#define CU_OK(call) do { CUfileError_t s_ = (call); if (s_.err != CU_FILE_SUCCESS) { fprintf(stderr, "abi_check:%d: %s -> %d (%s)\n", __LINE__, #call, (int)s_.err, CUFILE_ERRSTR((int)s_.err)); failures++; } } while (0)
#define CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { fprintf(stderr, "abi_check:%d: %s: %s\n", __LINE__, #call, cudaGetErrorString(e_)); exit(1); } } while (0)

static void fill(unsigned char *p, size_t n, unsigned seed, size_t start)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(((start + i) * 2654435761u + seed) >> 13);
}

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}

__global__ void sum_bytes(const unsigned char *p, size_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += p[i];
    atomicAdd(out, s);
}

static CUfileHandle_t reg(int fd)
{
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    CU_OK(cuFileHandleRegister(&fh, &d));
    return fh;
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: abi_check DIR EXPECT\n"); return 2; }
    setvbuf(stdout, NULL, _IOLBF, 0); // a run killed by its time limit still shows how far it got
    CUDA(cudaFree(0));
    std::string lib = loaded_cufile();
    printf("libcufile: %s\n", lib.c_str());
    if (argv[2][0] && lib.find(argv[2]) == std::string::npos) { fprintf(stderr, "abi_check: expected a library under %s\n", argv[2]); return 1; }

    fprintf(stderr, "abi_check: at cuFileDriverOpen\n");
    CU_OK(cuFileDriverOpen());
    CUfileDrvProps_t p;
    CU_OK(cuFileDriverGetProperties(&p));
    int version = 0;
    CU_OK(cuFileGetVersion(&version));
    printf("version %d, nvfs %u.%u, fflags %#x, batch max %u, cache %u KiB\n", version, p.nvfs.major_version,
           p.nvfs.minor_version, p.fflags, p.max_batch_io_size, p.max_device_cache_size);
    size_t v = 0;
    CU_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v));
    CHECK(v > 0);

    const size_t fsize = (64u << 20) + 12345;
    std::vector<unsigned char> ref(fsize), got(fsize + (8u << 20));
    fill(ref.data(), fsize, 42, 0);
    char path[512], out[512];
    snprintf(path, sizeof path, "%s/abi-in.bin", argv[1]);
    snprintf(out, sizeof out, "%s/abi-out.bin", argv[1]);
    int w = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(w >= 0 && pwrite(w, ref.data(), fsize, 0) == (ssize_t)fsize);
    fsync(w);
    close(w);
    int fd = open(path, O_RDONLY), dfd = open(path, O_RDONLY | O_DIRECT), ofd = open(out, O_CREAT | O_TRUNC | O_RDWR, 0644);
    CHECK(fd >= 0 && ofd >= 0);
    CUfileHandle_t fh = reg(fd), dfh = dfd >= 0 ? reg(dfd) : NULL, ofh = reg(ofd);
    // a made-up handle: refused, not dereferenced (checked only for the library under test:
    // NVIDIA's may well crash on it, which would end the comparison run early)
    if (argv[2][0]) CHECK_EQ(cuFileRead((CUfileHandle_t)(uintptr_t)0x4321, got.data(), 10, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);

    unsigned char *d = NULL, *d2 = NULL;
    CUDA(cudaMalloc(&d, fsize + (8u << 20)));
    CUDA(cudaMalloc(&d2, 8u << 20));
    CU_OK(cuFileBufRegister(d, fsize + (8u << 20), 0));
    // whole file into registered device memory
    CHECK_EQ(cuFileRead(fh, d, fsize, 0, 0), fsize);
    CUDA(cudaMemcpy(got.data(), d, fsize, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got.data(), ref.data(), fsize) == 0);
    // O_DIRECT, unaligned file offset, size and buffer offset
    if (dfh) {
        CHECK_EQ(cuFileRead(dfh, d, 1000003, 777, 4099), 1000003);
        CUDA(cudaMemcpy(got.data(), d + 4099, 1000003, cudaMemcpyDeviceToHost));
        CHECK(memcmp(got.data(), ref.data() + 777, 1000003) == 0);
    }
    // unregistered device memory
    CHECK_EQ(cuFileRead(fh, d2, 5u << 20, 3u << 20, 5), 5u << 20);
    CUDA(cudaMemcpy(got.data(), d2 + 5, 5u << 20, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got.data(), ref.data() + (3u << 20), 5u << 20) == 0);
    // past the end of the file
    CHECK_EQ(cuFileRead(fh, d2, 1u << 20, fsize - 100, 0), 100);
    // host memory
    std::vector<unsigned char> host(1u << 20);
    CHECK_EQ(cuFileRead(fh, host.data(), 1u << 20, 999, 0), 1u << 20);
    CHECK(memcmp(host.data(), ref.data() + 999, 1u << 20) == 0);
    // write from device memory, read back with POSIX
    CHECK_EQ(cuFileRead(fh, d, fsize, 0, 0), fsize);
    CHECK_EQ(cuFileWrite(ofh, d, fsize, 0, 0), fsize);
    CHECK(pread(ofd, got.data(), fsize, 0) == (ssize_t)fsize && memcmp(got.data(), ref.data(), fsize) == 0);

    // a batch of 64: reads into device and registered host memory, writes from device memory
    const unsigned N = 64, CH = 256u << 10;
    std::vector<unsigned char> hb(N * CH);
    CU_OK(cuFileBufRegister(hb.data(), hb.size(), 0));
    CUfileBatchHandle_t b;
    fprintf(stderr, "abi_check: at the batch\n");
    CU_OK(cuFileBatchIOSetUp(&b, N));
    std::vector<CUfileIOParams_t> io(N);
    for (unsigned i = 0; i < N; i++) {
        memset(&io[i], 0, sizeof io[i]);
        io[i].mode = CUFILE_BATCH;
        io[i].cookie = (void *)(uintptr_t)(i + 1);
        io[i].u.batch.size = CH;
        if (i % 4 == 3) { // write device bytes [i*CH) to out at (fsize + i*CH)
            io[i].fh = ofh; io[i].opcode = CUFILE_WRITE; io[i].u.batch.devPtr_base = d;
            io[i].u.batch.devPtr_offset = (off_t)i * CH; io[i].u.batch.file_offset = (off_t)(fsize + (size_t)i * CH);
        } else if (i % 2) { // into registered host memory
            io[i].fh = fh; io[i].opcode = CUFILE_READ; io[i].u.batch.devPtr_base = hb.data();
            io[i].u.batch.devPtr_offset = (off_t)i * CH; io[i].u.batch.file_offset = (off_t)i * 4096 + 1;
        } else { // into device memory past the file's copy
            io[i].fh = fh; io[i].opcode = CUFILE_READ; io[i].u.batch.devPtr_base = d;
            io[i].u.batch.devPtr_offset = (off_t)(fsize + 4096 + (size_t)(i / 2) * 8192); io[i].u.batch.size = 8192;
            io[i].u.batch.file_offset = (off_t)i * 10000;
        }
    }
    CU_OK(cuFileBatchIOSubmit(b, N, io.data(), 0));
    std::vector<CUfileIOEvents_t> ev(N);
    unsigned nr = 0, total = 0;
    int failed = 0;
    while (total < N) {
        nr = N - total;
        struct timespec to = {5, 0};
        CU_OK(cuFileBatchIOGetStatus(b, nr, &nr, ev.data(), &to));
        if (nr == 0) { fprintf(stderr, "abi_check: batch timed out with %u of %u\n", total, N); failures++; break; }
        for (unsigned k = 0; k < nr; k++) {
            unsigned i = (unsigned)(uintptr_t)ev[k].cookie - 1;
            if (ev[k].status != CUFILE_COMPLETE || ev[k].ret != io[i].u.batch.size) {
                if (failed++ < 5)
                    fprintf(stderr, "abi_check: batch entry %u (%s into %s) status %#x ret %zd\n", i,
                            io[i].opcode == CUFILE_WRITE ? "write" : "read", io[i].u.batch.devPtr_base == hb.data() ? "host" : "device",
                            (unsigned)ev[k].status, (ssize_t)ev[k].ret);
            }
        }
        total += nr;
    }
    CHECK_EQ(failed, 0);
    cuFileBatchIODestroy(b);
    std::vector<unsigned char> dev_after(fsize + (8u << 20));
    CUDA(cudaMemcpy(dev_after.data(), d, dev_after.size(), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < N; i++) {
        if (i % 4 == 3) {
            CHECK(pread(ofd, got.data(), CH, (off_t)(fsize + (size_t)i * CH)) == (ssize_t)CH);
            CHECK(memcmp(got.data(), ref.data() + (size_t)i * CH, CH) == 0);
        } else if (i % 2) {
            CHECK(memcmp(hb.data() + (size_t)i * CH, ref.data() + (size_t)i * 4096 + 1, CH) == 0);
        } else {
            CHECK(memcmp(dev_after.data() + fsize + 4096 + (size_t)(i / 2) * 8192, ref.data() + (size_t)i * 10000, 8192) == 0);
        }
    }
    CU_OK(cuFileBufDeregister(hb.data()));

    // stream-ordered: values changed after enqueue while a kernel holds the stream; a kernel
    // then sums the bytes read, with no host sync in between
    cudaStream_t s;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    fprintf(stderr, "abi_check: at the stream section\n");
    CU_OK(cuFileStreamRegister(s, 0));
    unsigned long long *dsum;
    CUDA(cudaMalloc(&dsum, sizeof *dsum));
    CUDA(cudaMemsetAsync(dsum, 0, sizeof *dsum, s));
    CUDA(cudaMemsetAsync(d, 0, 1u << 20, s));
    // ABI_NO_SPIN / ABI_EARLY (diagnosis): no kernel ahead of the read / values bound before enqueue
    if (!getenv("ABI_NO_SPIN")) spin<<<1, 1, 0, s>>>(200000000LL); // ~100 ms
    size_t sz = 1;
    off_t foff = 0, boff = 0;
    if (getenv("ABI_EARLY")) { sz = 300000; foff = 54321; boff = 100; }
    ssize_t done = -999;
    timespec q0, q1;
    clock_gettime(CLOCK_MONOTONIC, &q0);
    CU_OK(cuFileReadAsync(fh, d, &sz, &foff, &boff, &done, s));
    clock_gettime(CLOCK_MONOTONIC, &q1);
    fprintf(stderr, "abi_check: ReadAsync queued in %.3f ms, synchronizing\n",
            (q1.tv_sec - q0.tv_sec) * 1e3 + (q1.tv_nsec - q0.tv_nsec) * 1e-6);
    // the spin kernel holds the stream: it has not got there yet. Set before the next launch:
    // CUDA loads sum_bytes lazily at its first launch, which synchronises the context, so the
    // stream passes the read during that launch
    sz = 300000; foff = 54321; boff = 100;
    sum_bytes<<<64, 256, 0, s>>>(d + 100, 300000, dsum);
    CUDA(cudaStreamSynchronize(s));
    CHECK_EQ(done, 300000);
    unsigned long long sum = 0, want = 0;
    CUDA(cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 300000; i++) want += ref[54321 + i];
    CHECK_EQ(sum, want);
    CUDA(cudaMemcpy(got.data(), d + 100, 300000, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got.data(), ref.data() + 54321, 300000) == 0);
    // write back through the stream
    size_t wsz = 4096;
    off_t wfo = 0, wbo = 100;
    ssize_t wdone = -999;
    CU_OK(cuFileWriteAsync(ofh, d, &wsz, &wfo, &wbo, &wdone, s));
    fprintf(stderr, "abi_check: WriteAsync queued, synchronizing\n");
    CUDA(cudaStreamSynchronize(s));
    CHECK_EQ(wdone, 4096);
    CHECK(pread(ofd, got.data(), 4096, 0) == 4096 && memcmp(got.data(), ref.data() + 54321, 4096) == 0);
    CU_OK(cuFileStreamDeregister(s));

    CU_OK(cuFileBufDeregister(d));
    cuFileHandleDeregister(fh);
    if (dfh) cuFileHandleDeregister(dfh);
    cuFileHandleDeregister(ofh);
    close(fd); close(ofd);
    if (dfd >= 0) close(dfd);
    unlink(path); unlink(out);
    CU_OK(cuFileDriverClose());
    cudaFree(d); cudaFree(d2); cudaFree(dsum);
    printf("abi_check: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
