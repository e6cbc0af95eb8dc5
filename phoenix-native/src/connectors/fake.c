/* A device emulated in host memory. Each stream is a FIFO served by its own
 * thread, so copies really complete later than they are issued: CI exercises
 * the same slot reuse, event and stream-ordering logic as a GPU. */
#include "align.h"
#include "connector.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct fake_event {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t recorded, reached;
} fake_event_t;

typedef struct fake_op {
    enum { OP_COPY, OP_SET, OP_FN, OP_EVENT, OP_WAIT } kind;
    int value;
    void *dst;
    const void *src;
    size_t len;
    phx_host_fn fn;
    void *arg;
    fake_event_t *ev;
    uint64_t ev_seq;
    volatile uint32_t *flag;
    struct fake_op *next;
} fake_op_t;

typedef struct fake_stream {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    fake_op_t *head, *tail;
    uint64_t queued, completed;
    int stop;
    int dev;
    atomic_int waits;        /* waits queued and not yet passed */
    /* PHX_FAKE_HOLD_FILE=path, read when the stream is created (fake and emu devices alike):
     * the stream stops before each operation while the file exists, so a test can change
     * late-bound cells before the stream gets to them, deterministically */
    char hold_file[256];
    pthread_t thread;
} fake_stream_t;

/* PHX_FAKE_CONTEXT_BARRIER=1: a copy queued on one stream while another stream waits on a
 * flag blocks until no other stream waits, as CUDA's lazy kernel loading synchronises the
 * whole context: whoever needs a copy to set the flag a stream waits on then deadlocks. */
static int context_barrier;
static atomic_int waits_total;

static int fake_count;
/* PHX_FAKE_PEER=0: the fake devices cannot reach each other's memory, so device-to-device
 * copies take the path through host memory that GPUs without peer access need */
static int fake_peer = 1;

/* Fault injection for the error paths a GPU rarely shows: PHX_FAKE_FAIL_LAUNCH and
 * PHX_FAKE_FAIL_COPY and PHX_FAKE_FAIL_WAIT list the 1-based calls (host-function launches;
 * async copies; stream waits)
 * that fail with -EIO, e.g. "1,5". */
#define MAX_FAULTS 16
static long fail_launch[MAX_FAULTS], fail_copy[MAX_FAULTS], fail_wait[MAX_FAULTS];
static atomic_long launch_calls, copy_calls, wait_calls;

static void parse_faults(const char *env, long *out)
{
    const char *v = getenv(env);
    for (int i = 0; v && *v && i < MAX_FAULTS; i++) {
        char *end;
        out[i] = strtol(v, &end, 10);
        v = *end == ',' ? end + 1 : NULL;
    }
}

static int injected(long *list, atomic_long *calls)
{
    long n = atomic_fetch_add(calls, 1) + 1;
    for (int i = 0; i < MAX_FAULTS && list[i]; i++)
        if (list[i] == n) return 1;
    return 0;
}

static int f_init(int fake_devices, char *why, size_t n)
{
    (void)why; (void)n;
    fake_count = fake_devices > 0 ? fake_devices : 1;
    parse_faults("PHX_FAKE_FAIL_LAUNCH", fail_launch);
    parse_faults("PHX_FAKE_FAIL_COPY", fail_copy);
    parse_faults("PHX_FAKE_FAIL_WAIT", fail_wait);
    const char *barrier = getenv("PHX_FAKE_CONTEXT_BARRIER");
    context_barrier = barrier && !strcmp(barrier, "1");
    const char *peer = getenv("PHX_FAKE_PEER");
    fake_peer = !(peer && !strcmp(peer, "0"));
    return fake_count;
}

static int f_name(int dev, char *buf, size_t len) { snprintf(buf, len, "fake device %d (host-emulated)", dev); return 0; }
static int f_enter(int dev, void *s)
{
    if (s) return 0;
    return dev >= 0 && dev < fake_count ? 0 : -ENODEV;
}
static void f_leave(void) {}

/* Allocations are remembered so check_pointer can tell device memory from
 * host memory, as cuPointerGetAttribute does on a GPU. */
typedef struct { uintptr_t addr; size_t len; int dev; } fake_alloc_t;
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_alloc_t *allocs;
static size_t nallocs, cap_allocs;

