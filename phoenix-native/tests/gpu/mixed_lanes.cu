// Issue 13's link bar: can DMA straight from registered page-cache pages, run BESIDE the
// bounce copies, lift a warm whole-file load above the bounce path's CPU-copy ceiling?
// One warm file into one device buffer, pieces handed out from a shared counter so both lanes
// finish together:
//   bounce lane (B threads): pread 2 MiB into its own pinned slots (4 per thread), async copy
//                            each slot on its own stream, reuse a slot once its copy is done
//                            (what libphoenix's bounce workers do)
//   page lane   (R threads): take a 32 MiB piece of one read-only mapping of the file (made
//                            once), cudaHostRegister(ReadOnly) it, async copy, unregister the
//                            previous piece once its copy is done
// Bounce pieces are taken from the front, page pieces from the back. Prints GB/s for each
// (B, R) and the pinned-buffer H2D reference in the same run; checks the device copy.
//   mixed_lanes FILE
#include <cuda_runtime.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <atomic>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const size_t SLOT = 2u << 20, PAGE_PIECE = 32u << 20;
static const int SLOTS = 4;

struct shared {
    int fd; const char *map; char *dev; size_t n;
    std::atomic<size_t> front, back; // bytes taken from each end
    std::atomic<size_t> page_bytes;
};

// the next piece from one end, or 0 when the ends have met
static size_t take(shared *s, int from_back, size_t want, size_t *off)
{
    for (;;) {
        size_t f = s->front.load(), b = s->back.load();
        if (f + b >= s->n) return 0;
        // the back's first piece is the file's tail past the last whole PAGE_PIECE, so every
        // later back piece starts page-aligned and no two registrations share a page
        size_t w = from_back && b == 0 && s->n % want ? s->n % want : want;
        size_t len = s->n - f - b < w ? s->n - f - b : w;
        if (!from_back) {
            if (s->front.compare_exchange_weak(f, f + len)) { *off = f; return len; }
        } else {
            if (s->back.compare_exchange_weak(b, b + len)) { *off = s->n - b - len; return len; }
        }
    }
}

static void *bounce(void *arg)
{
    shared *s = (shared *)arg;
    char *slot[SLOTS];
    cudaStream_t st[SLOTS];
    cudaEvent_t ev[SLOTS];
    int busy[SLOTS] = {0};
    for (int i = 0; i < SLOTS; i++) {
        CHECK(cudaHostAlloc((void **)&slot[i], SLOT, cudaHostAllocPortable));
        CHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    }
    size_t off, len;
    for (int k = 0; (len = take(s, 0, SLOT, &off)) != 0; k = (k + 1) % SLOTS) {
        if (busy[k]) CHECK(cudaEventSynchronize(ev[k]));
        size_t got = 0;
        while (got < len) {
            ssize_t r = pread(s->fd, slot[k] + got, len - got, (off_t)(off + got));
            if (r <= 0) { perror("pread"); exit(1); }
            got += (size_t)r;
        }
        CHECK(cudaMemcpyAsync(s->dev + off, slot[k], len, cudaMemcpyHostToDevice, st[k]));
        CHECK(cudaEventRecord(ev[k], st[k]));
        busy[k] = 1;
    }
    for (int i = 0; i < SLOTS; i++) {
        CHECK(cudaStreamSynchronize(st[i]));
        cudaFreeHost(slot[i]);
        cudaStreamDestroy(st[i]);
        cudaEventDestroy(ev[i]);
    }
    return NULL;
}

static void *pages(void *arg)
{
    shared *s = (shared *)arg;
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t ev[2];
    CHECK(cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming));
    size_t off, len, prev = (size_t)-1;
    int k = 0;
    // page-aligned pieces: the back end is taken in PAGE_PIECE steps from the file's end
    while ((len = take(s, 1, PAGE_PIECE, &off)) != 0) {
        size_t a = off & ~(size_t)4095, alen = off + len - a;
        CHECK(cudaHostRegister((void *)(s->map + a), alen, cudaHostRegisterReadOnly));
        CHECK(cudaMemcpyAsync(s->dev + off, s->map + off, len, cudaMemcpyHostToDevice, st));
        CHECK(cudaEventRecord(ev[k & 1], st));
        if (prev != (size_t)-1) {
            CHECK(cudaEventSynchronize(ev[(k - 1) & 1]));
            CHECK(cudaHostUnregister((void *)(s->map + prev)));
        }
        prev = a;
        s->page_bytes += len;
        k++;
    }
    if (prev != (size_t)-1) {
        CHECK(cudaEventSynchronize(ev[(k - 1) & 1]));
        CHECK(cudaHostUnregister((void *)(s->map + prev)));
    }
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    cudaStreamDestroy(st);
    return NULL;
}

static double trial(int fd, char *dev, size_t n, int nb, int nr, double *page_share)
{
    shared s;
    s.fd = fd; s.dev = dev; s.n = n; s.front = 0; s.back = 0; s.page_bytes = 0;
    double t0 = now();
    s.map = nr ? (const char *)mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    if (s.map == MAP_FAILED) { perror("mmap"); exit(1); }
    pthread_t th[64];
    int t = 0;
    for (int i = 0; i < nb; i++) pthread_create(&th[t++], NULL, bounce, &s);
    for (int i = 0; i < nr; i++) pthread_create(&th[t++], NULL, pages, &s);
    for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
    double secs = now() - t0;
    if (nr) munmap((void *)s.map, n);
    *page_share = (double)s.page_bytes / n;
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
    char *dev;
    CHECK(cudaMalloc((void **)&dev, n));
    CHECK(cudaMemset(dev, 0, n));
    CHECK(cudaDeviceSynchronize());
    size_t ref = (size_t)256 << 20;
    void *pinned;
    CHECK(cudaMallocHost(&pinned, ref));
    memset(pinned, 1, ref);
    double t0 = now();
    for (int i = 0; i < 20; i++) CHECK(cudaMemcpy(dev + (size_t)i * ref % (n - ref), pinned, ref, cudaMemcpyHostToDevice));
    double link = 20.0 * ref / (now() - t0) / 1e9;
    printf("file %zu bytes; pinned H2D reference %.2f GB/s\n", n, link);
    cudaFreeHost(pinned);
    int cfg[][2] = {{8, 0}, {12, 0}, {8, 2}, {8, 4}, {8, 6}, {12, 4}, {6, 6}, {10, 6}, {0, 8}};
    for (int rep = 0; rep < 2; rep++)
        for (auto &c : cfg) {
            double share;
            double g = trial(fd, dev, n, c[0], c[1], &share);
            printf("RESULT bounce %2d pages %2d: %6.2f GB/s (%.3fx link), page lane share %.2f\n", c[0], c[1], g, g / link, share);
            fflush(stdout);
        }
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
