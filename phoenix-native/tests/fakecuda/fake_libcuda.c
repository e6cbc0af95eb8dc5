/* A fake libcuda.so.1: the subset of the CUDA driver API that libphoenix's
 * cuda connector uses, emulated in host memory so the real connector code runs
 * in CI without a GPU.
 *
 * The point is to catch the bugs a GPU would catch, so where the driver is
 * strict this is at least as strict: a per-thread context stack, calls that
 * need a current context fail without one, a stream (and an event recorded on
 * it) may only be used while its own context is current, device pointers must
 * lie inside a live allocation, copies complete on the stream's own thread
 * later than they were issued, and host functions may not call back in.
 * Memory the driver hands out uninitialised is filled with a poison byte so
 * code that assumes zeroed memory shows up.
 *
 * Handles are never dereferenced before they are found in a table, so a stale
 * or foreign handle is an error code rather than a crash inside the fake. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct fctx *CUcontext;
typedef struct fstream *CUstream;
typedef struct fevent *CUevent;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *);

#define EXPORT __attribute__((visibility("default")))

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

#define MAX_DEVICES 16
#define STACK_DEPTH 64
#define POISON 0xA5

/* ---- contexts ---- */

struct fctx {
    int dev;
    int primary;
    int destroyed;            /* cuCtxDestroy, or a primary context released to 0 */
    unsigned long long peers; /* devices whose memory this context was enabled to access */
    struct fstream *null_stream;
    struct fctx *next;        /* every context ever made; none is freed, so stale handles stay checkable */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_inited;
static int g_ndev;
static struct fctx g_primary[MAX_DEVICES];
static int g_primary_refs[MAX_DEVICES];
static struct fctx *g_contexts;

static __thread struct {
    CUcontext s[STACK_DEPTH];
    int n;
} tls_stack;
/* set on stream threads: host functions run there and must not call the driver */
static __thread int tls_on_stream;

static int ctx_known_locked(CUcontext c)
{
    for (int i = 0; i < g_ndev; i++)
        if (c == &g_primary[i]) return 1;
    for (struct fctx *p = g_contexts; p; p = p->next)
        if (p == c) return 1;
    return 0;
}

/* The current context, or the error a call that needs one must return. */
static CUresult current_ctx(CUcontext *out)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_stack.n == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tls_stack.s[tls_stack.n - 1];
    pthread_mutex_lock(&g_lock);
    int dead = c->destroyed;
    pthread_mutex_unlock(&g_lock);
    if (dead) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = c;
    return CUDA_SUCCESS;
}

/* ---- memory ranges: device allocations, registered and host-allocated memory ---- */

enum { R_DEVICE, R_HOSTREG, R_HOSTALLOC };

typedef struct {
    uintptr_t start;
    size_t size;
    int kind;
    unsigned flags;
    CUcontext ctx;
} range_t;

static range_t *g_ranges;
static size_t g_nranges, g_cap_ranges;
static size_t g_pinned_bytes;
static int g_register_calls;

static range_t *range_find_locked(uintptr_t p)
{
    for (size_t i = 0; i < g_nranges; i++)
        if (p >= g_ranges[i].start && p - g_ranges[i].start < g_ranges[i].size) return &g_ranges[i];
    return NULL;
}

static int range_overlaps_locked(uintptr_t p, size_t len)
{
    for (size_t i = 0; i < g_nranges; i++)
        if (p < g_ranges[i].start + g_ranges[i].size && g_ranges[i].start < p + len) return 1;
    return 0;
}

static CUresult range_add_locked(range_t r)
{
    if (g_nranges == g_cap_ranges) {
        size_t cap = g_cap_ranges ? 2 * g_cap_ranges : 64;
        range_t *n = realloc(g_ranges, cap * sizeof *n);
        if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
        g_ranges = n;
        g_cap_ranges = cap;
    }
    g_ranges[g_nranges++] = r;
    if (r.kind != R_DEVICE) g_pinned_bytes += r.size;
    return CUDA_SUCCESS;
}

static void range_remove_locked(range_t *r)
{
    if (r->kind != R_DEVICE) g_pinned_bytes -= r->size;
    *r = g_ranges[--g_nranges];
}

/* What a copy or memset may address on the device side: device memory, or
 * pinned host memory through its (identical, UVA) device address. */
