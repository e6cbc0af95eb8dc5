// What caps the bounce path near 48 GB/s (issue 13's link bar)? A warm file is read by T
// threads in 2 MiB pieces (shared counter) into each thread's 4 pinned slots, either
//   cpu   pread only (the CPU copy out of the page cache, no DMA), or
//   dma   pread + async H2D copy of each slot on its own stream (the bounce path),
//   link  the same copies without the pread (the DMA side alone),
// with the slots in 4 KiB pages (cudaHostAlloc) or in transparent huge pages (mmap +
// MADV_HUGEPAGE, touched, cudaHostRegister). All memory is allocated before the timing.
//   copy_ceiling FILE
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
#include <atomic>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const size_t MAXSLOT = 16u << 20;
static size_t SLOT = 2u << 20;
/* file bytes read from FSHIFT on (a data section that does not start page-aligned), into
 * each slot at SSHIFT (the same offset within 64 bytes makes the CPU copy relatively aligned) */
static size_t FSHIFT = 0, SSHIFT = 0;
static const int MAXSLOTS = 4, MAXT = 16;
static int SLOTS = 4;
static int ONE_STREAM = 0;

struct thr { char *slot[MAXSLOTS]; cudaStream_t st[MAXSLOTS]; cudaEvent_t ev[MAXSLOTS]; };
struct shared { int fd; char *dev; size_t n; int dma; std::atomic<size_t> next; thr *t; };
struct arg { shared *s; int i; };

static void *run(void *p)
{
    arg *a = (arg *)p;
    shared *s = a->s;
    thr *t = &s->t[a->i];
    int busy[MAXSLOTS] = {0};
    for (int k = 0;; k = (k + 1) % SLOTS) {
        size_t off = s->next.fetch_add(SLOT);
        if (off >= s->n) break;
        size_t len = s->n - off < SLOT ? s->n - off : SLOT;
        if (busy[k]) CHECK(cudaEventSynchronize(t->ev[k]));
        for (size_t got = s->dma == 2 ? len : 0; got < len;) {
            ssize_t r = pread(s->fd, t->slot[k] + SSHIFT + got, len - got, (off_t)(FSHIFT + off + got));
            if (r <= 0) { perror("pread"); exit(1); }
            got += (size_t)r;
        }
        if (s->dma) {
            // ONE_STREAM: every slot's copy on the thread's first stream, as libphoenix queues them
            cudaStream_t st = ONE_STREAM ? t->st[0] : t->st[k];
            CHECK(cudaMemcpyAsync(s->dev + off, t->slot[k] + SSHIFT, len, cudaMemcpyHostToDevice, st));
            CHECK(cudaEventRecord(t->ev[k], st));
            busy[k] = 1;
        }
    }
    for (int k = 0; k < MAXSLOTS; k++) CHECK(cudaStreamSynchronize(t->st[k]));
    return NULL;
}

