/* CUDA driver API loaded with dlopen at run time: the library builds without
 * a CUDA toolkit and runs on machines without a GPU. */
#include "connector.h"
#include "device.h"
#include "error.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
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
    CUresult (*CtxPushCurrent)(void *);
    CUresult (*CtxPopCurrent)(void **);
    CUresult (*CtxGetCurrent)(void **);
    CUresult (*CtxGetDevice)(int *);
    CUresult (*StreamGetCtx)(void *, void **);
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
    CUresult (*StreamWaitValue32)(void *, CUdeviceptr, unsigned, unsigned);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*DeviceCanAccessPeer)(int *, int, int);
    CUresult (*CtxEnablePeerAccess)(void *, unsigned);
    CUresult (*MemcpyPeerAsync)(CUdeviceptr, void *, CUdeviceptr, void *, size_t, void *);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, void *);
    /* optional: the phxfs module's modes (older drivers and the CI fake may lack them) */
    CUresult (*DeviceGetPCIBusId)(char *, int, int);
    CUresult (*PointerSetAttribute)(const void *, int, CUdeviceptr);
    int count;
    /* peer[dev][peer]: 0 not asked yet, 1 enabled, -1 not possible */
    signed char peer[PHX_MAX_DEVICES][PHX_MAX_DEVICES];
    pthread_mutex_t ctx_lock;
    void *ctx[PHX_MAX_DEVICES];
} cu = {.ctx_lock = PTHREAD_MUTEX_INITIALIZER};

/* What each enter did, so leave undoes exactly that: enter pushes only when the
 * wanted context is not already current. Bookkeeping only: the current context
 * itself is always asked of the driver, never cached, because a framework may
 * switch it between our calls. */
#define MAX_NEST 16
static __thread unsigned char pushed[MAX_NEST];
static __thread int depth;

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

static int c_init(int fake_devices, char *why, size_t n)
{
    (void)fake_devices;
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(why, n, "bounce: no GPU driver (libcuda.so.1 not loadable)");
        return -ENODEV;
    }
    struct { const char *name; void **fn; } syms[] = {
        {"cuInit", (void **)&cu.Init}, {"cuDeviceGetCount", (void **)&cu.DeviceGetCount},
        {"cuDeviceGet", (void **)&cu.DeviceGet}, {"cuDeviceGetName", (void **)&cu.DeviceGetName},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.PrimaryCtxRetain},
        {"cuCtxPushCurrent_v2", (void **)&cu.CtxPushCurrent}, {"cuCtxPopCurrent_v2", (void **)&cu.CtxPopCurrent},
        {"cuCtxGetCurrent", (void **)&cu.CtxGetCurrent}, {"cuCtxGetDevice", (void **)&cu.CtxGetDevice},
        {"cuStreamGetCtx", (void **)&cu.StreamGetCtx}, {"cuStreamWaitValue32_v2", (void **)&cu.StreamWaitValue32},
        {"cuMemHostGetDevicePointer_v2", (void **)&cu.MemHostGetDevicePointer},
        {"cuPointerGetAttribute", (void **)&cu.PointerGetAttribute},
        {"cuMemAlloc_v2", (void **)&cu.MemAlloc}, {"cuMemFree_v2", (void **)&cu.MemFree},
        {"cuMemHostRegister_v2", (void **)&cu.MemHostRegister}, {"cuMemHostUnregister", (void **)&cu.MemHostUnregister},
        {"cuStreamCreate", (void **)&cu.StreamCreate}, {"cuStreamDestroy_v2", (void **)&cu.StreamDestroy},
        {"cuStreamSynchronize", (void **)&cu.StreamSynchronize},
        {"cuMemcpyHtoDAsync_v2", (void **)&cu.MemcpyHtoDAsync}, {"cuMemcpyDtoHAsync_v2", (void **)&cu.MemcpyDtoHAsync},
        {"cuMemsetD8Async", (void **)&cu.MemsetD8Async},
        {"cuEventCreate", (void **)&cu.EventCreate}, {"cuEventDestroy_v2", (void **)&cu.EventDestroy},
        {"cuEventRecord", (void **)&cu.EventRecord}, {"cuEventSynchronize", (void **)&cu.EventSynchronize},
        {"cuLaunchHostFunc", (void **)&cu.LaunchHostFunc}, {"cuGetErrorString", (void **)&cu.GetErrorString},
        {"cuDeviceCanAccessPeer", (void **)&cu.DeviceCanAccessPeer},
        {"cuCtxEnablePeerAccess", (void **)&cu.CtxEnablePeerAccess},
        {"cuMemcpyPeerAsync", (void **)&cu.MemcpyPeerAsync}, {"cuMemcpyDtoDAsync_v2", (void **)&cu.MemcpyDtoDAsync},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (load(syms[i].name, syms[i].fn, why, n)) return -ENOSYS;
    *(void **)&cu.DeviceGetPCIBusId = dlsym(cu.lib, "cuDeviceGetPCIBusId");
    *(void **)&cu.MemcpyDtoDAsync = dlsym(cu.lib, "cuMemcpyDtoDAsync_v2");
    *(void **)&cu.PointerSetAttribute = dlsym(cu.lib, "cuPointerSetAttribute");
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

