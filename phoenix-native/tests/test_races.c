/* Races the core-2 review found, made to happen (ThreadSanitizer reports them in
 * the TSan build; the plain build checks the outcomes): one thread opens and
 * closes a device while others submit batches to it; configuration changes
 * while workers run; many threads wait on one batch. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int stop;
static int g_fd;
static int g_dev;
static atomic_long ok_reads, refused_reads;

static void *opener(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        if (phxfs_open(g_dev) == 0) {
            int rc;
            /* close is refused while a batch holds the device; retry until it goes */
            while ((rc = phxfs_close(g_dev)) == -EBUSY) {}
            if (rc) { fprintf(stderr, "close: %d %s\n", rc, phxfs_last_error()); atomic_store(&stop, 2); }
        }
    }
    return NULL;
}

/* Registrations outlive a close, so reads into g_buf either run (device open) or are
 * refused with ENODEV (closed) while the opener tears the device down and sets it up. */
static void *g_buf;
static void *reader(void *arg)
{
    off_t mine = (off_t)(intptr_t)arg * 8192; /* each its own bytes: only the library may race */
    while (!atomic_load(&stop)) {
        ssize_t r = phxfs_read(g_fd, g_dev, g_buf, mine, 8192, 0);
        if (r == 8192) atomic_fetch_add(&ok_reads, 1);
        else if (r == -ENODEV) atomic_fetch_add(&refused_reads, 1);
        else { fprintf(stderr, "read during open/close: %zd %s\n", r, phxfs_last_error()); atomic_store(&stop, 3); }
    }
    return NULL;
}

static void *configurer(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        phxfs_set_config("max_io_bytes", "65536");
        phxfs_set_config("mode", "auto");
        phxfs_set_config("queue_depth", "4"); /* frozen: EBUSY, never a torn value */
        phxfs_set_config("max_io_bytes", "1073741824");
    }
    return NULL;
}

int main(void)
{
    CHECK_EQ(phxfs_open(0), 0);
    int ndev = phxfs_device_count();
    g_dev = ndev > 1 ? 1 : 0;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(1u << 20, 13));
    g_fd = th_open(path, 0);
    if (g_dev != 0) CHECK_EQ(phxfs_open(g_dev), 0);
    void *mem = NULL;
    CHECK_EQ(phxfs_mem_alloc(g_dev, 65536, &mem), 0);
    g_buf = mem;
    CHECK_EQ(phxfs_regmem(g_dev, g_buf, 65536, NULL), 0);
    if (g_dev != 0) CHECK_EQ(phxfs_close(g_dev), 0);
    pthread_t o, r[3], c;
    pthread_create(&o, NULL, opener, NULL);
    for (int i = 0; i < 3; i++) pthread_create(&r[i], NULL, reader, (void *)(intptr_t)i);
    pthread_create(&c, NULL, configurer, NULL);
    /* the workers run batches on device 0 meanwhile */
    unsigned char *buf = malloc(1u << 20), *ref = malloc(1u << 20);
    th_fill(ref, 1u << 20, 13, 0);
    for (int i = 0; i < 200; i++) {
        memset(buf, 0, 1u << 20);
        CHECK_EQ(phxfs_read(g_fd, -1, buf, 0, 1 << 20, 0), 1 << 20);
        if (memcmp(buf, ref, 1u << 20)) { fprintf(stderr, "read %d wrong\n", i); th_failures++; break; }
    }
    usleep(200000);
    int was = atomic_exchange(&stop, 1);
    CHECK_EQ(was, 0);
    pthread_join(o, NULL);
    for (int i = 0; i < 3; i++) pthread_join(r[i], NULL);
    pthread_join(c, NULL);
    printf("device %d: %ld reads while open/close raced, %ld refused cleanly\n", g_dev, atomic_load(&ok_reads),
           atomic_load(&refused_reads));
    if (g_dev != 0) CHECK_EQ(phxfs_open(g_dev), 0);
    CHECK_EQ(phxfs_deregmem(g_dev, g_buf, 65536), 0);
    CHECK_EQ(phxfs_mem_free(g_dev, g_buf), 0);
    if (g_dev != 0) CHECK_EQ(phxfs_close(g_dev), 0);
    char v[32];
    CHECK(phxfs_get_config("queue_depth", v, sizeof v) > 0);
    CHECK(strcmp(v, "4") != 0);
    free(buf); free(ref);
    close(g_fd);
    unlink(path);
    return th_finish("test_races");
}
