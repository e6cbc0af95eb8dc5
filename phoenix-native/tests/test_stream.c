/* Stream-ordered I/O: operations run in stream order, values behind the
 * file-offset pointer are read when the stream reaches them, failures land in
 * bytes_done and never stall the stream. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

/* On the fake and emu devices the stream stops while this file exists (PHX_FAKE_HOLD_FILE),
 * so the test changes late-bound values before the stream gets there whatever the timing
 * (a slow QEMU guest once ran past them); on a GPU a long read ahead keeps the stream busy.
 * A held stream gets only the small late-bound operations: a queued operation takes its
 * pinned slots at enqueue, and with a small pool (the emu device's staging area) a third one
 * would wait for slots that only the held stream can give back. */
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

/* a result_fn whose every output tells which input it had */
static atomic_int tag_calls;
static ssize_t tag(ssize_t r) { return r >= 0 ? r + 1000000 : r - 1000000; }
static ssize_t tag_result(ssize_t r)
{
    atomic_fetch_add(&tag_calls, 1);
    return tag(r);
}

int main(void)
{
    int hfd = mkstemp(hold);
    CHECK(hfd >= 0);
    close(hfd);
    unlink(hold);
    setenv("PHX_FAKE_HOLD_FILE", hold, 1);
    CHECK_EQ(phxfs_open(0), 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    int immediate = strcmp(info.connector, "host") == 0; /* host "streams" run at enqueue */
    /* the fake and emu devices, and the fake libcuda of the tests, hold on PHX_FAKE_HOLD_FILE */
    int holdable = !strcmp(info.connector, "fake") || !strcmp(info.connector, "emu") ||
                   !strncmp(info.name, "Fake CUDA device", 16);
    size_t fsize = (3u << 20) + 12345;
    char path[256], out[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 21));
    snprintf(out, sizeof out, "%s", th_make_file(0, 0));
    int fd = th_open(path, 0), wfd = th_open(out, 0), dfd = th_open(path, 1);
    size_t blen = fsize + 8192;
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, blen, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, blen, NULL), 0);
    unsigned char *ref = malloc(blen), *got = malloc(blen), *pattern = malloc(blen);
    th_fill(ref, fsize, 21, 0);
    memset(pattern, 0x5A, blen);
    CHECK_EQ(phxfs_memcpy_to_device(0, dmem, pattern, blen), 0);
    void *s;
    CHECK_EQ(phxfs_stream_create(0, &s), 0);

    /* read whole file, then write it back out from the same buffer: order matters */
    size_t n1 = fsize, n2 = fsize;
    off_t bo1 = 3, fo1 = 0, bo2 = 3, fo2 = 0;
    ssize_t done1 = -999, done2 = -999;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n1, &bo1, &fo1, &done1, s), 0);
    CHECK_EQ(phxfs_write_stream(wfd, 0, dmem, &n2, &bo2, &fo2, &done2, s), 0);

    if (holdable) {
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        hold_stream(1);
    }
    /* the file offset is read when the stream gets there: changed after enqueue */
    size_t n3 = 100000;
    off_t bo3 = 0, fo3 = immediate ? (off_t)fsize - 777 : 999999999;
    ssize_t done3 = -999;
    CHECK_EQ(phxfs_read_stream(dfd, 0, (char *)dmem + fsize + 4096, &n3, &bo3, &fo3, &done3, s) , -EFAULT);
    CHECK_EQ(phxfs_read_stream(dfd, 0, dmem, &n3, &bo3, &fo3, &done3, s), 0); /* O_DIRECT, unaligned offset */
    fo3 = (off_t)fsize - 777;
    /* a read from a write-only fd fails the call, before anything is queued */
    size_t n4 = 4096;
    off_t bo4 = 0, fo4 = 0;
    ssize_t done4 = -999;
    int wo = open(out, O_WRONLY);
    CHECK_EQ(phxfs_read_stream(wo, 0, dmem, &n4, &bo4, &fo4, &done4, s), -EBADF);
    CHECK(strstr(phxfs_last_error(), "not open for reading") != NULL);
    /* a failure when the stream gets there lands in bytes_done and the stream goes on: a
     * late file offset that is negative by then */
    size_t n6 = 4096;
    off_t bo6 = 200000, fo6 = 0;
    ssize_t done6 = -999;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n6, &bo6, &fo6, &done6, s), 0);
    if (!immediate) fo6 = -5;
    hold_stream(0);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(done1, (ssize_t)fsize);
    CHECK_EQ(done2, (ssize_t)fsize);
    CHECK_EQ(done3, 777);
    CHECK_EQ(done4, -EBADF);
    if (!immediate) CHECK_EQ(done6, -EINVAL);

    /* output file equals input */
    int plain = open(out, O_RDONLY);
    CHECK_EQ(pread(plain, got, fsize, 0), (ssize_t)fsize);
    CHECK(memcmp(got, ref, fsize) == 0);
    close(plain);
    /* device: [0,777) from the file tail, [777, 100000) untouched (a short read keeps the
     * contents; on an accelerator the piece the offset at enqueue put past the end was
     * prefilled from the destination) */
    CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, blen), 0);
    CHECK(memcmp(got, ref + fsize - 777, 777) == 0);
    CHECK(memcmp(got + 777, ref + 777 - 3, 100000 - 777) == 0);
    CHECK(memcmp(got + 3 + fsize, pattern, blen - 3 - fsize) == 0);

    /* many small ordered reads into the same bytes: the last one wins */
    size_t n5 = 4096;
    off_t bo5 = 0, offs[32];
    ssize_t dn[32];
    for (int i = 0; i < 32; i++) {
        offs[i] = (off_t)i * 4096;
        CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n5, &bo5, &offs[i], &dn[i], s), 0);
    }
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    for (int i = 0; i < 32; i++) CHECK_EQ(dn[i], 4096);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, 4096), 0);
    CHECK(memcmp(got, ref + 31 * 4096, 4096) == 0);

    /* _ex: size and buffer offset bound late too, read when the stream gets there; a
     * bound-at-enqueue file offset may change at once */
    {
        size_t big = fsize, n7 = 1, n8 = 0;
        off_t zero = 0, bo7 = 0, fo7 = 0, bo8 = 0, fo8 = 0;
        ssize_t dbig = -999, d7 = -999, d8 = -999;
        if (holdable) {
            hold_stream(1);
            dbig = (ssize_t)fsize;
        } else {
            CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &big, &zero, &zero, &dbig, s), 0); /* keeps the stream busy */
        }
        CHECK_EQ(phxfs_read_stream_ex(fd, 0, dmem, &n7, &bo7, &fo7, &d7, s,
                                      PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET | PHXFS_STREAM_LATE_F_OFFSET), 0);
        fo8 = 8192;
        CHECK_EQ(phxfs_read_stream_ex(fd, 0, (char *)dmem + 65536, &n8, &bo8, &fo8, &d8, s, PHXFS_STREAM_LATE_NBYTES), 0);
        fo8 = 999999999; /* bound at enqueue: ignored */
        if (!immediate) { n7 = 5000; bo7 = 100; fo7 = 4096; n8 = 3000; }
        hold_stream(0);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(dbig, (ssize_t)fsize);
        CHECK_EQ(d7, immediate ? 1 : 5000);
        CHECK_EQ(d8, immediate ? 0 : 3000);
        if (!immediate) {
            CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, 65536 + 3000), 0);
            CHECK(memcmp(got + 100, ref + 4096, 5000) == 0);
            CHECK(memcmp(got + 65536, ref + 8192, 3000) == 0);
        }
        /* a late size past the registration fails into bytes_done, not the call */
        size_t n9 = 0;
        off_t bo9 = 0, fo9 = 0;
        ssize_t d9 = -999;
        if (holdable) hold_stream(1);
        else CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &big, &zero, &zero, &dbig, s), 0);
        CHECK_EQ(phxfs_read_stream_ex(fd, 0, dmem, &n9, &bo9, &fo9, &d9, s, PHXFS_STREAM_LATE_NBYTES), 0);
        if (!immediate) n9 = blen + 1;
        hold_stream(0);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(d9, immediate ? 0 : -EFAULT);
        CHECK_EQ(phxfs_read_stream_ex(fd, 0, dmem, &n9, &bo9, &fo9, &d9, s, 0x80), -EINVAL);
    }

    /* _ex2: every value an operation stores passes through result_fn first: a count, a late
     * failure (past the registration), a host buffer (the workers' path on an accelerator),
     * and the error a refused call leaves */
    {
        size_t n = 4096, nbad = blen + 1, nh = 100;
        off_t z = 0, fo = 4096;
        ssize_t d = -999, dbad = -999, dh = -999, dr = -999;
        char *hb = malloc(4096);
        CHECK_EQ(phxfs_read_stream_ex2(fd, 0, dmem, &n, &z, &fo, &d, s, PHXFS_STREAM_LATE_F_OFFSET, tag_result), 0);
        CHECK_EQ(phxfs_read_stream_ex2(fd, 0, dmem, &nbad, &z, &z, &dbad, s, PHXFS_STREAM_LATE_NBYTES, tag_result),
                 0);
        CHECK_EQ(phxfs_read_stream_ex2(fd, -1, hb, &nh, &z, &z, &dh, s, 0, tag_result), 0);
        CHECK_EQ(phxfs_read_stream_ex2(fd, 0, dmem, &n, &z, &z, &dr, s, 0x80, tag_result), -EINVAL);
        CHECK_EQ(dr, tag(-EINVAL));
        CHECK_EQ(phxfs_read_stream_ex2(wo, 0, dmem, &n, &z, &z, &dr, s, 0, tag_result), -EBADF); /* write-only */
        CHECK_EQ(dr, tag(-EBADF));
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(d, tag(4096));
        CHECK_EQ(dbad, tag(-EFAULT));
        CHECK_EQ(dh, tag(100));
        CHECK(memcmp(hb, ref, 100) == 0);
        CHECK_EQ(atomic_load(&tag_calls), 5); /* once per call: a failed one too, never twice */
        /* NULL: stored as it is, as _ex does */
        CHECK_EQ(phxfs_read_stream_ex2(fd, 0, dmem, &n, &z, &fo, &d, s, 0, NULL), 0);
        CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
        CHECK_EQ(d, 4096);
        free(hb);
    }

    /* NULL stream: runs now */
    ssize_t d6 = 0;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n5, &bo5, &fo1, &d6, NULL), 0);
    CHECK_EQ(d6, 4096);
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, NULL, &bo5, &fo1, &d6, s), -EINVAL);

    CHECK_EQ(phxfs_stream_destroy(0, s), 0);
    close(wo); close(fd); close(wfd); close(dfd);
    unlink(path); unlink(out);
    CHECK_EQ(phxfs_deregmem(0, dmem, blen), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    free(ref); free(got); free(pattern);
    return th_finish("test_stream");
}
