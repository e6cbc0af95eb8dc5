/* Memory bounds (fake device): a 1 GiB stream read and 200 caller threads each
 * doing one small device read grow the process by no more than the device's
 * pinned pool (the small reads, which run on their callers' threads, by nothing
 * but those threads and the device's few shared copy contexts). Before core-2 the stream read pinned one slot per piece (about
 * 2 GiB) and every caller thread got its own stream and slots (gigabytes of
 * VmData for 200 threads). */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') v = strtol(line + k + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

#define THREADS 200
static int g_fd;
static void *g_dmem;
static pthread_barrier_t all_read, measured;
static ssize_t results[THREADS];

static void *reader(void *arg)
{
    long i = (long)(intptr_t)arg;
    results[i] = phxfs_read(g_fd, 0, g_dmem, i * 4096, 4096, i * 4096);
    pthread_barrier_wait(&all_read);  /* every thread alive and done: the main thread measures */
    pthread_barrier_wait(&measured);
    return NULL;
}

int main(void)
{
    const char *conn = getenv("PHX_CONNECTOR");
    if (!conn || strcmp(conn, "fake")) {
        printf("test_bounds: skipped, pinned pools exist on accelerators only (PHX_CONNECTOR=fake runs it)\n");
        return 77;
    }
    /* glibc reserves a 64 MiB arena for each new thread that allocates, which would hide
     * the library's own growth in VmData */
    mallopt(M_ARENA_MAX, 2);
    /* the baseline is taken before the device opens, so the pool itself is counted */
    long rss_start = status_kb("VmRSS"), data_start = status_kb("VmData"), threads_start = status_kb("Threads");
    CHECK_EQ(phxfs_open(0), 0);
    char pinned[32];
    CHECK(phxfs_get_config("pinned_mb", pinned, sizeof pinned) > 0);
    long pool_kb = atol(pinned) * 1024, slack_kb = 24 * 1024;

    /* 1 GiB through one stream operation */
    size_t size = (size_t)1 << 30;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(size, 7));
    int fd = th_open(path, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, size, &dmem), 0); /* zeroed, so its pages are resident before the baseline */
    CHECK_EQ(phxfs_regmem(0, dmem, size, NULL), 0);
    void *s;
    CHECK_EQ(phxfs_stream_create(0, &s), 0);
    long rss0 = status_kb("VmRSS"), data0 = status_kb("VmData");
    long size_kb = (long)(size >> 10);
    size_t n = size;
    off_t bo = 0, fo = 0;
    ssize_t done = -1;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &done, s), 0);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    long rss_grow = status_kb("VmRSS") - rss0, data_grow = status_kb("VmData") - data0;
    printf("1 GiB stream read: RSS +%ld KiB, VmData +%ld KiB (pool %ld KiB)\n", rss_grow, data_grow, pool_kb);
    CHECK_EQ(done, (ssize_t)size);
    CHECK(rss_grow <= pool_kb + slack_kb);
    CHECK(data_grow <= pool_kb + slack_kb);
    /* from before the open: the buffer, the pool and the worker streams, nothing else */
    long rss_all = status_kb("VmRSS") - rss_start - size_kb, data_all = status_kb("VmData") - data_start - size_kb;
    /* VmData also counts the stacks reserved for the library's threads (workers; on the fake
     * device its streams are threads too): untouched reservations, not memory in use */
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    long stack_kb = rl.rlim_cur == RLIM_INFINITY ? 8192 : (long)(rl.rlim_cur >> 10);
    long thread_stacks_kb = (status_kb("Threads") - threads_start) * (stack_kb + 4);
    printf("since before open, less the 1 GiB buffer: RSS +%ld KiB, VmData +%ld KiB (%ld KiB of it thread stacks)\n",
           rss_all, data_all, thread_stacks_kb);
    CHECK(rss_all <= pool_kb + slack_kb);
    CHECK(data_all <= pool_kb + thread_stacks_kb + slack_kb);
    unsigned char ref[4096], got[4096];
    th_fill(ref, sizeof ref, 7, size - 4096);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + size - 4096, 4096), 0);
    CHECK(memcmp(ref, got, 4096) == 0);

    /* 200 threads, one 4 KiB device read each, all alive when measured */
    g_fd = fd;
    g_dmem = dmem;
    pthread_barrier_init(&all_read, NULL, THREADS + 1);
    pthread_barrier_init(&measured, NULL, THREADS + 1);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = 128u << 10;
    pthread_attr_setstacksize(&attr, stack);
    pthread_t th[THREADS];
    rss0 = status_kb("VmRSS");
    data0 = status_kb("VmData");
    long threads0 = status_kb("Threads");
    for (long i = 0; i < THREADS; i++) CHECK_EQ(pthread_create(&th[i], &attr, reader, (void *)(intptr_t)i), 0);
    pthread_barrier_wait(&all_read);
    rss_grow = status_kb("VmRSS") - rss0;
    data_grow = status_kb("VmData") - data0;
    long lib_threads = status_kb("Threads") - threads0 - THREADS;
    pthread_barrier_wait(&measured);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    long stacks_kb = THREADS * (long)(stack >> 10), lib_stacks_kb = lib_threads * (stack_kb + 4);
    printf("%d threads x 4 KiB device read: RSS +%ld KiB, VmData +%ld KiB (their stacks %ld KiB, %ld new library "
           "thread(s) %ld KiB, pool %ld KiB)\n", THREADS, rss_grow, data_grow, stacks_kb, lib_threads, lib_stacks_kb, pool_kb);
    for (int i = 0; i < THREADS; i++) CHECK_EQ(results[i], 4096);
    unsigned char *all = malloc((size_t)THREADS * 4096), *want = malloc((size_t)THREADS * 4096);
    th_fill(want, (size_t)THREADS * 4096, 7, 0);
    CHECK_EQ(phxfs_memcpy_to_host(0, all, dmem, (size_t)THREADS * 4096), 0);
    CHECK(memcmp(all, want, (size_t)THREADS * 4096) == 0);
    free(all);
    free(want);
    CHECK(rss_grow <= pool_kb + slack_kb);
    /* The small reads run on their callers' threads, through a few copy contexts the device
     * shares (made on first use; on the fake device each stream is a thread) and slots of the
     * pool, which already exists: nothing grows per caller. */
    CHECK(lib_threads <= 8);
    CHECK(data_grow <= stacks_kb + lib_stacks_kb + slack_kb);

    CHECK_EQ(phxfs_stream_destroy(0, s), 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, size), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    /* the pool goes with the last close */
    long before_close = status_kb("VmData");
    CHECK_EQ(phxfs_close(0), 0);
    long freed = before_close - status_kb("VmData");
    printf("close released %ld KiB of VmData\n", freed);
    CHECK(freed >= pool_kb);
    close(fd);
    unlink(path);
    return th_finish("test_bounds");
}
