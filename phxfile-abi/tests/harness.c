#include "harness.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

int th_failures;

void th_fill(unsigned char *p, size_t n, unsigned seed, size_t start)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = (uint64_t)(start + i) * 0x9E3779B97F4A7C15ull + seed;
        p[i] = (unsigned char)(x >> 29);
    }
}

char *th_make_file(size_t size, unsigned seed)
{
    const char *dir = getenv("TMPDIR");
    char *path = malloc(512);
    snprintf(path, 512, "%s/phxfile-test-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); exit(1); }
    unsigned char *buf = malloc(1 << 20);
    for (size_t done = 0; done < size;) {
        size_t n = size - done < (1u << 20) ? size - done : (1u << 20);
        th_fill(buf, n, seed, done);
        if (write(fd, buf, n) != (ssize_t)n) { perror("write"); exit(1); }
        done += n;
    }
    free(buf);
    close(fd);
    return path;
}

int th_have_device(void)
{
    const char *c = getenv("PHX_CONNECTOR");
    return c && (!strcmp(c, "fake") || !strcmp(c, "cuda"));
}

int th_in_child(const char *name, int (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        th_failures = 0;
        _exit(fn() ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "child scenario %s failed (status %#x)\n", name, st);
        th_failures++;
        return 1;
    }
    return 0;
}

int th_finish(const char *name)
{
    if (th_failures) {
        printf("%s: %d FAILED\n", name, th_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}
