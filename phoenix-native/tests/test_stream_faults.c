/* Stream error paths (fake device with injected faults): a launch that fails
 * before, between or after the parts of a stream operation never frees what
 * the stream still holds (ASan checks), always reports, and never stalls the
 * stream. The faults are numbered by call (see below). */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
    const char *conn = getenv("PHX_CONNECTOR");
    if (!conn || strcmp(conn, "fake")) {
        printf("test_stream_faults: skipped, faults are injected by the fake device only\n");
        return 77;
    }
    setenv("PHX_FAKE_FAIL_LAUNCH", "1,5", 1);
    setenv("PHX_FAKE_FAIL_COPY", "1", 1);
    setenv("PHX_FAKE_FAIL_WAIT", "10", 1);
    setenv("PHX_SLOT_KB", "256", 1); /* so each 1 MiB read is four pieces */
    CHECK_EQ(phxfs_open(0), 0);
    size_t fsize = 1u << 20;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 3));
    int fd = th_open(path, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, fsize, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, fsize, NULL), 0);
    void *s;
    CHECK_EQ(phxfs_stream_create(0, &s), 0);
    size_t n = fsize;
    off_t bo = 0, fo = 0;
    ssize_t d1 = -999, d2 = -999, d3 = -999, d4 = -999;

    /* Each read of 1 MiB is four pieces through a ring of four slots, all queued at enqueue
     * (stream_ring.c): the kick (a launch), then per piece a wait and a copy, a piece_done
     * launch after every second piece (half the ring), then the finish (a launch). */
    /* launch 1 fails: the kick; nothing was queued */
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &d1, s), -EIO);
    CHECK(strstr(phxfs_last_error(), "cuLaunchHostFunc") || strstr(phxfs_last_error(), "queue"));
    CHECK_EQ(d1, -EIO);
    /* launch 2 (kick) and wait 1 are queued, copy 1 fails: the call reports at once, and
     * what was queued lets the stream pass */
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &d2, s), -EIO);
    CHECK_EQ(d2, -EIO);
    /* kick (3), pieces 0-1 (waits 2-3, copies 2-3, launch 4), pieces 2-3 (waits 4-5, copies
     * 4-5), then launch 5 fails: waits and copies follow the last host function, so the
     * ring's slots may still be read and are never reused (the pool's memory outlives it) */
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &d3, s), -EIO);
    CHECK_EQ(d3, -EIO);
    /* and the stream goes on: this one moves the bytes (launches 6-9, waits 6-9) */
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, &n, &bo, &fo, &d4, s), 0);
    /* wait 10 fails: only the kick is queued. The call returns only when the kick can no
     * longer touch the cells, so they may be freed at once (ASan reports a use after the
     * free otherwise); no copy was queued, so the buffer keeps op 4's bytes */
    size_t *n5 = malloc(sizeof *n5);
    off_t *bo5 = malloc(sizeof *bo5), *fo5 = malloc(sizeof *fo5);
    ssize_t *d5 = malloc(sizeof *d5);
    *n5 = fsize; *bo5 = 0; *fo5 = 0; *d5 = -999;
    CHECK_EQ(phxfs_read_stream(fd, 0, dmem, n5, bo5, fo5, d5, s), -EIO);
    CHECK_EQ(*d5, -EIO);
    free(n5); free(bo5); free(fo5); free(d5);
    usleep(100000);
    CHECK_EQ(phxfs_stream_synchronize(0, s), 0);
    CHECK_EQ(d4, (ssize_t)fsize);
    unsigned char *ref = malloc(fsize), *got = malloc(fsize);
    th_fill(ref, fsize, 3, 0);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, fsize), 0);
    CHECK(memcmp(ref, got, fsize) == 0);
    CHECK_EQ(phxfs_stream_destroy(0, s), 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, fsize), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    /* every use was given back, also on the failed paths */
    CHECK_EQ(phxfs_close(0), 0);
    free(ref); free(got);
    close(fd);
    unlink(path);
    return th_finish("test_stream_faults");
}
