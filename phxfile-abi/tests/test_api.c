/* Every cuFile entry point outside batches and streams, with its error paths:
 * driver open/close and use count, implicit open, handles, buffers, reads and
 * writes (host, registered and unregistered device memory, unaligned, past end
 * of file, file-system errors), properties and the Set* calls. */
#include "harness.h"
#include "th_cufile.h"
#include "cufile.h"
#include "phoenix.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FSIZE ((3u << 20) + 4321)

/* device memory on the fake/cuda connector, host memory otherwise; *dev receives which */
static void *dev_alloc(size_t len, int *dev)
{
    void *p = NULL;
    if (th_have_device()) {
        CHECK_EQ(phxfs_open(0), 0);
        CHECK_EQ(phxfs_mem_alloc(0, len, &p), 0);
        *dev = 0;
    } else {
        p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
        *dev = -1;
    }
    return p;
}

static void dev_get(int dev, void *dst, const void *src, size_t len)
{
    if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_host(dev, dst, src, len), 0);
    else memcpy(dst, src, len);
}

static void dev_put(int dev, void *dst, const void *src, size_t len)
{
    if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_device(dev, dst, src, len), 0);
    else memcpy(dst, src, len);
}

static void dev_free(int dev, void *p)
{
    if (dev >= 0) {
        CHECK_EQ(phxfs_mem_free(dev, p), 0);
        CHECK_EQ(phxfs_close(dev), 0);
    } else {
        free(p);
    }
}

/* implicit open: the first call opens the driver; an explicit open then takes over that
 * reference, so one close closes */
static int scenario_implicit(void)
{
    CHECK_EQ(cuFileUseCount(), 0);
    CHECK_ST(cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);
    char *path = th_make_file(4096, 1);
    int fd = open(path, O_RDONLY);
    CUfileHandle_t fh = th_register_fd(fd);
    CHECK_EQ(cuFileUseCount(), 1);
    char buf[4096];
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), 4096);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileUseCount(), 1);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileUseCount(), 2);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), 4096); /* still open */
    CHECK_ST(cuFileBufRegister(buf, sizeof buf, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileStreamRegister((CUstream)(uintptr_t)0x5000, CU_FILE_STREAM_FIXED_FILE_SIZE), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverClose_v2(), CU_FILE_SUCCESS);
    /* streams are deregistered by the close, as cuFile documents (their flags stayed) */
    CHECK_ST(cuFileStreamDeregister((CUstream)(uintptr_t)0x5000), CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileUseCount(), 0);
    /* closed: what was registered is gone */
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_ST(cuFileBufDeregister(buf), CU_FILE_MEMORY_NOT_REGISTERED);
    CHECK_ST(cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);
    /* and it reopens */
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CUfileHandle_t fh2 = th_register_fd(fd);
    CHECK(fh2 != fh);
    CHECK_EQ(cuFileRead(fh2, buf, 4096, 0, 0), 4096);
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    cuFileHandleDeregister(fh2);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    close(fd);
    unlink(path);
    free(path);
    return th_failures;
}

