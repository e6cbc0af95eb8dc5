/* The phxfs kernel module as libphoenix sees it: find the /dev/phxfs_devN of a PCI device,
 * read its INFO, map device memory into windows that O_DIRECT and io_uring DMA into. */
#ifndef PHX_KMOD_H
#define PHX_KMOD_H
#include <stddef.h>
#include <stdint.h>
#include "phxfs_ioctl.h"

typedef struct {
    int fd;                        /* -1 when closed */
    int index;                     /* N of /dev/phxfs_devN */
    struct phxfs_ioctl_info info;
} phx_kmod_t;

/* Index of the phxfs device whose sysfs pci_bdf is bdf; -ENOENT when none, -ENODEV when the
 * module is not loaded. */
int phx_kmod_find(const char *bdf);
/* Every phxfs device of one backend, in index order: count, indices in out (up to max). */
int phx_kmod_list(const char *backend, int *out, int max);
/* Opens /dev/phxfs_devN and reads its INFO; on failure why says what (and -errno). */
int phx_kmod_open(int index, phx_kmod_t *k, char *why, size_t n);
void phx_kmod_close(phx_kmod_t *k);
/* Maps [dev_addr, +len) (page_size aligned) into a fresh window: *win, or -errno with the
 * library's last error set. */
int phx_kmod_map(phx_kmod_t *k, uint64_t dev_addr, size_t len, uint32_t flags, void **win);
/* The window goes, and with it the module's pin of the device memory. */
void phx_kmod_unmap(void *win, size_t len);
#endif