static CUresult check_device_span(CUdeviceptr p, size_t len)
{
    if (len == 0) return CUDA_SUCCESS;
    pthread_mutex_lock(&g_lock);
    range_t *r = range_find_locked((uintptr_t)p);
    int ok = r && (uintptr_t)p - r->start + len <= r->size;
    pthread_mutex_unlock(&g_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- streams ---- */

enum { OP_COPY, OP_SET, OP_FN, OP_EVENT, OP_WAIT32 };

struct fevent {
    CUcontext ctx;
    uint64_t recorded, reached; /* record sequence numbers: issued, and passed by the stream */
    int refs;                   /* the handle table + queued records; under g_lock */
    struct fevent *next;
};

typedef struct op {
    int kind;
    void *dst;
    const void *src;
    size_t len;
    int value;
    CUhostFn fn;
    void *arg;
    struct fevent *ev;
    uint64_t seq;
    uint32_t *word;
    uint32_t cmp;
    unsigned cond;
    struct op *next;
} op_t;

struct fstream {
    CUcontext ctx;
    unsigned flags;
    pthread_mutex_t lock;
    pthread_cond_t cond;      /* work queued or stop */
    pthread_cond_t done_cond; /* completed advanced */
    op_t *head, *tail;
    uint64_t queued, completed;
    int stop;
    int refs;                 /* handle table + its thread + waiters; under g_lock */
    /* PHX_FAKE_HOLD_FILE=path, read when the stream is created (as libphoenix's fake device
     * does): the stream stops before each operation while the file exists, so a test sets
     * late-bound values before the stream gets to them, whatever the timing */
    char hold_file[256];
    struct fstream *next;
};

static struct fstream *g_streams;
static struct fevent *g_events;
/* events change under g_lock and are waited for on one shared condition */
static pthread_cond_t g_event_cond = PTHREAD_COND_INITIALIZER;

static void stream_unref_locked(struct fstream *s)
{
    if (--s->refs) return;
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    pthread_cond_destroy(&s->done_cond);
    free(s);
}

static void event_unref_locked(struct fevent *e)
{
    if (--e->refs == 0) free(e);
}

static int wait_cond_met(uint32_t v, uint32_t cmp, unsigned cond)
{
    switch (cond) {
    case 0: return (int32_t)(v - cmp) >= 0; /* GEQ is cyclic, as on the GPU */
    case 1: return v == cmp;
    case 2: return (v & cmp) != 0;
    default: return ~(v | cmp) != 0;
    }
}

static void run_op(op_t *op)
{
    switch (op->kind) {
    case OP_COPY: memmove(op->dst, op->src, op->len); break;
    case OP_SET: memset(op->dst, op->value, op->len); break;
    case OP_FN: op->fn(op->arg); break;
    case OP_EVENT:
        pthread_mutex_lock(&g_lock);
        if (op->seq > op->ev->reached) op->ev->reached = op->seq;
        event_unref_locked(op->ev);
        pthread_cond_broadcast(&g_event_cond);
        pthread_mutex_unlock(&g_lock);
        break;
    case OP_WAIT32: {
        /* another host thread writes the word; a short sleep keeps it cheap and simple */
        struct timespec ts = {0, 20000};
        while (!wait_cond_met(__atomic_load_n(op->word, __ATOMIC_ACQUIRE), op->cmp, op->cond)) nanosleep(&ts, NULL);
        break;
    }
    }
}

static void *stream_main(void *arg)
{
    struct fstream *s = arg;
    tls_on_stream = 1;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->cond, &s->lock);
        if (!s->head) break;
        op_t *op = s->head;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        pthread_mutex_unlock(&s->lock);
        struct timespec held = {0, 1000000};
        while (s->hold_file[0] && access(s->hold_file, F_OK) == 0) nanosleep(&held, NULL);
        run_op(op);
        free(op);
        pthread_mutex_lock(&s->lock);
        s->completed++;
        pthread_cond_broadcast(&s->done_cond);
    }
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&g_lock);
    stream_unref_locked(s);
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static CUresult stream_new_locked(CUcontext ctx, unsigned flags, struct fstream **out)
{
    struct fstream *s = calloc(1, sizeof *s);
    if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->flags = flags;
    s->refs = 2;
    const char *hold = getenv("PHX_FAKE_HOLD_FILE");
    snprintf(s->hold_file, sizeof s->hold_file, "%s", hold ? hold : "");
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_cond_init(&s->done_cond, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, stream_main, s)) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        pthread_cond_destroy(&s->done_cond);
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_detach(t);
    s->next = g_streams;
    g_streams = s;
    *out = s;
    return CUDA_SUCCESS;
}

