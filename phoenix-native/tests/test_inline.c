/* Small synchronous device transfers on the caller's thread (xfer_inline.c).
 *
 * pread and pwrite are interposed to see which thread does the file I/O of a call: the
 * caller's (the inline path) or a worker's. Checked: byte-exact reads and writes at odd
 * offsets and lengths, buffered and O_DIRECT, at the edges of the inline threshold and the
 * slot; batches of one request; end of file and failures; that at most a fixed number of
 * callers run inline at once on a device, the rest going to the workers and completing
 * while those are held (reads held in pread by a gate), with deregmem and close refused
 * meanwhile; many threads at once (for the sanitizers). With PHX_INLINE_KB=0 the same
 * checks expect every transfer on a worker, so the thread checks can fail. */
#include "harness.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
__attribute__((constructor)) static void find_real(void)
{
    real_pread = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
}

/* set by a test thread around its Phoenix call: I/O seen with it set ran on that thread */
static __thread int in_call;
static atomic_int counting, gate_fd = -1;
static atomic_long on_caller, on_other;

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gated_caller, gated_other;

/* any descriptor: an unaligned O_DIRECT write goes through a reopened one */
static void seen(void)
{
    if (atomic_load(&counting)) atomic_fetch_add(in_call ? &on_caller : &on_other, 1);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    seen();
    if (fd == atomic_load(&gate_fd)) {
        pthread_mutex_lock(&gate_lock);
        if (in_call) gated_caller++;
        else gated_other++;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open) pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
    }
    return real_pread(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    seen();
    return real_pwrite(fd, buf, n, off);
}

static size_t fsize = (4u << 20) + 123;
static size_t dlen = 8u << 20;
static unsigned char *ref;
static void *dmem;
static int bounce;
static size_t inline_bytes, slot_bytes;

static int expect_inline(size_t len, off_t foff, int direct)
{
    size_t head = direct ? (size_t)foff & 4095 : 0;
    size_t span = direct ? (head + len + 4095) & ~(size_t)4095 : len;
    return bounce && len > 0 && len <= inline_bytes && span <= slot_bytes;
}

/* which thread did the file I/O of the last call: checked only where it is defined (bounce
 * mode: on the host connector the host path's own engine decides) */
static void check_thread(int want_inline, const char *what, size_t len, off_t foff, int line)
{
    if (!bounce) return;
    long c = atomic_load(&on_caller), o = atomic_load(&on_other);
    if (want_inline ? (c > 0 && o == 0) : (o > 0 && c == 0)) return;
    fprintf(stderr, "test_inline.c:%d: %s of %zu at %lld: file I/O on the caller's thread %ld times, elsewhere %ld; expected %s\n",
            line, what, len, (long long)foff, c, o, want_inline ? "the caller's only" : "a worker's only");
    th_failures++;
}

/* counts the file I/O of the calls between start and stop */
static void start(void)
{
    atomic_store(&on_caller, 0);
    atomic_store(&on_other, 0);
    atomic_store(&counting, 1);
    in_call = 1;
}
static void stop(void)
{
    in_call = 0;
    atomic_store(&counting, 0);
}

static void fill_device(unsigned char v)
{
    unsigned char *p = malloc(dlen);
    memset(p, v, dlen);
    CHECK_EQ(phxfs_memcpy_to_device(0, dmem, p, dlen), 0);
    free(p);
}

/* a read of [foff, +len) into dmem + boff: the bytes, and nothing around them touched */
static void read_case(int fd, int direct, size_t len, off_t foff, off_t boff)
{
    fill_device(0xA5);
    start();
    ssize_t n = phxfs_read(fd, 0, dmem, boff, (ssize_t)len, foff);
    stop();
    size_t want = (size_t)foff >= fsize ? 0 : fsize - (size_t)foff < len ? fsize - (size_t)foff : len;
    CHECK_EQ(n, (ssize_t)want);
    check_thread(expect_inline(len, foff, direct), direct ? "O_DIRECT read" : "read", len, foff, __LINE__);
    size_t lo = (size_t)boff >= 64 ? (size_t)boff - 64 : 0, hi = (size_t)boff + len + 64;
    unsigned char *got = malloc(hi - lo);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + lo, hi - lo), 0);
    for (size_t i = lo; i < hi; i++) {
        size_t rel = i - (size_t)boff;
        int inside = i >= (size_t)boff && rel < want;
        unsigned char exp = inside ? ref[(size_t)foff + rel] : 0xA5;
        if (got[i - lo] != exp) {
            fprintf(stderr, "%s read of %zu at %lld into +%lld: byte %zu is %#x, expected %#x\n", direct ? "O_DIRECT" : "buffered",
                    len, (long long)foff, (long long)boff, i, got[i - lo], exp);
            th_failures++;
            break;
        }
    }
    free(got);
}