static int primary_ctx(int dev, void **out)
{
    pthread_mutex_lock(&cu.ctx_lock);
    CUresult r = 0;
    if (!cu.ctx[dev]) {
        int d;
        r = cu.DeviceGet(&d, dev);
        if (!r) r = cu.PrimaryCtxRetain(&cu.ctx[dev], d);
    }
    *out = cu.ctx[dev];
    pthread_mutex_unlock(&cu.ctx_lock);
    return r ? cu_err(r, "cuDevicePrimaryCtxRetain") : 0;
}

static int c_enter(int dev, void *stream)
{
    if (depth >= MAX_NEST) return phx_fail(EDEADLK, "cuda: contexts nested more than %d deep", MAX_NEST);
    void *want = NULL;
    if (stream) {
        CU(cu.StreamGetCtx(stream, &want), "cuStreamGetCtx");
    } else {
        if (dev < 0 || dev >= cu.count) return phx_fail(ENODEV, "no CUDA device %d", dev);
        int rc = primary_ctx(dev, &want);
        if (rc) return rc;
    }
    void *cur = NULL;
    CU(cu.CtxGetCurrent(&cur), "cuCtxGetCurrent");
    if (cur != want) CU(cu.CtxPushCurrent(want), "cuCtxPushCurrent");
    pushed[depth++] = cur != want;
    return 0;
}

static void c_leave(void)
{
    if (depth <= 0) return;
    if (pushed[--depth]) {
        void *old;
        cu.CtxPopCurrent(&old);
    }
}

/* Runs one driver call with dev's context current, restoring the caller's. */
#define IN_CTX(dev, stream, call, what) do {                       \
        int rc_ = c_enter((dev), (stream));                        \
        if (rc_) return rc_;                                       \
        CUresult r_ = (call);                                      \
        c_leave();                                                 \
        if (r_) return cu_err(r_, what);                           \
    } while (0)

static int c_name(int dev, char *buf, size_t len)
{
    int d;
    CU(cu.DeviceGet(&d, dev), "cuDeviceGet");
    CU(cu.DeviceGetName(buf, (int)len, d), "cuDeviceGetName");
    return 0;
}

static int c_alloc(int dev, size_t len, void **p)
{
    CUdeviceptr d = 0;
    IN_CTX(dev, NULL, cu.MemAlloc(&d, len ? len : 1), "cuMemAlloc");
    *p = (void *)(uintptr_t)d;
    return 0;
}

static int c_free(int dev, void *p) { IN_CTX(dev, NULL, cu.MemFree((CUdeviceptr)(uintptr_t)p), "cuMemFree"); return 0; }

/* PORTABLE: usable from every context; DEVICEMAP: the stream can wait on words in it */
/* dev < 0 (caller-owned pinned memory): the caller's current context when there is one, so
 * a process that only uses device 3 never creates a context on device 0 */
static int reg_dev(int dev)
{
    if (dev >= 0) return dev;
    void *cur = NULL;
    int d = 0;
    if (!cu.CtxGetCurrent(&cur) && cur && !cu.CtxGetDevice(&d)) return d;
    return 0;
}
static int c_reg(int dev, void *p, size_t len)
{
    IN_CTX(reg_dev(dev), NULL, cu.MemHostRegister(p, len, 0x1 | 0x2), "cuMemHostRegister");
    return 0;
}
static int c_unreg(int dev, void *p) { IN_CTX(reg_dev(dev), NULL, cu.MemHostUnregister(p), "cuMemHostUnregister"); return 0; }

static int c_screate(int dev, void **s) { IN_CTX(dev, NULL, cu.StreamCreate(s, 1 /* NON_BLOCKING */), "cuStreamCreate"); return 0; }
static int c_sdestroy(void *s) { IN_CTX(-1, s, cu.StreamDestroy(s), "cuStreamDestroy"); return 0; }
static int c_ssync(void *s) { IN_CTX(-1, s, cu.StreamSynchronize(s), "cuStreamSynchronize"); return 0; }
static int c_htod(void *dst, const void *src, size_t len, void *s)
{
    IN_CTX(-1, s, cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, len, s), "cuMemcpyHtoDAsync");
    return 0;
}
static int c_dtoh(void *dst, const void *src, size_t len, void *s)
{
    IN_CTX(-1, s, cu.MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, len, s), "cuMemcpyDtoHAsync");
    return 0;
}
static int c_memset(void *dst, int value, size_t len, void *s)
{
    IN_CTX(-1, s, cu.MemsetD8Async((CUdeviceptr)(uintptr_t)dst, (unsigned char)value, len, s), "cuMemsetD8Async");
    return 0;
}
/* Events are made current-context-wide; the library makes them on a device's
 * worker right after entering that device. */
