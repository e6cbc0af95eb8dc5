/*
 * Guest-side tests of the phxfs module (run by kmod/test/run.sh inside a QEMU guest, linked
 * statically). Each subcommand prints one line "@@PHX <name> PASS|FAIL <detail>" and exits 0/1.
 *
 *   phxfs_test gen FILE BYTES SEED [OFFSET]  writes the test pattern (host side too)
 *   phxfs_test check FILE BYTES SEED [OFFSET] byte-compares FILE against the pattern
 *   phxfs_test <test> [args]                 see main()
 *
 * Device memory comes from the emu backend (EMU_ALLOC) and is reached only through a phxfs
 * window (mmap + MAP), the way a GPU's memory is reached through BAR1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "phxfs_ioctl.h"

#define MiB (1024ull * 1024)
static const char *test_name = "?";

static int result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int result(int ok, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("@@PHX %s %s %s\n", test_name, ok ? "PASS" : "FAIL", msg);
    fflush(stdout);
    return ok ? 0 : 1;
}
#define CHECK(cond, ...) do { if (!(cond)) return result(0, __VA_ARGS__); } while (0)

#include "pattern.h"

/* ---- device helpers ---- */
typedef struct {
    int fd;
    uint64_t dev_addr, len;
    char *win;
    size_t win_len;
} devmem_t;

static int dev_open(void) { return open("/dev/phxfs_dev0", O_RDWR | O_CLOEXEC); }

static int emu_alloc(int fd, uint64_t len, uint64_t *addr)
{
    struct phxfs_ioctl_emu_alloc a = {sizeof a, PHXFS_UAPI_VERSION, len, 0};
    if (ioctl(fd, PHXFS_IOC_EMU_ALLOC, &a) < 0) return -errno;
    *addr = a.dev_addr;
    return 0;
}
static int emu_free(int fd, uint64_t addr)
{
    struct phxfs_ioctl_emu_free a = {sizeof a, PHXFS_UAPI_VERSION, addr};
    return ioctl(fd, PHXFS_IOC_EMU_FREE, &a) < 0 ? -errno : 0;
}
static int do_map(int fd, uint64_t dev, uint64_t len, void *host)
{
    struct phxfs_ioctl_map m = {sizeof m, PHXFS_UAPI_VERSION, dev, len, (uint64_t)(uintptr_t)host, 0, 0};
    return ioctl(fd, PHXFS_IOC_MAP, &m) < 0 ? -errno : 0;
}
static int do_unmap(int fd, void *host, uint64_t len)
{
    struct phxfs_ioctl_unmap u = {sizeof u, PHXFS_UAPI_VERSION, (uint64_t)(uintptr_t)host, len};
    return ioctl(fd, PHXFS_IOC_UNMAP, &u) < 0 ? -errno : 0;
}
static int info(int fd, struct phxfs_ioctl_info *i)
{
    memset(i, 0, sizeof *i);
    i->size = sizeof *i;
    i->version = PHXFS_UAPI_VERSION;
    return ioctl(fd, PHXFS_IOC_INFO, i) < 0 ? -errno : 0;
}

/* device memory of len bytes, allocated and mapped through a fresh window */
static int devmem_get(devmem_t *m, uint64_t len)
{
    memset(m, 0, sizeof *m);
    m->fd = dev_open();
    if (m->fd < 0) return -errno;
    int rc = emu_alloc(m->fd, len, &m->dev_addr);
    if (rc) return rc;
    m->len = len;
    m->win_len = len;
    m->win = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (m->win == MAP_FAILED) return -errno;
    return do_map(m->fd, m->dev_addr, len, m->win);
}
static void devmem_put(devmem_t *m)
{
    if (m->win && m->win != MAP_FAILED) munmap(m->win, m->win_len);
    if (m->fd > 0) close(m->fd);
    memset(m, 0, sizeof *m);
}

static long sysfs_num(const char *attr)
{
    char path[128], buf[64] = "";
    snprintf(path, sizeof path, "/sys/class/phxfs/phxfs_dev0/%s", attr);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? strtol(buf, NULL, 10) : -1;
}
static int sysfs_str(const char *attr, char *out, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/class/phxfs/phxfs_dev0/%s", attr);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0) return -1;
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
    return 0;
}