/* a write of dmem + boff .. +len to [foff, +len) of a file filled with seed 3: the bytes, and
 * the file around them unchanged */
static void write_case(const char *path, int direct, size_t len, off_t foff, off_t boff, unsigned char *pattern)
{
    int fd = th_open(path, direct);
    int plain = open(path, O_RDWR);
    start();
    ssize_t n = phxfs_write(fd, 0, dmem, boff, (ssize_t)len, foff);
    stop();
    CHECK_EQ(n, (ssize_t)len);
    check_thread(expect_inline(len, foff, direct), direct ? "O_DIRECT write" : "write", len, foff, __LINE__);
    size_t lo = (size_t)foff >= 64 ? (size_t)foff - 64 : 0, hi = (size_t)foff + len + 64;
    unsigned char *got = malloc(hi - lo), *around = malloc(hi - lo);
    CHECK_EQ(real_pread(plain, got, hi - lo, (off_t)lo), (ssize_t)(hi - lo));
    th_fill(around, hi - lo, 3, lo);
    for (size_t i = lo; i < hi; i++) {
        int inside = i >= (size_t)foff && i - (size_t)foff < len;
        unsigned char exp = inside ? pattern[(size_t)boff + (i - (size_t)foff)] : around[i - lo];
        if (got[i - lo] != exp) {
            fprintf(stderr, "%s write of %zu at %lld from +%lld: file byte %zu is %#x, expected %#x\n", direct ? "O_DIRECT" : "buffered",
                    len, (long long)foff, (long long)boff, i, got[i - lo], exp);
            th_failures++;
            break;
        }
    }
    /* put the file back for the next case */
    CHECK_EQ(real_pwrite(plain, around + ((size_t)foff - lo), len, foff), (ssize_t)len);
    free(got);
    free(around);
    close(plain);
    close(fd);
}

/* ---- callers held in pread ---- */
static int held_fd;
static ssize_t held_result[32];
static void *held_reader(void *arg)
{
    long i = (long)(intptr_t)arg;
    in_call = 1;
    held_result[i] = phxfs_read(held_fd, 0, dmem, i * 8192 + 1, 4096, i * 4096 + 7);
    in_call = 0;
    return NULL;
}

static int wait_gated(int total)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&gate_lock);
    int rc = 0;
    while (gated_caller + gated_other < total && rc == 0) rc = pthread_cond_timedwait(&gate_cond, &gate_lock, &until);
    int ok = gated_caller + gated_other >= total;
    pthread_mutex_unlock(&gate_lock);
    return ok;
}

/* ---- many threads at once ---- */
#define STRESS_THREADS 16
/* ThreadSanitizer finds a race from the happens-before order of one overlap, not from its
 * repetition: a third of the rounds still overlaps all sixteen threads, at a third of the cost
 * of its instrumented copies and compares */
#if defined(__SANITIZE_THREAD__)
#define STRESS_ROUNDS 20
#else
#define STRESS_ROUNDS 60
#endif
static int stress_fd, stress_wfd;
static void *stresser(void *arg)
{
    long t = (long)(intptr_t)arg;
    size_t region = dlen / STRESS_THREADS;
    unsigned char *got = malloc(region);
    unsigned seed = (unsigned)t * 7919u + 1;
    for (int r = 0; r < STRESS_ROUNDS; r++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 8) % (region / 2);
        if (r % 3 == 0) len = 1 + (seed >> 8) % 8192; /* mostly small */
        off_t foff = (off_t)((seed >> 4) % (fsize - len));
        off_t boff = (off_t)((size_t)t * region + (seed >> 12) % (region - len));
        ssize_t n = phxfs_read(stress_fd, 0, dmem, boff, (ssize_t)len, foff);
        if (n != (ssize_t)len) { fprintf(stderr, "stress: read %zd of %zu\n", n, len); th_failures++; break; }
        CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + boff, len), 0);
        if (memcmp(got, ref + foff, len)) { fprintf(stderr, "stress: thread %ld read mismatch\n", t); th_failures++; break; }
        /* the same bytes written to this thread's own part of another file */
        off_t wpos = (off_t)((size_t)t * region + (size_t)foff % (region - len));
        n = phxfs_write(stress_wfd, 0, dmem, boff, (ssize_t)len, wpos);
        if (n != (ssize_t)len) { fprintf(stderr, "stress: write %zd of %zu\n", n, len); th_failures++; break; }
        unsigned char *back = malloc(len);
        if (real_pread(stress_wfd, back, len, wpos) != (ssize_t)len || memcmp(back, ref + foff, len)) {
            fprintf(stderr, "stress: thread %ld write mismatch\n", t);
            th_failures++;
        }
        free(back);
    }
    free(got);
    return NULL;
}