static int f_alloc(int dev, size_t len, void **p)
{
    if (f_enter(dev, NULL)) return -ENODEV;
    *p = aligned_alloc(65536, phx_align_up(len ? len : 1, 65536));
    if (!*p) return -ENOMEM;
    /* a GPU's fresh memory holds whatever was there: poisoned here, so that a test of
     * uninitialized memory fails when bytes it must write stay unwritten, instead of passing
     * on the zeroed pages a fresh host allocation happens to get */
    memset(*p, 0xA5, len ? len : 1);
    pthread_mutex_lock(&alloc_lock);
    if (nallocs == cap_allocs) {
        size_t nc = cap_allocs ? 2 * cap_allocs : 64;
        fake_alloc_t *v = realloc(allocs, nc * sizeof *v);
        if (!v) { pthread_mutex_unlock(&alloc_lock); free(*p); *p = NULL; return -ENOMEM; }
        allocs = v;
        cap_allocs = nc;
    }
    allocs[nallocs++] = (fake_alloc_t){(uintptr_t)*p, len ? len : 1, dev};
    pthread_mutex_unlock(&alloc_lock);
    return 0;
}
static int f_free(int dev, void *p)
{
    (void)dev;
    pthread_mutex_lock(&alloc_lock);
    for (size_t i = 0; i < nallocs; i++)
        if (allocs[i].addr == (uintptr_t)p) { allocs[i] = allocs[--nallocs]; break; }
    pthread_mutex_unlock(&alloc_lock);
    free(p);
    return 0;
}

static int f_check(int dev, const void *p, size_t len, char *why, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    int found = -1;
    pthread_mutex_lock(&alloc_lock);
    for (size_t i = 0; i < nallocs && found < 0; i++)
        if (a >= allocs[i].addr && a - allocs[i].addr < allocs[i].len) {
            found = allocs[i].dev;
            if (len > allocs[i].len - (a - allocs[i].addr)) {
                snprintf(why, n, "runs %zu bytes past the end of its device allocation", len - (allocs[i].len - (a - allocs[i].addr)));
                found = -2;
            }
        }
    pthread_mutex_unlock(&alloc_lock);
    if (found == -2) return -EINVAL;
    if (found < 0) { snprintf(why, n, "host memory, not device memory"); return -EINVAL; }
    if (found != dev) { snprintf(why, n, "memory of device %d, not of device %d", found, dev); return -EINVAL; }
    return 0;
}
static int f_pdev(const void *p, size_t len, int *dev, char *why, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    int rc = 0;
    *dev = -1;
    pthread_mutex_lock(&alloc_lock);
    for (size_t i = 0; i < nallocs; i++)
        if (a >= allocs[i].addr && a - allocs[i].addr < allocs[i].len) {
            *dev = allocs[i].dev;
            if (len > allocs[i].len - (a - allocs[i].addr)) {
                snprintf(why, n, "runs %zu bytes past the end of its device allocation", len - (allocs[i].len - (a - allocs[i].addr)));
                rc = -EINVAL;
            }
            break;
        }
    pthread_mutex_unlock(&alloc_lock);
    return rc;
}
static int f_reg(int dev, void *p, size_t len) { (void)dev; (void)p; (void)len; return 0; }
static int f_unreg(int dev, void *p) { (void)dev; (void)p; return 0; }

static void *stream_main(void *arg)
{
    fake_stream_t *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->cond, &s->lock);
        if (!s->head) break;
        fake_op_t *op = s->head;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        pthread_mutex_unlock(&s->lock);
        struct timespec held = {0, 1000000};
        while (s->hold_file[0] && access(s->hold_file, F_OK) == 0) nanosleep(&held, NULL);
        switch (op->kind) {
        case OP_COPY: memmove(op->dst, op->src, op->len); break;
        case OP_SET: memset(op->dst, op->value, op->len); break;
        case OP_FN: op->fn(op->arg); break;
        case OP_WAIT: {
            /* like cuStreamWaitValue32: the stream stops until another thread sets the word */
            struct timespec ts = {0, 20000};
            while (!__atomic_load_n(op->flag, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
            atomic_fetch_sub(&s->waits, 1);
            atomic_fetch_sub(&waits_total, 1);
            break;
        }
        case OP_EVENT:
            pthread_mutex_lock(&op->ev->lock);
            if (op->ev_seq > op->ev->reached) op->ev->reached = op->ev_seq;
            pthread_cond_broadcast(&op->ev->cond);
            pthread_mutex_unlock(&op->ev->lock);
            break;
        }
        free(op);
        pthread_mutex_lock(&s->lock);
        s->completed++;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int phx_fstream_create(int dev, void **out)
{
    fake_stream_t *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->dev = dev;
    const char *hold = getenv("PHX_FAKE_HOLD_FILE");
    snprintf(s->hold_file, sizeof s->hold_file, "%s", hold ? hold : "");
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, stream_main, s)) { free(s); return -EAGAIN; }
    *out = s;
    return 0;
}