static ssize_t full_io(int fd, int wr, void *buf, size_t len, off_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = wr ? pwrite(fd, (char *)buf + done, len - done, off + done)
                       : pread(fd, (char *)buf + done, len - done, off + done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* ---- tests ---- */

static int t_info(void)
{
    int fd = dev_open();
    CHECK(fd >= 0, "open /dev/phxfs_dev0: %s", strerror(errno));
    struct phxfs_ioctl_info i;
    CHECK(info(fd, &i) == 0, "INFO: %s", strerror(errno));
    char bdf[32], mode[32], be[32];
    CHECK(sysfs_str("pci_bdf", bdf, sizeof bdf) == 0 && !strcmp(bdf, i.pci), "sysfs pci_bdf '%s' vs ioctl '%s'", bdf, i.pci);
    CHECK(sysfs_str("map_mode", mode, sizeof mode) == 0, "sysfs map_mode missing");
    CHECK(sysfs_str("backend", be, sizeof be) == 0 && !strcmp(be, "emu") && !strcmp(i.backend, "emu"), "backend %s/%s", be, i.backend);
    CHECK(sysfs_num("bar_size") == (long)i.bar_size && i.bar_size >= 64 * MiB, "bar_size sysfs %ld ioctl %llu", sysfs_num("bar_size"), (unsigned long long)i.bar_size);
    CHECK(i.page_size == 65536, "page size %llu", (unsigned long long)i.page_size);
    CHECK(sysfs_num("mapped_bytes") == 0, "mapped_bytes %ld at start", sysfs_num("mapped_bytes"));
    close(fd);
    return result(1, "%s %s bar=%lluMiB mode=%s page=%llu", i.backend, i.pci, (unsigned long long)i.bar_size >> 20, mode,
                  (unsigned long long)i.page_size);
}

/* O_DIRECT read of [off, off+len) of path into device memory, verified against the pattern */
static int t_read(const char *path, uint64_t len, uint64_t seed, uint64_t file_off, uint64_t pat_off)
{
    devmem_t m;
    int rc = devmem_get(&m, len);
    CHECK(rc == 0, "device memory: %s", strerror(-rc));
    CHECK(sysfs_num("mapped_bytes") >= (long)len, "mapped_bytes %ld after map", sysfs_num("mapped_bytes"));
    memset(m.win, 0xA5, len);
    int fd = open(path, O_RDONLY | O_DIRECT);
    CHECK(fd >= 0, "open %s O_DIRECT: %s", path, strerror(errno));
    ssize_t n = full_io(fd, 0, m.win, len, (off_t)file_off);
    CHECK(n == (ssize_t)len, "pread: %zd (%s)", n, n < 0 ? strerror((int)-n) : "short");
    long bad = pat_cmp(m.win, len, seed, pat_off);
    CHECK(bad < 0, "byte %ld differs", bad);
    close(fd);
    devmem_put(&m);
    return result(1, "%llu MiB from %s verified", (unsigned long long)len >> 20, path);
}

/* O_DIRECT write from device memory, read back O_DIRECT into host memory and compared; the
 * host compares the disk image again after the guest is gone */
static int t_write(const char *path, uint64_t len, uint64_t seed, uint64_t file_off, int create)
{
    devmem_t m;
    int rc = devmem_get(&m, len);
    CHECK(rc == 0, "device memory: %s", strerror(-rc));
    pat_fill(m.win, len, seed, 0);
    int fd = open(path, O_RDWR | O_DIRECT | (create ? O_CREAT | O_TRUNC : 0), 0644);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    ssize_t n = full_io(fd, 1, m.win, len, (off_t)file_off);
    CHECK(n == (ssize_t)len, "pwrite: %zd (%s)", n, n < 0 ? strerror((int)-n) : "short");
    CHECK(fsync(fd) == 0, "fsync: %s", strerror(errno));
    void *h;
    CHECK(posix_memalign(&h, 4096, len) == 0, "no memory");
    n = full_io(fd, 0, h, len, (off_t)file_off);
    CHECK(n == (ssize_t)len, "read back: %zd", n);
    long bad = pat_cmp(h, len, seed, 0);
    CHECK(bad < 0, "read back: byte %ld differs", bad);
    free(h);
    close(fd);
    devmem_put(&m);
    return result(1, "%llu MiB to %s verified", (unsigned long long)len >> 20, path);
}

static int t_uring(const char *path, uint64_t len, uint64_t seed, uint64_t file_off)
{
    devmem_t m;
    int rc = devmem_get(&m, len);
    CHECK(rc == 0, "device memory: %s", strerror(-rc));
    memset(m.win, 0, len);
    int fd = open(path, O_RDONLY | O_DIRECT);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    struct io_uring ring;
    CHECK(io_uring_queue_init(64, &ring, 0) == 0, "io_uring_queue_init failed");
    const size_t chunk = 1 * MiB;
    unsigned nreq = (unsigned)(len / chunk);
    for (unsigned i = 0; i < nreq; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        io_uring_prep_read(sqe, fd, m.win + i * chunk, chunk, file_off + i * chunk);
        sqe->user_data = i;
    }
    CHECK(io_uring_submit(&ring) == (int)nreq, "submit");
    for (unsigned i = 0; i < nreq; i++) {
        struct io_uring_cqe *cqe;
        CHECK(io_uring_wait_cqe(&ring, &cqe) == 0, "wait_cqe");
        CHECK(cqe->res == (int)chunk, "request %llu: %d", (unsigned long long)cqe->user_data, cqe->res);
        io_uring_cqe_seen(&ring, cqe);
    }
    long bad = pat_cmp(m.win, len, seed, 0);
    CHECK(bad < 0, "byte %ld differs", bad);
    io_uring_queue_exit(&ring);
    close(fd);
    devmem_put(&m);
    return result(1, "%u io_uring reads of 1 MiB verified", nreq);
}

/* io_uring fixed buffers in device memory: registering pins the pages long-term, which stock
 * 6.1 refuses for ZONE_DEVICE pages (EOPNOTSUPP) and 6.12 accepts; both outcomes are checked. */
static int t_uring_fixed(const char *path, uint64_t len, uint64_t seed)
{
    struct utsname u;
    uname(&u);
    int old = !strncmp(u.release, "6.1.", 4);
    devmem_t m;
    int rc = devmem_get(&m, len);
    CHECK(rc == 0, "device memory: %s", strerror(-rc));
    memset(m.win, 0, len);
    int fd = open(path, O_RDONLY | O_DIRECT);
    struct io_uring ring;
    CHECK(fd >= 0 && io_uring_queue_init(8, &ring, 0) == 0, "setup");
    struct iovec iov = {m.win, len};
    rc = io_uring_register_buffers(&ring, &iov, 1);
    if (old) {
        CHECK(rc == -EOPNOTSUPP, "6.1: registering device memory as a fixed buffer gave %d, expected EOPNOTSUPP", rc);
        io_uring_queue_exit(&ring);
        close(fd);
        devmem_put(&m);
        return result(1, "%s refuses device memory as a fixed buffer (EOPNOTSUPP); plain reads are used there", u.release);
    }
    CHECK(rc == 0, "%s: register_buffers: %s", u.release, strerror(-rc));
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read_fixed(sqe, fd, m.win, (unsigned)len, 0, 0);
    io_uring_submit(&ring);
    struct io_uring_cqe *cqe;
    CHECK(io_uring_wait_cqe(&ring, &cqe) == 0 && cqe->res == (int)len, "READ_FIXED: %d", cqe->res);
    io_uring_cqe_seen(&ring, cqe);
    long bad = pat_cmp(m.win, len, seed, 0);
    CHECK(bad < 0, "byte %ld differs", bad);
    io_uring_unregister_buffers(&ring);
    io_uring_queue_exit(&ring);
    close(fd);
    devmem_put(&m);
    return result(1, "%s: device memory registered as a fixed buffer, READ_FIXED of %llu MiB verified", u.release,
                  (unsigned long long)len >> 20);
}

/* Freeing device memory that is mapped: the backend revokes the pin, the module tears the
 * mapping down (deferred, without deadlock); I/O into it then fails instead of reaching memory
 * that is no longer the caller's. */
static int t_revoke(const char *path)
{
    long base = sysfs_num("mapped_bytes");
    devmem_t m;
    int rc = devmem_get(&m, 4 * MiB);
    CHECK(rc == 0, "device memory: %s", strerror(-rc));
    int fd = open(path, O_RDONLY | O_DIRECT);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    CHECK(full_io(fd, 0, m.win, 4 * MiB, 0) == (ssize_t)(4 * MiB), "read before revoke failed");
    CHECK(emu_free(m.fd, m.dev_addr) == 0, "EMU_FREE: %s", strerror(errno));
    for (int i = 0; i < 200 && sysfs_num("mapped_bytes") != base; i++) usleep(10000);
    CHECK(sysfs_num("mapped_bytes") == base, "mapped_bytes %ld after revoke, %ld before", sysfs_num("mapped_bytes"), base);
    /* the zap runs from a workqueue: give it a moment, then the pages must be gone */
    ssize_t n = 0;
    for (int i = 0; i < 200; i++) {
        n = pread(fd, m.win, 65536, 0);
        if (n < 0) break;
        usleep(10000);
    }
    CHECK(n < 0 && errno == EFAULT, "pread into a revoked mapping: %zd (%s), want EFAULT", n, n < 0 ? strerror(errno) : "succeeded");
    rc = do_unmap(m.fd, m.win, 4 * MiB);
    CHECK(rc == 0, "UNMAP after revoke: %s", strerror(-rc));
    rc = do_unmap(m.fd, m.win, 4 * MiB);
    CHECK(rc == -ENOENT, "second UNMAP: %s, want ENOENT", strerror(-rc));
    close(fd);
    devmem_put(&m);
    return result(1, "free of mapped memory revoked the mapping; I/O then EFAULT; UNMAP ok");
}

/* Revoke while another thread is in the middle of O_DIRECT reads into the mapping: the reads
 * start failing (EFAULT), nothing hangs (the revoke path takes no lock the I/O path holds). */
struct busy { int fd; char *win; volatile int stop; long ok, failed; };
static void *busy_reader(void *arg)
{
    struct busy *b = arg;
    while (!b->stop) {
        ssize_t n = pread(b->fd, b->win, 4 * MiB, 0);
        if (n == (ssize_t)(4 * MiB)) b->ok++;
        else if (n < 0 && errno == EFAULT) { b->failed++; break; }
        else break;
    }
    return NULL;
}

static int t_revoke_busy(const char *path)
{
    devmem_t m;
    int rc = devmem_get(&m, 4 * MiB);
    CHECK(rc == 0, "device memory: %s", strerror(-rc));
    struct busy b = {open(path, O_RDONLY | O_DIRECT), m.win, 0, 0, 0};
    CHECK(b.fd >= 0, "open %s: %s", path, strerror(errno));
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, busy_reader, &b);
    usleep(200000);
    CHECK(emu_free(m.fd, m.dev_addr) == 0, "EMU_FREE under I/O: %s", strerror(errno));
    /* the readers must see the revoke: give them 10 s, then call it a hang */
    for (int i = 0; i < 1000 && b.failed < 2; i++) usleep(10000);
    b.stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK(b.failed == 2, "readers after revoke: %ld failed with EFAULT of 2 (%ld reads ok before)", b.failed, b.ok);
    CHECK(do_unmap(m.fd, m.win, 4 * MiB) == 0, "UNMAP after revoke");
    close(b.fd);
    devmem_put(&m);
    return result(1, "revoked under 2 busy readers after %ld reads; both then got EFAULT", b.ok);
}

/* A child reads in a loop into device memory and is SIGKILLed mid-I/O: nothing may stay
 * mapped or pinned (the caller unloads the module afterwards). */
static int t_kill(const char *path)
{
    long base = sysfs_num("mapped_bytes");
    int pipefd[2];
    CHECK(pipe(pipefd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        devmem_t m;
        if (devmem_get(&m, 16 * MiB)) _exit(2);
        int fd = open(path, O_RDONLY | O_DIRECT);
        struct io_uring ring;
        io_uring_queue_init(32, &ring, 0);
        if (write(pipefd[1], "x", 1) != 1) _exit(3);
        for (;;) {
            for (int i = 0; i < 16; i++) {
                struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
                io_uring_prep_read(sqe, fd, m.win + i * MiB, MiB, (off_t)(i * MiB));
            }
            io_uring_submit(&ring);
            full_io(fd, 0, m.win, 8 * MiB, 0);
            struct io_uring_cqe *cqe;
            for (int i = 0; i < 16; i++) { io_uring_wait_cqe(&ring, &cqe); io_uring_cqe_seen(&ring, cqe); }
        }
    }
    char c;
    CHECK(read(pipefd[0], &c, 1) == 1, "child did not start");
    usleep(300000);
    CHECK(sysfs_num("mapped_bytes") >= base + (long)(16 * MiB), "child's mapping not visible");
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st), "child was not killed (status %d)", st);
    for (int i = 0; i < 300 && (sysfs_num("mapped_bytes") != base || sysfs_num("maps") != 0); i++) usleep(10000);
    CHECK(sysfs_num("mapped_bytes") == base && sysfs_num("maps") == 0, "after kill: mapped_bytes %ld maps %ld", sysfs_num("mapped_bytes"), sysfs_num("maps"));
    return result(1, "child killed mid-I/O; its 16 MiB mapping released");
}