static int stream_known_locked(struct fstream *s)
{
    for (struct fstream *p = g_streams; p; p = p->next)
        if (p == s) return 1;
    return 0;
}

/* The checks every stream operation makes, in the driver's order: initialised,
 * not from a host function, a live current context, a known stream of that
 * context. NULL (and the legacy/per-thread handles) mean the context's own
 * stream. */
static CUresult resolve_stream(CUstream h, struct fstream **out)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_on_stream) return CUDA_ERROR_NOT_PERMITTED;
    CUcontext cur;
    CUresult r = current_ctx(&cur);
    if (r) return r;
    pthread_mutex_lock(&g_lock);
    if ((uintptr_t)h <= 2) {
        if (!cur->null_stream) r = stream_new_locked(cur, 0, &cur->null_stream);
        *out = cur->null_stream;
    } else if (!stream_known_locked(h)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (h->ctx != cur) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else {
        *out = h;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

static CUresult enqueue(struct fstream *s, op_t tmpl)
{
    op_t *op = malloc(sizeof *op);
    if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
    *op = tmpl;
    op->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tail) s->tail->next = op;
    else s->head = op;
    s->tail = op;
    s->queued++;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return CUDA_SUCCESS;
}

static void stream_wait(struct fstream *s, uint64_t target)
{
    pthread_mutex_lock(&s->lock);
    while (s->completed < target) pthread_cond_wait(&s->done_cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

/* Waits for what is queued now on every stream that matches (dev < 0: all,
 * blocking_only: the streams the legacy default stream synchronises with). */
static void sync_streams(int dev, CUcontext only_ctx, int blocking_only)
{
    pthread_mutex_lock(&g_lock);
    size_t n = 0;
    for (struct fstream *p = g_streams; p; p = p->next) n++;
    struct fstream **list = calloc(n ? n : 1, sizeof *list);
    uint64_t *targets = calloc(n ? n : 1, sizeof *targets);
    size_t k = 0;
    for (struct fstream *p = g_streams; p && list && targets; p = p->next) {
        if (dev >= 0 && p->ctx->dev != dev) continue;
        if (only_ctx && p->ctx != only_ctx) continue;
        if (blocking_only && (p->flags & 1)) continue;
        pthread_mutex_lock(&p->lock);
        targets[k] = p->queued;
        pthread_mutex_unlock(&p->lock);
        p->refs++;
        list[k++] = p;
    }
    pthread_mutex_unlock(&g_lock);
    for (size_t i = 0; i < k; i++) stream_wait(list[i], targets[i]);
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < k; i++) stream_unref_locked(list[i]);
    pthread_mutex_unlock(&g_lock);
    free(list);
    free(targets);
}

/* ---- initialisation and devices ---- */

EXPORT CUresult cuInit(unsigned flags)
{
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    if (!atomic_load(&g_inited)) {
        const char *e = getenv("FAKECUDA_DEVICES");
        int n = e ? atoi(e) : 2;
        g_ndev = n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
        for (int i = 0; i < g_ndev; i++) {
            g_primary[i].dev = i;
            g_primary[i].primary = 1;
            g_primary[i].destroyed = 1; /* inactive until retained */
        }
        atomic_store(&g_inited, 1);
    }
    int n = g_ndev;
    pthread_mutex_unlock(&g_lock);
    return n ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

static CUresult check_dev(CUdevice d)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    return d >= 0 && d < g_ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = g_ndev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_dev(ordinal);
    if (!r) *dev = ordinal;
    return r;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Fake CUDA device %d (host memory)", dev);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!pi || attrib <= 0 || attrib > 200) return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case 1: *pi = 1024; break;   /* MAX_THREADS_PER_BLOCK */
    case 10: *pi = 32; break;    /* WARP_SIZE */
    case 16: *pi = 132; break;   /* MULTIPROCESSOR_COUNT */
    case 19: *pi = 1; break;     /* CAN_MAP_HOST_MEMORY */
    case 33: *pi = dev + 1; break; /* PCI_BUS_ID: distinct per device */
    case 41: *pi = 1; break;     /* UNIFIED_ADDRESSING */
    case 75: *pi = 9; break;     /* COMPUTE_CAPABILITY_MAJOR */
    case 91: *pi = 1; break;     /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
    case 92: *pi = 1; break;     /* CAN_USE_STREAM_MEM_OPS_V1: cuStreamWaitValue32 works */
    case 99: *pi = 1; break;     /* HOST_REGISTER_SUPPORTED */
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

/* ---- context management ---- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    g_primary_refs[dev]++;
    g_primary[dev].destroyed = 0;
    *pctx = &g_primary[dev];
    pthread_mutex_unlock(&g_lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    pthread_mutex_lock(&g_lock);
    if (g_primary_refs[dev] == 0) r = CUDA_ERROR_INVALID_CONTEXT;
    else if (--g_primary_refs[dev] == 0) g_primary[dev].destroyed = 1;
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    (void)flags;
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (tls_stack.n == STACK_DEPTH) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fctx *c = calloc(1, sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    c->dev = dev;
    pthread_mutex_lock(&g_lock);
    c->next = g_contexts;
    g_contexts = c;
    pthread_mutex_unlock(&g_lock);
    tls_stack.s[tls_stack.n++] = c; /* like the driver: the new context becomes current */
    *pctx = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    CUresult r = CUDA_SUCCESS;
    if (!ctx_known_locked(ctx) || ctx->primary) r = CUDA_ERROR_INVALID_CONTEXT;
    else if (ctx->destroyed) r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else ctx->destroyed = 1;
    pthread_mutex_unlock(&g_lock);
    if (!r && tls_stack.n && tls_stack.s[tls_stack.n - 1] == ctx) tls_stack.n--;
    return r;
}

static CUresult check_ctx_handle(CUcontext ctx)
{
    pthread_mutex_lock(&g_lock);
    CUresult r = !ctx_known_locked(ctx) ? CUDA_ERROR_INVALID_CONTEXT
                 : ctx->destroyed      ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                                       : CUDA_SUCCESS;
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_ctx_handle(ctx);
    if (r) return r;
    if (tls_stack.n == STACK_DEPTH) return CUDA_ERROR_OUT_OF_MEMORY;
    tls_stack.s[tls_stack.n++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_stack.n == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tls_stack.s[--tls_stack.n];
    if (pctx) *pctx = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = tls_stack.n ? tls_stack.s[tls_stack.n - 1] : NULL;
    return CUDA_SUCCESS;
}

/* Replaces the top of the stack; NULL pops (a no-op on an empty stack). */
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) {
        if (tls_stack.n) tls_stack.n--;
        return CUDA_SUCCESS;
    }
    CUresult r = check_ctx_handle(ctx);
    if (r) return r;
    if (tls_stack.n) tls_stack.s[tls_stack.n - 1] = ctx;
    else tls_stack.s[tls_stack.n++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    CUcontext c;
    CUresult r = current_ctx(&c);
    if (!r) *dev = c->dev;
    return r;
}

EXPORT CUresult cuStreamGetCtx(CUstream h, CUcontext *pctx)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if ((uintptr_t)h <= 2) {
        CUcontext c;
        CUresult r = current_ctx(&c);
        if (!r) *pctx = c;
        return r;
    }
    pthread_mutex_lock(&g_lock);
    CUresult r = stream_known_locked(h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (!r) *pctx = h->ctx;
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* ---- memory ---- */

/* Calls that allocate or free need a live current context and are not
 * allowed from host functions. */
static CUresult mem_call_ctx(CUcontext *cur)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_on_stream) return CUDA_ERROR_NOT_PERMITTED;
    return current_ctx(cur);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t sz = (bytesize + 255) & ~(size_t)255;
    if (sz < bytesize) return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = aligned_alloc(256, sz);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, POISON, sz);
    pthread_mutex_lock(&g_lock);
    r = range_add_locked((range_t){(uintptr_t)p, bytesize, R_DEVICE, 0, cur});
    pthread_mutex_unlock(&g_lock);
    if (r) { free(p); return r; }
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Frees synchronise with the device (as cuMemFree does), so a copy still
 * queued never touches freed memory. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!dptr) return CUDA_SUCCESS;
    pthread_mutex_lock(&g_lock);
    range_t *rg = range_find_locked((uintptr_t)dptr);
    int dev = -1;
    if (!rg || rg->kind != R_DEVICE || rg->start != (uintptr_t)dptr) r = CUDA_ERROR_INVALID_VALUE;
    else dev = rg->ctx->dev;
    pthread_mutex_unlock(&g_lock);
    if (r) return r;
    sync_streams(dev, NULL, 0);
    pthread_mutex_lock(&g_lock);
    rg = range_find_locked((uintptr_t)dptr);
    if (rg && rg->kind == R_DEVICE && rg->start == (uintptr_t)dptr) range_remove_locked(rg);
    else r = CUDA_ERROR_INVALID_VALUE; /* freed twice concurrently */
    pthread_mutex_unlock(&g_lock);
    if (!r) free((void *)(uintptr_t)dptr);
    return r;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned flags)
{
    CUcontext cur;
    pthread_mutex_lock(&g_lock);
    g_register_calls++;
    pthread_mutex_unlock(&g_lock);
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!p || bytesize == 0 || (flags & ~0xFu)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    if (range_overlaps_locked((uintptr_t)p, bytesize)) r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else r = range_add_locked((range_t){(uintptr_t)p, bytesize, R_HOSTREG, flags, cur});
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    range_t *rg = range_find_locked((uintptr_t)p);
    if (!rg || rg->kind != R_HOSTREG || rg->start != (uintptr_t)p) r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    else range_remove_locked(rg);
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned flags)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    CUcontext cur;
    CUresult r = current_ctx(&cur);
    if (r) return r;
    if (!pdptr || !p || flags) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    range_t *rg = range_find_locked((uintptr_t)p);
    if (!rg || rg->kind == R_DEVICE) r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&g_lock);
    if (!r) *pdptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned flags)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!pp || bytesize == 0 || (flags & ~0x7u)) return CUDA_ERROR_INVALID_VALUE;
    size_t sz = (bytesize + 4095) & ~(size_t)4095;
    if (sz < bytesize) return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = aligned_alloc(4096, sz);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, POISON, sz);
    pthread_mutex_lock(&g_lock);
    r = range_add_locked((range_t){(uintptr_t)p, bytesize, R_HOSTALLOC, flags, cur});
    pthread_mutex_unlock(&g_lock);
    if (r) { free(p); return r; }
    *pp = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    pthread_mutex_lock(&g_lock);
    range_t *rg = range_find_locked((uintptr_t)p);
    if (!rg || rg->kind != R_HOSTALLOC || rg->start != (uintptr_t)p) r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&g_lock);
    if (r) return r;
    sync_streams(-1, NULL, 0);
    pthread_mutex_lock(&g_lock);
    rg = range_find_locked((uintptr_t)p);
    if (rg && rg->kind == R_HOSTALLOC && rg->start == (uintptr_t)p) range_remove_locked(rg);
    else r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&g_lock);
    if (!r) free(p);
    return r;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    range_t *rg = range_find_locked((uintptr_t)ptr);
    range_t r = rg ? *rg : (range_t){0};
    pthread_mutex_unlock(&g_lock);
    if (!rg) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case 1: *(CUcontext *)data = r.ctx; break;
    case 2: *(unsigned *)data = r.kind == R_DEVICE ? 2 : 1; break;
    case 3: *(CUdeviceptr *)data = ptr; break;
    case 4:
        if (r.kind == R_DEVICE) return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case 8: *(unsigned *)data = 0; break; /* IS_MANAGED */
    case 9: *(int *)data = r.ctx->dev; break;
    case 11: *(CUdeviceptr *)data = (CUdeviceptr)r.start; break;
    case 12: *(size_t *)data = r.size; break;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