static int c_ecreate(void **e) { CU(cu.EventCreate(e, 2 /* DISABLE_TIMING */), "cuEventCreate"); return 0; }
static int c_edestroy(void *e) { CU(cu.EventDestroy(e), "cuEventDestroy"); return 0; }
static int c_erecord(void *e, void *s) { IN_CTX(-1, s, cu.EventRecord(e, s), "cuEventRecord"); return 0; }
static int c_esync(void *e) { CU(cu.EventSynchronize(e), "cuEventSynchronize"); return 0; }
static int c_launch(void *s, phx_host_fn fn, void *arg) { IN_CTX(-1, s, cu.LaunchHostFunc(s, fn, arg), "cuLaunchHostFunc"); return 0; }

static int c_wait(void *s, volatile uint32_t *flag)
{
    CUdeviceptr d = 0;
    int rc = c_enter(-1, s);
    if (rc) return rc;
    CUresult r = cu.MemHostGetDevicePointer(&d, (void *)flag, 0);
    if (!r) r = cu.StreamWaitValue32(s, d, 1, 0 /* GEQ */);
    c_leave();
    return r ? cu_err(r, "cuStreamWaitValue32") : 0;
}

enum { ATTR_CONTEXT = 1, ATTR_MEMORY_TYPE = 2, ATTR_RANGE_START = 11, ATTR_RANGE_SIZE = 12, ATTR_ORDINAL = 9 };

static int c_check(int dev, const void *p, size_t len, char *why, size_t n)
{
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)p;
    unsigned type = 0;
    int ordinal = -1;
    CUresult r = cu.PointerGetAttribute(&type, ATTR_MEMORY_TYPE, ptr);
    if (r) {
        snprintf(why, n, "not memory CUDA knows (host memory that is not registered, or freed); cuPointerGetAttribute: error %d", r);
        return -EINVAL;
    }
    if (type != 2 /* CU_MEMORYTYPE_DEVICE */) {
        snprintf(why, n, "%s memory, not device memory", type == 1 ? "host" : type == 3 ? "array" : "unified");
        return -EINVAL;
    }
    if (!cu.PointerGetAttribute(&ordinal, ATTR_ORDINAL, ptr) && ordinal != dev) {
        snprintf(why, n, "memory of device %d, not of device %d", ordinal, dev);
        return -EINVAL;
    }
    CUdeviceptr start = 0;
    size_t size = 0;
    if (!cu.PointerGetAttribute(&start, ATTR_RANGE_START, ptr) && !cu.PointerGetAttribute(&size, ATTR_RANGE_SIZE, ptr) &&
        ptr + len > start + size) {
        snprintf(why, n, "runs %llu bytes past the end of its allocation", (unsigned long long)(ptr + len - start - size));
        return -EINVAL;
    }
    return 0;
}

static int c_pdev(const void *p, size_t len, int *dev, char *why, size_t n)
{
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)p;
    unsigned type = 0;
    *dev = -1;
    /* unknown to CUDA (plain host memory), pinned host or managed memory: the CPU can reach it */
    if (cu.PointerGetAttribute(&type, ATTR_MEMORY_TYPE, ptr) || type != 2 /* CU_MEMORYTYPE_DEVICE */) return 0;
    int ordinal = -1;
    CUresult r = cu.PointerGetAttribute(&ordinal, ATTR_ORDINAL, ptr);
    if (r) {
        snprintf(why, n, "device memory whose device CUDA does not say; cuPointerGetAttribute: error %d", r);
        return -EINVAL;
    }
    *dev = ordinal;
    CUdeviceptr start = 0;
    size_t size = 0;
    if (!cu.PointerGetAttribute(&start, ATTR_RANGE_START, ptr) && !cu.PointerGetAttribute(&size, ATTR_RANGE_SIZE, ptr) &&
        ptr + len > start + size) {
        snprintf(why, n, "runs %llu bytes past the end of its allocation", (unsigned long long)(ptr + len - start - size));
        return -EINVAL;
    }
    return 0;
}

/* nv-p2p pins GPU virtual addresses: the device pointer is the address. SYNC_MEMOPS makes
 * copies to the memory complete before they return, as nv-p2p users must (gdrcopy does). */
