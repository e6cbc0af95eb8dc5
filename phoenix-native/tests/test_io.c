/* Round trips in every mode the process was started in (PHX_CONNECTOR /
 * PHX_ENGINE come from ctest): odd sizes at unaligned offsets, short reads at
 * EOF, chunking above a shrunken per-syscall cap, O_DIRECT heads and tails. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* The big case spans eight chunks. Under ThreadSanitizer every byte copied or compared costs
 * tens of times more and the races live in the chunking, not the byte count: a quarter of the
 * bytes in chunks of a quarter of the size keeps the same eight chunks over the same workers. */
#if defined(__SANITIZE_THREAD__)
#define BIG (16u << 20)
#define CHUNK_MB "2" /* the default is 8 */
#else
#define BIG (64u << 20)
#endif

static unsigned char *dev_mem;
static size_t dev_len = BIG + 3 * 4096 * 4;

/* read file[foff, +n) into device buffer at boff, copy back, compare */
static void read_check(int fd, int dev, size_t n, off_t foff, off_t boff, size_t file_size, unsigned seed)
{
    size_t expect = foff >= (off_t)file_size ? 0 : (file_size - (size_t)foff < n ? file_size - (size_t)foff : n);
    unsigned char *host = malloc(n + 1);
    unsigned char *ref = malloc(n + 1);
    ssize_t r;
    if (dev < 0) {
        memset(host, 0xEE, n + 1);
        r = phxfs_read(fd, -1, host, 0, (ssize_t)n, foff);
    } else {
        r = phxfs_read(fd, dev, dev_mem, boff, (ssize_t)n, foff);
        CHECK_EQ(phxfs_memcpy_to_host(dev, host, dev_mem + boff, n), 0);
    }
    CHECK_EQ(r, (ssize_t)expect);
    th_fill(ref, expect, seed, (size_t)foff);
    if (memcmp(host, ref, expect)) {
        fprintf(stderr, "data mismatch: dev %d n %zu foff %lld boff %lld\n", dev, n, (long long)foff, (long long)boff);
        th_failures++;
    }
    free(host);
    free(ref);
}

static void write_check(int dev, size_t n, off_t foff, off_t boff, int direct)
{
    const char *p = th_make_file(0, 0);
    char path[256];
    snprintf(path, sizeof path, "%s", p);
    int fd = th_open(path, direct);
    unsigned char *src = malloc(n), *back = malloc(n);
    th_fill(src, n, 99, 0);
    ssize_t w;
    if (dev < 0) {
        w = phxfs_write(fd, -1, src, 0, (ssize_t)n, foff);
    } else {
        CHECK_EQ(phxfs_memcpy_to_device(dev, dev_mem + boff, src, n), 0);
        w = phxfs_write(fd, dev, dev_mem, boff, (ssize_t)n, foff);
    }
    CHECK_EQ(w, (ssize_t)n);
    int plain = open(path, O_RDONLY);
    CHECK_EQ(pread(plain, back, n, foff), (ssize_t)n);
    if (memcmp(src, back, n)) {
        fprintf(stderr, "write mismatch: dev %d n %zu foff %lld direct %d\n", dev, n, (long long)foff, direct);
        th_failures++;
    }
    close(plain);
    close(fd);
    unlink(path);
    free(src);
    free(back);
}

