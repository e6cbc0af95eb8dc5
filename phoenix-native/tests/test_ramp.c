/* The ramp (phoenix.h, "ramp"): a large bounce read starts with smaller tasks. Checked
 * here: the key's default, range and freezing, and that reads cut that way deliver every
 * byte where it belongs, buffered and O_DIRECT, from aligned and unaligned offsets, with
 * the ramp ending inside a request and spanning several. Run with the default and, from
 * CMake, with PHX_RAMP=0 and PHX_RAMP=8. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define FSIZE ((size_t)24 << 20)

static const unsigned char *ref;
static void *dmem;
static unsigned char *back;

/* Reads the n requests (device 0, into dmem at their buf_offset), then compares each. */
static void read_and_compare(const char *what, phxfs_io_req_t *reqs, int n)
{
    size_t span = 0;
    for (int i = 0; i < n; i++) {
        size_t end = (size_t)reqs[i].buf_offset + reqs[i].nbytes;
        if (end > span) span = end;
    }
    memset(back, 0xAB, span);
    CHECK_EQ(phxfs_memcpy_to_device(0, dmem, back, span), 0); /* no stale bytes can pass */
    CHECK_EQ(phxfs_read_batch(reqs, n), 0); /* no request failed */
    CHECK_EQ(phxfs_memcpy_to_host(0, back, dmem, span), 0);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(reqs[i].result, (long long)reqs[i].nbytes);
        if (memcmp(back + reqs[i].buf_offset, ref + reqs[i].f_offset, reqs[i].nbytes)) {
            fprintf(stderr, "%s: request %d (file offset %lld, %zu bytes) read wrong bytes\n", what, i,
                    (long long)reqs[i].f_offset, reqs[i].nbytes);
            th_failures++;
        }
    }
}

int main(void)
{
    char v[16];
    const char *env = getenv("PHX_RAMP");
    CHECK(phxfs_get_config("ramp", v, sizeof v) > 0);
    CHECK_EQ(atoi(v), env ? atoi(env) : 4);
    CHECK_EQ(phxfs_set_config("ramp", "9"), -EINVAL);
    CHECK(strstr(phxfs_last_error(), "0..8") != NULL);
    CHECK_EQ(phxfs_set_config("ramp", "-1"), -EINVAL);
    CHECK_EQ(phxfs_set_config("ramp", v), 0); /* settable until the library starts */

    CHECK_EQ(phxfs_open(0), 0);
    CHECK_EQ(phxfs_set_config("ramp", "2"), -EBUSY);
    CHECK(strstr(phxfs_last_error(), "PHX_RAMP") != NULL);

    const char *path = th_make_file(FSIZE, 23);
    unsigned char *r = malloc(FSIZE);
    th_fill(r, FSIZE, 23, 0);
    ref = r;
    back = malloc(FSIZE);
    CHECK_EQ(phxfs_mem_alloc_uninit(0, FSIZE, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, FSIZE, NULL), 0);

    for (int direct = 0; direct < 2; direct++) {
        int fd = th_open(path, direct);
        char what[64];
        /* the whole file in one request: the ramp's pieces, then whole slots */
        phxfs_io_req_t one = {fd, 0, dmem, 0, FSIZE, 0, 0};
        snprintf(what, sizeof what, "whole file%s", direct ? ", O_DIRECT" : "");
        read_and_compare(what, &one, 1);
        /* from an odd offset to an odd end, into an odd place */
        phxfs_io_req_t odd = {fd, 0, dmem, 4099, FSIZE - 3 * 4096 - 17, 4097, 0};
        snprintf(what, sizeof what, "odd offsets%s", direct ? ", O_DIRECT" : "");
        read_and_compare(what, &odd, 1);
        /* many small requests: the ramp spans requests and ends inside one */
        enum { M = 97 };
        phxfs_io_req_t many[M];
        size_t at = 0, piece = FSIZE / M - 4096 - 5;
        for (int i = 0; i < M; i++, at += piece + 4096 + 3)
            many[i] = (phxfs_io_req_t){fd, 0, dmem, (off_t)at, piece, (off_t)(FSIZE - at - piece), 0};
        snprintf(what, sizeof what, "%d requests%s", M, direct ? ", O_DIRECT" : "");
        read_and_compare(what, many, M);
        /* smaller than a slot per worker: no ramp, cut finer instead */
        phxfs_io_req_t small = {fd, 0, dmem, 12345, 300000, 77777, 0};
        snprintf(what, sizeof what, "small read%s", direct ? ", O_DIRECT" : "");
        read_and_compare(what, &small, 1);
        CHECK_EQ(close(fd), 0);
    }
    CHECK_EQ(phxfs_deregmem(0, dmem, FSIZE), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    CHECK_EQ(phxfs_close(0), 0);
    unlink(path);
    free(r);
    free(back);
    return th_finish("test_ramp");
}