static int c_p2p_addr(int dev, const void *p, size_t len, uint64_t *addr, char *why, size_t n)
{
    int rc = c_check(dev, p, len, why, n);
    if (rc) return rc;
    if (cu.PointerSetAttribute) {
        unsigned one = 1;
        cu.PointerSetAttribute(&one, 6 /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS */, (CUdeviceptr)(uintptr_t)p);
    }
    *addr = (uint64_t)(uintptr_t)p;
    return 0;
}

static int c_bdf(int dev, char *buf, size_t len)
{
    if (!cu.DeviceGetPCIBusId) return phx_fail(ENOSYS, "cuda: the driver lacks cuDeviceGetPCIBusId");
    int d;
    CU(cu.DeviceGet(&d, dev), "cuDeviceGet");
    CU(cu.DeviceGetPCIBusId(buf, (int)len, d), "cuDeviceGetPCIBusId");
    return 0;
}

static int c_dtod(void *dst, const void *src, size_t len, void *s)
{
    if (!cu.MemcpyDtoDAsync) return phx_fail(ENOSYS, "cuda: the driver lacks cuMemcpyDtoDAsync_v2");
    IN_CTX(-1, s, cu.MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, len, s), "cuMemcpyDtoDAsync");
    return 0;
}

static int c_sdev(void *s)
{
    int rc = c_enter(-1, s);
    if (rc) return rc;
    int d = -1;
    CUresult r = cu.CtxGetDevice(&d);
    c_leave();
    return r ? cu_err(r, "cuCtxGetDevice") : d;
}

/* Whether dev reaches peer's memory directly; on the first yes, enables it in dev's context
 * (cuCtxEnablePeerAccess: dev's context may then map peer's allocations). */
static int c_peer_access(int dev, int peer)
{
    if (dev < 0 || dev >= cu.count || peer < 0 || peer >= cu.count) return phx_fail(ENODEV, "no CUDA device %d", dev < 0 || dev >= cu.count ? dev : peer);
    if (dev == peer) return 1;
    pthread_mutex_lock(&cu.ctx_lock);
    int known = cu.peer[dev][peer];
    pthread_mutex_unlock(&cu.ctx_lock);
    if (known) return known > 0;
    int d = 0, p = 0, can = 0;
    CU(cu.DeviceGet(&d, dev), "cuDeviceGet");
    CU(cu.DeviceGet(&p, peer), "cuDeviceGet");
    CU(cu.DeviceCanAccessPeer(&can, d, p), "cuDeviceCanAccessPeer");
    if (can) {
        void *peer_ctx = NULL;
        int rc = primary_ctx(peer, &peer_ctx);
        if (rc) return rc;
        rc = c_enter(dev, NULL);
        if (rc) return rc;
        CUresult r = cu.CtxEnablePeerAccess(peer_ctx, 0);
        c_leave();
        if (r && r != 704 /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */) return cu_err(r, "cuCtxEnablePeerAccess");
    }
    pthread_mutex_lock(&cu.ctx_lock);
    cu.peer[dev][peer] = can ? 1 : -1;
    pthread_mutex_unlock(&cu.ctx_lock);
    return can != 0;
}

static int c_peer(void *dst, int dst_dev, const void *src, int src_dev, size_t len, void *s)
{
    CUdeviceptr to = (CUdeviceptr)(uintptr_t)dst, from = (CUdeviceptr)(uintptr_t)src;
    if (dst_dev == src_dev) {
        IN_CTX(-1, s, cu.MemcpyDtoDAsync(to, from, len, s), "cuMemcpyDtoDAsync");
        return 0;
    }
    void *dst_ctx = NULL, *src_ctx = NULL;
    int rc = primary_ctx(dst_dev, &dst_ctx);
    if (!rc) rc = primary_ctx(src_dev, &src_ctx);
    if (rc) return rc;
    IN_CTX(-1, s, cu.MemcpyPeerAsync(to, dst_ctx, from, src_ctx, len, s), "cuMemcpyPeerAsync");
    return 0;
}

const phx_connector_t phx_connector_cuda = {
    .name = "cuda", .is_accelerator = 1, .init = c_init, .device_name = c_name, .enter = c_enter, .leave = c_leave,
    .mem_alloc = c_alloc, .mem_free = c_free, .host_register = c_reg, .host_unregister = c_unreg,
    .stream_create = c_screate, .stream_destroy = c_sdestroy, .stream_sync = c_ssync,
    .htod_async = c_htod, .dtoh_async = c_dtoh, .memset_async = c_memset, .event_create = c_ecreate, .event_destroy = c_edestroy,
    .event_record = c_erecord, .event_sync = c_esync, .launch_host_fn = c_launch, .wait_flag = c_wait,
    .check_pointer = c_check, .pointer_device = c_pdev, .stream_device = c_sdev,
    .peer_access = c_peer_access, .peer_async = c_peer,
    .p2p_addr = c_p2p_addr, .pci_bdf = c_bdf, .dtod_async = c_dtod,
};
