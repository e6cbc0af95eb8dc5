// Where a small synchronous cuFileRead's time goes (issue 11's 4 KiB / 64 KiB rows), in one
// process and interleaved, so every variant meets the same machine state:
//   pread        pread of the size into pinned host memory (page cache warm)
//   copy         cuMemcpyHtoDAsync from that pinned memory + cuStreamSynchronize
//   floor        pread, then copy: the least any bounce-mode library can do serially
//   pipe2/pipe4  pread in 2 or 4 pieces, each piece's copy queued while the next is read
//   pageable     pread into malloc'd memory, then cuMemcpyHtoD (the driver stages it)
//   ctxcalls     cuCtxGetCurrent + cuStreamGetCtx, the per-call context bookkeeping
//   fcntl        one fcntl(F_GETFL)
//   ours         cuFileRead through libphxfile.so (dlopen'ed: its own symbols)
//   nvidia       cuFileRead through NVIDIA's libcufile (dlopen'ed by path), when given
// Medians in microseconds: RESULT <variant> <size> <us>.
//   floor FILE LIBPHXFILE [NVIDIA_LIBCUFILE]
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

typedef struct { int err; int cu_err; } cf_status_t;
typedef struct { int type; union { int fd; void *handle; } handle; const void *fs_ops; } cf_descr_t;
typedef cf_status_t (*open_fn)(void);
typedef cf_status_t (*hreg_fn)(void **, cf_descr_t *);
typedef cf_status_t (*breg_fn)(const void *, size_t, int);
typedef ssize_t (*read_fn)(void *, void *, size_t, off_t, off_t);

struct lib { const char *name; read_fn read; void *fh; };

static double now_us()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define CK(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "floor: %s: %d\n", #call, (int)r_); exit(1); } } while (0)

static int load(lib *l, const char *path, const char *name, int fd, CUdeviceptr buf, size_t blen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("INFO %s: %s\n", name, dlerror()); return 0; }
    open_fn op = (open_fn)dlsym(h, "cuFileDriverOpen");
    hreg_fn hr = (hreg_fn)dlsym(h, "cuFileHandleRegister");
    breg_fn br = (breg_fn)dlsym(h, "cuFileBufRegister");
    l->read = (read_fn)dlsym(h, "cuFileRead");
    l->name = name;
    if (!op || !hr || !br || !l->read) { printf("INFO %s: symbols missing\n", name); return 0; }
    cf_status_t s = op();
    if (s.err) { printf("INFO %s: DriverOpen %d\n", name, s.err); return 0; }
    cf_descr_t d;
    memset(&d, 0, sizeof d);
    d.type = 1; // OPAQUE_FD
    d.handle.fd = fd;
    s = hr(&l->fh, &d);
    if (s.err) { printf("INFO %s: HandleRegister %d\n", name, s.err); return 0; }
    s = br((void *)buf, blen, 0);
    if (s.err) printf("INFO %s: BufRegister %d (reads unregistered)\n", name, s.err);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: floor FILE LIBPHXFILE [NVIDIA_LIBCUFILE]\n"); return 2; }
    struct stat st;
    if (stat(argv[1], &st)) { perror(argv[1]); return 1; }
    size_t fsize = (size_t)st.st_size;
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const size_t maxsz = 64u << 10;
    void *pinned;
    CK(cuMemHostAlloc(&pinned, maxsz, CU_MEMHOSTALLOC_PORTABLE));
    char *pageable = (char *)aligned_alloc(4096, maxsz);
    memset(pageable, 0, maxsz);
    CUdeviceptr dbuf;
    // separate device buffers per library: each registers its own
    CUdeviceptr dours, dnv;
    CK(cuMemAlloc(&dbuf, maxsz));
    CK(cuMemAlloc(&dours, 1u << 20));
    CK(cuMemAlloc(&dnv, 1u << 20));
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    std::vector<lib> libs(2);
    int have_ours = load(&libs[0], argv[2], "ours", fd, dours, 1u << 20);
    int have_nv = argc > 3 && load(&libs[1], argv[3], "nvidia", fd, dnv, 1u << 20);
    CK(cuCtxSetCurrent(ctx));

    std::map<std::string, std::vector<double>> lat;
    const size_t sizes[] = {4096, 65536};
    const int rounds = 7, per = 600;
    for (int round = 0; round < rounds; round++) {
        for (size_t sz : sizes) {
            size_t span = fsize / sz;
            auto off = [&](int i) { return (off_t)(((size_t)(i * 7 + round * 131) % span) * sz); };
            auto run = [&](const std::string &v, auto body) {
                std::vector<double> &out = lat[v + " " + std::to_string(sz)];
                for (int i = 0; i < per; i++) {
                    double a = now_us();
                    body(i);
                    out.push_back(now_us() - a);
                }
            };
            run("pread", [&](int i) { if (pread(fd, pinned, sz, off(i)) != (ssize_t)sz) exit(3); });
            run("copy", [&](int) { CK(cuMemcpyHtoDAsync(dbuf, pinned, sz, s)); CK(cuStreamSynchronize(s)); });
            run("floor", [&](int i) {
                if (pread(fd, pinned, sz, off(i)) != (ssize_t)sz) exit(3);
                CK(cuMemcpyHtoDAsync(dbuf, pinned, sz, s));
                CK(cuStreamSynchronize(s));
            });
            for (int pieces : {2, 4}) {
                if (sz / pieces < 4096) continue;
                run("pipe" + std::to_string(pieces), [&](int i) {
                    size_t p = sz / pieces;
                    for (int k = 0; k < pieces; k++) {
                        if (pread(fd, (char *)pinned + k * p, p, off(i) + (off_t)(k * p)) != (ssize_t)p) exit(3);
                        CK(cuMemcpyHtoDAsync(dbuf + k * p, (char *)pinned + k * p, p, s));
                    }
                    CK(cuStreamSynchronize(s));
                });
            }
            run("pageable", [&](int i) {
                if (pread(fd, pageable, sz, off(i)) != (ssize_t)sz) exit(3);
                CK(cuMemcpyHtoD(dbuf, pageable, sz));
            });
            run("ctxcalls", [&](int) {
                CUcontext c1, c2;
                CK(cuCtxGetCurrent(&c1));
                CK(cuStreamGetCtx(s, &c2));
            });
            run("fcntl", [&](int) { if (fcntl(fd, F_GETFL) < 0) exit(3); });
            for (int li = 0; li < 2; li++) {
                if (!(li ? have_nv : have_ours)) continue;
                lib &l = libs[li];
                void *b = (void *)(li ? dnv : dours);
                run(l.name, [&](int i) { if (l.read(l.fh, b, sz, off(i), 0) != (ssize_t)sz) { fprintf(stderr, "%s read failed\n", l.name); exit(3); } });
            }
        }
    }
    for (auto &kv : lat) {
        std::vector<double> v = kv.second;
        std::sort(v.begin(), v.end());
        printf("RESULT %s %.2f p10 %.2f p90 %.2f\n", kv.first.c_str(), v[v.size() / 2], v[v.size() / 10], v[v.size() * 9 / 10]);
    }
    return 0;
}
