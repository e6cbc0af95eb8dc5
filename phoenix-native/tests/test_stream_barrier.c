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
    CHECK_EQ(phxfs_stream_destroy(0, s), 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, fsize + 64), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    CHECK_EQ(phxfs_close(0), 0);
    free(ref); free(got);
    close(fd); close(wfd);
    unlink(path); unlink(out);
    return th_finish("test_stream_barrier");
}