static sigjmp_buf segv_jmp;
static void on_fault(int sig) { siglongjmp(segv_jmp, sig); }

/* Hostile arguments: each must fail with the expected errno, never oops. */
static int t_hostile(void)
{
    int fd = dev_open(), fd2 = dev_open();
    CHECK(fd >= 0 && fd2 >= 0, "open");
    uint64_t dev;
    CHECK(emu_alloc(fd, 1 * MiB, &dev) == 0, "EMU_ALLOC");
    const size_t wl = 2 * MiB;
    char *w = mmap(NULL, wl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *w2 = mmap(NULL, wl, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
    CHECK(w != MAP_FAILED && w2 != MAP_FAILED, "mmap: %s", strerror(errno));
    char *anon = mmap(NULL, wl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int fails = 0, n = 0;
    char why[1024] = "";
#define EXPECT(expr, err) do { int r_ = (expr); n++; if (r_ != -(err)) { fails++; \
        snprintf(why + strlen(why), sizeof why - strlen(why), " [%s: got %d want %d]", #expr, r_, -(err)); } } while (0)
    EXPECT(do_map(fd, dev, 0, w), EINVAL);                          /* zero length */
    EXPECT(do_map(fd, dev + 4096, 65536, w), EINVAL);               /* device address unaligned */
    EXPECT(do_map(fd, dev, 65536 + 4096, w), EINVAL);               /* length unaligned */
    EXPECT(do_map(fd, dev, 65536, w + 100), EINVAL);                /* host address unaligned */
    EXPECT(do_map(fd, 0xffffffffffff0000ull, 0x20000, w), EOVERFLOW); /* device range wraps */
    EXPECT(do_map(fd, dev, 0x10000, (void *)0xffffffffffff0000ull), EOVERFLOW); /* host wraps */
    EXPECT(do_map(fd, dev, 1ull << 40, w), E2BIG);                  /* more than the BAR */
    EXPECT(do_map(fd, dev, 65536, (void *)0x1000), EFAULT);         /* nothing mapped there */
    EXPECT(do_map(fd, dev, 65536, anon), EINVAL);                   /* not a phxfs window */
    EXPECT(do_map(fd, dev, 65536, w2), EINVAL);                     /* another file's window */
    EXPECT(do_map(fd, dev, 4 * MiB, w), EFAULT);                    /* runs past the window */
    EXPECT(do_map(fd, dev + 2 * MiB, 65536, w), EINVAL);            /* device memory not allocated */
    EXPECT(do_map(fd, 65536, 65536, w), EINVAL);                    /* below the device's addresses */
    EXPECT(do_map(fd, dev, 2 * MiB, w), EINVAL);                    /* more than the allocation */
    {
        struct phxfs_ioctl_map m = {sizeof m - 8, PHXFS_UAPI_VERSION, dev, 65536, (uint64_t)(uintptr_t)w, 0, 0};
        EXPECT(ioctl(fd, PHXFS_IOC_MAP, &m) < 0 ? -errno : 0, EINVAL); /* wrong struct size */
        m.size = sizeof m; m.version = 99;
        EXPECT(ioctl(fd, PHXFS_IOC_MAP, &m) < 0 ? -errno : 0, EPROTO);   /* newer version */
        m.version = PHXFS_UAPI_VERSION; m.flags = 0x80;
        EXPECT(ioctl(fd, PHXFS_IOC_MAP, &m) < 0 ? -errno : 0, EINVAL);   /* unknown flag */
    }
    EXPECT(ioctl(fd, PHXFS_IOC_MAP, NULL) < 0 ? -errno : 0, EFAULT);         /* NULL argument */
    EXPECT(ioctl(fd, PHXFS_IOC_MAP, (void *)1) < 0 ? -errno : 0, EFAULT);    /* wild argument */
    EXPECT(ioctl(fd, _IO(PHXFS_IOC_MAGIC, 77), 0) < 0 ? -errno : 0, ENOTTY);   /* unknown command */
    EXPECT(do_unmap(fd, w, 65536), ENOENT);                         /* nothing mapped */
    EXPECT(emu_free(fd, dev + 65536), EINVAL);                      /* not an allocation start */
    EXPECT(emu_free(fd2, dev), EINVAL);                             /* another file's allocation */
    {
        uint64_t x;
        EXPECT(emu_alloc(fd, 0, &x), EINVAL);
        EXPECT(emu_alloc(fd, 1ull << 50, &x), EINVAL);
    }
    /* a good map, then overlap, partial munmap and mremap are refused */
    EXPECT(do_map(fd, dev, 1 * MiB, w), 0);
    EXPECT(do_map(fd, dev, 65536, w + 65536), EBUSY);
    EXPECT(munmap(w + 65536, 65536) < 0 ? -errno : 0, EINVAL);
    EXPECT(mremap(w, wl, wl * 2, MREMAP_MAYMOVE) == MAP_FAILED ? -errno : 0, EFAULT);
    /* another process's window: not inherited (VM_DONTCOPY), so not the child's to map */
    pid_t pid = fork();
    if (pid == 0) _exit(do_map(fd, dev, 65536, w + MiB) == -EFAULT ? 0 : 1);
    int st;
    waitpid(pid, &st, 0);
    n++;
    if (!WIFEXITED(st) || WEXITSTATUS(st)) { fails++; strcat(why, " [child mapped the parent's window]"); }
    /* touching the unmapped half of the window is a bus error, not an oops */
    struct sigaction sa = {0}, old_bus, old_segv;
    sa.sa_handler = on_fault;
    sigaction(SIGBUS, &sa, &old_bus);
    sigaction(SIGSEGV, &sa, &old_segv);
    int sig = sigsetjmp(segv_jmp, 1);
    if (!sig) {
        volatile char c = w[MiB + 5];
        (void)c;
    }
    sigaction(SIGBUS, &old_bus, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
    n++;
    if (sig != SIGBUS) { fails++; strcat(why, " [touching an unmapped part did not raise SIGBUS]"); }
    EXPECT(do_unmap(fd, w, 65536), ENOENT);                         /* not the mapped length */
    EXPECT(do_unmap(fd, w, 1 * MiB), 0);
    munmap(w, wl);
    munmap(w2, wl);
    munmap(anon, wl);
    close(fd);
    close(fd2);
    CHECK(sysfs_num("mapped_bytes") == 0, "mapped_bytes %ld after", sysfs_num("mapped_bytes"));
    return result(fails == 0, "%d/%d hostile calls rejected as expected%s", n - fails, n, why);
}

static long mem_available_kb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &v) == 1) break;
    if (f) fclose(f);
    return v;
}

static int t_leak(int iters)
{
    int fd = dev_open();
    CHECK(fd >= 0, "open");
    uint64_t dev;
    CHECK(emu_alloc(fd, 4 * MiB, &dev) == 0, "EMU_ALLOC");
    long before = 0;
    for (int i = 0; i < iters; i++) {
        if (i == iters / 10) before = mem_available_kb(); /* after caches warmed */
        char *w = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(w != MAP_FAILED, "mmap %d: %s", i, strerror(errno));
        int rc = do_map(fd, dev, 4 * MiB, w);
        CHECK(rc == 0, "map %d: %s", i, strerror(-rc));
        w[i % (4 * MiB)] = 1;
        if (i % 2) {
            rc = do_unmap(fd, w, 4 * MiB);
            CHECK(rc == 0, "unmap %d: %s", i, strerror(-rc));
        }
        munmap(w, 4 * MiB); /* odd iterations: release by VMA close */
    }
    long after = mem_available_kb();
    close(fd);
    CHECK(sysfs_num("mapped_bytes") == 0 && sysfs_num("maps") == 0, "mapped_bytes %ld maps %ld", sysfs_num("mapped_bytes"), sysfs_num("maps"));
    CHECK(before - after < 2048, "MemAvailable fell by %ld KiB over %d map/unmap", before - after, iters);
    return result(1, "%d map/unmap cycles (4 MiB), MemAvailable %+ld KiB", iters, after - before);
}

/* staging mode: mapping beyond staging_mb per device is refused, within it works */
static int t_staging_limit(long staging_mb)
{
    char mode[32];
    CHECK(sysfs_str("map_mode", mode, sizeof mode) == 0 && !strcmp(mode, "staging"), "map_mode %s", mode);
    int fd = dev_open();
    uint64_t dev;
    uint64_t lim = (uint64_t)staging_mb * MiB;
    CHECK(emu_alloc(fd, 2 * lim, &dev) == 0, "EMU_ALLOC");
    char *w = mmap(NULL, 2 * lim, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int rc = do_map(fd, dev, 2 * lim, w);
    CHECK(rc == -ENOSPC, "map of twice the staging area: %s, want ENOSPC", strerror(-rc));
    rc = do_map(fd, dev, lim, w);
    CHECK(rc == 0, "map of the staging area: %s", strerror(-rc));
    rc = do_map(fd, dev + lim, 65536, w + lim);
    CHECK(rc == -ENOSPC, "map past the staging area: %s", strerror(-rc));
    munmap(w, 2 * lim);
    close(fd);
    return result(1, "staging area of %ld MiB enforced", staging_mb);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: see the comment at the top of phxfs_test.c\n"); return 2; }
    const char *cmd = argv[1];
    test_name = argc > 2 && argv[argc - 1][0] == '@' ? argv[argc - 1] + 1 : cmd;
    if (argc > 2 && argv[argc - 1][0] == '@') argc--;
#define A(i) (argc > (i) ? argv[i] : "0")
#define U(i) strtoull(A(i), NULL, 0)
    if (!strcmp(cmd, "gen") || !strcmp(cmd, "check")) {
        int wr = !strcmp(cmd, "gen");
        int fd = open(argv[2], wr ? O_RDWR | O_CREAT : O_RDONLY, 0644);
        if (fd < 0) { perror(argv[2]); return 1; }
        uint64_t len = U(3), seed = U(4), off = U(5);
        char *b = malloc(MiB);
        for (uint64_t p = 0; p < len; p += MiB) {
            size_t k = len - p < MiB ? len - p : MiB;
            if (wr) {
                pat_fill(b, k, seed, p);
                if (full_io(fd, 1, b, k, (off_t)(off + p)) != (ssize_t)k) { perror("write"); return 1; }
            } else {
                if (full_io(fd, 0, b, k, (off_t)(off + p)) != (ssize_t)k) return result(0, "%s: short read at %llu", argv[2], (unsigned long long)p);
                long bad = pat_cmp(b, k, seed, p);
                if (bad >= 0) return result(0, "%s: byte %llu differs", argv[2], (unsigned long long)(p + bad));
            }
        }
        close(fd);
        return wr ? 0 : result(1, "%s: %llu bytes match", argv[2], (unsigned long long)len);
    }
    if (!strcmp(cmd, "info")) return t_info();
    if (!strcmp(cmd, "read")) return t_read(A(2), U(3), U(4), U(5), U(6));
    if (!strcmp(cmd, "write")) return t_write(A(2), U(3), U(4), U(5), (int)U(6));
    if (!strcmp(cmd, "uring")) return t_uring(A(2), U(3), U(4), U(5));
    if (!strcmp(cmd, "uring-fixed")) return t_uring_fixed(A(2), U(3), U(4));
    if (!strcmp(cmd, "revoke")) return t_revoke(A(2));
    if (!strcmp(cmd, "revoke-busy")) return t_revoke_busy(A(2));
    if (!strcmp(cmd, "kill")) return t_kill(A(2));
    if (!strcmp(cmd, "hostile")) return t_hostile();
    if (!strcmp(cmd, "leak")) return t_leak((int)U(2));
    if (!strcmp(cmd, "staging-limit")) return t_staging_limit((long)U(2));
    fprintf(stderr, "unknown test %s\n", cmd);
    return 2;
}
