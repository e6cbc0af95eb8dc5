/* Upstream registry semantics: overlap -EINVAL, exact duplicates refcounted,
 * anything outside a registration -EFAULT. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
    CHECK_EQ(phxfs_open(0), 0);
    size_t len = 1 << 20;
    void *mem = NULL;
    /* the uninitialized variant: same checks, same registration and free */
    void *raw = NULL;
    CHECK_EQ(phxfs_mem_alloc_uninit(0, len, NULL), -EINVAL);
    CHECK_EQ(phxfs_mem_alloc_uninit(7, len, &raw), -ENODEV);
    CHECK_EQ(phxfs_mem_alloc_uninit(0, len, &raw), 0);
    CHECK(raw != NULL);
    CHECK_EQ(phxfs_regmem(0, raw, len, NULL), 0);
    CHECK_EQ(phxfs_deregmem(0, raw, len), 0);
    CHECK_EQ(phxfs_mem_free(0, raw), 0);
    CHECK_EQ(phxfs_mem_alloc(0, len, &mem), 0);
    char *m = mem;
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    if (strcmp(info.connector, "host")) { /* accelerators hand out zeroed memory */
        unsigned char *back = malloc(len);
        memset(back, 0xAB, len);
        CHECK_EQ(phxfs_memcpy_to_host(0, back, m, len), 0);
        size_t nonzero = 0;
        for (size_t i = 0; i < len; i++) nonzero += back[i] != 0;
        CHECK_EQ(nonzero, 0);
        free(back);
    }
    void *target = NULL;
    CHECK_EQ(phxfs_regmem(0, m, len, &target), 0);
    CHECK(target != NULL);
    CHECK_EQ(phxfs_regmem(0, m, len, &target), 0);               /* duplicate: refcount 2 */
    CHECK_EQ(phxfs_regmem(0, m + 4096, 4096, NULL), -EINVAL);     /* inside */
    CHECK_EQ(phxfs_regmem(0, m - 4096, 8192, NULL), -EINVAL);     /* straddles the start */
    CHECK_EQ(phxfs_regmem(0, m + len - 4096, 8192, NULL), -EINVAL); /* straddles the end */
    CHECK_EQ(phxfs_regmem(0, m, len + 1, NULL), -EINVAL);         /* same start, longer */
    CHECK_EQ(phxfs_regmem(0, NULL, 4096, NULL), -EINVAL);
    CHECK_EQ(phxfs_regmem(0, m, 0, NULL), -EINVAL);
    CHECK_EQ(phxfs_deregmem(0, m, 4096), -EINVAL);                /* not a registered range */

    const char *path = th_make_file(len, 7);
    int fd = th_open(path, 0);
    CHECK_EQ(phxfs_read(fd, 0, m, 0, (ssize_t)len, 0), (ssize_t)len);
    CHECK_EQ(phxfs_read(fd, 0, m, 1, (ssize_t)len, 0), -EFAULT);        /* one byte past the end */
    CHECK_EQ(phxfs_read(fd, 0, m, (off_t)len, 1, 0), -EFAULT);
    CHECK_EQ(phxfs_read(fd, 0, m + len, 0, 1, 0), -EFAULT);
    CHECK_EQ(phxfs_read(fd, 0, m - 1, 0, 2, 0), -EFAULT);
    CHECK(strstr(phxfs_last_error(), "outside") != NULL);
    CHECK_EQ(phxfs_read(fd, 0, m, (off_t)len - 10, 10, 0), 10);         /* exactly at the end */

    CHECK_EQ(phxfs_deregmem(0, m, len), 0);   /* refcount 2 -> 1: still usable */
    CHECK_EQ(phxfs_read(fd, 0, m, 0, 4096, 0), 4096);
    CHECK_EQ(phxfs_deregmem(0, m, len), 0);
    CHECK_EQ(phxfs_read(fd, 0, m, 0, 4096, 0), -EFAULT);
    CHECK_EQ(phxfs_deregmem(0, m, len), -EINVAL);

    /* adjacent registrations are not overlaps */
    CHECK_EQ(phxfs_regmem(0, m, len / 2, NULL), 0);
    CHECK_EQ(phxfs_regmem(0, m + len / 2, len / 2, NULL), 0);
    /* a request spanning two registrations is outside each of them */
    CHECK_EQ(phxfs_read(fd, 0, m, (off_t)len / 2 - 1, 2, 0), -EFAULT);
    CHECK_EQ(phxfs_deregmem(0, m, len / 2), 0);
    CHECK_EQ(phxfs_deregmem(0, m + len / 2, len / 2), 0);

    /* many registrations stay sorted */
    for (int i = 15; i >= 0; i--) CHECK_EQ(phxfs_regmem(0, m + (size_t)i * 65536, 65536, NULL), 0);
    for (int i = 0; i < 16; i++) CHECK_EQ(phxfs_read(fd, 0, m + (size_t)i * 65536, 0, 65536, 0), 65536);
    for (int i = 0; i < 16; i++) CHECK_EQ(phxfs_deregmem(0, m + (size_t)i * 65536, 65536), 0);

    CHECK_EQ(phxfs_open(99), -ENODEV);
    CHECK_EQ(phxfs_mem_free(0, mem), 0);
    close(fd);
    unlink(path);
    CHECK_EQ(phxfs_close(0), 0);
    return th_finish("test_registry");
}
