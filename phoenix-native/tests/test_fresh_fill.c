/* Host reads into memory whose pages do not exist yet (fresh_fill.c): the bytes are exact
 * at any alignment, at end of file, in memory that is partly or wholly populated, in memory
 * userfaultfd cannot register, in shared anonymous memory, while another thread reads the
 * destination, when UFFDIO_COPY or the unregister fails (ioctl interposed), and as an
 * unprivileged user; read-only memory fails with EFAULT as with the plain read, and the
 * destination stays one mapping. With PHX_FRESH_FILL=1 the fresh-page path is taken exactly where it
 * should be (counted by "fresh_fill_bytes"); with 0 (the default) never. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ioctl interposed: the next UFFDIO_COPY copies half and fails with EAGAIN (inject_copy = 1),
 * or copies nothing and fails with ENOENT (2); the next UFFDIO_UNREGISTER fails (inject_unreg) */
static atomic_int inject_copy, inject_unreg;

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int (*real)(int, unsigned long, ...) = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    if (req == UFFDIO_COPY) {
        struct uffdio_copy *c = arg;
        int k = c->len >= 8192 ? atomic_exchange(&inject_copy, 0) : 0;
        if (k == 2) {
            c->copy = -ENOENT;
            errno = ENOENT;
            return -1;
        }
        if (k == 1) {
            unsigned long long full = c->len;
            c->len = (full / 2) & ~4095ull;
            int r = real(fd, req, c);
            c->len = full;
            if (r) return r;
            c->copy = (long long)((full / 2) & ~4095ull);
            errno = EAGAIN;
            return -1;
        }
    }
    if (req == UFFDIO_UNREGISTER && atomic_exchange(&inject_unreg, 0)) {
        errno = EINVAL;
        return -1;
    }
    return real(fd, req, arg);
}

static size_t fsize;
static unsigned char *ref;
static int mode;        /* PHX_FRESH_FILL: 0 (default) or 1 */
static int expect_path; /* 1: userfaultfd usable here and fresh_fill=1 */

static int uffd_usable(void);

/* how many lines of /proc/self/maps overlap [p, p + len) */
static int mappings_in(const void *p, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    unsigned long lo, hi, a = (unsigned long)p, b = a + len;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < b && hi > a) n++;
    if (f) fclose(f);
    return n;
}

static int max_pieces(void)
{
    char buf[16];
    CHECK(phxfs_get_config("workers", buf, sizeof buf) > 0);
    return atoi(buf) + 1;
}

static unsigned long long fresh_bytes(void)
{
    char buf[32];
    CHECK(phxfs_get_config("fresh_fill_bytes", buf, sizeof buf) > 0);
    return strtoull(buf, NULL, 10);
}

static unsigned char *fresh(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(2); }
    return p;
}

/* reads n bytes at file offset off into buf + boff; checks the result and the bytes */
static void read_check(int fd, unsigned char *buf, size_t boff, size_t n, size_t off, const char *what)
{
    ssize_t r = phxfs_read(fd, -1, buf, (off_t)boff, (ssize_t)n, (off_t)off);
    size_t want = off >= fsize ? 0 : (fsize - off < n ? fsize - off : n);
    if (r != (ssize_t)want) fprintf(stderr, "%s: ", what);
    CHECK_EQ(r, want);
    if (r > 0 && memcmp(buf + boff, ref + off, want)) {
        size_t i = 0;
        while (buf[boff + i] == ref[off + i]) i++;
        fprintf(stderr, "%s: byte %zu of %zu differs\n", what, i, want);
        th_failures++;
    }
}

/* odd offsets in memory and file, several tasks (chunk_mb 8), a short last piece */
static void basic(int fd, const char *who)
{
    size_t n = (21u << 20) + 333, boff = 777, off = 12345;
    unsigned char *buf = fresh(n + boff + 4096);
    unsigned long long before = fresh_bytes();
    read_check(fd, buf, boff, n, off, who);
    unsigned long long moved = fresh_bytes() - before;
    if (expect_path) {
        /* all but the head through the first whole page and the tail of each 8 MiB task */
        if (moved < n - (32u << 10)) fprintf(stderr, "%s: %llu of %zu bytes by UFFDIO_COPY\n", who, moved, n);
        CHECK(moved >= n - (32u << 10) && moved <= n);
    } else {
        CHECK_EQ(moved, 0);
    }
    /* the pieces the registration split off merge again, all but at most one a worker */
    CHECK(mappings_in(buf, n + boff + 4096) <= max_pieces());
    /* the bytes around the destination stay zero */
    for (size_t i = 0; i < boff; i++) CHECK_EQ(buf[i], 0);
    for (size_t i = boff + n; i < n + boff + 4096; i++) CHECK_EQ(buf[i], 0);
    munmap(buf, n + boff + 4096);
}