int main(void)
{
    CHECK_EQ(phxfs_open(0), 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    char v[32];
    CHECK(phxfs_get_config("inline_kb", v, sizeof v) > 0);
    inline_bytes = (size_t)atol(v) << 10;
    slot_bytes = info.slot_bytes;
    bounce = info.mode == PHXFS_MODE_BOUNCE;
    CHECK_EQ(phxfs_set_config("inline_kb", "64"), -EBUSY); /* frozen with the pool */
    printf("connector %s, mode %s, inline up to %zu KiB, slot %zu KiB\n", info.connector, phxfs_mode_name(info.mode),
           inline_bytes >> 10, slot_bytes >> 10);

    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 5));
    ref = malloc(fsize);
    th_fill(ref, fsize, 5, 0);
    int fd = th_open(path, 0), is_direct = 0;
    int dfd = phxfs_file_open(path, O_RDWR, 0, 1, &is_direct);
    CHECK(dfd >= 0);
    if (!is_direct) printf("O_DIRECT refused by the file system: the direct cases run buffered\n");
    CHECK_EQ(phxfs_mem_alloc(0, dlen, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, dlen, NULL), 0);

    /* reads: odd lengths and offsets, each side of the threshold and of the slot */
    size_t lens[] = {1, 7, 511, 4095, 4096, 4097, 65536 + 3, 200000, inline_bytes, inline_bytes + 1, slot_bytes - 4096 + 1,
                     slot_bytes, (1u << 20) + 5};
    off_t foffs[] = {0, 1, 4095, 4096 * 3 + 17, 65536, (off_t)fsize - 4000};
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
        for (size_t f = 0; f < sizeof foffs / sizeof *foffs; f++) {
            size_t len = lens[l];
            if (len == 0 || len + 128 > dlen) continue;
            off_t boff = (off_t)((l * 4096 + f * 13 + 1) % 65536);
            read_case(fd, 0, len, foffs[f], boff);
            read_case(dfd, is_direct, len, foffs[f], boff);
        }
    /* at and past the end of the file */
    read_case(fd, 0, 100, (off_t)fsize - 10, 3);
    start();
    CHECK_EQ(phxfs_read(fd, 0, dmem, 0, 100, (off_t)fsize), 0);
    CHECK_EQ(phxfs_read(fd, 0, dmem, 0, 100, (off_t)fsize + 5000), 0);
    CHECK_EQ(phxfs_read(fd, 0, dmem, 0, 0, 0), 0);
    stop();
    check_thread(expect_inline(100, (off_t)fsize, 0), "read at the end of the file", 100, (off_t)fsize, __LINE__);

    /* a batch of one small request runs inline; of two, on the workers */
    fill_device(0);
    phxfs_io_req_t reqs[2] = {{fd, 0, dmem, 5, 3000, 77, 0}, {fd, 0, dmem, 9000, 3000, 9999, 0}};
    start();
    CHECK_EQ(phxfs_read_batch(reqs, 1), 0);
    stop();
    CHECK_EQ(reqs[0].result, 3000);
    check_thread(expect_inline(3000, 77, 0), "batch of one", 3000, 77, __LINE__);
    start();
    CHECK_EQ(phxfs_read_batch(reqs, 2), 0);
    stop();
    CHECK_EQ(reqs[0].result, 3000);
    CHECK_EQ(reqs[1].result, 3000);
    check_thread(0, "batch of two", 3000, 77, __LINE__);
    unsigned char got[8192];
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + 9000, 3000), 0);
    CHECK(memcmp(got, ref + 9999, 3000) == 0);

    /* failures: the same results and messages as through the workers */
    int wo = open(path, O_WRONLY);
    CHECK_EQ(phxfs_read(wo, 0, dmem, 0, 4096, 0), -EBADF);
    CHECK(strstr(phxfs_last_error(), "not open for reading") != NULL);
    close(wo);
    CHECK_EQ(phxfs_read(fd, 0, dmem, (off_t)dlen - 10, 4096, 0), -EFAULT);
    CHECK(*phxfs_last_error() != 0);
    int dir = open(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", O_RDONLY | O_DIRECTORY);
    CHECK(phxfs_read(dir, 0, dmem, 0, 4096, 0) < 0);
    CHECK(strstr(phxfs_last_error(), "read of 4096 bytes at file offset 0") != NULL);
    if (bounce) {
        /* pread's own error: what io_uring says on the host connector may differ */
        CHECK_EQ(phxfs_read(dir, 0, dmem, 0, 4096, 0), -EISDIR);
        CHECK(strstr(phxfs_last_error(), "Is a directory") != NULL);
    }
    close(dir);
    CHECK_EQ(phxfs_read(fd, 0, dmem, 0, 100, 0), 100);
    CHECK_EQ(*phxfs_last_error(), 0); /* a success leaves no message behind */

    /* writes: odd lengths and offsets, buffered and O_DIRECT (unaligned ones go through a
     * buffered reopen, as on the workers) */
    char wpath[256];
    snprintf(wpath, sizeof wpath, "%s", th_make_file(fsize, 3));
    unsigned char *pattern = malloc(dlen);
    th_fill(pattern, dlen, 9, 0);
    CHECK_EQ(phxfs_memcpy_to_device(0, dmem, pattern, dlen), 0);
    size_t wlens[] = {1, 13, 4096, 4097, 65536, 100001, inline_bytes, inline_bytes + 1, slot_bytes};
    off_t wfoffs[] = {0, 3, 4096, 8192 + 4095, (off_t)fsize - 200000};
    for (size_t l = 0; l < sizeof wlens / sizeof *wlens; l++)
        for (size_t f = 0; f < sizeof wfoffs / sizeof *wfoffs; f++) {
            if (wlens[l] == 0 || wlens[l] + 128 > dlen || (size_t)wfoffs[f] + wlens[l] > fsize) continue;
            off_t boff = (off_t)((l * 8192 + f * 7 + 3) % 65536);
            write_case(wpath, 0, wlens[l], wfoffs[f], boff, pattern);
            write_case(wpath, 1, wlens[l], wfoffs[f], boff, pattern);
        }

    /* bounded: callers held in pread keep their copy contexts; once those are all taken the
     * next caller goes to a worker and still completes; deregmem and close wait for them.
     * Bounce mode only: elsewhere a held caller may never reach pread (io_uring). */
    int started = 0, inline_held = -1;
    pthread_t th[32];
    char gpath[256];
    if (!bounce) goto stress;
    snprintf(gpath, sizeof gpath, "%s", th_make_file(1u << 20, 5));
    held_fd = th_open(gpath, 0);
    atomic_store(&gate_fd, held_fd);
    while (started < 32) {
        CHECK_EQ(pthread_create(&th[started], NULL, held_reader, (void *)(intptr_t)started), 0);
        started++;
        if (!wait_gated(started)) {
            fprintf(stderr, "reader %d never reached pread\n", started);
            th_failures++;
            break;
        }
        pthread_mutex_lock(&gate_lock);
        int other = gated_other, mine = gated_caller;
        pthread_mutex_unlock(&gate_lock);
        if (other) {
            inline_held = mine;
            break;
        }
    }
    printf("callers held inline at once: %d (then one went to a worker)\n", inline_held);
    if (inline_bytes >= 4096) CHECK(inline_held >= 1 && inline_held <= 8);
    else CHECK_EQ(inline_held, 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, dlen), -EBUSY);
    CHECK_EQ(phxfs_close(0), -EBUSY);
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    atomic_store(&gate_fd, -1);
    for (int i = 0; i < started; i++) {
        CHECK_EQ(held_result[i], 4096);
        CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + i * 8192 + 1, 4096), 0);
        CHECK(memcmp(got, ref + i * 4096 + 7, 4096) == 0);
    }
    close(held_fd);
    unlink(gpath);

