#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int th_failures;

/* byte i of stream `seed` — position-dependent so misplaced bytes show */
void th_fill(unsigned char *p, size_t n, unsigned seed, size_t start)
{
    for (size_t i = 0; i < n; i++) {
        size_t x = start + i;
        p[i] = (unsigned char)((x * 2654435761u >> 13) ^ (x >> 12) ^ seed);
    }
}

const char *th_make_file(size_t size, unsigned seed)
{
    static char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/phx_test_XXXXXX", dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); exit(2); }
    unsigned char *buf = malloc(1 << 20);
    for (size_t off = 0; off < size; off += 1 << 20) {
        size_t n = size - off < (1 << 20) ? size - off : (1 << 20);
        th_fill(buf, n, seed, off);
        for (size_t w = 0; w < n;) {
            ssize_t r = pwrite(fd, buf + w, n - w, (off_t)(off + w));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { perror("pwrite"); exit(2); }
            w += (size_t)r;
        }
    }
    free(buf);
    close(fd);
    return path;
}

int th_open(const char *path, int direct)
{
    int d = 0;
    int fd = phxfs_file_open(path, O_RDWR, 0, direct, &d);
    if (fd < 0) { fprintf(stderr, "open %s: %s\n", path, phxfs_last_error()); exit(2); }
    return fd;
}

int th_open_reference(size_t size, unsigned seed, char *path, size_t path_len, unsigned char **ref)
{
    snprintf(path, path_len, "%s", th_make_file(size, seed));
    *ref = malloc(size);
    if (!*ref) { perror("malloc"); exit(2); }
    th_fill(*ref, size, seed, 0);
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); exit(2); }
    return fd;
}

int th_finish(const char *name)
{
    if (th_failures) { fprintf(stderr, "%s: %d check(s) failed\n", name, th_failures); return 1; }
    printf("%s: ok\n", name);
    return 0;
}