static double trial(shared *s, int nt)
{
    s->next = 0;
    pthread_t th[MAXT];
    arg a[MAXT];
    double t0 = now();
    for (int i = 0; i < nt; i++) { a[i] = {s, i}; pthread_create(&th[i], NULL, run, &a[i]); }
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    return s->n / (now() - t0) / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s FILE\n", argv[0]); return 2; }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    struct stat st;
    fstat(fd, &st);
    shared s;
    s.fd = fd;
    s.n = (size_t)st.st_size;
    CHECK(cudaFree(0));
    CHECK(cudaMalloc((void **)&s.dev, s.n));
    CHECK(cudaMemset(s.dev, 0, s.n));
    thr small[MAXT], huge[MAXT];
    size_t hbytes = (size_t)MAXT * MAXSLOTS * MAXSLOT;
    char *hb = (char *)mmap(NULL, hbytes + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    hb = (char *)(((uintptr_t)hb + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
    int madv = madvise(hb, hbytes, MADV_HUGEPAGE);
    memset(hb, 0, hbytes);
    CHECK(cudaHostRegister(hb, hbytes, cudaHostRegisterPortable));
    for (int i = 0; i < MAXT; i++)
        for (int k = 0; k < MAXSLOTS; k++) {
            CHECK(cudaHostAlloc((void **)&small[i].slot[k], MAXSLOT, cudaHostAllocPortable));
            memset(small[i].slot[k], 0, MAXSLOT);
            huge[i].slot[k] = hb + ((size_t)i * MAXSLOTS + k) * MAXSLOT;
            CHECK(cudaStreamCreateWithFlags(&small[i].st[k], cudaStreamNonBlocking));
            CHECK(cudaEventCreateWithFlags(&small[i].ev[k], cudaEventDisableTiming));
            huge[i].st[k] = small[i].st[k];
            huge[i].ev[k] = small[i].ev[k];
        }
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "AnonHugePages", 13)) printf("madvise %d; %s", madv, line);
    if (f) fclose(f);
    // the link, from one pinned buffer (the same 4 KiB-page slots, 256 MiB copies)
    void *pinned;
    size_t ref = 256u << 20;
    CHECK(cudaMallocHost(&pinned, ref));
    memset(pinned, 1, ref);
    double t0 = now();
    for (int i = 0; i < 20; i++) CHECK(cudaMemcpy(s.dev + (size_t)i * ref % (s.n - ref), pinned, ref, cudaMemcpyHostToDevice));
    double link = 20.0 * ref / (now() - t0) / 1e9;
    printf("file %zu bytes; pinned H2D reference %.2f GB/s\n", s.n, link);
    // argv[2] == "sweep": slot size x slots per thread x threads, 4 KiB pages, bounce and link
    // argv[2] == "shift": a data section starting 8 bytes past a 64-byte boundary, as
    // safetensors.torch.save_file writes it, read into aligned slots or into slots at the
    // same offset within 64 bytes; 2 x 4 MiB slots, 10 threads
    if (argc > 2 && !strcmp(argv[2], "shift")) {
        SLOT = 4u << 20;
        SLOTS = 2;
        s.t = small;
        const size_t n0 = s.n;
        const char *mode[] = {"cpu ", "dma "};
        for (int rep = 0; rep < 3; rep++)
            for (int dma = 0; dma < 2; dma++)
                for (size_t fs : {0, 8, 24})
                    for (size_t ss : {(size_t)0, fs}) {
                        if (fs == 0 && ss) continue;
                        FSHIFT = fs;
                        SSHIFT = ss;
                        s.n = n0 - 4096; // room for the shifts
                        s.dma = dma;
                        double g = trial(&s, 10);
                        printf("RESULT %s file +%2zu slot +%2zu: %6.2f GB/s (%.3fx link)\n", mode[dma], fs, ss, g, g / link);
                        fflush(stdout);
                    }
        return 0;
    }
    // argv[2] == "single": one slot a thread (the thread waits for its copy before the next
    // pread; the other threads keep the link busy), so the bytes in flight per thread are one
    // slot while each copy is as large as the slot. Controls: 2 x 4 MiB (the default shape).
    // Three interleaved rounds, bounce path (pread + DMA) only.
    if (argc > 2 && !strcmp(argv[2], "single")) {
        s.t = small;
        s.dma = 1;
        struct shape { size_t slot; int slots; };
        const shape shapes[] = {{4u << 20, 2}, {4u << 20, 1}, {6u << 20, 1}, {8u << 20, 1}, {12u << 20, 1}, {16u << 20, 1}, {3u << 20, 2}};
        for (int rep = 0; rep < 3; rep++)
            for (const shape &sh : shapes)
                for (int nt : {10, 12, 14, 16}) {
                    SLOT = sh.slot;
                    SLOTS = sh.slots;
                    double g0 = trial(&s, nt), g = trial(&s, nt);
                    printf("RESULT round %d dma slot %5zu KiB x %d threads %2d: %6.2f %6.2f GB/s (%.3fx link)\n", rep, SLOT >> 10, SLOTS,
                           nt, g0, g, (g > g0 ? g : g0) / link);
                    fflush(stdout);
                }
        return 0;
    }
    // argv[2] == "defaults" [THREADS]: the library's default shape only (2 slots of 4 MiB a
    // thread, 12 threads unless given), cpu, dma and link, five trials each: the bounce ceiling
    // to set a load's read phase against, on the same file in the same run
    if (argc > 2 && !strcmp(argv[2], "defaults")) {
        const char *mode[] = {"cpu ", "dma ", "link"};
        int nt = argc > 3 ? atoi(argv[3]) : 12;
        SLOT = 4u << 20;
        SLOTS = 2;
        s.t = small;
        for (int run = 0; run < 4; run++) {
            // cpu, dma, dma on one stream a thread, link
            s.dma = run == 0 ? 0 : run == 3 ? 2 : 1;
            ONE_STREAM = run == 2;
            double best = 0;
            printf("RESULT %s%s slot 4096 KiB x 2 threads %2d:", mode[s.dma], ONE_STREAM ? " one stream" : "", nt);
            for (int k = 0; k < 5; k++) {
                double g = trial(&s, nt);
                best = g > best ? g : best;
                printf(" %6.2f", g);
            }
            printf(" GB/s (best %.3fx link)\n", best / link);
            fflush(stdout);
        }
        ONE_STREAM = 0;
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "sweep")) {
        const char *mode[] = {"cpu ", "dma ", "link"};
        for (size_t slot : {1u << 20, 2u << 20, 3u << 20, 4u << 20, 6u << 20, 8u << 20})
            for (int nslots : {2, 4})
                for (int nt : {10, 12, 14})
                    for (int dma = 0; dma < 3; dma++) {
                        SLOT = slot;
                        SLOTS = nslots;
                        s.dma = dma;
                        s.t = small;
                        double g0 = trial(&s, nt), g = trial(&s, nt);
                        printf("RESULT %s slot %4zu KiB x %d threads %2d: %6.2f %6.2f GB/s (%.3fx link)\n", mode[dma], slot >> 10, nslots,
                               nt, g0, g, (g > g0 ? g : g0) / link);
                        fflush(stdout);
                    }
        return 0;
    }
    const int ts[] = {8, 12, 16};
    const char *mode[] = {"cpu ", "dma ", "link"};
    for (size_t slot : {2u << 20, 8u << 20, 16u << 20})
        for (int dma = 0; dma < 3; dma++)
            for (int pages = 0; pages < 2; pages++)
                for (int nt : ts) {
                    if (dma == 0 && slot != (2u << 20)) continue;
                    SLOT = slot;
                    s.dma = dma;
                    s.t = pages ? huge : small;
                    double g0 = trial(&s, nt), g = trial(&s, nt);
                    printf("RESULT %s %s slot %2zu MiB threads %2d: %6.2f %6.2f GB/s (%.3fx link)\n", mode[dma], pages ? "huge" : "4k  ",
                           slot >> 20, nt, g0, g, (g > g0 ? g : g0) / link);
                    fflush(stdout);
                }
    return 0;
}