/* ---- streams ---- */

EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned flags)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!ph || (flags & ~1u)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    r = stream_new_locked(cur, flags, ph);
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* Returns at once; the stream finishes its queued work and then goes away,
 * as the driver documents. Any context may be current. */
EXPORT CUresult cuStreamDestroy_v2(CUstream h)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_on_stream) return CUDA_ERROR_NOT_PERMITTED;
    pthread_mutex_lock(&g_lock);
    struct fstream **pp = &g_streams;
    while (*pp && *pp != h) pp = &(*pp)->next;
    CUresult r = CUDA_SUCCESS;
    if (!h || !*pp || h->ctx->null_stream == h) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else {
        *pp = h->next;
        pthread_mutex_lock(&h->lock);
        h->stop = 1;
        pthread_cond_signal(&h->cond);
        pthread_mutex_unlock(&h->lock);
        stream_unref_locked(h);
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    pthread_mutex_lock(&s->lock);
    uint64_t target = s->queued;
    pthread_mutex_unlock(&s->lock);
    stream_wait(s, target);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    if (n && !src) return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_device_span(dst, n))) return r;
    if (n == 0) return CUDA_SUCCESS;
    return enqueue(s, (op_t){.kind = OP_COPY, .dst = (void *)(uintptr_t)dst, .src = src, .len = n});
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    if (n && !dst) return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_device_span(src, n))) return r;
    if (n == 0) return CUDA_SUCCESS;
    return enqueue(s, (op_t){.kind = OP_COPY, .dst = dst, .src = (const void *)(uintptr_t)src, .len = n});
}

