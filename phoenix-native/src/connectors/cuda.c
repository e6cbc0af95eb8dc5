/* CUDA driver API loaded with dlopen at run time: the library builds without
 * a CUDA toolkit and runs on machines without a GPU. */
#include "../internal.h"
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *);

static struct {
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(int *, int);
    CUresult (*DeviceGetName)(char *, int, int);
    CUresult (*PrimaryCtxRetain)(void **, int);
    CUresult (*CtxSetCurrent)(void *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemHostRegister)(void *, size_t, unsigned);
    CUresult (*MemHostUnregister)(void *);
    CUresult (*StreamCreate)(void **, unsigned);
    CUresult (*StreamDestroy)(void *);
    CUresult (*StreamSynchronize)(void *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, void *);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, void *);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, void *);
    CUresult (*EventCreate)(void **, unsigned);
    CUresult (*EventDestroy)(void *);
    CUresult (*EventRecord)(void *, void *);
    CUresult (*EventSynchronize)(void *);
    CUresult (*LaunchHostFunc)(void *, CUhostFn, void *);
    CUresult (*GetErrorString)(CUresult, const char **);
    int count;
    void *ctx[PHX_MAX_DEVICES];
} cu;

static __thread int bound_dev = -1;

static int cu_err(CUresult r, const char *what)
{
    const char *s = NULL;
    if (cu.GetErrorString) cu.GetErrorString(r, &s);
    int e = r == 2 ? ENOMEM : r == 1 ? EINVAL : (r == 100 || r == 3 || r == 101) ? ENODEV : EIO;
    return phx_fail(e, "%s failed: CUDA error %d (%s)", what, r, s ? s : "unknown");
}
#define CU(call, what) do { CUresult r_ = (call); if (r_) return cu_err(r_, what); } while (0)

static int load(const char *name, void **fn, char *why, size_t n)
{
    *fn = dlsym(cu.lib, name);
    if (!*fn) {
        snprintf(why, n, "libcuda.so.1 lacks %s", name);
        return -ENOSYS;
    }
    return 0;
}

static int c_init(char *why, size_t n)
{
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(why, n, "bounce: no GPU driver (libcuda.so.1 not loadable)");
        return -ENODEV;
    }
    struct { const char *name; void **fn; } syms[] = {
        {"cuInit", (void **)&cu.Init}, {"cuDeviceGetCount", (void **)&cu.DeviceGetCount},
        {"cuDeviceGet", (void **)&cu.DeviceGet}, {"cuDeviceGetName", (void **)&cu.DeviceGetName},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.PrimaryCtxRetain}, {"cuCtxSetCurrent", (void **)&cu.CtxSetCurrent},
        {"cuMemAlloc_v2", (void **)&cu.MemAlloc}, {"cuMemFree_v2", (void **)&cu.MemFree},
        {"cuMemHostRegister_v2", (void **)&cu.MemHostRegister}, {"cuMemHostUnregister", (void **)&cu.MemHostUnregister},
        {"cuStreamCreate", (void **)&cu.StreamCreate}, {"cuStreamDestroy_v2", (void **)&cu.StreamDestroy},
        {"cuStreamSynchronize", (void **)&cu.StreamSynchronize},
        {"cuMemcpyHtoDAsync_v2", (void **)&cu.MemcpyHtoDAsync}, {"cuMemcpyDtoHAsync_v2", (void **)&cu.MemcpyDtoHAsync},
        {"cuMemsetD8Async", (void **)&cu.MemsetD8Async},
        {"cuEventCreate", (void **)&cu.EventCreate}, {"cuEventDestroy_v2", (void **)&cu.EventDestroy},
        {"cuEventRecord", (void **)&cu.EventRecord}, {"cuEventSynchronize", (void **)&cu.EventSynchronize},
        {"cuLaunchHostFunc", (void **)&cu.LaunchHostFunc}, {"cuGetErrorString", (void **)&cu.GetErrorString},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (load(syms[i].name, syms[i].fn, why, n)) return -ENOSYS;
    CUresult r = cu.Init(0);
    if (r) {
        snprintf(why, n, "bounce: cuInit failed with CUDA error %d (no usable GPU)", r);
        return -ENODEV;
    }
    int count = 0;
    if (cu.DeviceGetCount(&count) || count <= 0) {
        snprintf(why, n, "bounce: the CUDA driver reports no GPU");
        return -ENODEV;
    }
    cu.count = count > PHX_MAX_DEVICES ? PHX_MAX_DEVICES : count;
    return cu.count;
}

