/* Hostile arguments to every public cuFile call (security-1): a seeded, bounded
 * fuzz loop plus targeted cases. Every call must return cuFile's documented
 * error (a status, or a negative cuFileRead/Write result) and never crash; run
 * under ASan+UBSan and TSan by scripts/test-all.sh, so a use-after-free, an
 * overflow or a race fails the test even where the return value looks right.
 *
 * Pointers that the library would have to dereference are never dangling here
 * (cuFile cannot tell a live host buffer from a freed one either): hostile buffer
 * arguments are NULL, unmapped (registration must refuse them), never registered,
 * deregistered, or a range whose end overflows. Handles are made-up values,
 * deregistered handles, handles of an earlier driver session and handles whose
 * fd was closed and reused by another file.
 *
 * PHXFILE_FUZZ_SEED (default 1) and PHXFILE_FUZZ_ITERS (default 20000) pick the
 * run; the loop also stops after PHXFILE_FUZZ_SECONDS (default 8). A failure
 * prints the seed and iteration. */
#include "harness.h"
#include "cufile.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FSIZE (256u << 10)
#define BUFSZ (64u << 10)
#define ERR_LO CU_FILE_DRIVER_NOT_INITIALIZED
#define ERR_HI CU_FILE_IO_MAX_ERROR