/* Peer copies: every fake device may reach every other one (FAKECUDA_NO_PEER=1: none may);
 * access must be enabled from the context that uses it, once. */
EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!can) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_dev(dev);
    if (!r) r = check_dev(peer);
    if (r) return r;
    const char *no = getenv("FAKECUDA_NO_PEER");
    *can = dev != peer && !(no && *no == '1');
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (flags || !peer) return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_ctx_handle(peer))) return r;
    if (peer == cur) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    unsigned long long bit = 1ull << peer->dev;
    r = cur->peers & bit ? 704 /* PEER_ACCESS_ALREADY_ENABLED */ : CUDA_SUCCESS;
    cur->peers |= bit;
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                  CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    if ((r = check_ctx_handle(dst_ctx)) || (r = check_ctx_handle(src_ctx))) return r;
    if ((r = check_device_span(dst, n)) || (r = check_device_span(src, n))) return r;
    if (n == 0) return CUDA_SUCCESS;
    return enqueue(s, (op_t){.kind = OP_COPY, .dst = (void *)(uintptr_t)dst, .src = (const void *)(uintptr_t)src, .len = n});
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    if ((r = check_device_span(dst, n)) || (r = check_device_span(src, n))) return r;
    if (n == 0) return CUDA_SUCCESS;
    return enqueue(s, (op_t){.kind = OP_COPY, .dst = (void *)(uintptr_t)dst, .src = (const void *)(uintptr_t)src, .len = n});
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    if ((r = check_device_span(dst, n))) return r;
    if (n == 0) return CUDA_SUCCESS;
    return enqueue(s, (op_t){.kind = OP_SET, .dst = (void *)(uintptr_t)dst, .value = v, .len = n});
}

