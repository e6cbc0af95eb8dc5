// One library's cuFile figures (run once per library, each in a fresh process):
// cuFileDriverOpen (the CUDA context already exists), HandleRegister and
// BufRegister latency (first call and median of repeats), and cuFileRead
// throughput into registered device memory for each size, one thread,
// sequential offsets over FILE. Prints RESULT lines for scripts/gpu/cufile.sh.
//   bench FILE LABEL [direct]
#include <cufile.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
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

static double now_us()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

#define CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { fprintf(stderr, "bench: %s: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: bench FILE LABEL [direct]\n"); return 2; }
    const char *label = argv[2];
    int direct = argc > 3 && !strcmp(argv[3], "direct");
    struct stat st;
    if (stat(argv[1], &st)) { perror(argv[1]); return 1; }
    size_t fsize = (size_t)st.st_size;
    CUDA(cudaFree(0));
    printf("INFO %s libcufile=%s mode=%s\n", label, loaded_cufile().c_str(), direct ? "O_DIRECT" : "page-cache");

    double t0 = now_us();
    CUfileError_t s = cuFileDriverOpen();
    double open_us = now_us() - t0;
    if (s.err) { printf("ERROR %s cuFileDriverOpen %d\n", label, (int)s.err); return 1; }
    printf("RESULT %s open_us %.1f\n", label, open_us);

    int fd = open(argv[1], O_RDONLY | (direct ? O_DIRECT : 0));
    if (fd < 0) { perror("open"); return 1; }
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh;
    t0 = now_us();
    s = cuFileHandleRegister(&fh, &d);
    double first_handle = now_us() - t0;
    if (s.err) { printf("ERROR %s cuFileHandleRegister %d (%s)\n", label, (int)s.err, CUFILE_ERRSTR((int)s.err)); return 1; }
    std::vector<double> hr;
    for (int i = 0; i < 50; i++) {
        cuFileHandleDeregister(fh);
        t0 = now_us();
        s = cuFileHandleRegister(&fh, &d);
        hr.push_back(now_us() - t0);
    }
    printf("RESULT %s handle_first_us %.1f\nRESULT %s handle_us %.1f\n", label, first_handle, label, median(hr));

    const size_t big = 4ull << 30;
    size_t blen = std::min(big, fsize);
    unsigned char *buf;
    CUDA(cudaMalloc(&buf, blen));
    t0 = now_us();
    s = cuFileBufRegister(buf, 64u << 20, 0);
    double first_reg = now_us() - t0;
    int registered = s.err == CU_FILE_SUCCESS;
    if (!registered) printf("INFO %s cuFileBufRegister failed: %d (%s); reads use an unregistered buffer\n", label, (int)s.err, CUFILE_ERRSTR((int)s.err));
    std::vector<double> br;
    for (int i = 0; registered && i < 30; i++) {
        cuFileBufDeregister(buf);
        t0 = now_us();
        s = cuFileBufRegister(buf, 64u << 20, 0);
        br.push_back(now_us() - t0);
    }
    if (registered) {
        printf("RESULT %s bufreg_first_us %.1f\nRESULT %s bufreg_us %.1f\n", label, first_reg, label, median(br));
        cuFileBufDeregister(buf);
        t0 = now_us();
        s = cuFileBufRegister(buf, blen, 0);
        printf("RESULT %s bufreg_4g_us %.1f\n", label, now_us() - t0);
        registered = s.err == CU_FILE_SUCCESS;
    }

    const size_t sizes[] = {4096, 65536, 1u << 20, 16u << 20, 64u << 20, big};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t sz = sizes[si];
        if (sz > fsize) continue;
        if (direct && sz < (1u << 20)) continue; // disk-bound small reads say nothing about the library
        // a byte budget per size (4 KiB: 16 MiB = 4096 reads), two rounds of the 4 GiB read
        size_t budget = sz <= 65536 ? (64u << 20) : direct ? (1ull << 30) : (4ull << 30);
        size_t ops = sz >= big ? (direct ? 1 : 2) : std::max<size_t>(16, std::min<size_t>(4096, budget / sz));
        size_t span = fsize / sz;
        ssize_t r = cuFileRead(fh, buf, sz, 0, 0); // warm-up
        if (r != (ssize_t)sz) { printf("ERROR %s read %zu -> %zd\n", label, sz, r); continue; }
        std::vector<double> lat;
        double start = now_us();
        for (size_t i = 0; i < ops; i++) {
            off_t off = (off_t)(((i * 7) % span) * sz);
            double a = now_us();
            r = cuFileRead(fh, buf, sz, off, 0);
            lat.push_back(now_us() - a);
            if (r != (ssize_t)sz) { printf("ERROR %s read %zu at %lld -> %zd\n", label, sz, (long long)off, r); break; }
        }
        double secs = (now_us() - start) / 1e6;
        printf("RESULT %s read_%zu_gbps %.3f\nRESULT %s read_%zu_us %.1f\n", label, sz, (double)sz * ops / secs / 1e9, label, sz, median(lat));
        fflush(stdout);
    }
    // the last read's bytes against the file
    std::vector<unsigned char> a(1u << 20), b(1u << 20);
    ssize_t r = cuFileRead(fh, buf, 1u << 20, (off_t)(fsize / 2 / 4096 * 4096), 0);
    int pf = open(argv[1], O_RDONLY);
    int ok = r == (1 << 20) && pread(pf, a.data(), a.size(), (off_t)(fsize / 2 / 4096 * 4096)) == (ssize_t)a.size() &&
             cudaMemcpy(b.data(), buf, b.size(), cudaMemcpyDeviceToHost) == cudaSuccess && a == b;
    printf("RESULT %s verify %d\n", label, ok);
    close(pf);
    if (registered) cuFileBufDeregister(buf);
    cuFileHandleDeregister(fh);
    close(fd);
    cuFileDriverClose();
    cudaFree(buf);
    return ok ? 0 : 1;
}