static int c_bind(int dev)
{
    if (dev < 0 || dev >= cu.count) return phx_fail(ENODEV, "no CUDA device %d", dev);
    if (bound_dev == dev) return 0;
    if (!cu.ctx[dev]) {
        int d;
        CU(cu.DeviceGet(&d, dev), "cuDeviceGet");
        void *ctx;
        CU(cu.PrimaryCtxRetain(&ctx, d), "cuDevicePrimaryCtxRetain");
        cu.ctx[dev] = ctx; /* primary contexts are per device, a benign race */
    }
    CU(cu.CtxSetCurrent(cu.ctx[dev]), "cuCtxSetCurrent");
    bound_dev = dev;
    return 0;
}

static int c_name(int dev, char *buf, size_t len)
{
    int d;
    CU(cu.DeviceGet(&d, dev), "cuDeviceGet");
    CU(cu.DeviceGetName(buf, (int)len, d), "cuDeviceGetName");
    return 0;
}

static int c_alloc(int dev, size_t len, void **p)
{
    int rc = c_bind(dev);
    if (rc) return rc;
    CUdeviceptr d;
    CU(cu.MemAlloc(&d, len ? len : 1), "cuMemAlloc");
    *p = (void *)(uintptr_t)d;
    return 0;
}

static int c_free(int dev, void *p)
{
    int rc = c_bind(dev);
    if (rc) return rc;
    CU(cu.MemFree((CUdeviceptr)(uintptr_t)p), "cuMemFree");
    return 0;
}

static int c_reg(void *p, size_t len)
{
    int rc = c_bind(bound_dev < 0 ? 0 : bound_dev);
    if (rc) return rc;
    CU(cu.MemHostRegister(p, len, 1 /* PORTABLE: usable from every context */), "cuMemHostRegister");
    return 0;
}
static int c_unreg(void *p) { CU(cu.MemHostUnregister(p), "cuMemHostUnregister"); return 0; }

static int c_screate(int dev, void **s)
{
    int rc = c_bind(dev);
    if (rc) return rc;
    CU(cu.StreamCreate(s, 1 /* NON_BLOCKING */), "cuStreamCreate");
    return 0;
}
static int c_sdestroy(void *s) { CU(cu.StreamDestroy(s), "cuStreamDestroy"); return 0; }
static int c_ssync(void *s) { CU(cu.StreamSynchronize(s), "cuStreamSynchronize"); return 0; }
static int c_htod(void *dst, const void *src, size_t len, void *s)
{
    CU(cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, len, s), "cuMemcpyHtoDAsync");
    return 0;
}
static int c_dtoh(void *dst, const void *src, size_t len, void *s)
{
    CU(cu.MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, len, s), "cuMemcpyDtoHAsync");
    return 0;
}
static int c_memset(void *dst, int value, size_t len, void *s)
{
    CU(cu.MemsetD8Async((CUdeviceptr)(uintptr_t)dst, (unsigned char)value, len, s), "cuMemsetD8Async");
    return 0;
}
static int c_ecreate(void **e) { CU(cu.EventCreate(e, 2 /* DISABLE_TIMING */), "cuEventCreate"); return 0; }
static int c_edestroy(void *e) { CU(cu.EventDestroy(e), "cuEventDestroy"); return 0; }
static int c_erecord(void *e, void *s) { CU(cu.EventRecord(e, s), "cuEventRecord"); return 0; }
static int c_esync(void *e) { CU(cu.EventSynchronize(e), "cuEventSynchronize"); return 0; }
static int c_launch(void *s, phx_host_fn fn, void *arg)
{
    CU(cu.LaunchHostFunc(s, fn, arg), "cuLaunchHostFunc");
    return 0;
}

const phx_connector_t phx_connector_cuda = {
    .name = "cuda", .is_accelerator = 1, .init = c_init, .device_name = c_name, .bind = c_bind,
    .mem_alloc = c_alloc, .mem_free = c_free, .host_register = c_reg, .host_unregister = c_unreg,
    .stream_create = c_screate, .stream_destroy = c_sdestroy, .stream_sync = c_ssync,
    .htod_async = c_htod, .dtoh_async = c_dtoh, .memset_async = c_memset, .event_create = c_ecreate, .event_destroy = c_edestroy,
    .event_record = c_erecord, .event_sync = c_esync, .launch_host_fn = c_launch,
};