static int enqueue(fake_stream_t *s, fake_op_t *op)
{
    pthread_mutex_lock(&s->lock);
    op->next = NULL;
    if (s->tail) s->tail->next = op; else s->head = op;
    s->tail = op;
    s->queued++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int phx_fstream_sync(void *p)
{
    fake_stream_t *s = p;
    pthread_mutex_lock(&s->lock);
    uint64_t target = s->queued;
    while (s->completed < target) pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int phx_fstream_destroy(void *p)
{
    fake_stream_t *s = p;
    phx_fstream_sync(s);
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return 0;
}

static void barrier(fake_stream_t *s)
{
    struct timespec ts = {0, 50000};
    while (context_barrier && atomic_load(&waits_total) - atomic_load(&s->waits) > 0) nanosleep(&ts, NULL);
}

int phx_fstream_copy(void *dst, const void *src, size_t len, void *s)
{
    if (injected(fail_copy, &copy_calls)) return -EIO;
    barrier(s);
    fake_op_t *op = calloc(1, sizeof *op);
    if (!op) return -ENOMEM;
    op->kind = OP_COPY; op->dst = dst; op->src = src; op->len = len;
    return enqueue(s, op);
}

int phx_fstream_memset(void *dst, int value, size_t len, void *s)
{
    barrier(s);
    fake_op_t *op = calloc(1, sizeof *op);
    if (!op) return -ENOMEM;
    op->kind = OP_SET; op->dst = dst; op->value = value; op->len = len;
    return enqueue(s, op);
}

int phx_fstream_launch(void *s, phx_host_fn fn, void *arg)
{
    if (injected(fail_launch, &launch_calls)) return -EIO;
    fake_op_t *op = calloc(1, sizeof *op);
    if (!op) return -ENOMEM;
    op->kind = OP_FN; op->fn = fn; op->arg = arg;
    return enqueue(s, op);
}

int phx_fstream_wait(void *s, volatile uint32_t *flag)
{
    if (injected(fail_wait, &wait_calls)) return -EIO;
    fake_op_t *op = calloc(1, sizeof *op);
    if (!op) return -ENOMEM;
    op->kind = OP_WAIT; op->flag = flag;
    atomic_fetch_add(&((fake_stream_t *)s)->waits, 1);
    atomic_fetch_add(&waits_total, 1);
    return enqueue(s, op);
}

int phx_fstream_device(void *s) { return ((fake_stream_t *)s)->dev; }

static int f_peer_access(int dev, int peer)
{
    if (f_enter(dev, NULL) || f_enter(peer, NULL)) return -ENODEV;
    return dev == peer || fake_peer;
}

static int f_peer_async(void *dst, int dst_dev, const void *src, int src_dev, size_t len, void *s)
{
    if (dst_dev != src_dev && !fake_peer) return -EINVAL; /* as a GPU pair without peer access would */
    return phx_fstream_copy(dst, src, len, s);
}

int phx_fevent_create(void **out)
{
    fake_event_t *e = calloc(1, sizeof *e);
    if (!e) return -ENOMEM;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    *out = e;
    return 0;
}

int phx_fevent_destroy(void *p)
{
    fake_event_t *e = p;
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
    return 0;
}

int phx_fevent_record(void *p, void *s)
{
    fake_event_t *e = p;
    fake_op_t *op = calloc(1, sizeof *op);
    if (!op) return -ENOMEM;
    pthread_mutex_lock(&e->lock);
    op->ev_seq = ++e->recorded;
    pthread_mutex_unlock(&e->lock);
    op->kind = OP_EVENT; op->ev = e;
    return enqueue(s, op);
}

int phx_fevent_sync(void *p)
{
    fake_event_t *e = p;
    pthread_mutex_lock(&e->lock);
    uint64_t target = e->recorded;
    while (e->reached < target) pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
    return 0;
}

static int f_screate(int dev, void **out)
{
    if (f_enter(dev, NULL)) return -ENODEV;
    return phx_fstream_create(dev, out);
}

const phx_connector_t phx_connector_fake = {
    .name = "fake", .is_accelerator = 1, .init = f_init, .device_name = f_name, .enter = f_enter, .leave = f_leave,
    .mem_alloc = f_alloc, .mem_free = f_free, .host_register = f_reg, .host_unregister = f_unreg,
    .stream_create = f_screate, .stream_destroy = phx_fstream_destroy, .stream_sync = phx_fstream_sync,
    .htod_async = phx_fstream_copy, .dtoh_async = phx_fstream_copy, .memset_async = phx_fstream_memset,
    .event_create = phx_fevent_create, .event_destroy = phx_fevent_destroy, .event_record = phx_fevent_record,
    .event_sync = phx_fevent_sync, .launch_host_fn = phx_fstream_launch, .wait_flag = phx_fstream_wait,
    .check_pointer = f_check, .pointer_device = f_pdev, .stream_device = phx_fstream_device,
    .peer_access = f_peer_access, .peer_async = f_peer_async,
};
