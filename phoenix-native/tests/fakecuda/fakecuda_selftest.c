/* The fake driver's own rules, checked directly: a library test that passes
 * against the fake only means something if the fake rejects what the real
 * driver rejects and really runs streams asynchronously. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned);
CUresult cuDeviceGetCount(int *);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuDevicePrimaryCtxRelease_v2(int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, int);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuCtxPushCurrent_v2(CUcontext);
CUresult cuCtxPopCurrent_v2(CUcontext *);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxGetDevice(int *);
CUresult cuStreamGetCtx(CUstream, CUcontext *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemFreeHost(void *);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuEventCreate(CUevent *, unsigned);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventSynchronize(CUevent);
CUresult cuLaunchHostFunc(CUstream, void (*)(void *), void *);
CUresult cuGetErrorString(CUresult, const char **);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuStreamWaitValue32_v2(CUstream, CUdeviceptr, uint32_t, unsigned);
size_t fakecuda_pinned_bytes(void);
int fakecuda_register_calls(void);

static int failures;
#define EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, b_); failures++; } } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static atomic_int gate;
static void wait_gate(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate)) sleep_ms(1);
}

static CUresult from_host_fn[3];
static void calls_back(void *arg)
{
    CUstream s = arg;
    CUdeviceptr d;
    from_host_fn[0] = cuMemAlloc_v2(&d, 16);
    from_host_fn[1] = cuStreamSynchronize(s);
    from_host_fn[2] = cuMemcpyHtoDAsync_v2(0, &d, 0, s);
}

static void *empty_stack_thread(void *arg)
{
    CUcontext c = arg;
    CUcontext cur = c;
    EQ(cuCtxGetCurrent(&cur), 0);
    EQ(cur == NULL, 1); /* stacks are per thread */
    CUdeviceptr d;
    EQ(cuMemAlloc_v2(&d, 16), 201);
    EQ(cuStreamSynchronize(NULL), 201);
    return NULL;
}

