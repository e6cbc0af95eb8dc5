/* A caller that keeps its own CUDA context current (as a framework does) must
 * find it still current after every Phoenix call, and a thread with no
 * context must be left with none. Runs against the real cuda connector; in CI
 * that is tests/fakecuda's libcuda.so.1, whose context rules are strict. Only
 * meaningful with PHX_CONNECTOR=cuda, so every other environment skips. */
#include "harness.h"
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*CtxCreate)(CUcontext *, unsigned, int);
    CUresult (*CtxDestroy)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
} cu;

#define CU_OK(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "%s:%d: %s: CUDA error %d\n", __FILE__, __LINE__, #call, r_); th_failures++; } } while (0)

static CUcontext mine;

/* After a mismatch the expected context is put back, so one library bug shows
 * once instead of cascading through the caller's own calls. */
static void expect_current(CUcontext want, const char *after, int line)
{
    CUcontext cur = (CUcontext)1;
    CU_OK(cu.CtxGetCurrent(&cur));
    if (cur == want) return;
    fprintf(stderr, "test_cuda_ctx.c:%d: after %s the current context is %p, expected %p (%s)\n", line, after, cur,
            want, want == mine ? "the caller's" : "none");
    th_failures++;
    if (want) {
        cu.CtxSetCurrent(want);
    } else {
        for (int i = 0; i < 64 && cur; i++) {
            cu.CtxSetCurrent(NULL);
            cu.CtxGetCurrent(&cur);
        }
    }
}
#define STILL_MINE(what) expect_current(mine, what, __LINE__)

static size_t fsize = (3u << 20) + 12345;
static unsigned char *ref;
static void *dmem;
static size_t dlen;
static int fd;

/* the caller's own device memory and synchronous copies keep working between Phoenix calls */
static void caller_roundtrip(CUdeviceptr own, size_t len, unsigned seed)
{
    unsigned char *a = malloc(len), *b = malloc(len);
    th_fill(a, len, seed, 0);
    CU_OK(cu.MemcpyHtoD(own, a, len));
    memset(b, 0, len);
    CU_OK(cu.MemcpyDtoH(b, own, len));
    CHECK(memcmp(a, b, len) == 0);
    free(a);
    free(b);
}

static void *no_context_thread(void *arg)
{
    (void)arg;
    expect_current(NULL, "thread start", __LINE__);
    ssize_t n = 3 * 4096 + 11;
    CHECK_EQ(phxfs_read(fd, 0, dmem, 7, n, 1000), n);
    expect_current(NULL, "phxfs_read", __LINE__);
    unsigned char *got = malloc((size_t)n);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + 7, (size_t)n), 0);
    expect_current(NULL, "phxfs_memcpy_to_host", __LINE__);
    CHECK(memcmp(got, ref + 1000, (size_t)n) == 0);
    /* small: on this thread, through one of the device's copy contexts */
    CHECK_EQ(phxfs_write(fd, 0, dmem, 7, 4096, fsize + 8192), 4096);
    expect_current(NULL, "small phxfs_write", __LINE__);
    void *tmp = NULL;
    CHECK_EQ(phxfs_mem_alloc(0, 65536, &tmp), 0);
    expect_current(NULL, "phxfs_mem_alloc", __LINE__);
    if (tmp) CHECK_EQ(phxfs_mem_free(0, tmp), 0);
    expect_current(NULL, "phxfs_mem_free", __LINE__);
    void *s = NULL;
    CHECK_EQ(phxfs_stream_create(0, &s), 0);
    expect_current(NULL, "phxfs_stream_create", __LINE__);
    size_t sn = 8192;
    off_t bo = 0, fo = 4096;
    ssize_t done = -999;
    if (s) {
        CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &sn, &bo, &fo, &done, s), 0);
        expect_current(NULL, "phxfs_read_stream", __LINE__);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        expect_current(NULL, "phxfs_stream_synchronize", __LINE__);
        CHECK_EQ(done, (ssize_t)sn);
        CHECK_EQ(phxfs_stream_destroy(0, s), 0);
        expect_current(NULL, "phxfs_stream_destroy", __LINE__);
    }
    free(got);
    return NULL;
}

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "libcuda.so.1 lacks %s\n", name);
        exit(2);
    }
    return p;
}