stress:
    /* many threads, mixed sizes, reads and writes */
    stress_fd = fd;
    stress_wfd = th_open(wpath, 0);
    pthread_t st[STRESS_THREADS];
    for (long t = 0; t < STRESS_THREADS; t++) CHECK_EQ(pthread_create(&st[t], NULL, stresser, (void *)(intptr_t)t), 0);
    for (int t = 0; t < STRESS_THREADS; t++) pthread_join(st[t], NULL);
    close(stress_wfd);

    CHECK_EQ(phxfs_deregmem(0, dmem, dlen), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    CHECK_EQ(phxfs_close(0), 0);
    /* the copy contexts went with the device; a new open makes them again */
    CHECK_EQ(phxfs_open(0), 0);
    CHECK_EQ(phxfs_mem_alloc(0, 65536, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, 65536, NULL), 0);
    start();
    CHECK_EQ(phxfs_read(fd, 0, dmem, 1, 5000, 3), 5000);
    stop();
    check_thread(expect_inline(5000, 3, 0), "read after reopen", 5000, 3, __LINE__);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, (char *)dmem + 1, 3000), 0);
    CHECK(memcmp(got, ref + 3, 3000) == 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, 65536), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    CHECK_EQ(phxfs_close(0), 0);

    close(fd);
    close(dfd);
    unlink(path);
    unlink(wpath);
    free(pattern);
    free(ref);
    return th_finish("test_inline");
}
