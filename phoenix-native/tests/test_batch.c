/* Batches: host and device requests mixed, per-request results, async
 * handles that keep registrations alive, deregistration while in flight. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define N 64
#define REQ (256u << 10)

int main(void)
{
    CHECK_EQ(phxfs_open(0), 0);
    size_t fsize = (size_t)N * REQ;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 11));
    int fd = th_open(path, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc_uninit(0, fsize, &dmem), 0); /* only the bytes read are compared */
    CHECK_EQ(phxfs_regmem(0, dmem, fsize, NULL), 0);
    unsigned char *host = malloc(fsize), *ref = malloc(fsize), *back = malloc(fsize);
    th_fill(ref, fsize, 11, 0);

    /* mixed: even requests to the device, odd to host memory, reversed order */
    phxfs_io_req_t reqs[N + 2];
    for (int i = 0; i < N; i++) {
        int k = N - 1 - i;
        reqs[i] = (phxfs_io_req_t){fd, (k % 2) ? -1 : 0, (k % 2) ? (void *)host : dmem, (off_t)k * REQ, REQ, (off_t)k * REQ, 0};
    }
    /* one request outside the registration, one past EOF */
    reqs[N] = (phxfs_io_req_t){fd, 0, dmem, (off_t)fsize - 10, 20, 0, 0};
    reqs[N + 1] = (phxfs_io_req_t){fd, -1, host, 0, 100, (off_t)fsize, 0};
    CHECK_EQ(phxfs_read_batch(reqs, N + 2), 1);
    for (int i = 0; i < N; i++) CHECK_EQ(reqs[i].result, REQ);
    CHECK_EQ(reqs[N].result, -EFAULT);
    CHECK_EQ(reqs[N + 1].result, 0);
    CHECK_EQ(phxfs_memcpy_to_host(0, back, dmem, fsize), 0);
    for (int k = 0; k < N; k++) {
        unsigned char *got = (k % 2) ? host : back;
        if (memcmp(got + (size_t)k * REQ, ref + (size_t)k * REQ, REQ)) { fprintf(stderr, "mixed batch mismatch at %d\n", k); th_failures++; }
    }

    /* async: until phxfs_batch_wait returns, the handle holds its registrations and devices
     * (phoenix.h), finished or not: deregistration and close are refused every time */
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++) reqs[i] = (phxfs_io_req_t){fd, 0, dmem, (off_t)i * REQ, REQ, (off_t)((i * 7) % N) * REQ, 0};
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t before = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        phxfs_batch_t *h = phxfs_batch_submit_read(reqs, N);
        CHECK(h != NULL);
        CHECK_EQ(phxfs_deregmem(0, dmem, fsize), -EBUSY);
        CHECK(strstr(phxfs_last_error(), "in-flight") != NULL);
        CHECK_EQ(phxfs_close(0), -EBUSY);
        if (round == 4) {
            /* also once the batch has surely finished */
            while (phxfs_batch_poll(h) == 0) usleep(1000);
            CHECK_EQ(phxfs_deregmem(0, dmem, fsize), -EBUSY);
            CHECK_EQ(phxfs_close(0), -EBUSY);
        }
        CHECK(phxfs_batch_bytes_done(h) >= 0 && phxfs_batch_bytes_done(h) <= (int64_t)N * REQ);
        CHECK_EQ(phxfs_batch_wait(h), 0);
        CHECK_EQ(phxfs_batch_poll(h), 1);
        CHECK_EQ(phxfs_batch_bytes_done(h), (int64_t)N * REQ);
        for (int i = 0; i < N; i++) CHECK_EQ(reqs[i].result, REQ);
        /* queued, first task taken, last task ended: in that order, inside the caller's own
         * before-and-after on the same clock */
        int64_t times[3] = {0, 0, 0};
        CHECK_EQ(phxfs_batch_times(h, times), 0);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t after = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        CHECK(before <= times[0] && times[0] <= times[1] && times[1] <= times[2] && times[2] <= after);
        CHECK_EQ(phxfs_batch_times(h, NULL), -EINVAL);
        CHECK_EQ(phxfs_batch_times(NULL, times), -EINVAL);
        CHECK_EQ(phxfs_batch_destroy(h), 0);
    }
    CHECK_EQ(phxfs_memcpy_to_host(0, back, dmem, fsize), 0);
    for (int i = 0; i < N; i++)
        if (memcmp(back + (size_t)i * REQ, ref + (size_t)((i * 7) % N) * REQ, REQ)) { fprintf(stderr, "async mismatch at %d\n", i); th_failures++; }

    /* async write batch, then the file holds the device bytes */
    char out[256];
    snprintf(out, sizeof out, "%s", th_make_file(0, 0));
    int wfd = th_open(out, 1);
    for (int i = 0; i < N; i++) reqs[i] = (phxfs_io_req_t){wfd, (i % 3) ? 0 : -1, (i % 3) ? dmem : (void *)ref, (off_t)i * REQ, REQ, (off_t)i * REQ, 0};
    phxfs_batch_t *h = phxfs_batch_submit_write(reqs, N);
    CHECK(h != NULL);
    CHECK_EQ(phxfs_batch_wait(h), 0);
    CHECK_EQ(phxfs_batch_destroy(h), 0);
    int plain = open(out, O_RDONLY);
    CHECK_EQ(pread(plain, host, fsize, 0), (ssize_t)fsize);
    for (int i = 0; i < N; i++) {
        const unsigned char *want = (i % 3) ? back + (size_t)i * REQ : ref + (size_t)i * REQ;
        if (memcmp(host + (size_t)i * REQ, want, REQ)) { fprintf(stderr, "write batch mismatch at %d\n", i); th_failures++; }
    }
    close(plain);

    /* a read-only fd in a write batch fails that request only */
    int ro = open(path, O_RDONLY);
    phxfs_io_req_t bad[2] = {{ro, -1, ref, 0, 10, 0, 0}, {wfd, -1, ref, 0, 10, 0, 0}};
    CHECK_EQ(phxfs_write_batch(bad, 2), 1);
    CHECK_EQ(bad[0].result, -EBADF);
    CHECK_EQ(bad[1].result, 10);
    CHECK_EQ(phxfs_read_batch(NULL, 3), -EINVAL);
    CHECK_EQ(phxfs_read_batch(reqs, 0), 0);
    errno = 0;
    CHECK(phxfs_batch_submit_read(NULL, 2) == NULL && errno == EINVAL);

    close(ro);
    close(wfd);
    close(fd);
    unlink(out);
    unlink(path);
    CHECK_EQ(phxfs_deregmem(0, dmem, fsize), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    free(host); free(ref); free(back);
    return th_finish("test_batch");
}
