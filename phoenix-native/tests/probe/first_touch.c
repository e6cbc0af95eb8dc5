/* The ceiling of any copy into fresh memory on this machine: 2 GiB of new anonymous memory
 * written once (memset, the first touch of every page) and then again, by T threads, in 4 KiB
 * pages or advised for huge pages, three rounds. `load --host --copy` in a fresh process must
 * at least touch every page of its destination once, so it cannot beat the first row; `dd`
 * writes nowhere new and runs near the second.
 *   gcc -O2 -Wall -Wextra -o /tmp/first_touch phoenix-native/tests/probe/first_touch.c -lpthread
 *   /tmp/first_touch THREADS HUGE(0|1) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static char *mem;
static size_t bytes;
static int threads;

static void *fill(void *arg)
{
    long k = (long)arg;
    size_t part = bytes / (size_t)threads;
    memset(mem + (size_t)k * part, 1, part);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS HUGE(0|1)\n", argv[0]);
        return 2;
    }
    bytes = (size_t)2 << 30;
    threads = atoi(argv[1]);
    int huge = atoi(argv[2]);
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "threads: 1..64\n");
        return 2;
    }
    for (int r = 0; r < 3; r++) {
        mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        if (huge && madvise(mem, bytes, MADV_HUGEPAGE) != 0) perror("madvise");
        pthread_t th[64];
        double t0 = now();
        for (long i = 0; i < threads; i++) pthread_create(&th[i], NULL, fill, (void *)i);
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        double first = now() - t0;
        t0 = now();
        memset(mem, 2, bytes);
        double second = now() - t0;
        printf("threads %d huge %d: first touch %.2f GB/s, the same memory again %.2f GB/s\n", threads, huge,
               bytes / first / 1e9, bytes / second / 1e9);
        munmap(mem, bytes);
    }
    return 0;
}