/* Synchronous copies run on the legacy default stream, which first waits for
 * the context's blocking streams; the host waits for the copy. */
static CUresult copy_sync(void *dst, const void *src, size_t n, CUdeviceptr dev_side)
{
    struct fstream *s;
    CUresult r = resolve_stream(NULL, &s);
    if (r) return r;
    if (n && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_device_span(dev_side, n))) return r;
    if (n == 0) return CUDA_SUCCESS;
    sync_streams(-1, s->ctx, 1);
    if ((r = enqueue(s, (op_t){.kind = OP_COPY, .dst = dst, .src = src, .len = n}))) return r;
    return cuStreamSynchronize(NULL);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy_sync((void *)(uintptr_t)dst, src, n, dst);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return copy_sync(dst, (const void *)(uintptr_t)src, n, src);
}

EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *arg)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    return enqueue(s, (op_t){.kind = OP_FN, .fn = fn, .arg = arg});
}

EXPORT CUresult cuStreamWaitValue32_v2(CUstream h, CUdeviceptr addr, uint32_t value, unsigned flags)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    /* the low bits pick the condition; 1 << 30 is WAIT_VALUE_FLUSH */
    if ((flags & ~(3u | (1u << 30))) || (addr & 3)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_lock);
    range_t *rg = range_find_locked((uintptr_t)addr);
    int ok = rg && (uintptr_t)addr + 4 <= rg->start + rg->size && (rg->kind == R_DEVICE || (rg->flags & 0x2));
    pthread_mutex_unlock(&g_lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    return enqueue(s, (op_t){.kind = OP_WAIT32, .word = (uint32_t *)(uintptr_t)addr, .cmp = value, .cond = flags & 3u});
}

