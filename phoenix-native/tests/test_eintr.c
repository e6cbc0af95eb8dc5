/* EINTR and short transfers: pread/pwrite are interposed to fail with EINTR
 * and to return short counts at random, while a thread floods the process
 * with signals whose handler does not restart system calls. */
#include "harness.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_uint rng = 12345;
static atomic_long injected_eintr, injected_short;

static unsigned next_rand(void) { return atomic_fetch_add(&rng, 2654435761u) * 2246822519u >> 7; }

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    /* resolved by every caller, never cached: workers call this concurrently */
    ssize_t (*real)(int, void *, size_t, off_t) = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    unsigned r = next_rand() % 8;
    if (r == 0) { atomic_fetch_add(&injected_eintr, 1); errno = EINTR; return -1; }
    if (r == 1 && n > 1) { atomic_fetch_add(&injected_short, 1); n = n / 2 + 1; }
    return real(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    ssize_t (*real)(int, const void *, size_t, off_t) = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    unsigned r = next_rand() % 8;
    if (r == 0) { errno = EINTR; return -1; }
    if (r == 1 && n > 1) n = n / 2 + 1;
    return real(fd, buf, n, off);
}

static atomic_int stop;
static void on_signal(int s) { (void)s; }
static void *storm(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) { kill(getpid(), SIGUSR1); usleep(50); }
    return NULL;
}

int main(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal; /* no SA_RESTART: interrupted calls return EINTR */
    sigaction(SIGUSR1, &sa, NULL);
    CHECK_EQ(phxfs_open(0), 0);
    CHECK_EQ(phxfs_set_config("max_io_bytes", "65536"), 0);
    size_t fsize = (24u << 20) + 77;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 5));
    int fd = th_open(path, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, fsize, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, fsize, NULL), 0);
    unsigned char *ref = malloc(fsize), *got = malloc(fsize);
    th_fill(ref, fsize, 5, 0);
    pthread_t th;
    pthread_create(&th, NULL, storm, NULL);
    for (int round = 0; round < 10; round++) {
        memset(got, 0, fsize);
        CHECK_EQ(phxfs_read(fd, -1, got, 0, (ssize_t)fsize + 100, 0), (ssize_t)fsize);
        CHECK(memcmp(got, ref, fsize) == 0);
        CHECK_EQ(phxfs_read(fd, 0, dmem, 0, (ssize_t)fsize, 0), (ssize_t)fsize);
        memset(got, 0, fsize);
        CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, fsize), 0);
        CHECK(memcmp(got, ref, fsize) == 0);
    }
    char out[256];
    snprintf(out, sizeof out, "%s", th_make_file(0, 0));
    int wfd = th_open(out, 0);
    CHECK_EQ(phxfs_write(wfd, 0, dmem, 0, (ssize_t)fsize, 0), (ssize_t)fsize);
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    memset(got, 0, fsize);
    int plain = open(out, O_RDONLY);
    size_t have = 0;
    while (have < fsize) {
        ssize_t r = pread(plain, got + have, fsize - have, (off_t)have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        have += (size_t)r;
    }
    CHECK_EQ(have, fsize);
    CHECK(memcmp(got, ref, fsize) == 0);
    printf("injected %ld EINTR and %ld short reads\n", atomic_load(&injected_eintr), atomic_load(&injected_short));
    close(plain); close(wfd); close(fd);
    unlink(out); unlink(path);
    CHECK_EQ(phxfs_deregmem(0, dmem, fsize), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    free(ref); free(got);
    return th_finish("test_eintr");
}
