/* Mixed read/write batches with completion callbacks, cancellation, and two
 * threads waiting on one batch (each sees the same result; the requests are
 * released once: the device closes afterwards). */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#define N 256
#define REQ (64u << 10)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int calls, last_result = -1;
static pthread_t cb_thread;

static void on_done(phxfs_batch_t *b, int result, void *arg)
{
    pthread_mutex_lock(&lock);
    calls++;
    last_result = result;
    cb_thread = pthread_self();
    *(int *)arg += 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    phxfs_batch_destroy(b); /* allowed from the callback */
}

static void wait_calls(int want)
{
    pthread_mutex_lock(&lock);
    while (calls < want) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void *waiter(void *h) { return (void *)(intptr_t)phxfs_batch_wait(h); }

int main(void)
{
    CHECK_EQ(phxfs_open(0), 0);
    size_t fsize = (size_t)N * REQ;
    char in[256], out[256];
    snprintf(in, sizeof in, "%s", th_make_file(fsize, 5));
    snprintf(out, sizeof out, "%s", th_make_file(fsize, 9));
    int fd = th_open(in, 0), wfd = th_open(out, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, fsize, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, fsize, NULL), 0);
    unsigned char *host = calloc(1, fsize), *ref = malloc(fsize), *wref = malloc(fsize), *got = malloc(fsize);
    th_fill(ref, fsize, 5, 0);
    th_fill(wref, fsize, 77, 0);
    CHECK_EQ(phxfs_memcpy_to_device(0, dmem, wref, fsize), 0);

    /* mixed: even requests read the input into host memory, odd ones write device bytes out */
    phxfs_io_req_t reqs[N];
    uint8_t ops[N];
    for (int i = 0; i < N; i++) {
        int w = i % 2;
        reqs[i] = (phxfs_io_req_t){w ? wfd : fd, w ? 0 : -1, w ? dmem : (void *)host, (off_t)i * REQ, REQ, (off_t)i * REQ, 0};
        ops[i] = w ? PHXFS_OP_WRITE : PHXFS_OP_READ;
    }
    int mine = 0;
    phxfs_batch_t *h = phxfs_batch_submit(reqs, ops, N, on_done, &mine);
    CHECK(h != NULL);
    wait_calls(1);
    CHECK_EQ(mine, 1);
    CHECK_EQ(last_result, 0);
    CHECK(!pthread_equal(cb_thread, pthread_self()));
    int plain = open(out, O_RDONLY);
    CHECK_EQ(pread(plain, got, fsize, 0), (ssize_t)fsize);
    close(plain);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(reqs[i].result, REQ);
        size_t o = (size_t)i * REQ;
        if (i % 2 == 0 && memcmp(host + o, ref + o, REQ)) { fprintf(stderr, "mixed read %d wrong\n", i); th_failures++; }
        if (i % 2 == 1 && memcmp(got + o, wref + o, REQ)) { fprintf(stderr, "mixed write %d wrong\n", i); th_failures++; }
    }

    /* an empty batch still calls back, on a library thread */
    h = phxfs_batch_submit(reqs, NULL, 0, on_done, &mine);
    CHECK(h != NULL);
    wait_calls(2);
    CHECK_EQ(mine, 2);
    CHECK(!pthread_equal(cb_thread, pthread_self()));
    /* a bad op is refused before anything runs */
    uint8_t bad[1] = {7};
    errno = 0;
    CHECK(phxfs_batch_submit(reqs, bad, 1, NULL, NULL) == NULL && errno == EINVAL);

    /* cancel: requests with work no worker took report ECANCELED, exactly as many as
     * cancel said; the others are whole and right */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) reqs[i] = (phxfs_io_req_t){fd, 0, dmem, (off_t)i * REQ, REQ, (off_t)i * REQ, 0};
        memset(got, 0, fsize);
        CHECK_EQ(phxfs_memcpy_to_device(0, dmem, got, fsize), 0);
        h = phxfs_batch_submit(reqs, NULL, N, NULL, NULL);
        CHECK(h != NULL);
        int c = phxfs_batch_cancel(h);
        CHECK(c >= 0 && c <= N);
        CHECK_EQ(phxfs_batch_cancel(h), 0); /* a second cancel adds nothing */
        int failed = phxfs_batch_wait(h);
        int cancelled = 0;
        CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, fsize), 0);
        for (int i = 0; i < N; i++) {
            if (reqs[i].result == -ECANCELED) { cancelled++; continue; }
            CHECK_EQ(reqs[i].result, REQ);
            if (memcmp(got + (size_t)i * REQ, ref + (size_t)i * REQ, REQ)) { fprintf(stderr, "cancel round %d: request %d wrong\n", round, i); th_failures++; }
        }
        printf("cancel round %d: %d of %d requests cancelled\n", round, cancelled, N);
        CHECK_EQ(cancelled, c);
        CHECK_EQ(failed, c);
        CHECK_EQ(phxfs_batch_destroy(h), 0);
    }

    /* two threads wait on one batch: both see the result, the requests are released once */
    for (int i = 0; i < N; i++) reqs[i] = (phxfs_io_req_t){fd, 0, dmem, (off_t)i * REQ, REQ, (off_t)i * REQ, 0};
    h = phxfs_batch_submit(reqs, NULL, N, NULL, NULL);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, waiter, h);
    pthread_create(&t2, NULL, waiter, h);
    void *r1, *r2;
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    CHECK_EQ((intptr_t)r1, 0);
    CHECK_EQ((intptr_t)r2, 0);
    CHECK_EQ(phxfs_batch_wait(h), 0);
    CHECK_EQ(phxfs_batch_destroy(h), 0);
    CHECK_EQ(phxfs_deregmem(0, dmem, fsize), 0); /* would be EBUSY if a hold were left */
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    CHECK_EQ(phxfs_close(0), 0);                  /* would be EBUSY if a use were left */
    CHECK_EQ(phxfs_close(0), -EINVAL);
    close(fd); close(wfd);
    unlink(in); unlink(out);
    free(host); free(ref); free(wref); free(got);
    return th_finish("test_async");
}