int main(void)
{
    const char *conn = getenv("PHX_CONNECTOR");
    if (!conn || strcmp(conn, "cuda")) {
        printf("test_cuda_ctx: skipped (needs PHX_CONNECTOR=cuda)\n");
        return 77;
    }
    /* the same instance the library loads, so both see one context stack */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "test_cuda_ctx: libcuda.so.1 not loadable: %s\n", dlerror());
        return 1;
    }
    *(void **)&cu.Init = sym(lib, "cuInit");
    *(void **)&cu.CtxCreate = sym(lib, "cuCtxCreate_v2");
    *(void **)&cu.CtxDestroy = sym(lib, "cuCtxDestroy_v2");
    *(void **)&cu.CtxGetCurrent = sym(lib, "cuCtxGetCurrent");
    *(void **)&cu.CtxSetCurrent = sym(lib, "cuCtxSetCurrent");
    *(void **)&cu.CtxPopCurrent = sym(lib, "cuCtxPopCurrent_v2");
    *(void **)&cu.MemAlloc = sym(lib, "cuMemAlloc_v2");
    *(void **)&cu.MemFree = sym(lib, "cuMemFree_v2");
    *(void **)&cu.MemcpyHtoD = sym(lib, "cuMemcpyHtoD_v2");
    *(void **)&cu.MemcpyDtoH = sym(lib, "cuMemcpyDtoH_v2");
    *(void **)&cu.MemcpyDtoHAsync = sym(lib, "cuMemcpyDtoHAsync_v2");
    *(void **)&cu.StreamCreate = sym(lib, "cuStreamCreate");
    *(void **)&cu.StreamDestroy = sym(lib, "cuStreamDestroy_v2");
    *(void **)&cu.StreamSynchronize = sym(lib, "cuStreamSynchronize");

    CU_OK(cu.Init(0));
    CU_OK(cu.CtxCreate(&mine, 0, 0)); /* pushed: the only entry on this thread's stack */
    STILL_MINE("cuCtxCreate");
    CUdeviceptr own = 0;
    size_t own_len = 1u << 20;
    CU_OK(cu.MemAlloc(&own, own_len));
    caller_roundtrip(own, own_len, 1);

    CHECK_EQ(phxfs_open(0), 0);
    STILL_MINE("phxfs_open");
    caller_roundtrip(own, own_len, 2);

    dlen = fsize + 65536;
    CHECK_EQ(phxfs_mem_alloc(0, dlen, &dmem), 0);
    STILL_MINE("phxfs_mem_alloc");
    if (!dmem) return th_finish("test_cuda_ctx");
    CHECK_EQ(phxfs_regmem(0, dmem, dlen, NULL), 0);
    STILL_MINE("phxfs_regmem");
    caller_roundtrip(own, own_len, 3);

    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 7));
    ref = malloc(fsize);
    th_fill(ref, fsize, 7, 0);
    fd = th_open(path, 0);
    STILL_MINE("phxfs_file_open");

    CHECK_EQ(phxfs_read(fd, 0, dmem, 5, (ssize_t)fsize, 0), (ssize_t)fsize);
    STILL_MINE("phxfs_read");
    caller_roundtrip(own, own_len, 4);
    unsigned char *got = malloc(dlen);
    memset(got, 0, dlen);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + 5, fsize), 0);
    STILL_MINE("phxfs_memcpy_to_host");
    CHECK(memcmp(got, ref, fsize) == 0);

    /* small transfers run on this thread (xfer_inline.c): the caller's context stays current */
    CHECK_EQ(phxfs_read(fd, 0, dmem, 3, 5000, 77), 5000);
    STILL_MINE("small phxfs_read");
    memset(got, 0, 5000);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + 3, 5000), 0);
    CHECK(memcmp(got, ref + 77, 5000) == 0);
    CHECK_EQ(phxfs_write(fd, 0, dmem, 3, 5000, fsize + 100), 5000);
    STILL_MINE("small phxfs_write");
    memset(got, 0, 5000);
    CHECK_EQ(pread(fd, got, 5000, (off_t)fsize + 100), 5000);
    CHECK(memcmp(got, ref + 77, 5000) == 0);
    caller_roundtrip(own, own_len, 7);
    CHECK_EQ(phxfs_read(fd, 0, dmem, 5, (ssize_t)fsize, 0), (ssize_t)fsize); /* put back what the checks below expect */

    /* stream-ordered read on the caller's stream, in the caller's context */
    CUstream s = NULL;
    CU_OK(cu.StreamCreate(&s, 0));
    size_t n = fsize - 4099;
    off_t bo = 4096, fo = 4099;
    ssize_t done = -999;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &done, s), 0);
    STILL_MINE("phxfs_read_stream");
    CU_OK(cu.StreamSynchronize(s));
    CHECK_EQ(done, (ssize_t)n);
    /* the caller reads Phoenix's device memory back on its own stream */
    memset(got, 0, dlen);
    CU_OK(cu.MemcpyDtoHAsync(got, (CUdeviceptr)(uintptr_t)dmem + 4096, n, s));
    CU_OK(cu.StreamSynchronize(s));
    CHECK(memcmp(got, ref + 4099, n) == 0);
    caller_roundtrip(own, own_len, 5);

    /* a thread with an empty context stack */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, no_context_thread, NULL), 0);
    pthread_join(t, NULL);
    STILL_MINE("the no-context thread");

    CU_OK(cu.StreamDestroy(s));
    CHECK_EQ(phxfs_deregmem(0, dmem, dlen), 0);
    STILL_MINE("phxfs_deregmem");
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    STILL_MINE("phxfs_mem_free");
    CHECK_EQ(phxfs_close(0), 0);
    STILL_MINE("phxfs_close");
    caller_roundtrip(own, own_len, 6);
    CU_OK(cu.MemFree(own));

    /* the stack holds exactly what the caller put there: its context and nothing under it */
    CUcontext popped = NULL, under = (CUcontext)1;
    CU_OK(cu.CtxPopCurrent(&popped));
    CHECK(popped == mine);
    CU_OK(cu.CtxGetCurrent(&under));
    CHECK(under == NULL);
    CU_OK(cu.CtxDestroy(mine));
    close(fd);
    unlink(path);
    free(got);
    free(ref);
    return th_finish("test_cuda_ctx");
}
