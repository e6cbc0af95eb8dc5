/* How long device allocation takes, and whether it could overlap a load's reads: cuMemAlloc
 * of a checkpoint-sized buffer in a fresh context, against the virtual-memory API's pieces
 * (reserve the range, then create + map + set access chunk by chunk), so that a load could
 * start reading into the first chunk while the rest is mapped.
 *   alloc_bench [GB] [CHUNK_MB]       (defaults 5.23, 256) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct {
    int type, requestedHandleTypes;
    struct { int type, id; } location;
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; } allocFlags;
} Prop;
typedef struct { struct { int type, id; } location; int flags; } Access;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define SYM(n) CUresult (*n)() = (CUresult (*)())dlsym(lib, #n)
#define OK(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "%s: %d\n", #call, r_); return 1; } } while (0)

int main(int argc, char **argv)
{
    double gb = argc > 1 ? atof(argv[1]) : 5.23;
    size_t chunk = (size_t)(argc > 2 ? atoi(argv[2]) : 256) << 20;
    size_t len = (size_t)(gb * 1e9);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "no libcuda\n"); return 1; }
    SYM(cuInit); SYM(cuDeviceGet); SYM(cuDevicePrimaryCtxRetain); SYM(cuCtxSetCurrent);
    CUresult (*alloc)(CUdeviceptr *, size_t) = dlsym(lib, "cuMemAlloc_v2");
    CUresult (*mfree)(CUdeviceptr) = dlsym(lib, "cuMemFree_v2");
    CUresult (*gran)(size_t *, const Prop *, int) = dlsym(lib, "cuMemGetAllocationGranularity");
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) = dlsym(lib, "cuMemAddressReserve");
    CUresult (*create)(unsigned long long *, size_t, const Prop *, unsigned long long) = dlsym(lib, "cuMemCreate");
    CUresult (*map)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long) = dlsym(lib, "cuMemMap");
    CUresult (*access)(CUdeviceptr, size_t, const Access *, size_t) = dlsym(lib, "cuMemSetAccess");
    int dev; void *ctx;
    double t0 = now();
    OK(cuInit(0)); OK(cuDeviceGet(&dev, 0)); OK(cuDevicePrimaryCtxRetain(&ctx, dev)); OK(cuCtxSetCurrent(ctx));
    printf("context: %.2f ms\n", now() - t0);
    CUdeviceptr d;
    double f0 = now();
    OK(alloc(&d, len)); /* the first allocation of a context, as a fresh process's load makes it */
    double f1 = now();
    OK(mfree(d));
    printf("first cuMemAlloc of the context, %.2f GB: %.3f ms\n", len / 1e9, f1 - f0);
    for (int i = 0; i < 3; i++) {
        double a = now();
        OK(alloc(&d, len));
        double b = now();
        OK(mfree(d));
        printf("cuMemAlloc %.2f GB: %.3f ms (free %.3f ms)\n", len / 1e9, b - a, now() - b);
    }
    Prop p = {0};
    p.type = 1; /* PINNED */
    p.location.type = 1; p.location.id = dev; /* DEVICE */
    size_t g = 0;
    OK(gran(&g, &p, 0));
    size_t n = (len + g - 1) / g * g;
    chunk = (chunk + g - 1) / g * g;
    for (int i = 0; i < 3; i++) {
        double a = now();
        CUdeviceptr base;
        OK(reserve(&base, n, 0, 0, 0));
        double b = now(), first = 0, maxc = 0;
        int chunks = 0;
        for (size_t off = 0; off < n; off += chunk) {
            double c0 = now();
            size_t l = off + chunk > n ? n - off : chunk;
            unsigned long long h;
            OK(create(&h, l, &p, 0));
            OK(map(base + off, l, 0, h, 0));
            Access acc = {{1, dev}, 3};
            OK(access(base + off, l, &acc, 1));
            double c = now() - c0;
            if (!chunks) first = c;
            if (c > maxc) maxc = c;
            chunks++;
        }
        printf("vmm %.2f GB: reserve %.3f ms, %d chunks of %zu MiB %.3f ms (first %.3f, max %.3f)\n", n / 1e9, b - a,
               chunks, chunk >> 20, now() - b, first, maxc);
    }
    return 0;
}