static uint64_t rng_state;
static uint64_t rnd(void)
{
    /* splitmix64: deterministic for a seed */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

static unsigned long env_ul(const char *name, unsigned long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoul(v, NULL, 0) : dflt;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int is_status(int e) { return e == CU_FILE_SUCCESS || (e >= ERR_LO && e <= ERR_HI); }

static CUfileError_t reg_fd(int fd, CUfileHandle_t *fh)
{
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    return cuFileHandleRegister(fh, &d);
}

static CUfileHandle_t reg(int fd)
{
    CUfileHandle_t fh = NULL;
    CHECK_ST(reg_fd(fd, &fh), CU_FILE_SUCCESS);
    return fh;
}

/* An address range that is certainly not mapped: above the 47-bit user address space, which
 * only an mmap with an explicit hint there can reach (none does here). A range unmapped with
 * munmap is no such thing: the next mmap (the fake CUDA driver's first use, TSan) takes it. */
static void *unmapped(size_t len)
{
    (void)len;
    return (void *)(uintptr_t)((1ull << 47) + (rnd() % 1024) * 4096);
}

/* ---------------------------------------------------------------- targeted */

static int t_null_args(void)
{
    CUfileHandle_t fh = NULL;
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    CHECK_ST(cuFileHandleRegister(NULL, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileHandleRegister(&fh, NULL), CU_FILE_INVALID_VALUE);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = 0;
    CHECK_ST(cuFileHandleRegister(NULL, &d), CU_FILE_INVALID_VALUE);
    d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS; /* fs_ops NULL */
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_VALUE);
    d.type = (CUfileFileHandleType)12345;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_VALUE);
    cuFileHandleDeregister(NULL);
    CHECK_ST(cuFileBufRegister(NULL, 4096, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufDeregister(NULL), CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(NULL, NULL, 1, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileWrite(NULL, NULL, 1, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_ST(cuFileDriverGetProperties(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetVersion(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetStatsLevel(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, NULL, 16), CU_FILE_INVALID_VALUE);
    char s[4];
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, -5), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, NULL), CU_FILE_INVALID_VALUE);
    size_t lo, hi;
    CHECK_ST(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, NULL, &hi), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &lo, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(NULL, 4), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSubmit(NULL, 1, NULL, 0), CU_FILE_INVALID_VALUE);
    unsigned nr = 1;
    CHECK_ST(cuFileBatchIOGetStatus(NULL, 0, &nr, NULL, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOCancel(NULL), CU_FILE_INVALID_VALUE);
    cuFileBatchIODestroy(NULL);
    CHECK_ST(cuFileStreamDeregister((CUstream)(uintptr_t)0x1234), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileStreamRegister(NULL, ~0u), CU_FILE_INVALID_VALUE);
    size_t sz = 16;
    off_t fo = 0, bo = 0;
    ssize_t done = 7;
    char b[16];
    CHECK_ST(cuFileReadAsync(NULL, b, &sz, &fo, &bo, &done, NULL), CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_ST(cuFileWriteAsync(NULL, b, &sz, &fo, &bo, &done, NULL), CU_FILE_HANDLE_NOT_REGISTERED);

    /* a live handle with NULL buffer / cells */
    char *path = th_make_file(FSIZE, 3);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    fh = reg(fd);
    CHECK_EQ(cuFileRead(fh, NULL, 16, 0, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileWrite(fh, NULL, 16, 0, 0), -CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, NULL, &sz, &fo, &bo, &done, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, b, NULL, &fo, &bo, &done, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, b, &sz, NULL, &bo, &done, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, b, &sz, &fo, NULL, &done, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, b, &sz, &fo, &bo, NULL, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileWriteAsync(fh, b, &sz, &fo, &bo, NULL, NULL), CU_FILE_INVALID_VALUE);
    /* registering the same file twice */
    CUfileHandle_t fh2 = NULL;
    CHECK_ST(reg_fd(fd, &fh2), CU_FILE_HANDLE_ALREADY_REGISTERED);
    cuFileHandleDeregister(fh);
    close(fd);
    unlink(path);
    free(path);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS); /* the implicit open */
    return th_failures;
}

static int t_bad_fds(void)
{
    CUfileHandle_t fh = NULL;
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(reg_fd(-1, &fh), CU_FILE_INVALID_VALUE);
    CHECK_ST(reg_fd(INT_MIN, &fh), CU_FILE_INVALID_VALUE);
    CHECK_ST(reg_fd(INT_MAX, &fh), CU_FILE_INVALID_VALUE);
    CHECK_ST(reg_fd(1 << 20, &fh), CU_FILE_INVALID_VALUE);
    int dfd = open("/tmp", O_RDONLY | O_DIRECTORY);
    CHECK_ST(reg_fd(dfd, &fh), CU_FILE_INVALID_FILE_TYPE);
    close(dfd);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_ST(reg_fd(p[0], &fh), CU_FILE_INVALID_FILE_TYPE);
    close(p[0]);
    close(p[1]);
    char *path = th_make_file(4096, 1);
    int pfd = open(path, O_PATH);
    CHECK_ST(reg_fd(pfd, &fh), CU_FILE_INVALID_FILE_OPEN_FLAG);
    close(pfd);
    int afd = open(path, O_WRONLY | O_APPEND);
    CHECK_ST(reg_fd(afd, &fh), CU_FILE_INVALID_FILE_OPEN_FLAG);
    close(afd);
    /* a read-only fd: registration works, writes fail with an errno-style -1 and change nothing */
    int rfd = open(path, O_RDONLY);
    fh = reg(rfd);
    char buf[4096];
    memset(buf, 0x5a, sizeof buf);
    errno = 0;
    CHECK_EQ(cuFileWrite(fh, buf, sizeof buf, 0, 0), -1);
    CHECK_EQ(errno, EBADF);
    unsigned char want[4096];
    th_fill(want, sizeof want, 1, 0);
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    CHECK(memcmp(buf, want, sizeof buf) == 0);
    cuFileHandleDeregister(fh);
    close(rfd);
    unlink(path);
    free(path);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

/* deregistered handles, handles of an earlier session, double deregistration */
static int t_stale_handles(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    char *path = th_make_file(FSIZE, 5);
    int fd = open(path, O_RDWR);
    char buf[4096];
    CUfileHandle_t fh = reg(fd);
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    cuFileHandleDeregister(fh);
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileWrite(fh, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    cuFileHandleDeregister(fh); /* a second time: a warning, nothing else */
    /* the slot is reused by the next registration: the old handle must not name the new one */
    CUfileHandle_t fh2 = reg(fd);
    CHECK(fh2 != fh);
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileRead(fh2, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    /* a handle of a closed session: dead, also after a new session reuses its slot */
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh2, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh2, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CUfileHandle_t fh3 = reg(fd);
    CHECK(fh3 != fh2);
    CHECK_EQ(cuFileRead(fh2, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    cuFileHandleDeregister(fh2);
    CHECK_EQ(cuFileRead(fh3, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf); /* untouched by fh2's deregistration */
    /* made-up handles: small integers, a stack address, all bits */
    uintptr_t fake[] = {1, 2, 0xfffff, 0x100000, (uintptr_t)buf, (uintptr_t)&fh3, UINTPTR_MAX, (uintptr_t)fh3 + 1,
                        (uintptr_t)fh3 ^ ((uintptr_t)1 << 40)};
    for (size_t i = 0; i < sizeof fake / sizeof *fake; i++) {
        CHECK_EQ(cuFileRead((CUfileHandle_t)fake[i], buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
        cuFileHandleDeregister((CUfileHandle_t)fake[i]);
    }
    CHECK_EQ(cuFileRead(fh3, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    cuFileHandleDeregister(fh3);
    close(fd);
    unlink(path);
    free(path);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    /* driver closed: a close more is refused, nothing crashes */
    CHECK_ST(cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);
    return th_failures;
}

/* An fd closed without deregistration and reused by another file: cuFile keeps the fd
 * number, so the old handle reads the new file (the OS's fd semantics, as in cuFile); when
 * the new file is registered the stale handle is dropped. Never a crash. */
static int t_fd_reuse(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    char *pa = th_make_file(FSIZE, 11), *pb = th_make_file(FSIZE, 12);
    unsigned char wa[4096], wb[4096], buf[4096];
    th_fill(wa, sizeof wa, 11, 0);
    th_fill(wb, sizeof wb, 12, 0);
    int fd = open(pa, O_RDONLY);
    CUfileHandle_t fh = reg(fd);
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    CHECK(memcmp(buf, wa, sizeof buf) == 0);
    close(fd);
    /* closed, not reused: the file system's EBADF */
    errno = 0;
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), -1);
    CHECK_EQ(errno, EBADF);
    int fd2 = open(pb, O_RDONLY);
    CHECK_EQ(fd2, fd);
    /* reused by file B: the handle reads B */
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    CHECK(memcmp(buf, wb, sizeof buf) == 0);
    /* registering B drops A's handle */
    CUfileHandle_t fh2 = reg(fd2);
    CHECK(fh2 != fh);
    CHECK_EQ(cuFileRead(fh, buf, sizeof buf, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileRead(fh2, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    CHECK(memcmp(buf, wb, sizeof buf) == 0);
    cuFileHandleDeregister(fh); /* stale: nothing happens to fh2 */
    CHECK_EQ(cuFileRead(fh2, buf, sizeof buf, 0, 0), (ssize_t)sizeof buf);
    /* reused by a pipe (not a file cuFile takes): I/O fails, no crash */
    cuFileHandleDeregister(fh2);
    fh2 = reg(fd2);
    close(fd2);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    if (p[0] == fd2) {
        ssize_t n = cuFileRead(fh2, buf, sizeof buf, 0, 0);
        CHECK(n < 0); /* pread on a pipe: ESPIPE */
    }
    close(p[0]);
    close(p[1]);
    cuFileHandleDeregister(fh2);
    unlink(pa);
    unlink(pb);
    free(pa);
    free(pb);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

static int t_buffers(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    char *b = aligned_alloc(4096, BUFSZ);
    CHECK_ST(cuFileBufRegister(b, 0, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister(b, BUFSZ, 0x7ffffff0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister(b, SIZE_MAX, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister((void *)(UINTPTR_MAX - 4095), 8192, 0), CU_FILE_INVALID_VALUE);
    void *hole = unmapped(1 << 20);
    CUfileError_t st = cuFileBufRegister(hole, 1 << 20, 0);
    if (st.err != CU_FILE_INVALID_VALUE && st.err != CU_FILE_CUDA_POINTER_RANGE_ERROR) fprintf(stderr, "unmapped %p: %d\n", hole, st.err);
    CHECK(st.err == CU_FILE_INVALID_VALUE || st.err == CU_FILE_CUDA_POINTER_RANGE_ERROR);
    /* mapped start, unmapped end */
    st = cuFileBufRegister(b, (size_t)1 << 46, 0);
    CHECK(st.err == CU_FILE_INVALID_VALUE || st.err == CU_FILE_CUDA_POINTER_RANGE_ERROR);
    CHECK_ST(cuFileBufRegister(b, BUFSZ, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(b, BUFSZ, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK_ST(cuFileBufRegister(b + 4096, 4096, 0), CU_FILE_SUCCESS); /* nested: its own registration */
    CHECK_ST(cuFileBufDeregister(b + 4096), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(b + 4096), CU_FILE_MEMORY_NOT_REGISTERED);
    CHECK_ST(cuFileBufDeregister(b), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(b), CU_FILE_MEMORY_NOT_REGISTERED); /* twice */
    /* registered, unmapped without deregistration, deregistered: only the address is looked up */
    void *c = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(c != MAP_FAILED);
    CHECK_ST(cuFileBufRegister(c, 8192, 0), CU_FILE_SUCCESS);
    munmap(c, 8192);
    CHECK_ST(cuFileBufDeregister(c), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(c), CU_FILE_MEMORY_NOT_REGISTERED);
    /* a registration of a closed session is gone */
    CHECK_ST(cuFileBufRegister(b, BUFSZ, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(b), CU_FILE_MEMORY_NOT_REGISTERED);
    free(b);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

/* sizes and offsets: overflowing ones are refused, unaligned ones work exactly */
static int t_ranges(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    char *path = th_make_file(FSIZE, 21);
    int fd = open(path, O_RDWR);
    CUfileHandle_t fh = reg(fd);
    unsigned char *b = aligned_alloc(4096, BUFSZ), want[8192];
    const off_t big = (off_t)INT64_MAX;
    CHECK_EQ(cuFileRead(fh, b, 16, -1, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, 16, 0, -1), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, 16, INT64_MIN, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, 16, 0, INT64_MIN), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, SIZE_MAX, 0, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, (size_t)SSIZE_MAX + 1, 0, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, 16, big - 8, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, b, 16, 0, big - 8), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileWrite(fh, b, 16, big - 8, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileWrite(fh, b, 16, 0, big - 8), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileWrite(fh, b, SIZE_MAX, 0, 0), -CU_FILE_INVALID_VALUE);
    /* buffer end wraps the address space */
    CHECK_EQ(cuFileRead(fh, b, 16, 0, (off_t)(UINTPTR_MAX - (uintptr_t)b)), -CU_FILE_INVALID_VALUE);
    /* the same through cuFileReadAsync's late-bound cells, where the host connector runs the
     * read at enqueue: a buffer offset whose end overflows went to libphoenix unchecked (and
     * its size sized a task list); refused now, *done says so, the buffer is untouched */
    const char *conn = getenv("PHX_CONNECTOR");
    if (conn && !strcmp(conn, "host")) {
        size_t sz = 16;
        off_t fo = 0, bo = big - 8;
        ssize_t done = 0;
        memset(b, 0x77, 64);
        CHECK_ST(cuFileReadAsync(fh, b, &sz, &fo, &bo, &done, NULL), CU_FILE_SUCCESS);
        CHECK(done < 0);
        sz = (size_t)1 << 62;
        bo = (off_t)((uint64_t)big - ((uint64_t)1 << 62) + 1);
        CHECK_ST(cuFileReadAsync(fh, b, &sz, &fo, &bo, &done, NULL), CU_FILE_SUCCESS);
        CHECK(done < 0);
        sz = 16;
        bo = (off_t)(UINTPTR_MAX - (uintptr_t)b);
        CHECK_ST(cuFileReadAsync(fh, b, &sz, &fo, &bo, &done, NULL), CU_FILE_SUCCESS);
        CHECK(done < 0);
        CHECK_EQ(b[0], 0x77);
        CHECK_EQ(b[63], 0x77);
    }
    /* the file offset at the edge of off_t with nothing to move: 0, nothing touched */
    CHECK_EQ(cuFileRead(fh, b, 0, big, 0), 0);
    /* past the end of the file: 0 */
    CHECK_EQ(cuFileRead(fh, b, 16, (off_t)FSIZE + 12345, 0), 0);
    /* the largest file offset the kernel takes, minus a little: 0 bytes or an errno -1 */
    ssize_t n = cuFileRead(fh, b, 16, big - 16, 0);
    CHECK(n == 0 || n == -1);
    /* unaligned reads straddling the end of file */
    memset(b, 0, BUFSZ);
    CHECK_EQ(cuFileRead(fh, b, 8192, (off_t)FSIZE - 1001, 7), 1001);
    th_fill(want, 1001, 21, FSIZE - 1001);
    CHECK(memcmp(b + 7, want, 1001) == 0);
    /* unaligned write and read back, neighbours untouched */
    th_fill(b, 3333, 99, 0);
    CHECK_EQ(cuFileWrite(fh, b, 3333, 4097, 0), 3333);
    memset(b, 0, BUFSZ);
    CHECK_EQ(cuFileRead(fh, b, 3335, 4096, 3), 3335);
    th_fill(want, 1, 21, 4096);
    CHECK_EQ(b[3], want[0]);
    th_fill(want, 3333, 99, 0);
    CHECK(memcmp(b + 4, want, 3333) == 0);
    th_fill(want, 1, 21, 4097 + 3333);
    CHECK_EQ(b[3 + 3334], want[0]);
    CHECK_EQ(b[0], 0);
    CHECK_EQ(b[3 + 3335], 0);
    cuFileHandleDeregister(fh);
    close(fd);
    unlink(path);
    free(path);
    free(b);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

static int t_batch(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CUfileBatchHandle_t bh = NULL, bh2 = NULL;
    CHECK_ST(cuFileBatchIOSetUp(&bh, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(&bh, UINT_MAX), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(&bh, 4), CU_FILE_SUCCESS);
    char *path = th_make_file(FSIZE, 31);
    int fd = open(path, O_RDWR);
    CUfileHandle_t fh = reg(fd), dead = reg(open(path, O_RDONLY));
    cuFileHandleDeregister(dead);
    char *b = aligned_alloc(4096, BUFSZ);
    CUfileIOParams_t p[3];
    memset(p, 0, sizeof p);
    for (int i = 0; i < 3; i++) {
        p[i].mode = CUFILE_BATCH;
        p[i].opcode = CUFILE_READ;
        p[i].fh = fh;
        p[i].u.batch.devPtr_base = b;
        p[i].u.batch.devPtr_offset = i * 4096;
        p[i].u.batch.file_offset = i * 4096;
        p[i].u.batch.size = 4096;
    }
    CHECK_ST(cuFileBatchIOSubmit(bh, 1, NULL, 0), CU_FILE_INVALID_VALUE);
    p[2].fh = dead;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_HANDLE_NOT_REGISTERED);
    p[2].fh = NULL;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_HANDLE_NOT_REGISTERED);
    p[2].fh = fh;
    p[1].u.batch.file_offset = -1;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_INVALID_VALUE);
    p[1].u.batch.file_offset = INT64_MAX - 100;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_INVALID_VALUE);
    p[1].u.batch.file_offset = 4096;
    p[1].u.batch.size = SIZE_MAX;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_INVALID_VALUE);
    p[1].u.batch.size = 4096;
    p[1].opcode = (CUfileOpcode_t)77;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_INVALID_VALUE);
    p[1].opcode = CUFILE_READ;
    p[1].mode = (CUfileBatchMode_t)9;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_INVALID_VALUE);
    p[1].mode = CUFILE_BATCH;
    p[1].u.batch.devPtr_base = NULL;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_INVALID_VALUE);
    p[1].u.batch.devPtr_base = b;
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBatchIOSubmit(bh, 3, p, 0), CU_FILE_BATCH_FULL);
    CUfileIOEvents_t ev[4];
    unsigned nr = 2;
    CHECK_ST(cuFileBatchIOGetStatus(bh, 3, &nr, ev, NULL), CU_FILE_INVALID_VALUE); /* min_nr > nr */
    nr = 1;
    CHECK_ST(cuFileBatchIOGetStatus(bh, 0, &nr, NULL, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOGetStatus(bh, 0, NULL, ev, NULL), CU_FILE_INVALID_VALUE);
    struct timespec bad = {0, 1000000000L}, neg = {-1, 0}, forever = {LONG_MAX, 999999999L};
    nr = 4;
    CHECK_ST(cuFileBatchIOGetStatus(bh, 0, &nr, ev, &bad), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOGetStatus(bh, 0, &nr, ev, &neg), CU_FILE_INVALID_VALUE);
    unsigned got = 0;
    for (int tries = 0; got < 3 && tries < 100; tries++) {
        nr = 4;
        CHECK_ST(cuFileBatchIOGetStatus(bh, 3 - got, &nr, ev, &forever), CU_FILE_SUCCESS);
        for (unsigned i = 0; i < nr; i++) {
            CHECK_EQ(ev[i].status, CUFILE_COMPLETE);
            CHECK_EQ(ev[i].ret, 4096);
        }
        got += nr;
    }
    CHECK_EQ(got, 3);
    /* a batch handle destroyed, then used: refused, and destroyed twice: nothing */
    cuFileBatchIODestroy(bh);
    CHECK_ST(cuFileBatchIOSubmit(bh, 1, p, 0), CU_FILE_INVALID_VALUE);
    nr = 1;
    CHECK_ST(cuFileBatchIOGetStatus(bh, 0, &nr, ev, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOCancel(bh), CU_FILE_INVALID_VALUE);
    cuFileBatchIODestroy(bh);
    CHECK_ST(cuFileBatchIOSetUp(&bh2, 2), CU_FILE_SUCCESS);
    CHECK(bh2 != bh);
    CHECK_ST(cuFileBatchIOCancel(bh), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOCancel(bh2), CU_FILE_SUCCESS);
    cuFileBatchIODestroy(bh2);
    uintptr_t fake[] = {1, 0xfffff, (uintptr_t)b, UINTPTR_MAX};
    for (size_t i = 0; i < sizeof fake / sizeof *fake; i++) {
        CHECK_ST(cuFileBatchIOCancel((CUfileBatchHandle_t)fake[i]), CU_FILE_INVALID_VALUE);
        cuFileBatchIODestroy((CUfileBatchHandle_t)fake[i]);
    }
    cuFileHandleDeregister(fh);
    close(fd);
    unlink(path);
    free(path);
    free(b);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

/* ---------------------------------------------------------------- fuzz loop */

typedef struct {
    int fd_rw, fd_ro;
    CUfileHandle_t live_rw, live_ro;
    CUfileHandle_t stale[8];
    unsigned nstale;
    unsigned char *buf;       /* BUFSZ, host */
    unsigned char *regbuf;    /* BUFSZ, registered */
    unsigned char *shadow;    /* what the rw file holds */
    unsigned char *scratch;
} fz_t;

static off_t hostile_off(void)
{
    switch (rnd_below(8)) {
    case 0: return -1 - (off_t)rnd_below(4096);
    case 1: return INT64_MIN + (off_t)rnd_below(16);
    case 2: return INT64_MAX - (off_t)rnd_below(8192);
    case 3: return (off_t)(rnd() >> 1);
    default: return (off_t)rnd_below(FSIZE + 8192);
    }
}

static size_t hostile_size(void)
{
    switch (rnd_below(8)) {
    case 0: return SIZE_MAX - rnd_below(16);
    case 1: return (size_t)SSIZE_MAX + 1 + rnd_below(16);
    case 2: return (size_t)(rnd() >> 1);
    case 3: return 0;
    default: return rnd_below(BUFSZ + 1);
    }
}

static CUfileHandle_t pick_handle(fz_t *z, int *kind)
{
    switch (rnd_below(6)) {
    case 0: *kind = 1; return z->live_rw;
    case 1: *kind = 2; return z->live_ro;
    case 2: *kind = 0; return z->nstale ? z->stale[rnd_below(z->nstale)] : NULL;
    case 3: *kind = 0; return (CUfileHandle_t)(uintptr_t)rnd();
    case 4: *kind = 0; return (CUfileHandle_t)(uintptr_t)rnd_below(64);
    default: *kind = 0; return NULL;
    }
}

/* One read or write with random arguments; checks the result against what cuFile documents:
 * a dead handle first, then the arguments, then the bytes. */
static void fz_io(fz_t *z, int is_write)
{
    int kind;
    CUfileHandle_t fh = pick_handle(z, &kind);
    int which = (int)rnd_below(3);
    unsigned char *base = which == 0 ? z->buf : which == 1 ? z->regbuf : NULL;
    size_t size = hostile_size();
    off_t foff = hostile_off(), boff = rnd_below(4) ? (off_t)rnd_below(BUFSZ) : hostile_off();
    int in_buf = base && boff >= 0 && (uint64_t)boff <= BUFSZ && size <= BUFSZ - (uint64_t)boff;
    int bad_args = !base || foff < 0 || boff < 0 || size > (size_t)SSIZE_MAX || (uint64_t)foff + size > (uint64_t)INT64_MAX ||
                   (uint64_t)boff + size > (uint64_t)INT64_MAX || (uintptr_t)base + (uint64_t)boff + size < (uintptr_t)base;
    if (!kind) {
        /* dead handles are refused before anything is looked at */
        ssize_t n = is_write ? cuFileWrite(fh, base, size, foff, boff) : cuFileRead(fh, base, size, foff, boff);
        CHECK_EQ(n, -CU_FILE_HANDLE_NOT_REGISTERED);
        return;
    }
    if (!bad_args && !in_buf) return; /* a real overflow of the caller's buffer: cuFile cannot tell either */
    if (bad_args) {
        ssize_t n = is_write ? cuFileWrite(fh, base, size, foff, boff) : cuFileRead(fh, base, size, foff, boff);
        CHECK_EQ(n, -CU_FILE_INVALID_VALUE);
        return;
    }
    if (foff > (off_t)FSIZE + 8192) foff = (off_t)rnd_below(FSIZE + 8192); /* no sparse giants */
    if (is_write && (uint64_t)foff + size > FSIZE) foff = (off_t)(FSIZE - size); /* the file keeps its size */
    if (is_write) {
        th_fill(base + boff, size, (unsigned)rnd(), 0);
        ssize_t n = cuFileWrite(fh, base, size, foff, boff);
        if (kind == 2) {
            if (size == 0) CHECK_EQ(n, 0); /* nothing to move: cuFile returns 0 before any I/O */
            else CHECK(n == -1 && errno == EBADF);
            return;
        }
        CHECK_EQ(n, (ssize_t)size);
        if (n == (ssize_t)size) memcpy(z->shadow + foff, base + boff, size);
        return;
    }
    size_t end = (size_t)boff + size;
    unsigned char before = boff > 0 ? base[boff - 1] : 0, after = end < BUFSZ ? base[end] : 0;
    ssize_t n = cuFileRead(fh, base, size, foff, boff);
    size_t avail = (uint64_t)foff >= FSIZE ? 0 : FSIZE - (size_t)foff;
    size_t want = size < avail ? size : avail;
    CHECK_EQ(n, (ssize_t)want);
    if (n == (ssize_t)want && want) {
        if (kind == 1) CHECK(memcmp(base + boff, z->shadow + foff, want) == 0);
        else {
            th_fill(z->scratch, want, 41, (size_t)foff);
            CHECK(memcmp(base + boff, z->scratch, want) == 0);
        }
    }
    if (boff > 0) CHECK_EQ(base[boff - 1], before);
    if (end < BUFSZ) CHECK_EQ(base[end], after);
}

static void fz_buf(fz_t *z)
{
    switch (rnd_below(6)) {
    case 0: {
        size_t len = 1 + rnd_below(1 << 20);
        void *hole = unmapped(len);
        CUfileError_t st = cuFileBufRegister(hole, len, 0);
        if (st.err != CU_FILE_INVALID_VALUE && st.err != CU_FILE_CUDA_POINTER_RANGE_ERROR)
            fprintf(stderr, "BufRegister(unmapped %p + %zu): %d\n", hole, len, st.err);
        CHECK(st.err == CU_FILE_INVALID_VALUE || st.err == CU_FILE_CUDA_POINTER_RANGE_ERROR);
        if (st.err == CU_FILE_SUCCESS) cuFileBufDeregister(hole);
        break;
    }
    case 1: {
        /* the registered base again: refused; another range overlapping it: a registration of its own */
        size_t off = rnd_below(2) ? 0 : rnd_below(BUFSZ);
        CUfileError_t st = cuFileBufRegister(z->regbuf + off, 1 + rnd_below(BUFSZ - off), 0);
        CHECK_EQ(st.err, off ? CU_FILE_SUCCESS : CU_FILE_MEMORY_ALREADY_REGISTERED);
        if (st.err == CU_FILE_SUCCESS) CHECK_ST(cuFileBufDeregister(z->regbuf + off), CU_FILE_SUCCESS);
        break;
    }
    case 2: CHECK_ST(cuFileBufDeregister(z->regbuf + 1 + rnd_below(BUFSZ - 1)), CU_FILE_MEMORY_NOT_REGISTERED); break;
    case 3: CHECK_ST(cuFileBufDeregister((void *)(uintptr_t)(rnd() | 1)), CU_FILE_MEMORY_NOT_REGISTERED); break;
    case 4: {
        /* register, deregister, deregister again: the plain buffer */
        size_t len = 1 + rnd_below(BUFSZ);
        int flags = rnd_below(4) == 0 ? (int)rnd() : 0;
        CUfileError_t st = cuFileBufRegister(z->buf, len, flags);
        if (flags & ~(CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING)) CHECK_EQ(st.err, CU_FILE_INVALID_VALUE);
        else CHECK_EQ(st.err, CU_FILE_SUCCESS);
        if (st.err == CU_FILE_SUCCESS) CHECK_ST(cuFileBufDeregister(z->buf), CU_FILE_SUCCESS);
        CHECK_ST(cuFileBufDeregister(z->buf), CU_FILE_MEMORY_NOT_REGISTERED);
        break;
    }
    default: {
        CUfileError_t st = cuFileBufRegister(z->buf, rnd_below(2) ? SIZE_MAX - rnd_below(4096) : 0, (int)rnd());
        CHECK_EQ(st.err, CU_FILE_INVALID_VALUE);
        break;
    }
    }
}

static void fz_handle(fz_t *z)
{
    switch (rnd_below(5)) {
    case 0: {
        CUfileDescr_t d;
        memset(&d, 0, sizeof d);
        d.type = (CUfileFileHandleType)(rnd_below(2) ? rnd_below(5) : rnd());
        d.handle.fd = rnd_below(2) ? (int)rnd() : (int)rnd_below(64);
        d.fs_ops = NULL;
        CUfileHandle_t fh = NULL;
        CUfileError_t st = cuFileHandleRegister(rnd_below(8) ? &fh : NULL, rnd_below(8) ? &d : NULL);
        CHECK(is_status(st.err));
        if (st.err == CU_FILE_SUCCESS) {
            /* an fd the test did not open for this (stdin, the test's own): drop it again */
            cuFileHandleDeregister(fh);
            CHECK_EQ(cuFileRead(fh, z->buf, 1, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
            if (z->nstale < 8) z->stale[z->nstale++] = fh;
            else z->stale[rnd_below(8)] = fh;
        }
        break;
    }
    case 1: {
        /* the live rw handle dies and is born again: the old one joins the stale ones */
        CUfileHandle_t old = z->live_rw;
        cuFileHandleDeregister(old);
        z->live_rw = reg(z->fd_rw);
        CHECK(z->live_rw != old);
        if (z->nstale < 8) z->stale[z->nstale++] = old;
        else z->stale[rnd_below(8)] = old;
        break;
    }
    case 2: {
        CUfileHandle_t fh = NULL;
        CHECK_ST(reg_fd(z->fd_ro, &fh), CU_FILE_HANDLE_ALREADY_REGISTERED);
        break;
    }
    default: {
        int kind;
        CUfileHandle_t fh = pick_handle(z, &kind);
        if (!kind) cuFileHandleDeregister(fh); /* dead ones only: nothing may change */
        break;
    }
    }
}

static void fz_misc(fz_t *z)
{
    (void)z;
    switch (rnd_below(7)) {
    case 0: {
        size_t v;
        CUfileError_t st = cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)(int)rnd_below(40), &v);
        CHECK(st.err == CU_FILE_SUCCESS || st.err == CU_FILE_INVALID_VALUE);
        break;
    }
    case 1: {
        bool v;
        CUfileError_t st = cuFileGetParameterBool((CUFileBoolConfigParameter_t)(int)rnd(), &v);
        CHECK(st.err == CU_FILE_SUCCESS || st.err == CU_FILE_INVALID_VALUE);
        break;
    }
    case 2: {
        char s[64];
        int len = (int)rnd_below(70) - 4;
        if (len > 64) len = 64;
        CUfileError_t st = cuFileGetParameterString((CUFileStringConfigParameter_t)(int)rnd_below(6), s, len);
        CHECK(st.err == CU_FILE_SUCCESS || st.err == CU_FILE_INVALID_VALUE);
        break;
    }
    case 3: {
        /* the driver is open: every Set is refused */
        CUfileError_t st = cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)(int)rnd_below(20), (size_t)rnd());
        CHECK(st.err == CU_FILE_DRIVER_ALREADY_OPEN || st.err == CU_FILE_INVALID_VALUE);
        st = cuFileSetParameterBool((CUFileBoolConfigParameter_t)(int)rnd_below(20), rnd() & 1);
        CHECK(st.err == CU_FILE_DRIVER_ALREADY_OPEN || st.err == CU_FILE_INVALID_VALUE);
        st = cuFileSetParameterString((CUFileStringConfigParameter_t)(int)rnd_below(6), "hostile\n%s%n");
        CHECK(st.err == CU_FILE_DRIVER_ALREADY_OPEN || st.err == CU_FILE_INVALID_VALUE);
        break;
    }
    case 4: {
        size_t lo, hi;
        CUfileError_t st = cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)(int)rnd(), &lo, &hi);
        CHECK(st.err == CU_FILE_SUCCESS || st.err == CU_FILE_INVALID_VALUE);
        break;
    }
    case 5: {
        CUfileBatchHandle_t bh = NULL;
        unsigned nr = (unsigned)rnd_below(3) ? (unsigned)rnd_below(8) : (unsigned)rnd();
        CUfileError_t st = cuFileBatchIOSetUp(&bh, nr);
        CHECK(st.err == CU_FILE_SUCCESS || st.err == CU_FILE_INVALID_VALUE);
        if (st.err == CU_FILE_SUCCESS) {
            CUfileIOParams_t p;
            memset(&p, 0, sizeof p);
            p.mode = CUFILE_BATCH;
            p.opcode = rnd_below(2) ? CUFILE_READ : CUFILE_WRITE;
            int kind;
            p.fh = pick_handle(z, &kind);
            if (kind) p.fh = NULL;
            p.u.batch.devPtr_base = z->buf;
            p.u.batch.size = hostile_size();
            p.u.batch.file_offset = hostile_off();
            p.u.batch.devPtr_offset = hostile_off();
            st = cuFileBatchIOSubmit(bh, 1, &p, 0);
            CHECK(st.err == CU_FILE_HANDLE_NOT_REGISTERED || st.err == CU_FILE_INVALID_VALUE);
            unsigned n = 0;
            CHECK_ST(cuFileBatchIOGetStatus(bh, 0, &n, NULL, NULL), CU_FILE_SUCCESS);
            CHECK_EQ(n, 0);
            cuFileBatchIODestroy(bh);
            CHECK_ST(cuFileBatchIOCancel(bh), CU_FILE_INVALID_VALUE);
            cuFileBatchIODestroy(bh);
        }
        break;
    }
    default: {
        int kind;
        CUfileHandle_t fh = pick_handle(z, &kind);
        size_t sz = hostile_size();
        off_t fo = hostile_off(), bo = hostile_off();
        ssize_t done = 0;
        if (kind) {
            /* a live handle: only where streams run at enqueue (the host connector), so the cells on
             * this stack are read before the call returns; reads only (the model of the rw file stays
             * exact). Hostile values are refused in *done (or the status), never a crash. */
            const char *conn = getenv("PHX_CONNECTOR");
            if (!conn || strcmp(conn, "host") != 0) break;
            if (fo > (off_t)FSIZE + 8192 && fo < INT64_MAX - (off_t)BUFSZ) fo = (off_t)FSIZE; /* no sparse giants */
            if (!(bo >= 0 && (uint64_t)bo <= BUFSZ && sz <= BUFSZ - (uint64_t)bo) && !(bo < 0 || sz > (size_t)SSIZE_MAX ||
                    (uint64_t)bo + sz > (uint64_t)INT64_MAX || (uint64_t)fo + sz > (uint64_t)INT64_MAX || fo < 0))
                break; /* a real overflow of the caller's buffer */
            done = 12345;
            CUfileError_t st = cuFileReadAsync(fh, z->buf, &sz, &fo, &bo, &done, NULL);
            CHECK(is_status(st.err));
            if (st.err == CU_FILE_SUCCESS) CHECK(done == -1 || (done < 0 && is_status((int)-done)) || (done >= 0 && (size_t)done <= sz));
            break;
        }
        CUfileError_t st = rnd_below(2) ? cuFileReadAsync(fh, z->buf, &sz, &fo, &bo, &done, NULL)
                                        : cuFileWriteAsync(fh, z->buf, &sz, &fo, &bo, &done, NULL);
        CHECK_EQ(st.err, CU_FILE_HANDLE_NOT_REGISTERED);
        CUfileError_t s2 = cuFileStreamRegister((CUstream)(uintptr_t)rnd(), (unsigned)rnd() | 0x100);
        CHECK_EQ(s2.err, CU_FILE_INVALID_VALUE);
        break;
    }
    }
}

static int t_fuzz(void)
{
    unsigned long seed = env_ul("PHXFILE_FUZZ_SEED", 1), iters = env_ul("PHXFILE_FUZZ_ITERS", 20000);
    double deadline = now_s() + (double)env_ul("PHXFILE_FUZZ_SECONDS", 8);
    rng_state = seed;
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    fz_t z;
    memset(&z, 0, sizeof z);
    char *prw = th_make_file(FSIZE, 40), *pro = th_make_file(FSIZE, 41);
    z.fd_rw = open(prw, O_RDWR);
    z.fd_ro = open(pro, O_RDONLY);
    z.live_rw = reg(z.fd_rw);
    z.live_ro = reg(z.fd_ro);
    z.buf = aligned_alloc(4096, BUFSZ);
    z.regbuf = aligned_alloc(4096, BUFSZ);
    z.shadow = malloc(FSIZE);
    z.scratch = malloc(BUFSZ);
    th_fill(z.shadow, FSIZE, 40, 0);
    memset(z.buf, 0, BUFSZ);
    memset(z.regbuf, 0, BUFSZ);
    CHECK_ST(cuFileBufRegister(z.regbuf, BUFSZ, 0), CU_FILE_SUCCESS);
    unsigned long i;
    int last_fail = 0;
    for (i = 0; i < iters && now_s() < deadline; i++) {
        switch (rnd_below(10)) {
        case 0: case 1: case 2: fz_io(&z, 0); break;
        case 3: case 4: fz_io(&z, 1); break;
        case 5: fz_buf(&z); break;
        case 6: fz_handle(&z); break;
        default: fz_misc(&z); break;
        }
        if (th_failures != last_fail) {
            fprintf(stderr, "  (seed %lu, iteration %lu)\n", seed, i);
            last_fail = th_failures;
            if (th_failures > 20) break;
        }
    }
    fprintf(stderr, "fuzz: seed %lu, %lu iterations\n", seed, i);
    CHECK(i >= 500); /* bounded by time, but not by nothing */
    CHECK_ST(cuFileBufDeregister(z.regbuf), CU_FILE_SUCCESS);
    cuFileHandleDeregister(z.live_rw);
    cuFileHandleDeregister(z.live_ro);
    close(z.fd_rw);
    close(z.fd_ro);
    unlink(prw);
    unlink(pro);
    free(prw);
    free(pro);
    free(z.buf);
    free(z.regbuf);
    free(z.shadow);
    free(z.scratch);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

/* ---------------------------------------------------------------- concurrency */

typedef struct {
    int fd;
    _Atomic(CUfileHandle_t) cur;
    atomic_int stop;
    atomic_int bad;
    unsigned char *want;
} cc_t;

static void *cc_reg(void *arg)
{
    cc_t *c = arg;
    for (int i = 0; i < 400 && !atomic_load(&c->stop); i++) {
        CUfileHandle_t old = atomic_load(&c->cur), fh = NULL;
        cuFileHandleDeregister(old);
        if (reg_fd(c->fd, &fh).err != CU_FILE_SUCCESS) atomic_fetch_add(&c->bad, 1);
        atomic_store(&c->cur, fh);
    }
    return NULL;
}

static void *cc_io(void *arg)
{
    cc_t *c = arg;
    unsigned char *b = malloc(8192);
    for (int i = 0; i < 400; i++) {
        CUfileHandle_t fh = atomic_load(&c->cur);
        off_t off = (off_t)((unsigned)i * 4099u % (FSIZE - 8192));
        ssize_t n = cuFileRead(fh, b, 8192, off, 0);
        if (n == 8192) {
            if (memcmp(b, c->want + off, 8192) != 0) atomic_fetch_add(&c->bad, 1);
        } else if (n != -CU_FILE_HANDLE_NOT_REGISTERED) {
            atomic_fetch_add(&c->bad, 1);
        }
    }
    free(b);
    return NULL;
}

static void *cc_buf(void *arg)
{
    cc_t *c = arg;
    unsigned char *b = aligned_alloc(4096, 16384);
    for (int i = 0; i < 300; i++) {
        if (cuFileBufRegister(b, 16384, 0).err != CU_FILE_SUCCESS) atomic_fetch_add(&c->bad, 1);
        CUfileHandle_t fh = atomic_load(&c->cur);
        ssize_t n = cuFileRead(fh, b, 4096, 4096, 100);
        if (n != 4096 && n != -CU_FILE_HANDLE_NOT_REGISTERED) atomic_fetch_add(&c->bad, 1);
        if (cuFileBufDeregister(b).err != CU_FILE_SUCCESS) atomic_fetch_add(&c->bad, 1);
        if (cuFileBufDeregister(b).err != CU_FILE_MEMORY_NOT_REGISTERED) atomic_fetch_add(&c->bad, 1);
    }
    free(b);
    return NULL;
}

static void *cc_batch(void *arg)
{
    cc_t *c = arg;
    unsigned char *b = aligned_alloc(4096, 4096);
    for (int i = 0; i < 100; i++) {
        CUfileBatchHandle_t bh;
        if (cuFileBatchIOSetUp(&bh, 1).err != CU_FILE_SUCCESS) { atomic_fetch_add(&c->bad, 1); continue; }
        CUfileIOParams_t p;
        memset(&p, 0, sizeof p);
        p.mode = CUFILE_BATCH;
        p.opcode = CUFILE_READ;
        p.fh = atomic_load(&c->cur);
        p.u.batch.devPtr_base = b;
        p.u.batch.size = 4096;
        CUfileError_t st = cuFileBatchIOSubmit(bh, 1, &p, 0);
        if (st.err == CU_FILE_SUCCESS) {
            unsigned nr = 1;
            CUfileIOEvents_t ev;
            if (cuFileBatchIOGetStatus(bh, 1, &nr, &ev, NULL).err != CU_FILE_SUCCESS || nr != 1) atomic_fetch_add(&c->bad, 1);
        } else if (st.err != CU_FILE_HANDLE_NOT_REGISTERED) {
            atomic_fetch_add(&c->bad, 1);
        }
        cuFileBatchIODestroy(bh);
    }
    free(b);
    return NULL;
}

static int t_concurrent(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    char *path = th_make_file(FSIZE, 51);
    cc_t c;
    memset(&c, 0, sizeof c);
    c.fd = open(path, O_RDONLY);
    c.want = malloc(FSIZE);
    th_fill(c.want, FSIZE, 51, 0);
    atomic_store(&c.cur, reg(c.fd));
    pthread_t t[5];
    pthread_create(&t[0], NULL, cc_reg, &c);
    pthread_create(&t[1], NULL, cc_io, &c);
    pthread_create(&t[2], NULL, cc_io, &c);
    pthread_create(&t[3], NULL, cc_buf, &c);
    pthread_create(&t[4], NULL, cc_batch, &c);
    for (int i = 1; i < 5; i++) pthread_join(t[i], NULL);
    atomic_store(&c.stop, 1);
    pthread_join(t[0], NULL);
    CHECK_EQ(atomic_load(&c.bad), 0);
    cuFileHandleDeregister(atomic_load(&c.cur));
    close(c.fd);
    unlink(path);
    free(path);
    free(c.want);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

int main(void)
{
    /* every scenario in a fresh process: a crash in one names it and the others still run */
    th_in_child("null_args", t_null_args);
    th_in_child("bad_fds", t_bad_fds);
    th_in_child("stale_handles", t_stale_handles);
    th_in_child("fd_reuse", t_fd_reuse);
    th_in_child("buffers", t_buffers);
    th_in_child("ranges", t_ranges);
    th_in_child("batch", t_batch);
    th_in_child("fuzz", t_fuzz);
    th_in_child("concurrent", t_concurrent);
    return th_finish("test_fuzz");
}