/* ---- events ---- */

static int event_known_locked(struct fevent *e)
{
    for (struct fevent *p = g_events; p; p = p->next)
        if (p == e) return 1;
    return 0;
}

EXPORT CUresult cuEventCreate(CUevent *ph, unsigned flags)
{
    CUcontext cur;
    CUresult r = mem_call_ctx(&cur);
    if (r) return r;
    if (!ph || (flags & ~0xFu)) return CUDA_ERROR_INVALID_VALUE;
    struct fevent *e = calloc(1, sizeof *e);
    if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = cur;
    e->refs = 1;
    pthread_mutex_lock(&g_lock);
    e->next = g_events;
    g_events = e;
    pthread_mutex_unlock(&g_lock);
    *ph = e;
    return CUDA_SUCCESS;
}

/* A record still queued keeps the event alive; the handle is dead at once. */
EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&g_lock);
    struct fevent **pp = &g_events;
    while (*pp && *pp != e) pp = &(*pp)->next;
    CUresult r = CUDA_SUCCESS;
    if (!e || !*pp) r = CUDA_ERROR_INVALID_HANDLE;
    else {
        *pp = e->next;
        event_unref_locked(e);
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream h)
{
    struct fstream *s;
    CUresult r = resolve_stream(h, &s);
    if (r) return r;
    pthread_mutex_lock(&g_lock);
    uint64_t seq = 0;
    if (!event_known_locked(e)) r = CUDA_ERROR_INVALID_HANDLE;
    else if (e->ctx != s->ctx) r = CUDA_ERROR_INVALID_HANDLE;
    else {
        seq = ++e->recorded;
        e->refs++;
    }
    pthread_mutex_unlock(&g_lock);
    if (r) return r;
    r = enqueue(s, (op_t){.kind = OP_EVENT, .ev = e, .seq = seq});
    if (r) {
        /* nothing queued: the record counts as reached so waiters do not hang */
        pthread_mutex_lock(&g_lock);
        if (seq > e->reached) e->reached = seq;
        event_unref_locked(e);
        pthread_cond_broadcast(&g_event_cond);
        pthread_mutex_unlock(&g_lock);
    }
    return r;
}

/* Waits for the most recent record; an event never recorded is complete. */
EXPORT CUresult cuEventSynchronize(CUevent e)
{
    if (!atomic_load(&g_inited)) return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_on_stream) return CUDA_ERROR_NOT_PERMITTED;
    pthread_mutex_lock(&g_lock);
    CUresult r = CUDA_SUCCESS;
    if (!event_known_locked(e)) r = CUDA_ERROR_INVALID_HANDLE;
    else {
        e->refs++;
        uint64_t target = e->recorded;
        while (e->reached < target) pthread_cond_wait(&g_event_cond, &g_lock);
        event_unref_locked(e);
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* ---- errors ---- */

EXPORT CUresult cuGetErrorString(CUresult err, const char **pstr)
{
    static const struct { int code; const char *s; } msgs[] = {
        {CUDA_SUCCESS, "no error"},
        {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
        {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
        {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
        {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
        {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
        {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
        {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
        {CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"},
        {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"},
        {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"},
        {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
        {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    };
    if (!pstr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof msgs / sizeof *msgs; i++)
        if (msgs[i].code == err) {
            *pstr = msgs[i].s;
            return CUDA_SUCCESS;
        }
    *pstr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- test hooks, not part of the driver API ---- */

EXPORT size_t fakecuda_pinned_bytes(void)
{
    pthread_mutex_lock(&g_lock);
    size_t n = g_pinned_bytes;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* every cuMemHostRegister call, successful or not */
EXPORT int fakecuda_register_calls(void)
{
    pthread_mutex_lock(&g_lock);
    int n = g_register_calls;
    pthread_mutex_unlock(&g_lock);
    return n;
}