int main(void)
{
    CUcontext cur, p0, p0b, c1, c2, popped;
    CUdeviceptr d;
    EQ(cuCtxGetCurrent(&cur), 3); /* before cuInit */
    EQ(cuInit(0), 0);
    int n = 0;
    EQ(cuDeviceGetCount(&n), 0);
    EQ(n, 2);

    /* empty stack */
    EQ(cuMemAlloc_v2(&d, 16), 201);
    CUstream s0;
    EQ(cuStreamCreate(&s0, 0), 201);
    EQ(cuCtxSetCurrent(NULL), 0);
    EQ(cuCtxPopCurrent_v2(&popped), 201);

    /* primary contexts are one handle per device, refcounted */
    EQ(cuDevicePrimaryCtxRetain(&p0, 0), 0);
    EQ(cuDevicePrimaryCtxRetain(&p0b, 0), 0);
    EQ(p0 == p0b, 1);
    EQ(cuCtxPushCurrent_v2(p0), 0);
    EQ(cuCtxCreate_v2(&c1, 0, 1), 0); /* pushed on top of p0 */
    EQ(cuCtxGetCurrent(&cur), 0);
    EQ(cur == c1, 1);
    int dev = -1;
    EQ(cuCtxGetDevice(&dev), 0);
    EQ(dev, 1);
    EQ(cuCtxPopCurrent_v2(&popped), 0);
    EQ(popped == c1, 1);
    EQ(cuCtxGetCurrent(&cur), 0);
    EQ(cur == p0, 1);
    EQ(cuCtxSetCurrent(c1), 0); /* replaces p0 */
    EQ(cuCtxPopCurrent_v2(&popped), 0);
    EQ(cuCtxGetCurrent(&cur), 0);
    EQ(cur == NULL, 1);
    pthread_t t;
    EQ(cuCtxPushCurrent_v2(c1), 0);
    pthread_create(&t, NULL, empty_stack_thread, c1);
    pthread_join(t, NULL);

    /* streams and events belong to the context current at creation */
    CUstream s1;
    EQ(cuStreamCreate(&s1, 1), 0);
    EQ(cuStreamGetCtx(s1, &cur), 0);
    EQ(cur == c1, 1);
    EQ(cuMemAlloc_v2(&d, 1000), 0);
    EQ(d % 256, 0);
    unsigned char host[1000], back[1000];
    memset(host, 7, sizeof host);
    EQ(cuCtxPushCurrent_v2(p0), 0);
    EQ(cuMemcpyHtoDAsync_v2(d, host, sizeof host, s1), 400);
    EQ(cuStreamSynchronize(s1), 400);
    CUevent e0, e1;
    EQ(cuEventCreate(&e0, 2), 0);
    EQ(cuCtxPopCurrent_v2(NULL), 0);
    EQ(cuEventRecord(e0, s1), 400); /* event of p0, stream of c1 */
    EQ(cuEventCreate(&e1, 2), 0);
    EQ(cuEventSynchronize(e1), 0); /* never recorded: complete */

    /* pointer attributes */
    CUcontext actx = NULL;
    unsigned mtype = 0;
    int ord = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    EQ(cuPointerGetAttribute(&actx, 1, d + 10), 0);
    EQ(actx == c1, 1);
    EQ(cuPointerGetAttribute(&mtype, 2, d + 999), 0);
    EQ(mtype, 2);
    EQ(cuPointerGetAttribute(&ord, 9, d), 0);
    EQ(ord, 1);
    EQ(cuPointerGetAttribute(&start, 11, d + 500), 0);
    EQ(start, d);
    EQ(cuPointerGetAttribute(&size, 12, d + 500), 0);
    EQ(size, 1000);
    EQ(cuPointerGetAttribute(&mtype, 2, d + 1000), 1);
    EQ(cuPointerGetAttribute(&mtype, 2, (CUdeviceptr)(uintptr_t)host), 1);

    /* copies complete on the stream's thread, after what is queued before them */
    atomic_store(&gate, 0);
    EQ(cuLaunchHostFunc(s1, wait_gate, NULL), 0);
    EQ(cuMemcpyHtoDAsync_v2(d, host, sizeof host, s1), 0);
    EQ(cuEventRecord(e1, s1), 0);
    sleep_ms(20);
    EQ(cuMemcpyDtoH_v2(back, d, 1), 0); /* s1 is non-blocking: the legacy stream does not wait for it */
    EQ(back[0], 0xA5);                  /* still the poison cuMemAlloc left */
    atomic_store(&gate, 1);
    EQ(cuEventSynchronize(e1), 0);
    EQ(cuMemcpyDtoH_v2(back, d, sizeof back), 0);
    EQ(memcmp(host, back, sizeof back), 0);
    EQ(cuMemsetD8Async(d, 3, 2000, s1), 1); /* past the allocation */
    EQ(cuMemcpyHtoDAsync_v2(d + 1, host, sizeof host, s1), 1);

    /* host functions must not call the driver */
    EQ(cuLaunchHostFunc(s1, calls_back, s1), 0);
    EQ(cuStreamSynchronize(s1), 0);
    EQ(from_host_fn[0], 800);
    EQ(from_host_fn[1], 800);
    EQ(from_host_fn[2], 800);

    /* registration and pinned accounting */
    size_t before = fakecuda_pinned_bytes();
    int calls = fakecuda_register_calls();
    uint32_t *words = aligned_alloc(4096, 8192);
    EQ(cuMemHostRegister_v2(words, 4096, 2), 0);
    EQ(cuMemHostRegister_v2(words + 8, 16, 0), 712);
    EQ(cuMemHostRegister_v2(words + 1024, 4096, 0), 0);
    EQ(fakecuda_register_calls() - calls, 3);
    EQ(fakecuda_pinned_bytes() - before, 8192);
    CUdeviceptr wd = 0;
    EQ(cuMemHostGetDevicePointer_v2(&wd, words + 4, 0), 0);
    EQ(wd, (CUdeviceptr)(uintptr_t)(words + 4));
    EQ(cuPointerGetAttribute(&mtype, 2, wd), 0);
    EQ(mtype, 1);

    /* stream wait on a 32-bit word: only device-mapped pinned or device memory */
    EQ(cuStreamWaitValue32_v2(s1, (CUdeviceptr)(uintptr_t)(words + 1024), 1, 0), 1); /* no DEVICEMAP */
    EQ(cuStreamWaitValue32_v2(s1, (CUdeviceptr)(uintptr_t)back, 1, 0), 1);             /* not registered */
    __atomic_store_n(&words[0], 0xFFFFFFF0u, __ATOMIC_RELEASE);
    unsigned char one = 1, got = 0;
    EQ(cuMemsetD8Async(d, 0, 1, s1), 0);
    EQ(cuStreamSynchronize(s1), 0); /* else the read below races with this memset (TSan says so) */
    EQ(cuStreamWaitValue32_v2(s1, wd - 16, 5, 0), 0); /* GEQ, cyclic: 0xFFFFFFF0 is below 5 */
    EQ(cuMemcpyHtoDAsync_v2(d, &one, 1, s1), 0);
    sleep_ms(20);
    EQ(cuMemcpyDtoH_v2(&got, d, 1), 0);
    EQ(got, 0);
    __atomic_store_n(&words[0], 5u, __ATOMIC_RELEASE);
    EQ(cuStreamSynchronize(s1), 0);
    EQ(cuMemcpyDtoH_v2(&got, d, 1), 0);
    EQ(got, 1);
    __atomic_store_n(&words[1], 0x10u, __ATOMIC_RELEASE);
    EQ(cuStreamWaitValue32_v2(s1, wd - 12, 0x30, 2), 0); /* AND: a common bit */
    EQ(cuStreamWaitValue32_v2(s1, wd - 12, 0x10, 1), 0); /* EQ */
    EQ(cuStreamSynchronize(s1), 0);
    EQ(cuMemHostUnregister(words + 1), 713);
    EQ(cuMemHostUnregister(words), 0);
    EQ(cuMemHostUnregister(words + 1024), 0);
    EQ(fakecuda_pinned_bytes(), before);
    void *ha;
    EQ(cuMemHostAlloc(&ha, 100, 2), 0);
    EQ(fakecuda_pinned_bytes() - before, 100);
    EQ(cuMemFreeHost(ha), 0);
    free(words);

    /* destroyed contexts are dead handles */
    EQ(cuCtxCreate_v2(&c2, 0, 0), 0);
    EQ(cuCtxDestroy_v2(c2), 0); /* popped as it was current */
    EQ(cuCtxGetCurrent(&cur), 0);
    EQ(cur == c1, 1);
    EQ(cuCtxPushCurrent_v2(c2), 709);
    EQ(cuCtxDestroy_v2(p0), 201);

    const int codes[] = {0, 1, 2, 3, 100, 101, 201, 400, 709, 712, 713, 800, 801};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        const char *str = NULL;
        EQ(cuGetErrorString(codes[i], &str), 0);
        EQ(str != NULL, 1);
    }

    EQ(cuEventDestroy_v2(e1), 0);
    EQ(cuEventDestroy_v2(e1), 400);
    EQ(cuMemFree_v2(d), 0);
    EQ(cuMemFree_v2(d), 1);
    EQ(cuStreamDestroy_v2(s1), 0);
    EQ(cuStreamSynchronize(s1), 400);
    EQ(cuCtxPushCurrent_v2(p0), 0);
    EQ(cuEventDestroy_v2(e0), 0);
    EQ(cuCtxPopCurrent_v2(NULL), 0);
    EQ(cuDevicePrimaryCtxRelease_v2(0), 0);
    EQ(cuDevicePrimaryCtxRelease_v2(0), 0);
    EQ(cuDevicePrimaryCtxRelease_v2(0), 201);
    EQ(cuCtxDestroy_v2(c1), 0);
    if (failures) {
        fprintf(stderr, "fakecuda_selftest: %d check(s) failed\n", failures);
        return 1;
    }
    printf("fakecuda_selftest: ok\n");
    return 0;
}