/* Set* before any transfer reach libphoenix; after it has started, the pool keys cannot */
static int scenario_setters(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverSetMaxCacheSize(64 * 1024), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverSetMaxDirectIOSize(8192), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverSetMaxPinnedMemSize(1024), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverSetPollMode(true, 64), CU_FILE_SUCCESS);
    char v[32];
    CHECK(phxfs_get_config("pinned_mb", v, sizeof v) > 0 && !strcmp(v, "64"));
    CHECK(phxfs_get_config("max_io_bytes", v, sizeof v) > 0 && !strcmp(v, "8388608"));
    CUfileDrvProps_t p;
    CHECK_ST(cuFileDriverGetProperties(&p), CU_FILE_SUCCESS);
    CHECK_EQ(p.max_device_cache_size, 64 * 1024);
    CHECK_EQ(p.max_device_pinned_mem_size, 1024);
    CHECK_EQ(p.nvfs.max_direct_io_size, 8192);
    CHECK_EQ(p.nvfs.poll_thresh_size, 64);
    CHECK(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE));
    if (th_have_device()) {
        /* the registration cap: 1 MiB of device memory fits, 1 MiB more does not */
        int dev;
        char *m = dev_alloc(4 << 20, &dev);
        CHECK_ST(cuFileBufRegister(m, 1 << 20, 0), CU_FILE_SUCCESS);
        CHECK_ST(cuFileBufRegister(m + (2 << 20), 1 << 20, 0), CU_FILE_INVALID_MAPPING_SIZE);
        CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
        dev_free(dev, m);
    } else {
        CHECK_EQ(phxfs_init(), 0);
    }
    /* the pool has started now: its size is fixed, but a client may still set (and later
     * restore) the value, as KvikIO does at any time; an error there is fatal to it */
    CHECK_ST(cuFileDriverSetMaxCacheSize(2048), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverGetProperties(&p), CU_FILE_SUCCESS);
    CHECK_EQ(p.max_device_cache_size, 2048);
    CHECK(phxfs_get_config("pinned_mb", v, sizeof v) > 0 && !strcmp(v, "64"));
    CHECK_ST(cuFileDriverSetMaxCacheSize(64 * 1024), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverGetProperties(&p), CU_FILE_SUCCESS);
    CHECK_EQ(p.max_device_cache_size, 64 * 1024);
    CHECK_ST(cuFileDriverSetMaxCacheSize(0), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    /* sizes in KiB whose byte count does not fit are refused (DriverSet*: "unsupported value or
     * invalid limit"); 2^54 + 1 KiB became a 1 KiB cap */
    CHECK_ST(cuFileDriverSetMaxDirectIOSize(((size_t)1 << 54) + 1), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    CHECK(phxfs_get_config("max_io_bytes", v, sizeof v) > 0 && !strcmp(v, "8388608"));
    CHECK_ST(cuFileDriverGetProperties(&p), CU_FILE_SUCCESS);
    CHECK_EQ(p.nvfs.max_direct_io_size, 8192);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

/* fork() after the driver has moved data: libphoenix's threads stay in the parent, so the
 * child's calls must fail at once (they used to wait forever for a worker that is not
 * there) and the parent must go on working. A child forked before any open works. */
static int scenario_fork(void)
{
    char *path = th_make_file(65536, 9);
    int fd = open(path, O_RDONLY);
    char buf[4096];
    pid_t early = fork(); /* before any open: a fresh library state */
    if (early == 0) {
        alarm(20);
        CUfileHandle_t fh = th_register_fd(fd);
        _exit(cuFileRead(fh, buf, 4096, 0, 0) == 4096 && th_failures == 0 ? 0 : 1);
    }
    int st = 0;
    waitpid(early, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CUfileHandle_t fh = th_register_fd(fd);
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), 4096);
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, 4), CU_FILE_SUCCESS);
    static char reg_buf[8192];
    CHECK_ST(cuFileBufRegister(reg_buf, sizeof reg_buf, 0), CU_FILE_SUCCESS);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* the defect was a hang: a timeout fails the test instead */
        th_failures = 0;
        CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), -CU_FILE_DRIVER_NOT_INITIALIZED);
        CHECK_EQ(cuFileWrite(fh, buf, 4096, 0, 0), -CU_FILE_DRIVER_NOT_INITIALIZED);
        CUfileDescr_t d;
        memset(&d, 0, sizeof d);
        d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
        d.handle.fd = fd;
        CUfileHandle_t fh2;
        CHECK_ST(cuFileHandleRegister(&fh2, &d), CU_FILE_DRIVER_NOT_INITIALIZED);
        CHECK_ST(cuFileBufRegister(buf, sizeof buf, 0), CU_FILE_DRIVER_NOT_INITIALIZED);
        CHECK_ST(cuFileBufDeregister(reg_buf), CU_FILE_DRIVER_NOT_INITIALIZED);
        CUfileDrvProps_t props;
        CHECK_ST(cuFileDriverGetProperties(&props), CU_FILE_DRIVER_NOT_INITIALIZED);
        CHECK_ST(cuFileDriverOpen(), CU_FILE_DRIVER_NOT_INITIALIZED);
        CUfileIOParams_t io;
        memset(&io, 0, sizeof io);
        io.mode = CUFILE_BATCH;
        io.fh = fh;
        io.opcode = CUFILE_READ;
        io.u.batch.devPtr_base = buf;
        io.u.batch.size = 4096;
        CHECK_ST(cuFileBatchIOSubmit(b, 1, &io, 0), CU_FILE_DRIVER_NOT_INITIALIZED);
        unsigned nr = 1;
        CUfileIOEvents_t ev;
        CHECK_ST(cuFileBatchIOGetStatus(b, 1, &nr, &ev, NULL), CU_FILE_DRIVER_NOT_INITIALIZED);
        cuFileBatchIODestroy(b);
        cuFileHandleDeregister(fh);
        CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS); /* drops the inherited count, touches nothing */
        _exit(th_failures ? 1 : 0);
    }
    st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "fork child ended with status %#x\n", st);
        th_failures++;
    }
    /* the parent is untouched */
    CHECK_EQ(cuFileRead(fh, buf, 4096, 4096, 0), 4096);
    CHECK_ST(cuFileBufDeregister(reg_buf), CU_FILE_SUCCESS);
    cuFileBatchIODestroy(b);
    cuFileHandleDeregister(fh);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    close(fd);
    unlink(path);
    free(path);
    return th_failures;
}

