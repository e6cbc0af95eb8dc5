/* The batch API: a batch of 128 mixed reads and writes into host, registered and
 * unregistered device memory with every byte verified; events handed out once,
 * min_nr/nr; errors (bad handle, bad entry, unregistered file, batch full, bad
 * min_nr); a failed entry; and, with reads held in pread by a gate, the timeout,
 * cancel and destroy-with-I/O-in-flight. */
#include "harness.h"
#include "th_cufile.h"
#include "cufile.h"
#include "phoenix.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* ---- a gate in pread: reads of gate_fd wait until it opens (sync engine only) ---- */
static atomic_int gate_fd = -1;
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

static ssize_t (*real_pread)(int, void *, size_t, off_t);
__attribute__((constructor)) static void find_pread(void)
{
    real_pread = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
}

ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    if (fd == atomic_load(&gate_fd)) {
        pthread_mutex_lock(&gate_lock);
        while (!gate_open) pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
    }
    return real_pread(fd, buf, n, off);
}

static void gate_release(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static CUfileIOParams_t entry(CUfileHandle_t fh, CUfileOpcode_t op, void *base, off_t boff, off_t foff, size_t size, void *cookie)
{
    CUfileIOParams_t p;
    memset(&p, 0, sizeof p);
    p.mode = CUFILE_BATCH;
    p.fh = fh;
    p.opcode = op;
    p.u.batch.devPtr_base = base;
    p.u.batch.devPtr_offset = boff;
    p.u.batch.file_offset = foff;
    p.u.batch.size = size;
    p.cookie = cookie;
    return p;
}

#define N 128
#define SLOT (256u << 10)

static void test_mixed_128(void)
{
    size_t fsize = (size_t)N * SLOT;
    char *src = th_make_file(fsize, 7), *dst = th_make_file(0, 0);
    unsigned char *ref = malloc(fsize);
    th_fill(ref, fsize, 7, 0);
    int sfd = open(src, O_RDONLY), dfd = open(dst, O_RDWR);
    CUfileHandle_t sfh = th_register_fd(sfd), dfh = th_register_fd(dfd);
    int dev = th_have_device() ? 0 : -1;
    /* memory: host (malloc), one registered region, and one nobody registered */
    unsigned char *host = malloc(fsize);
    char *regd = NULL, *unreg = NULL;
    if (dev >= 0) {
        CHECK_EQ(phxfs_open(0), 0);
        CHECK_EQ(phxfs_mem_alloc(0, fsize, (void **)&regd), 0);
        CHECK_EQ(phxfs_mem_alloc(0, fsize, (void **)&unreg), 0);
    } else {
        regd = aligned_alloc(4096, (fsize + 4095) & ~(size_t)4095);
        unreg = aligned_alloc(4096, (fsize + 4095) & ~(size_t)4095);
    }
    CHECK_ST(cuFileBufRegister(regd, fsize, 0), CU_FILE_SUCCESS);
    /* writes take their bytes from file content we put there first */
    memcpy(host, ref, fsize);
    if (dev >= 0) {
        CHECK_EQ(phxfs_memcpy_to_device(0, regd, ref, fsize), 0);
        CHECK_EQ(phxfs_memcpy_to_device(0, unreg, ref, fsize), 0);
    } else {
        memcpy(regd, ref, fsize);
        memcpy(unreg, ref, fsize);
    }
    CUfileIOParams_t p[N];
    size_t want[N];
    for (int i = 0; i < N; i++) {
        /* slot i of each buffer belongs to request i; sizes and offsets vary and are unaligned */
        size_t size = 1 + ((size_t)i * 7919u) % (SLOT - 8);
        off_t foff = (off_t)i * SLOT + (i % 5);
        off_t boff = (off_t)i * SLOT + (i % 3);
        if (size + (size_t)(i % 5) > SLOT) size = SLOT - (size_t)(i % 5);
        char *mem = i % 3 == 0 ? (char *)host : i % 3 == 1 ? regd : unreg;
        int is_write = i % 2;
        if (i == N - 1 && !is_write) size = SLOT; /* reaches past the end of the file */
        want[i] = size;
        if (i == N - 1) want[i] = fsize - (size_t)foff < size ? fsize - (size_t)foff : size;
        p[i] = entry(is_write ? dfh : sfh, is_write ? CUFILE_WRITE : CUFILE_READ, mem, boff, foff, size, (void *)(uintptr_t)(i + 1));
        if (!is_write) { /* reads land in zeroed slots */
            if (mem == (char *)host) memset(host + boff - (i % 3), 0, SLOT);
            else if (dev >= 0) { unsigned char z[4096] = {0}; for (size_t o = 0; o < SLOT; o += sizeof z) phxfs_memcpy_to_device(0, mem + boff - (i % 3) + o, z, sizeof z); }
            else memset(mem + boff - (i % 3), 0, SLOT);
        }
    }
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, N), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBatchIOSubmit(b, N, p, 0), CU_FILE_SUCCESS);
    CUfileIOEvents_t ev[N];
    unsigned nr = N;
    CHECK_ST(cuFileBatchIOGetStatus(b, N, &nr, ev, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(nr, N);
    int seen[N] = {0};
    for (unsigned k = 0; k < nr; k++) {
        int i = (int)(uintptr_t)ev[k].cookie - 1;
        CHECK(i >= 0 && i < N);
        if (i < 0 || i >= N) continue;
        seen[i]++;
        CHECK_EQ(ev[k].status, CUFILE_COMPLETE);
        CHECK_EQ(ev[k].ret, want[i]);
    }
    for (int i = 0; i < N; i++) CHECK_EQ(seen[i], 1);
    /* nothing more to collect */
    nr = N;
    CHECK_ST(cuFileBatchIOGetStatus(b, 0, &nr, ev, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(nr, 0);
    cuFileBatchIODestroy(b);
    /* every byte: reads in memory, writes in the destination file */
    unsigned char *got = malloc(fsize), *devcopy = malloc(fsize), *unregcopy = malloc(fsize);
    if (dev >= 0) {
        CHECK_EQ(phxfs_memcpy_to_host(0, devcopy, regd, fsize), 0);
        CHECK_EQ(phxfs_memcpy_to_host(0, unregcopy, unreg, fsize), 0);
    } else {
        memcpy(devcopy, regd, fsize);
        memcpy(unregcopy, unreg, fsize);
    }
    CHECK(pread(dfd, got, fsize, 0) > 0);
    for (int i = 0; i < N; i++) {
        off_t foff = p[i].u.batch.file_offset, boff = p[i].u.batch.devPtr_offset;
        unsigned char *mem = i % 3 == 0 ? host : i % 3 == 1 ? devcopy : unregcopy;
        if (p[i].opcode == CUFILE_READ) {
            CHECK(memcmp(mem + boff, ref + foff, want[i]) == 0);
        } else {
            CHECK(memcmp(got + foff, ref + boff, want[i]) == 0);
        }
    }
    CHECK_ST(cuFileBufDeregister(regd), CU_FILE_SUCCESS);
    if (dev >= 0) {
        phxfs_mem_free(0, regd);
        phxfs_mem_free(0, unreg);
        phxfs_close(0);
    } else {
        free(regd);
        free(unreg);
    }
    cuFileHandleDeregister(sfh);
    cuFileHandleDeregister(dfh);
    close(sfd); close(dfd);
    unlink(src); unlink(dst);
    free(src); free(dst); free(ref); free(host); free(got); free(devcopy); free(unregcopy);
}

static void test_errors_and_partial_collection(void)
{
    char *src = th_make_file(1 << 20, 9);
    unsigned char *ref = malloc(1 << 20), *buf = malloc(1 << 20);
    th_fill(ref, 1 << 20, 9, 0);
    int fd = open(src, O_RDONLY), wo = open(src, O_WRONLY);
    CUfileHandle_t fh = th_register_fd(fd), wfh = th_register_fd(wo);
    CUfileBatchHandle_t b = NULL;
    CHECK_ST(cuFileBatchIOSetUp(NULL, 4), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(&b, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(&b, 129), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(&b, 10), CU_FILE_SUCCESS);
    CUfileIOParams_t p[10];
    for (int i = 0; i < 10; i++) p[i] = entry(fh, CUFILE_READ, buf, i * 4096, i * 4096 + 1, 4096, (void *)(uintptr_t)(100 + i));
    /* refused entries: nothing is submitted */
    CUfileIOParams_t bad = p[0];
    bad.opcode = (CUfileOpcode_t)7;
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_INVALID_VALUE);
    bad = p[0];
    bad.mode = (CUfileBatchMode_t)0;
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_INVALID_VALUE);
    bad = p[0];
    bad.u.batch.file_offset = -5;
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_INVALID_VALUE);
    bad.u.batch.file_offset = INT64_MAX - 100; /* its end does not fit: it used to overflow in libphoenix */
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_INVALID_VALUE);
    bad = p[0];
    bad.u.batch.devPtr_offset = INT64_MAX;
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_INVALID_VALUE);
    bad = p[0];
    bad.fh = (CUfileHandle_t)(uintptr_t)0x777;
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &bad, 0), CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_ST(cuFileBatchIOSubmit(b, 2, NULL, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSubmit((CUfileBatchHandle_t)buf, 1, p, 0), CU_FILE_INVALID_VALUE);
    unsigned nr = 4;
    CHECK_ST(cuFileBatchIOGetStatus(b, 5, &nr, (CUfileIOEvents_t[4]){{0}}, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOGetStatus(b, 0, NULL, NULL, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOCancel((CUfileBatchHandle_t)buf), CU_FILE_INVALID_VALUE);
    /* nothing outstanding: min_nr 1 returns at once with nothing */
    nr = 4;
    CUfileIOEvents_t ev[10];
    CHECK_ST(cuFileBatchIOGetStatus(b, 1, &nr, ev, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(nr, 0);
    /* 10 submitted in two calls, the last one a read on a write-only file */
    p[9] = entry(wfh, CUFILE_READ, buf, 9 * 4096, 0, 4096, (void *)(uintptr_t)109);
    CHECK_ST(cuFileBatchIOSubmit(b, 6, p, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBatchIOSubmit(b, 5, p + 1, 0), CU_FILE_BATCH_FULL);
    CHECK_ST(cuFileBatchIOSubmit(b, 4, p + 6, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBatchIOSubmit(b, 1, p, 0), CU_FILE_BATCH_FULL);
    int seen[10] = {0};
    unsigned total = 0;
    while (total < 10) {
        nr = 4;
        CHECK_ST(cuFileBatchIOGetStatus(b, 3 < 10 - total ? 3 : 10 - total, &nr, ev, NULL), CU_FILE_SUCCESS);
        CHECK(nr >= (3 < 10 - total ? 3 : 10 - total) && nr <= 4);
        for (unsigned k = 0; k < nr; k++) {
            int i = (int)(uintptr_t)ev[k].cookie - 100;
            CHECK(i >= 0 && i < 10);
            if (i < 0 || i >= 10) continue;
            seen[i]++;
            if (i == 9) {
                CHECK_EQ(ev[k].status, CUFILE_FAILED);
                CHECK_EQ((ssize_t)ev[k].ret, -EBADF);
            } else {
                CHECK_EQ(ev[k].status, CUFILE_COMPLETE);
                CHECK_EQ(ev[k].ret, 4096);
                CHECK(memcmp(buf + i * 4096, ref + i * 4096 + 1, 4096) == 0);
            }
        }
        total += nr;
        if (nr == 0) break;
    }
    for (int i = 0; i < 10; i++) CHECK_EQ(seen[i], 1);
    /* room again once collected */
    CHECK_ST(cuFileBatchIOSubmit(b, 10, p, 0), CU_FILE_SUCCESS);
    cuFileBatchIODestroy(b); /* with events uncollected */
    CHECK_ST(cuFileBatchIOSubmit(b, 1, p, 0), CU_FILE_INVALID_VALUE);
    cuFileBatchIODestroy(b); /* twice: refused, no crash */
    cuFileHandleDeregister(fh);
    cuFileHandleDeregister(wfh);
    close(fd); close(wo);
    unlink(src);
    free(src); free(ref); free(buf);
}

static void *release_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    gate_release();
    return NULL;
}

/* In a child: two workers, the sync engine, and reads of one file held in pread. */
static int scenario_gate(void)
{
    setenv("PHX_ENGINE", "sync", 1);
    setenv("PHX_WORKERS", "2", 1);
    setenv("PHX_QUEUE_DEPTH", "1", 1);
    enum { M = 64 };
    char *src = th_make_file(M * 4096, 11);
    unsigned char *ref = malloc(M * 4096), *buf = calloc(M, 4096);
    th_fill(ref, M * 4096, 11, 0);
    int fd = open(src, O_RDONLY);
    CUfileHandle_t fh = th_register_fd(fd);
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, M), CU_FILE_SUCCESS);
    CUfileIOParams_t p[M];
    for (int i = 0; i < M; i++) p[i] = entry(fh, CUFILE_READ, buf, i * 4096, i * 4096, 4096, (void *)(uintptr_t)(i + 1));
    atomic_store(&gate_fd, fd);
    CHECK_ST(cuFileBatchIOSubmit(b, M, p, 0), CU_FILE_SUCCESS);
    /* timeout: nothing can complete while the gate is shut */
    struct timespec t0, t1, to = {0, 50 * 1000000L};
    unsigned nr = M;
    CUfileIOEvents_t ev[M];
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_ST(cuFileBatchIOGetStatus(b, 1, &nr, ev, &to), CU_FILE_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ(nr, 0);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    CHECK(ms >= 49 && ms < 5000);
    struct timespec bad = {0, 2000000000L};
    CHECK_ST(cuFileBatchIOGetStatus(b, 1, &nr, ev, &bad), CU_FILE_INVALID_VALUE);
    /* cancel: what no worker has started ends CANCELED */
    CHECK_ST(cuFileBatchIOCancel(b), CU_FILE_SUCCESS);
    gate_release();
    nr = M;
    CHECK_ST(cuFileBatchIOGetStatus(b, M, &nr, ev, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(nr, M);
    int canceled = 0, complete = 0;
    for (unsigned k = 0; k < nr; k++) {
        int i = (int)(uintptr_t)ev[k].cookie - 1;
        if (ev[k].status == CUFILE_CANCELED) { canceled++; CHECK_EQ(ev[k].ret, 0); }
        else if (ev[k].status == CUFILE_COMPLETE) {
            complete++;
            CHECK_EQ(ev[k].ret, 4096);
            CHECK(memcmp(buf + i * 4096, ref + i * 4096, 4096) == 0);
        }
    }
    CHECK_EQ(canceled + complete, M);
    CHECK(canceled >= M - 8); /* two workers hold at most a few tasks each */
    CHECK(complete >= 1);
    /* a timeout too long to add to the clock ({LONG_MAX, 0}: "forever") waits like NULL; it
     * used to overflow the deadline and return at once with nothing */
    pthread_mutex_lock(&gate_lock);
    gate_open = 0;
    pthread_mutex_unlock(&gate_lock);
    CHECK_ST(cuFileBatchIOSubmit(b, 1, p, 0), CU_FILE_SUCCESS);
    pthread_t rel;
    pthread_create(&rel, NULL, release_later, NULL);
    struct timespec forever = {LONG_MAX, 999999999L};
    nr = M;
    CHECK_ST(cuFileBatchIOGetStatus(b, 1, &nr, ev, &forever), CU_FILE_SUCCESS);
    CHECK_EQ(nr, 1);
    CHECK_EQ(ev[0].status, CUFILE_COMPLETE);
    CHECK_EQ(ev[0].ret, 4096);
    pthread_join(rel, NULL);
    /* destroy with transfers in flight: waits for them */
    pthread_mutex_lock(&gate_lock);
    gate_open = 0;
    pthread_mutex_unlock(&gate_lock);
    CHECK_ST(cuFileBatchIOSubmit(b, M, p, 0), CU_FILE_SUCCESS);
    pthread_t th;
    pthread_create(&th, NULL, release_later, NULL);
    cuFileBatchIODestroy(b);
    pthread_join(th, NULL);
    cuFileHandleDeregister(fh);
    close(fd);
    unlink(src);
    free(src); free(ref); free(buf);
    return th_failures;
}

/* A destroyed handle stays dead: the next SetUp used to get the same address back from
 * malloc, so a stale handle drove the new batch. Refused like a made-up one; a second Destroy
 * is a no-op that says so on stderr. */
static void test_stale_handle(void)
{
    char *src = th_make_file(65536, 13);
    unsigned char *ref = malloc(65536), *buf = malloc(65536);
    th_fill(ref, 65536, 13, 0);
    int fd = open(src, O_RDONLY);
    CUfileHandle_t fh = th_register_fd(fd);
    CUfileBatchHandle_t old = NULL, cur = NULL;
    CHECK_ST(cuFileBatchIOSetUp(&old, 4), CU_FILE_SUCCESS);
    cuFileBatchIODestroy(old);
    CHECK_ST(cuFileBatchIOSetUp(&cur, 4), CU_FILE_SUCCESS);
    CHECK(cur != old);
    CUfileIOParams_t p = entry(fh, CUFILE_READ, buf, 0, 4096, 8192, (void *)(uintptr_t)7);
    CUfileIOEvents_t ev[4];
    unsigned nr = 4;
    struct timespec zero = {0, 0};
    CHECK_ST(cuFileBatchIOSubmit(old, 1, &p, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOGetStatus(old, 0, &nr, ev, &zero), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOCancel(old), CU_FILE_INVALID_VALUE);
    /* a second Destroy: nothing happens to the live batch, and the log says why */
    fflush(stderr);
    char logp[] = "/tmp/phxfile-stale-XXXXXX";
    int lfd = mkstemp(logp), saved = dup(2);
    CHECK(lfd >= 0 && saved >= 0);
    dup2(lfd, 2);
    cuFileBatchIODestroy(old);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char log[512] = "";
    CHECK(pread(lfd, log, sizeof log - 1, 0) > 0);
    CHECK(strstr(log, "stale handle") != NULL);
    close(lfd);
    unlink(logp);
    /* the live batch saw none of it */
    CHECK_ST(cuFileBatchIOSubmit(cur, 1, &p, 0), CU_FILE_SUCCESS);
    nr = 4;
    CHECK_ST(cuFileBatchIOGetStatus(cur, 1, &nr, ev, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(nr, 1);
    CHECK_EQ(ev[0].status, CUFILE_COMPLETE);
    CHECK_EQ(ev[0].ret, 8192);
    CHECK(ev[0].cookie == (void *)(uintptr_t)7);
    CHECK(memcmp(buf, ref + 4096, 8192) == 0);
    nr = 4;
    CHECK_ST(cuFileBatchIOGetStatus(cur, 0, &nr, ev, &zero), CU_FILE_SUCCESS);
    CHECK_EQ(nr, 0);
    /* many set-ups and destroys: no handle ever comes back */
    CUfileBatchHandle_t seen[64];
    for (int i = 0; i < 64; i++) {
        CHECK_ST(cuFileBatchIOSetUp(&seen[i], 2), CU_FILE_SUCCESS);
        CHECK(seen[i] != old && seen[i] != cur);
        for (int j = 0; j < i; j++) CHECK(seen[i] != seen[j]);
        cuFileBatchIODestroy(seen[i]);
    }
    cuFileBatchIODestroy(cur);
    CHECK_ST(cuFileBatchIOCancel(cur), CU_FILE_INVALID_VALUE);
    cuFileHandleDeregister(fh);
    close(fd);
    unlink(src);
    free(src); free(ref); free(buf);
}

int main(void)
{
    th_in_child("timeout, cancel and destroy with reads held in pread", scenario_gate);
    test_mixed_128();
    test_errors_and_partial_collection();
    test_stale_handle();
    return th_finish("test_batch");
}
