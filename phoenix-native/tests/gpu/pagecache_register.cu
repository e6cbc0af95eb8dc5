// Can the GPU copy engine read a file straight out of the page cache, with no CPU copy?
// Maps the file read-only, pins pieces of the mapping with cudaHostRegister(ReadOnly) and
// copies them to device memory, T threads each on its own stream, registering piece k+1
// while piece k is in flight. Every trial uses a fresh mapping, as a one-shot load would.
// Prints GB/s per (threads, piece size) and the phase split of a single-thread run, then
// checks the device copy against the file.
// Usage: pagecache_register FILE
#include <cuda_runtime.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct job {
    const char *map; char *dev; size_t n, piece; int tid, nthreads;
    double reg_s, copy_s, unreg_s;
};

/* Waits for piece p's copy (event e) and unpins it. */
static void retire(struct job *j, cudaEvent_t e, long p)
{
    double t0 = now();
    CHECK(cudaEventSynchronize(e));
    double t1 = now();
    CHECK(cudaHostUnregister((void *)(j->map + (size_t)p * j->piece)));
    j->copy_s += t1 - t0;
    j->unreg_s += now() - t1;
}

static void *worker(void *arg)
{
    struct job *j = (struct job *)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev[2];
    CHECK(cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming));
    size_t pieces = (j->n + j->piece - 1) / j->piece;
    long prev = -1;
    int k = 0;
    for (size_t p = (size_t)j->tid; p < pieces; p += (size_t)j->nthreads, k++) {
        size_t off = p * j->piece, len = j->n - off < j->piece ? j->n - off : j->piece;
        double t0 = now();
        CHECK(cudaHostRegister((void *)(j->map + off), len, cudaHostRegisterReadOnly));
        double t1 = now();
        CHECK(cudaMemcpyAsync(j->dev + off, j->map + off, len, cudaMemcpyHostToDevice, s));
        CHECK(cudaEventRecord(ev[k & 1], s));
        j->reg_s += t1 - t0;
        if (prev >= 0) retire(j, ev[(k - 1) & 1], prev);
        prev = (long)p;
    }
    if (prev >= 0) retire(j, ev[(k - 1) & 1], prev);
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    cudaStreamDestroy(s);
    return NULL;
}

static double trial(int fd, char *dev, size_t n, size_t piece, int nthreads, int populate, int verbose)
{
    double t0 = now();
    char *map = (char *)mmap(NULL, n, PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); exit(1); }
    double tmap = now() - t0;
    struct job jobs[64];
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++) {
        struct job j = {map, dev, n, piece, i, nthreads, 0, 0, 0};
        jobs[i] = j;
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    double secs = now() - t0;
    double t1 = now();
    munmap(map, n);
    double tunmap = now() - t1;
    if (verbose) {
        double r = 0, c = 0, u = 0;
        for (int i = 0; i < nthreads; i++) { r += jobs[i].reg_s; c += jobs[i].copy_s; u += jobs[i].unreg_s; }
        printf("    split (thread-seconds): mmap %.1f ms, register %.1f ms, wait-copy %.1f ms, unregister %.1f ms, munmap %.1f ms\n",
               tmap * 1e3, r * 1e3, c * 1e3, u * 1e3, tunmap * 1e3);
    }
    return n / secs / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s FILE\n", argv[0]); return 2; }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    struct stat st;
    fstat(fd, &st);
    size_t n = (size_t)st.st_size;
    CHECK(cudaFree(0));
    int ro = 0;
    CHECK(cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, 0));
    printf("file %zu bytes; HostRegisterReadOnlySupported=%d\n", n, ro);
    double t0 = now();
    char *dev;
    CHECK(cudaMalloc((void **)&dev, n));
    double talloc = now() - t0;
    t0 = now();
    CHECK(cudaMemset(dev, 0, n));
    CHECK(cudaDeviceSynchronize());
    printf("cudaMalloc %.2f ms, memset %.2f ms\n", talloc * 1e3, (now() - t0) * 1e3);

    // pinned-copy reference: one pinned 256 MiB buffer copied repeatedly
    size_t ref = (size_t)256 << 20;
    void *pinned;
    CHECK(cudaMallocHost(&pinned, ref));
    memset(pinned, 1, ref);
    t0 = now();
    for (int i = 0; i < 20; i++) CHECK(cudaMemcpy(dev + (size_t)i * ref % (n - ref), pinned, ref, cudaMemcpyHostToDevice));
    printf("pinned H2D reference: %.2f GB/s\n", 20.0 * ref / (now() - t0) / 1e9);
    cudaFreeHost(pinned);

    printf("single thread, 64 MiB pieces, fresh mapping:\n");
    printf("  %.2f GB/s\n", trial(fd, dev, n, (size_t)64 << 20, 1, 0, 1));
    int threads[] = {4, 8, 12, 16};
    size_t pieces[] = {(size_t)8 << 20, (size_t)32 << 20, (size_t)128 << 20};
    for (size_t pi = 0; pi < sizeof pieces / sizeof *pieces; pi++)
        for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
            double a = trial(fd, dev, n, pieces[pi], threads[ti], 0, 0);
            double b = trial(fd, dev, n, pieces[pi], threads[ti], 0, 0);
            printf("threads %2d piece %3zu MiB: %.2f %.2f GB/s\n", threads[ti], pieces[pi] >> 20, a, b);
        }
    printf("8 threads, 32 MiB, split:\n");
    printf("  %.2f GB/s\n", trial(fd, dev, n, (size_t)32 << 20, 8, 0, 1));
    printf("8 threads, 32 MiB, MAP_POPULATE (populate inside the timing):\n");
    printf("  %.2f GB/s\n", trial(fd, dev, n, (size_t)32 << 20, 8, 1, 1));

    // the device copy must equal the file
    size_t chk = (size_t)64 << 20;
    char *a = (char *)malloc(chk), *b = (char *)malloc(chk);
    int bad = 0;
    for (size_t off = 0; off < n && !bad; off += n / 7 + 1) {
        size_t len = n - off < chk ? n - off : chk;
        CHECK(cudaMemcpy(a, dev + off, len, cudaMemcpyDeviceToHost));
        if (pread(fd, b, len, (off_t)off) != (ssize_t)len || memcmp(a, b, len) != 0) bad = 1;
    }
    printf("device copy equals file: %s\n", bad ? "NO" : "yes");
    return bad;
}
