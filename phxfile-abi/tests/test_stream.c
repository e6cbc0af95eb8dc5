/* Stream-ordered I/O: cuFileReadAsync/WriteAsync with the size and offsets read
 * when the stream gets there (or at enqueue under the FIXED_* flags of
 * cuFileStreamRegister), their errors, and upstream's phxFile* ABI. On the host
 * connector streams run at enqueue, so only the values' effect is checked. */
#include "harness.h"
#include "th_cufile.h"
#include "cufile.h"
#include "phxfile.h"
#include "phoenix.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

/* On the fake and emu devices the stream stops while this file exists (PHX_FAKE_HOLD_FILE),
 * so the late-bound cells change before the stream gets there whatever the timing; on a GPU
 * a whole-file read ahead keeps the stream busy instead. */
static char hold[] = "/tmp/phx-hold-XXXXXX";
static void hold_stream(int on)
{
    if (on) {
        int h = open(hold, O_CREAT | O_WRONLY, 0600);
        CHECK(h >= 0);
        close(h);
    } else {
        unlink(hold);
    }
}

int main(void)
{
    int hfd = mkstemp(hold);
    CHECK(hfd >= 0);
    close(hfd);
    unlink(hold);
    setenv("PHX_FAKE_HOLD_FILE", hold, 1);
    size_t fsize = (4u << 20) + 999;
    char *path = th_make_file(fsize, 5), *out = th_make_file(0, 0);
    unsigned char *ref = malloc(fsize), *got = malloc(fsize + 65536);
    th_fill(ref, fsize, 5, 0);
    int fd = open(path, O_RDONLY), ofd = open(out, O_RDWR);
    CUfileHandle_t fh = th_register_fd(fd), ofh = th_register_fd(ofd);
    CHECK_EQ(phxfs_open(0), 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    int immediate = strcmp(info.connector, "host") == 0;
    /* the fake and emu devices, and the fake libcuda of the tests, hold on PHX_FAKE_HOLD_FILE */
    int holdable = !strcmp(info.connector, "fake") || !strcmp(info.connector, "emu") ||
                   !strncmp(info.name, "Fake CUDA device", 16);
    int dev = th_have_device() ? 0 : -1;
    size_t blen = fsize + 65536;
    char *m;
    if (dev >= 0) CHECK_EQ(phxfs_mem_alloc(0, blen, (void **)&m), 0);
    else m = aligned_alloc(4096, (blen + 4095) & ~(size_t)4095);
    void *s;
    CHECK_EQ(phxfs_stream_create(0, &s), 0);
    CUstream cs = (CUstream)s;

    /* errors */
    size_t n = 4096;
    off_t fo = 0, bo = 0;
    ssize_t done = -999;
    CHECK_ST(cuFileStreamRegister(cs, 0x100), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileStreamDeregister(cs), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, m, NULL, &fo, &bo, &done, cs), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync(fh, NULL, &n, &fo, &bo, &done, cs), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileReadAsync((CUfileHandle_t)(uintptr_t)0x99, m, &n, &fo, &bo, &done, cs), CU_FILE_HANDLE_NOT_REGISTERED);
    if (dev >= 0) {
        /* unregistered device memory, as KvikIO passes CuPy arrays (it was
         * CU_FILE_MEMORY_NOT_REGISTERED): in the stream's order, the caller waiting */
        size_t un = 4096;
        off_t ufo = 100, ubo = 8, uwo = 0;
        ssize_t ud = -999, uw = -999;
        CHECK_ST(cuFileReadAsync(fh, m, &un, &ufo, &ubo, &ud, cs), CU_FILE_SUCCESS);
        CHECK_ST(cuFileWriteAsync(ofh, m, &un, &uwo, &ubo, &uw, cs), CU_FILE_SUCCESS);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(ud, 4096);
        CHECK_EQ(uw, 4096);
        CHECK_EQ(phxfs_memcpy_to_host(0, got, m, 8 + 4096), 0);
        CHECK(memcmp(got + 8, ref + 100, 4096) == 0);
        CHECK_EQ(pread(ofd, got, 4096, 0), 4096);
        CHECK(memcmp(got, ref + 100, 4096) == 0);
        /* bad late values land in bytes_done in cuFile's convention: a negative file offset
         * is what pread refuses (EINVAL, the file system's answer: -1); past the allocation
         * is the shim's (the negated status) */
        off_t neg = -1;
        CHECK_ST(cuFileReadAsync(fh, m, &un, &neg, &ubo, &ud, cs), CU_FILE_SUCCESS);
        CHECK_EQ(ud, -1);
        size_t toobig = blen + 4096;
        off_t z0 = 0;
        CHECK_ST(cuFileReadAsync(fh, m, &toobig, &z0, &z0, &ud, cs), CU_FILE_SUCCESS);
        CHECK_EQ(ud, -(ssize_t)CU_FILE_MEMORY_NOT_REGISTERED);
    }
    CHECK_ST(cuFileBufRegister(m, blen, 0), CU_FILE_SUCCESS);

    /* late binding: a whole-file read keeps the stream busy while the cells change (held,
     * where the device can hold it, after that read: only the two late reads are queued
     * then, which take their pinned slots at enqueue) */
    size_t nbig = fsize, n1 = 1, n2 = 1;
    off_t zero = 0, fo1 = 0, bo1 = 0, fo2 = 0, bo2 = 0;
    ssize_t dbig = -999, d1 = -999, d2 = -999;
    CHECK_ST(cuFileReadAsync(fh, m, &nbig, &zero, &zero, &dbig, cs), CU_FILE_SUCCESS);
    if (holdable) {
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        hold_stream(1);
    }
    CHECK_ST(cuFileReadAsync(fh, m, &n1, &fo1, &bo1, &d1, cs), CU_FILE_SUCCESS);
    if (!immediate) { n1 = 5000; fo1 = 12345; bo1 = fsize + 7; }
    /* a fixed size and file offset (FIXED_* flags) ignore later changes; the buffer offset stays late */
    CHECK_ST(cuFileStreamRegister(cs, CU_FILE_STREAM_FIXED_FILE_SIZE | CU_FILE_STREAM_FIXED_FILE_OFFSET), CU_FILE_SUCCESS);
    n2 = 3000;
    fo2 = 777;
    CHECK_ST(cuFileReadAsync(fh, m, &n2, &fo2, &bo2, &d2, cs), CU_FILE_SUCCESS);
    if (!immediate) { n2 = 1; fo2 = 1; bo2 = fsize + 20000; }
    hold_stream(0);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(dbig, (ssize_t)fsize);
    CHECK_EQ(d1, immediate ? 1 : 5000);
    CHECK_EQ(d2, 3000);
    if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_host(0, got, m, blen), 0);
    else memcpy(got, m, blen);
    if (!immediate) {
        CHECK(memcmp(got + fsize + 7, ref + 12345, 5000) == 0);
        CHECK(memcmp(got + fsize + 20000, ref + 777, 3000) == 0);
        CHECK(memcmp(got + 1, ref + 1, fsize - 1) == 0);
    } else {
        CHECK(memcmp(got, ref + 777, 3000) == 0);
    }
    CHECK_ST(cuFileStreamDeregister(cs), CU_FILE_SUCCESS);

    /* write back through the stream, then read the file with plain I/O */
    size_t nw = fsize;
    off_t fw = 0, bw = 0;
    ssize_t dw = -999, dr = -999;
    CHECK_ST(cuFileReadAsync(fh, m, &nw, &fw, &bw, &dr, cs), CU_FILE_SUCCESS);
    CHECK_ST(cuFileWriteAsync(ofh, m, &nw, &fw, &bw, &dw, cs), CU_FILE_SUCCESS);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(dr, (ssize_t)fsize);
    CHECK_EQ(dw, (ssize_t)fsize);
    CHECK_EQ(pread(ofd, got, fsize, 0), (ssize_t)fsize);
    CHECK(memcmp(got, ref, fsize) == 0);
    /* a handle not open for writing fails the call, with the error in bytes_written too;
     * the stream goes on */
    ssize_t dfail = -999;
    /* fh is read-only: cuFile's "unsupported file open flags", which KvikIO looks for */
    CHECK_ST(cuFileWriteAsync(fh, m, &nw, &fw, &bw, &dfail, cs), CU_FILE_INVALID_FILE_OPEN_FLAG);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(dfail, -(ssize_t)CU_FILE_INVALID_FILE_OPEN_FLAG);
    /* host memory on a stream */
    unsigned char *hbuf = malloc(8192);
    size_t nh = 8192;
    off_t fh_off = 100, bh = 0;
    ssize_t dh = -999;
    CHECK_ST(cuFileReadAsync(fh, hbuf, &nh, &fh_off, &bh, &dh, cs), CU_FILE_SUCCESS);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(dh, 8192);
    CHECK(memcmp(hbuf, ref + 100, 8192) == 0);

    /* cuFile's convention in bytes_read_p / bytes_written_p (it was libphoenix's -errno): a
     * file-system error is -1. Writes past RLIMIT_FSIZE fail in the kernel with EFBIG on
     * every engine; SIGXFSZ ignored so the process lives. Registered memory (the ring or the
     * workers), host memory (the workers on an accelerator) and unregistered device memory
     * (the blocking path), as cuFileWrite reports the same (-1, errno EFBIG). */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old_fsize, small = {64u << 20, 64u << 20};
    CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old_fsize), 0);
    small.rlim_max = old_fsize.rlim_max;
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    size_t nbigw = 4096;
    off_t far = (off_t)1 << 30, zb = 0;
    ssize_t dreg = -999, dhost = -999, dunreg = -999;
    CHECK_ST(cuFileWriteAsync(ofh, m, &nbigw, &far, &zb, &dreg, cs), CU_FILE_SUCCESS);
    CHECK_ST(cuFileWriteAsync(ofh, hbuf, &nbigw, &far, &zb, &dhost, cs), CU_FILE_SUCCESS);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(dreg, -1);
    CHECK_EQ(dhost, -1);
    /* a size past the registration: the shim's error, negated (a device's registrations only) */
    if (dev >= 0) {
        size_t past = blen + 1;
        ssize_t dpast = -999;
        CHECK_ST(cuFileReadAsync(fh, m, &past, &zb, &zb, &dpast, cs), CU_FILE_SUCCESS);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(dpast, -(ssize_t)CU_FILE_MEMORY_NOT_REGISTERED);
    }
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    if (dev >= 0) {
        CHECK_ST(cuFileWriteAsync(ofh, m, &nbigw, &far, &zb, &dunreg, cs), CU_FILE_SUCCESS);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(dunreg, -1);
    }
    CHECK_ST(cuFileBufRegister(m, blen, 0), CU_FILE_SUCCESS);
    errno = 0;
    CHECK_EQ(cuFileWrite(ofh, hbuf, 4096, far, 0), -1);
    CHECK_EQ(errno, EFBIG);
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old_fsize), 0);
    /* a call libphoenix refuses (a fixed buffer offset < 0): the cell holds the negated
     * status the call returned, not libphoenix's -EINVAL */
    ssize_t dref = -999;
    off_t negbo = -1;
    CHECK_ST(cuFileStreamRegister(cs, CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_SIZE |
                                          CU_FILE_STREAM_FIXED_FILE_OFFSET), CU_FILE_SUCCESS);
    CHECK_ST(cuFileReadAsync(fh, m, &nbigw, &zb, &negbo, &dref, cs), CU_FILE_INVALID_VALUE);
    CHECK_EQ(dref, -(ssize_t)CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileStreamDeregister(cs), CU_FILE_SUCCESS);

    /* upstream's phxFile* ABI: -errno returns, fd handles, hipFile's argument order */
    CHECK_EQ(phxFileDriverOpen(), 0);
    void *pfh = NULL;
    CHECK_EQ(phxFileHandleRegister(NULL, fd), -EINVAL);
    CHECK_EQ(phxFileHandleRegister(&pfh, -1), -EBADF);
    CHECK_EQ(phxFileHandleRegister(&pfh, fd), 0);
    CHECK_EQ(phxFileStreamRegister(s), 0);
    CHECK_EQ(phxFileBufRegister(m, blen), -EEXIST); /* cuFile's registration holds it */
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    CHECK_EQ(phxFileBufRegister(m, blen), 0);
    CHECK_EQ(phxFileBufRegister(m, blen), 0); /* refcounted */
    CHECK_EQ(phxFileBufRegister(NULL, 5), -EINVAL);
    size_t pn = 1;
    int64_t pfo = 0, pbo = 0, pdone = -999;
    CHECK_EQ(phxFileReadAsync(pfh, m, NULL, &pfo, &pbo, &pdone, s), -EINVAL);
    CHECK_EQ(phxFileReadAsync(pfh, m, &nbig, &zero, &zero, &dbig, s), 0);
    /* held as above where the device can hold it: the whole-file read alone lost the race
     * to the cell changes below on a loaded machine */
    if (holdable) {
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        hold_stream(1);
    }
    CHECK_EQ(phxFileReadAsync(pfh, m, &pn, &pfo, &pbo, &pdone, s), 0);
    if (!immediate) { pn = 4000; pfo = 50000; pbo = 11; }
    hold_stream(0);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(pdone, immediate ? 1 : 4000);
    if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_host(0, got, m, 8192), 0);
    else memcpy(got, m, 8192);
    if (!immediate) CHECK(memcmp(got + 11, ref + 50000, 4000) == 0);
    /* out of the registration: in bytes_done */
    size_t pbig = blen + 1;
    int64_t pz = 0, pd2 = 0;
    int rc = phxFileReadAsync(pfh, m, &pbig, &pz, &pz, &pd2, s);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK(dev < 0 || (rc == 0 && pd2 == -EFAULT));
    CHECK_EQ(phxFileBufDeregister(m), 0);
    CHECK_EQ(phxFileBufDeregister(m), 0);
    CHECK_EQ(phxFileBufDeregister(m), 0); /* unknown: tolerated, as upstream */
    CHECK_EQ(phxFileBufRegister(m, 4096), 0);
    CHECK_EQ(phxFileDriverClose(), 0);      /* drops phxFile's registrations */
    CHECK_ST(cuFileBufRegister(m, 4096, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    CHECK_EQ(phxFileHandleDeregister(pfh), 0);
    CHECK_EQ(phxFileStreamDeregister(s), 0);

    CHECK_EQ(phxfs_stream_destroy(0, s), 0);
    if (dev >= 0) CHECK_EQ(phxfs_mem_free(0, m), 0);
    else free(m);
    CHECK_EQ(phxfs_close(0), 0);
    cuFileHandleDeregister(fh);
    cuFileHandleDeregister(ofh);
    close(fd); close(ofd);
    unlink(path); unlink(out);
    free(path); free(out); free(ref); free(got); free(hbuf);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_finish("test_stream");
}
