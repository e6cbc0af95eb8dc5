/* Stream I/O under a context-wide barrier (fake device, PHX_FAKE_CONTEXT_BARRIER): once
 * a stream waits on our flag, no copy may be queued anywhere until that wait passes, as
 * when CUDA loads a kernel lazily (the H200 hang of core-2). Reads and writes of several
 * pieces (the file offset read when the stream gets there) must still complete, byte-exact: everything an
 * operation needs from the accelerator is queued when it is called. The test fails by
 * timing out (alarm) where a worker still needs a copy after the wait is queued. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_stream_barrier: stream I/O did not complete in 60 s (deadlock)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(void)
{
    const char *conn = getenv("PHX_CONNECTOR");
    if (!conn || strcmp(conn, "fake")) {
        printf("test_stream_barrier: skipped, the barrier is the fake device's\n");
        return 77;
    }
    setenv("PHX_FAKE_CONTEXT_BARRIER", "1", 1);
    char hold[] = "/tmp/phx-hold-XXXXXX";
    int hfd = mkstemp(hold);
    CHECK(hfd >= 0);
    close(hfd);
    unlink(hold);
    setenv("PHX_FAKE_HOLD_FILE", hold, 1);
    signal(SIGALRM, on_alarm);
    alarm(60);
    CHECK_EQ(phxfs_open(0), 0);
    size_t fsize = (5u << 20) + 4321; /* 21 pieces of 256 KiB through a ring of 4 */
    char path[256], out[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 9));
    snprintf(out, sizeof out, "%s", th_make_file(0, 0));
    int fd = th_open(path, 0), wfd = th_open(out, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, fsize + 64, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, fsize + 64, NULL), 0);
    void *s;
    CHECK_EQ(phxfs_stream_create(0, &s), 0);
    size_t n = fsize - 1000;
    off_t bo = 64, fo = 1000, wo = 0;
    ssize_t rd = -999, wr = -999;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &rd, s), 0);
    CHECK_EQ(phxfs_write_stream(wfd, 0, dmem, &n, &bo, &wo, &wr, s), 0);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(rd, (ssize_t)n);
    CHECK_EQ(wr, (ssize_t)n);
    unsigned char *ref = malloc(fsize), *got = malloc(fsize);
    th_fill(ref, fsize, 9, 0);
    int plain = open(out, O_RDONLY);
    CHECK_EQ(pread(plain, got, n, 0), (ssize_t)n);
    CHECK(memcmp(got, ref + 1000, n) == 0);
    close(plain);
    /* size and buffer offset bound late too (cuFile's ReadAsync): set after enqueue; the
     * registered room makes a round trip, so the bytes around the range stay as they were */
    CHECK_EQ(phxfs_memcpy_to_device(0, dmem, ref, fsize), 0);
    size_t ln = 1, wn = 1;
    off_t lbo = 0, lfo = 0, wbo = 0, wfo = 0;
    ssize_t lrd = -999, lwr = -999;
    unsigned late = PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET | PHXFS_STREAM_LATE_F_OFFSET;
    int hf = open(hold, O_CREAT | O_WRONLY, 0600); /* the stream stops until it goes */
    CHECK(hf >= 0);
    close(hf);
    CHECK_EQ(phxfs_read_stream_ex(fd, 0, dmem, &ln, &lbo, &lfo, &lrd, s, late), 0);
    CHECK_EQ(phxfs_write_stream_ex(wfd, 0, dmem, &wn, &wbo, &wfo, &lwr, s, late), 0);
    /* the values the stream will find, set while it is held before the operations */
    ln = 300001; lbo = 777777; lfo = 54321;
    wn = 300001; wbo = 777777; wfo = 4096;
    unlink(hold);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(lrd, 300001);
    CHECK_EQ(lwr, 300001);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, fsize), 0);
    CHECK(memcmp(got, ref, 777777) == 0);                        /* before: as it was */
    CHECK(memcmp(got + 777777, ref + 54321, 300001) == 0);       /* the read */
    CHECK(memcmp(got + 777777 + 300001, ref + 777777 + 300001, fsize - 777777 - 300001) == 0); /* after */
    plain = open(out, O_RDONLY);
    CHECK_EQ(pread(plain, got, 300001, 4096), 300001);
    CHECK(memcmp(got, ref + 54321, 300001) == 0);
    close(plain);
    CHECK_EQ(phxfs_stream_destroy(0, s), 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, fsize + 64), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    CHECK_EQ(phxfs_close(0), 0);
    free(ref); free(got);
    close(fd); close(wfd);
    unlink(path); unlink(out);
    return th_finish("test_stream_barrier");
}