static void past_end(int fd)
{
    /* from 3 MiB before the end, asking for 12 MiB: short, and the pages after the end zero */
    size_t off = fsize - (3u << 20) - 5, n = 12u << 20;
    unsigned char *buf = fresh(n);
    unsigned long long before = fresh_bytes();
    read_check(fd, buf, 0, n, off, "past end");
    if (expect_path) CHECK(fresh_bytes() - before >= (2u << 20));
    for (size_t i = fsize - off; i < n; i += 511) CHECK_EQ(buf[i], 0);
    munmap(buf, n);
    /* entirely past the end */
    buf = fresh(4u << 20);
    CHECK_EQ(phxfs_read(fd, -1, buf, 0, 4u << 20, (off_t)fsize + 4096), 0);
    munmap(buf, 4u << 20);
}

static void populated(int fd)
{
    size_t n = 16u << 20;
    unsigned char *buf = fresh(n);
    memset(buf, 0xAB, n); /* every page present: a reused pool */
    unsigned long long before = fresh_bytes();
    read_check(fd, buf, 0, n, 4096 * 3, "populated");
    CHECK_EQ(fresh_bytes() - before, 0);
    /* one page present in each 8 MiB task: those tasks take the plain read */
    memset(buf, 0, n);
    munmap(buf, n);
    buf = fresh(n);
    buf[(1u << 20) + 5] = 1;
    buf[(9u << 20) + 5] = 1;
    before = fresh_bytes();
    read_check(fd, buf, 0, n, 99, "partly populated");
    CHECK_EQ(fresh_bytes() - before, 0);
    munmap(buf, n);
}

/* a private mapping of a file: userfaultfd's missing mode refuses it; the plain read serves */
static void file_backed(int fd)
{
    size_t n = 10u << 20;
    /* sparse, on the build directory's file system (not tmpfs, whose memory userfaultfd can
     * register): no page in the page cache, so mincore says missing and REGISTER refuses */
    char path[] = "fresh_fill_sparse_XXXXXX";
    int other = mkstemp(path);
    CHECK(other >= 0 && ftruncate(other, (off_t)n) == 0);
    unsigned char *buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, other, 0);
    CHECK(buf != MAP_FAILED);
    unsigned long long before = fresh_bytes();
    read_check(fd, buf, 0, n, 0, "file-backed destination");
    CHECK_EQ(fresh_bytes() - before, 0);
    munmap(buf, n);
    close(other);
    unlink(path);
}

struct toucher { unsigned char *buf; size_t n; atomic_int stop; unsigned long sum; };

/* reads memory another thread is filling: a race by design, so not instrumented by TSan */
__attribute__((no_sanitize_thread)) static void *touch(void *arg)
{
    struct toucher *t = arg;
    while (!atomic_load(&t->stop))
        for (size_t i = 0; i < t->n; i += 4096) t->sum += ((volatile unsigned char *)t->buf)[i];
    return NULL;
}

/* another thread reading the destination while it fills: it waits for the pages (never
 * for good), and what lands is still the file's bytes */
/* read-only memory: EFAULT, as the plain read gives, and nothing written */
static void read_only(int fd)
{
    size_t n = 8u << 20;
    unsigned char *buf = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK_EQ(phxfs_read(fd, -1, buf, 0, (ssize_t)n, 0), -EFAULT);
    for (size_t i = 0; i < n; i += 4096) CHECK_EQ(buf[i], 0);
    munmap(buf, n);
}

/* shared anonymous memory (shmem): userfaultfd serves it too */
static void shared_anon(int fd)
{
    size_t n = 12u << 20;
    unsigned char *buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(buf != MAP_FAILED);
    unsigned long long before = fresh_bytes();
    read_check(fd, buf, 0, n - 5, 300, "shared anonymous destination");
    if (expect_path) CHECK(fresh_bytes() - before > 0);
    munmap(buf, n);
}

/* UFFDIO_COPY failing halfway (EAGAIN), failing at once (ENOENT), and the unregister failing:
 * the plain read finishes, the bytes are exact, nothing hangs */