static void test_handles(void)
{
    char *path = th_make_file(8192, 2);
    int fd = open(path, O_RDONLY);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    CUfileHandle_t fh = NULL;
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CHECK_ST(cuFileHandleRegister(NULL, &d), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileHandleRegister(&fh, NULL), CU_FILE_INVALID_VALUE);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_WIN32;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_PLATFORM_NOT_SUPPORTED);
    d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_VALUE);
    CUfileFSOps_t ops;
    memset(&ops, 0, sizeof ops);
    d.fs_ops = &ops;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_IO_NOT_SUPPORTED);
    d.fs_ops = NULL;
    d.type = (CUfileFileHandleType)99;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_VALUE);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = -1;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_VALUE);
    d.handle.fd = 987654;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_VALUE);
    int pp[2];
    CHECK_EQ(pipe(pp), 0);
    d.handle.fd = pp[0];
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_FILE_TYPE);
    close(pp[0]);
    close(pp[1]);
    int op = open(path, O_PATH);
    d.handle.fd = op;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_FILE_OPEN_FLAG);
    close(op);
    /* O_APPEND: pwrite would ignore every offset and append; the file stays as it was */
    int ap = open(path, O_RDWR | O_APPEND);
    d.handle.fd = ap;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_INVALID_FILE_OPEN_FLAG);
    if (fh) CHECK_EQ(cuFileWrite(fh, "x", 1, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(lseek(ap, 0, SEEK_END), 8192);
    close(ap);
    d.handle.fd = fd;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_SUCCESS);
    CUfileHandle_t again = NULL;
    CHECK_ST(cuFileHandleRegister(&again, &d), CU_FILE_HANDLE_ALREADY_REGISTERED);
    char buf[100];
    CHECK_EQ(cuFileRead(fh, buf, 100, 0, 0), 100);
    cuFileHandleDeregister(fh);
    CHECK_EQ(cuFileRead(fh, buf, 100, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileWrite(fh, buf, 100, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    cuFileHandleDeregister(fh); /* twice: harmless */
    CHECK_EQ(cuFileRead(NULL, buf, 100, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileRead((CUfileHandle_t)(uintptr_t)0x12345, buf, 100, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    /* the slot is reused with a new generation: the old handle stays dead */
    CHECK_ST(cuFileHandleRegister(&again, &d), CU_FILE_SUCCESS);
    CHECK(again != fh);
    CHECK_EQ(cuFileRead(fh, buf, 100, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(cuFileRead(again, buf, 100, 0, 0), 100);
    cuFileHandleDeregister(again);
    /* an fd closed without deregistration, its number reused by another file: that is a new
     * registration (it used to be CU_FILE_HANDLE_ALREADY_REGISTERED for good), the old
     * handle is dead, and the same file registered twice is still refused */
    char *other = th_make_file(8192, 5);
    int f1 = open(path, O_RDONLY);
    d.handle.fd = f1;
    CUfileHandle_t h1 = NULL, h2 = NULL;
    CHECK_ST(cuFileHandleRegister(&h1, &d), CU_FILE_SUCCESS);
    close(f1);
    errno = 0; /* closed under a live handle: what the file system says */
    CHECK_EQ(cuFileRead(h1, buf, 100, 0, 0), -1);
    CHECK_EQ(errno, EBADF);
    int f2 = open(other, O_RDONLY);
    CHECK_EQ(f2, f1);
    CHECK_ST(cuFileHandleRegister(&h2, &d), CU_FILE_SUCCESS);
    CHECK_ST(cuFileHandleRegister(&again, &d), CU_FILE_HANDLE_ALREADY_REGISTERED);
    CHECK_EQ(cuFileRead(h1, buf, 100, 0, 0), -CU_FILE_HANDLE_NOT_REGISTERED);
    unsigned char want[100];
    th_fill(want, 100, 5, 0);
    CHECK_EQ(cuFileRead(h2, buf, 100, 0, 0), 100);
    CHECK(memcmp(buf, want, 100) == 0);
    cuFileHandleDeregister(h2);
    cuFileHandleDeregister(h1); /* already dropped: harmless */
    close(f2);
    unlink(other);
    free(other);
    close(fd);
    unlink(path);
    free(path);
}

static void test_buffers(void)
{
    char host[8192];
    CHECK_ST(cuFileBufRegister(NULL, 10, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister(host, 0, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister(host, 10, 0x40), CU_FILE_INVALID_VALUE);
    /* memory that is not mapped, wholly or at its end: refused (it used to register) */
    CHECK_ST(cuFileBufRegister((void *)(uintptr_t)0x1000, 4096, 0), CU_FILE_INVALID_VALUE);
    long pg = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(two != MAP_FAILED);
    CHECK_EQ(munmap(two + pg, pg), 0);
    CHECK_ST(cuFileBufRegister(two, 2 * pg, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister(two + pg - 100, 200, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufRegister(two + 100, pg - 100, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(two + 100), CU_FILE_SUCCESS);
    CHECK_EQ(munmap(two, pg), 0);
    CHECK_ST(cuFileBufRegister(host, sizeof host, CU_FILE_RDMA_REGISTER), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(host, sizeof host, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
    /* a range inside another is a registration of its own, as in NVIDIA's library; the same
     * base twice is not (test_compat: transfers through nested registrations) */
    CHECK_ST(cuFileBufRegister(host + 100, 10, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(host + 100, 20, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK_ST(cuFileBufDeregister(host + 100), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(host + 100), CU_FILE_MEMORY_NOT_REGISTERED);
    CHECK_ST(cuFileBufDeregister(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBufDeregister(host), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(host), CU_FILE_MEMORY_NOT_REGISTERED);
    if (th_have_device()) {
        int dev;
        char *m = dev_alloc(1 << 20, &dev);
        CHECK_ST(cuFileBufRegister(m, 2 << 20, 0), CU_FILE_CUDA_POINTER_RANGE_ERROR);
        CHECK_ST(cuFileBufRegister(m + 4096, 65536, 0), CU_FILE_SUCCESS);
        CHECK_ST(cuFileBufRegister(m, 8192, 0), CU_FILE_SUCCESS); /* across the start of the other */
        CHECK_ST(cuFileBufRegister(m + 4096, 4096, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
        CHECK_ST(cuFileBufDeregister(m + 4096), CU_FILE_SUCCESS);
        CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
        dev_free(dev, m);
    }
}

static void test_io(void)
{
    char *path = th_make_file(FSIZE, 3);
    unsigned char *ref = malloc(FSIZE), *got = malloc(FSIZE + 8192);
    th_fill(ref, FSIZE, 3, 0);
    int fd = open(path, O_RDWR), dfd = open(path, O_RDONLY | O_DIRECT), ro = open(path, O_RDONLY);
    CUfileHandle_t fh = th_register_fd(fd), dfh = dfd >= 0 ? th_register_fd(dfd) : NULL, rfh = th_register_fd(ro);

    /* host memory, unregistered, unaligned everything */
    CHECK_EQ(cuFileRead(fh, got, 100001, 777, 3), 100001);
    CHECK(memcmp(got + 3, ref + 777, 100001) == 0);
    if (dfh) { /* O_DIRECT file, unaligned offsets and lengths */
        memset(got, 0, FSIZE);
        CHECK_EQ(cuFileRead(dfh, got, 100001, 777, 3), 100001);
        CHECK(memcmp(got + 3, ref + 777, 100001) == 0);
        CHECK_EQ(cuFileRead(dfh, got, FSIZE, 0, 0), FSIZE);
        CHECK(memcmp(got, ref, FSIZE) == 0);
    }
    /* past the end of the file: short, then 0 */
    CHECK_EQ(cuFileRead(fh, got, 10000, FSIZE - 10, 0), 10);
    CHECK(memcmp(got, ref + FSIZE - 10, 10) == 0);
    CHECK_EQ(cuFileRead(fh, got, 10000, FSIZE + 5000, 0), 0);
    CHECK_EQ(cuFileRead(fh, got, 0, 0, 0), 0);
    /* bad arguments: the negated cuFile error */
    CHECK_EQ(cuFileRead(fh, got, 100, -1, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, got, 100, 0, -1), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, NULL, 100, 0, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, got, (size_t)1 << 63, 0, 0), -CU_FILE_INVALID_VALUE);
    /* ends that do not fit in 64 bits: refused before anything adds them up (libphoenix's
     * request setup overflowed on the file end, UBSan says so) */
    CHECK_EQ(cuFileRead(fh, got, 4096, INT64_MAX - 10, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileWrite(fh, got, 4096, INT64_MAX, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, got, 4096, 0, INT64_MAX), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileRead(fh, got, 4096, 0, (off_t)(UINTPTR_MAX - (uintptr_t)got - 100)), -CU_FILE_INVALID_VALUE);
    /* a file-system error: -1 and errno */
    errno = 0;
    CHECK_EQ(cuFileWrite(rfh, got, 100, 0, 0), -1);
    CHECK_EQ(errno, EBADF);

    /* device memory: registered (buffer offset inside the registration), unregistered
     * (registered for the transfer alone), and unregistered overlapping a registration
     * (the shim's own bounce buffer) */
    int dev;
    size_t blen = FSIZE + 8192;
    char *m = dev_alloc(blen, &dev);
    unsigned char *pattern = malloc(blen);
    memset(pattern, 0xA5, blen);
    dev_put(dev, m, pattern, blen);
    /* host memory (the host connector) is registered whole: a transfer through the base of a
     * host registration must stay inside it (test_compat), device memory may cross its end */
    CHECK_ST(cuFileBufRegister(m, dev >= 0 ? 1 << 20 : blen, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, m, 500000, 12345, 4096), 500000);
    CHECK_EQ(cuFileRead(fh, m, (1 << 20) + 100000, 1 << 20, 0), (1 << 20) + 100000); /* crosses the end of the registration */
    CHECK_EQ(cuFileRead(fh, m + (2 << 20), 300000, 99, 1), 300000);                  /* outside any registration */
    dev_get(dev, got, m, blen);
    CHECK(memcmp(got, ref + (1 << 20), (1 << 20) + 100000) == 0);
    CHECK(memcmp(got + (2 << 20) + 1, ref + 99, 300000) == 0);
    CHECK(memcmp(got + (2 << 20) + 300001, pattern, blen - (2 << 20) - 300001) == 0);
    CHECK_EQ(cuFileRead(fh, m, 500000, 12345, 4096), 500000);
    dev_get(dev, got, m, 4096 + 500000);
    CHECK(memcmp(got + 4096, ref + 12345, 500000) == 0);
    /* write from device memory to a new file, read it back through plain I/O */
    char *out = th_make_file(0, 0);
    int ofd = open(out, O_RDWR);
    CUfileHandle_t ofh = th_register_fd(ofd);
    CHECK_EQ(cuFileRead(fh, m, FSIZE, 0, 0), FSIZE);
    CHECK_EQ(cuFileWrite(ofh, m, 1 << 20, 0, 0), 1 << 20);            /* registered */
    CHECK_EQ(cuFileWrite(ofh, m, FSIZE - (1 << 20), 1 << 20, 1 << 20), FSIZE - (1 << 20)); /* overlaps its end */
    unsigned char *back = malloc(FSIZE);
    CHECK_EQ(pread(ofd, back, FSIZE, 0), FSIZE);
    CHECK(memcmp(back, ref, FSIZE) == 0);
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    /* unregistered device memory after deregistration still works */
    memset(back, 0, FSIZE);
    CHECK_EQ(cuFileWrite(ofh, m + 5, 70000, 3, 0), 70000);
    CHECK_EQ(pread(ofd, back, 70003, 0), 70003);
    CHECK(memcmp(back + 3, ref + 5, 70000) == 0);
    cuFileHandleDeregister(ofh);
    close(ofd);
    unlink(out);
    free(out);
    dev_free(dev, m);

    cuFileHandleDeregister(fh);
    if (dfh) cuFileHandleDeregister(dfh);
    cuFileHandleDeregister(rfh);
    close(fd);
    if (dfd >= 0) close(dfd);
    close(ro);
    unlink(path);
    free(path);
    free(ref); free(got); free(pattern); free(back);
}

static void test_props(void)
{
    int v = 0;
    CHECK_ST(cuFileGetVersion(&v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 1150);
    CHECK_ST(cuFileGetVersion(NULL), CU_FILE_INVALID_VALUE);
    CUfileDrvProps_t p;
    CHECK_ST(cuFileDriverGetProperties(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileDriverGetProperties(&p), CU_FILE_SUCCESS);
    /* no peer-to-peer path in this build: clients must see GDS as unavailable */
    CHECK_EQ(p.nvfs.major_version, 0);
    CHECK_EQ(p.nvfs.minor_version, 0);
    CHECK(p.fflags & (1u << CU_FILE_BATCH_IO_SUPPORTED));
    CHECK(p.fflags & (1u << CU_FILE_STREAMS_SUPPORTED));
    CHECK(p.nvfs.dcontrolflags & (1u << CU_FILE_ALLOW_COMPAT_MODE));
    CHECK_EQ(p.max_batch_io_size, 128);
    CHECK_EQ(p.max_device_cache_size, 128 * 1024);
    CHECK(p.per_buffer_cache_size > 0);
    /* the header's helpers */
    CHECK(IS_CUFILE_ERR(-CU_FILE_INVALID_VALUE));
    CHECK(!IS_CUFILE_ERR(-EIO));
    CHECK(strcmp(CUFILE_ERRSTR(-CU_FILE_BATCH_FULL), "batch queue full") == 0);
    CUfileError_t e = {CU_FILE_CUDA_DRIVER_ERROR, 1};
    CHECK(IS_CUDA_ERR(e) && CU_FILE_CUDA_ERR(e) == 1);
}

int main(void)
{
    th_in_child("implicit open and close", scenario_implicit);
    th_in_child("setters", scenario_setters);
    th_in_child("fork after open", scenario_fork);
    test_handles();
    test_buffers();
    test_io();
    test_props();
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS); /* the implicit open's reference */
    return th_finish("test_api");
}
