/* libphoenix's side of the phxfs ioctl contract (kmod/include/uapi/phxfs_ioctl.h). */
#include "kmod.h"
#include "align.h"
#include "error.h"
#include "phoenix.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define SYSFS_CLASS "/sys/class/phxfs"

static int read_attr(int index, const char *attr, char *buf, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, SYSFS_CLASS "/phxfs_dev%d/%s", index, attr);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return -EIO;
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

/* indices of /sys/class/phxfs/phxfs_devN, sorted */
static int scan(int *out, int max)
{
    DIR *d = opendir(SYSFS_CLASS);
    if (!d) return -ENODEV;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        int idx;
        if (sscanf(e->d_name, "phxfs_dev%d", &idx) == 1) out[n++] = idx;
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) { int t = out[j]; out[j] = out[j - 1]; out[j - 1] = t; }
    return n;
}

int phx_kmod_find(const char *bdf)
{
    int idx[64], n = scan(idx, 64);
    if (n < 0) return n;
    for (int i = 0; i < n; i++) {
        char b[32];
        if (read_attr(idx[i], "pci_bdf", b, sizeof b) == 0 && !strcasecmp(b, bdf)) return idx[i];
    }
    return -ENOENT;
}

int phx_kmod_list(const char *backend, int *out, int max)
{
    int idx[64], n = scan(idx, 64), k = 0;
    for (int i = 0; i < n && k < max; i++) {
        char b[32];
        if (read_attr(idx[i], "backend", b, sizeof b) == 0 && !strcmp(b, backend)) out[k++] = idx[i];
    }
    return n < 0 ? n : k;
}

int phx_kmod_open(int index, phx_kmod_t *k, char *why, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/phxfs_dev%d", index);
    k->fd = open(path, O_RDWR | O_CLOEXEC);
    k->index = index;
    if (k->fd < 0) {
        int e = errno;
        snprintf(why, n, "%s: %s", path, strerror(e));
        return -e;
    }
    memset(&k->info, 0, sizeof k->info);
    k->info.size = sizeof k->info;
    k->info.version = PHXFS_UAPI_VERSION;
    if (ioctl(k->fd, PHXFS_IOC_INFO, &k->info) < 0) {
        int e = errno;
        snprintf(why, n, "%s: INFO: %s (module and library disagree on the ioctl contract?)", path, strerror(e));
        close(k->fd);
        k->fd = -1;
        return -e;
    }
    return 0;
}

void phx_kmod_close(phx_kmod_t *k)
{
    if (k->fd >= 0) close(k->fd);
    k->fd = -1;
}

/* A window aligned like device pages (64 KiB), as CUDA's device pointers are: carved out of
 * a reservation of len + align, whose ends are given back. */
static void *aligned_window(phx_kmod_t *k, size_t len)
{
    size_t align = k->info.page_size > 4096 ? (size_t)k->info.page_size : 4096;
    char *res = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED) return MAP_FAILED;
    char *a = (char *)phx_align_up((uintptr_t)res, align);
    void *w = mmap(a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, k->fd, 0);
    if (w == MAP_FAILED) {
        int e = errno;
        munmap(res, len + align);
        errno = e;
        return MAP_FAILED;
    }
    if (a > res) munmap(res, (size_t)(a - res));
    if (res + len + align > a + len) munmap(a + len, (size_t)(res + len + align - (a + len)));
    return w;
}

int phx_kmod_map(phx_kmod_t *k, uint64_t dev_addr, size_t len, uint32_t flags, void **win)
{
    void *w = aligned_window(k, len);
    if (w == MAP_FAILED)
        return phx_fail(errno, "phxfs_dev%d: mmap of a %zu-byte window: %s", k->index, len, strerror(errno));
    struct phxfs_ioctl_map m = {sizeof m, PHXFS_UAPI_VERSION, dev_addr, len, (uint64_t)(uintptr_t)w, flags, 0};
    if (ioctl(k->fd, PHXFS_IOC_MAP, &m) < 0) {
        int e = errno;
        munmap(w, len);
        const char *hint = e == ENOSPC ? " (staging mode: the module maps at most its staging_mb)"
                           : e == E2BIG ? " (larger than the BAR the module registered)" : "";
        return phx_fail(e, "phxfs_dev%d: MAP of device memory %#llx (+%zu bytes): %s%s", k->index,
                        (unsigned long long)dev_addr, len, strerror(e), hint);
    }
    *win = w;
    return 0;
}

void phx_kmod_unmap(void *win, size_t len)
{
    if (win) munmap(win, len);
}