static void failures(int fd)
{
    const char *what[] = {"copy fails halfway", "copy fails at once", "copy fails, then the unregister fails"};
    for (int k = 0; k < 3; k++) {
        size_t n = 9u << 20;
        unsigned char *buf = fresh(n);
        /* k == 2: the rest of the range is still missing and registered when the unregister
         * fails, and the plain read must still place it */
        atomic_store(&inject_copy, k < 2 ? k + 1 : 2);
        atomic_store(&inject_unreg, k == 2);
        alarm(120);
        read_check(fd, buf, 0, n, 4096 + 7, what[k]);
        alarm(0);
        if (expect_path && k < 2) CHECK_EQ(atomic_load(&inject_copy), 0); /* the injection was reached */
        if (expect_path && k == 2) CHECK_EQ(atomic_load(&inject_unreg), 0);
        if (expect_path && k == 2) CHECK(mappings_in(buf, n) <= max_pieces());
        munmap(buf, n);
        atomic_store(&inject_copy, 0);
        atomic_store(&inject_unreg, 0);
    }
}

static void concurrent_reader(int fd)
{
    size_t n = 32u << 20;
    struct toucher t = {fresh(n), n, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, touch, &t);
    alarm(120); /* a hang fails the test instead of the CI run */
    read_check(fd, t.buf, 0, n, 4096, "read while another thread reads it");
    atomic_store(&t.stop, 1);
    pthread_join(th, NULL);
    alarm(0);
    munmap(t.buf, n);
}

/* Two workers whatever the machine: tasks then are the 8 MiB chunks the checks count on
 * (with more workers a request is cut finer, and pieces under 1 MiB take the plain read). */
static void fix_workers(void)
{
    CHECK_EQ(phxfs_set_config("workers", "2"), 0);
    CHECK_EQ(phxfs_set_config("chunk_mb", "8"), 0);
}

static int uffd_usable(void)
{
#ifdef SYS_userfaultfd
    int u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
    if (u < 0) return 0;
    close(u);
    return 1;
#else
    return 0;
#endif
}

int main(void)
{
    const char *env = getenv("PHX_FRESH_FILL");
    mode = env ? atoi(env) : 0;
    fsize = (40u << 20) + 4099;
    char path[256];
    int rfd = th_open_reference(fsize, 3, path, sizeof path, &ref);
    expect_path = mode == 1 && uffd_usable();
    if (mode && !uffd_usable()) {
        printf("userfaultfd refused here (seccomp, or Linux < 5.11): the path cannot run\n");
        return 77;
    }

    /* an unprivileged user (the library not yet started in this process when forked) */
    pid_t child = geteuid() == 0 ? fork() : -1;
    if (child == 0) {
        if (setgid(65534) || setuid(65534)) { perror("setuid"); _exit(2); }
        expect_path = mode == 1 && uffd_usable();
        fix_workers();
        CHECK_EQ(phxfs_open(0), 0);
        basic(rfd, "unprivileged");
        _exit(th_failures ? 1 : 0);
    }
    if (child > 0) {
        int st = 0;
        waitpid(child, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    fix_workers();
    CHECK_EQ(phxfs_open(0), 0);
    char v[8];
    CHECK(phxfs_get_config("fresh_fill", v, sizeof v) > 0);
    CHECK_EQ(atoi(v), mode);
    basic(rfd, "basic");
    past_end(rfd);
    populated(rfd);
    file_backed(rfd);
    read_only(rfd);
    shared_anon(rfd);
    concurrent_reader(rfd);
    /* the same through a batch of many requests, some adjacent, odd boundaries */
    size_t n = 30u << 20;
    unsigned char *buf = fresh(n);
    phxfs_io_req_t reqs[5];
    size_t cuts[6] = {0, 3u << 20, (3u << 20) + 1, (11u << 20) + 17, (20u << 20) + 4096, n};
    for (int i = 0; i < 5; i++)
        reqs[i] = (phxfs_io_req_t){rfd, -1, buf, (off_t)cuts[i], cuts[i + 1] - cuts[i], (off_t)(cuts[i] + 1000), 0};
    CHECK_EQ(phxfs_read_batch(reqs, 5), 0);
    for (int i = 0; i < 5; i++) CHECK_EQ(reqs[i].result, cuts[i + 1] - cuts[i]);
    CHECK(!memcmp(buf, ref + 1000, n));
    munmap(buf, n);

    failures(rfd); /* last: a failed unregister retires one worker's descriptor */
    phxfs_close(0);
    close(rfd);
    unlink(path);
    free(ref);
    return th_finish("test_fresh_fill");
}