int main(void)
{
#ifdef CHUNK_MB
    CHECK_EQ(phxfs_set_config("chunk_mb", CHUNK_MB), 0); /* before the library starts */
#endif
    CHECK_EQ(phxfs_open(0), 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    printf("mode %s, connector %s, engine %s, workers %d\n", phxfs_mode_name(info.mode), info.connector,
           info.engine ? "uring" : "sync", info.workers);
    void *mem;
    CHECK_EQ(phxfs_mem_alloc(0, dev_len, &mem), 0);
    dev_mem = mem;
    CHECK_EQ(phxfs_regmem(0, dev_mem, dev_len, NULL), 0);

    size_t fsize = BIG + 8 * 4096 + 5;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(fsize, 3));
    size_t sizes[] = {1, 4095, 4096, 4097, (1u << 20) + 1, BIG + 3};
    off_t foffs[] = {0, 1, 4093, 8192};
    off_t boffs[] = {0, 7, 4096, 4099};
    for (int direct = 0; direct < 2; direct++) {
        int fd = th_open(path, direct);
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            for (size_t j = 0; j < 4; j++) {
                read_check(fd, -1, sizes[i], foffs[j], 0, fsize, 3);
                read_check(fd, 0, sizes[i], foffs[j], boffs[(i + j) % 4], fsize, 3);
            }
        /* short reads at and past EOF */
        read_check(fd, 0, 100000, (off_t)fsize - 10, 5, fsize, 3);
        read_check(fd, -1, 100000, (off_t)fsize - 10, 0, fsize, 3);
        read_check(fd, 0, 4096, (off_t)fsize + 100, 0, fsize, 3);
        read_check(fd, 0, BIG / 2, (off_t)fsize - BIG / 4 - 1, 3, fsize, 3);
        close(fd);
    }
    for (int direct = 0; direct < 2; direct++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            write_check(-1, sizes[i], foffs[i % 4], 0, direct);
            write_check(0, sizes[i], foffs[(i + 1) % 4], boffs[i % 4], direct);
        }

    /* per-syscall cap shrunk (the 1 GiB limit without GiB files) */
    char prev[32];
    phxfs_get_config("max_io_bytes", prev, sizeof prev);
    CHECK_EQ(phxfs_set_config("max_io_bytes", "12345"), 0);
    int fd = th_open(path, 0);
    read_check(fd, 0, (3u << 20) + 17, 4097, 1, fsize, 3);
    read_check(fd, -1, (1u << 20) - 3, 11, 0, fsize, 3);
    write_check(0, (2u << 20) + 9, 3, 5, 0);
    CHECK_EQ(phxfs_set_config("max_io_bytes", prev), 0);

    /* page-cache residency: a file just written is cached; a bad fd is an error */
    int cached = phxfs_file_cached_permille(fd);
    CHECK(cached >= 0 && cached <= 1000);
    CHECK_EQ(phxfs_file_cached_permille(-1), -EBADF);

    /* argument errors name the problem */
    CHECK_EQ(phxfs_read(fd, 0, dev_mem, 0, -1, 0), -EINVAL);
    CHECK_EQ(phxfs_read(-5, -1, dev_mem, 0, 10, 0), -EBADF);
    CHECK_EQ(phxfs_read(fd, -1, dev_mem, 0, 10, -1), -EINVAL);
    /* a file end past INT64_MAX: refused before it is computed (UBSan caught the sum) */
    CHECK_EQ(phxfs_read(fd, -1, dev_mem, 0, 4096, INT64_MAX - 10), -EINVAL);
    CHECK_EQ(phxfs_write(fd, -1, dev_mem, 0, 4096, INT64_MAX), -EINVAL);
    CHECK_EQ(phxfs_set_config("mode", "warp"), -EINVAL);
    CHECK_EQ(phxfs_set_config("queue_depth", "16"), -EBUSY); /* frozen with the pool */
    CHECK_EQ(phxfs_set_config("workers", "4"), -EBUSY); /* the pool is running */
    CHECK(strstr(phxfs_last_error(), "PHX_WORKERS") != NULL);
    CHECK_EQ(phxfs_set_config("no_such_key", "1"), -EINVAL);
    CHECK(strstr(phxfs_last_error(), "no_such_key") != NULL);
    close(fd);
    unlink(path);
    CHECK_EQ(phxfs_deregmem(0, dev_mem, dev_len), 0);
    CHECK_EQ(phxfs_mem_free(0, dev_mem), 0);
    return th_finish("test_io");
}
