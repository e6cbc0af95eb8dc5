/* The emu connector: "device memory" is the BAR of a QEMU ivshmem-plain device, handed out by
 * the phxfs module's emu backend (EMU_ALLOC), so the kernel-module modes (p2p, staging) run
 * end to end in a guest without a GPU. A device pointer is the address of a host view of the
 * allocation (a phxfs window mapped with PHXFS_MAP_F_EMU_HOST), the way a CUDA device pointer
 * names GPU memory; copies to and from it run on the fake device's stream threads. */
#include "align.h"
#include "connector.h"
#include "device.h"
#include "error.h"
#include "kmod.h"
#include "phoenix.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

typedef struct {
    uintptr_t ptr;      /* the host view: the device pointer callers see */
    size_t len;
    uint64_t dev_addr;  /* what the module pins */
    int dev;
} emu_alloc_t;

static int emu_count;
static phx_kmod_t emu_devs[PHX_MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static emu_alloc_t *allocs;
static size_t nallocs, cap;

static int e_init(int fake_devices, char *why, size_t n)
{
    (void)fake_devices;
    int idx[PHX_MAX_DEVICES];
    int k = phx_kmod_list("emu", idx, PHX_MAX_DEVICES);
    if (k <= 0) {
        snprintf(why, n, "emu: no phxfs device with the emu backend (%s)",
                 k == -ENODEV ? "phxfs module not loaded" : "no ivshmem-plain device bound to phxfs");
        return -ENODEV;
    }
    for (int i = 0; i < k; i++) {
        int rc = phx_kmod_open(idx[i], &emu_devs[i], why, n);
        if (rc) {
            for (int j = 0; j < i; j++) phx_kmod_close(&emu_devs[j]);
            return rc;
        }
    }
    emu_count = k;
    return k;
}

static int e_name(int dev, char *buf, size_t len)
{
    snprintf(buf, len, "emu device %d (ivshmem %s, %llu MiB, /dev/phxfs_dev%d)", dev, emu_devs[dev].info.pci,
             (unsigned long long)emu_devs[dev].info.bar_size >> 20, emu_devs[dev].index);
    return 0;
}

static int e_enter(int dev, void *s)
{
    if (s) return 0;
    return dev >= 0 && dev < emu_count ? 0 : -ENODEV;
}
static void e_leave(void) {}

static int e_alloc(int dev, size_t len, void **p)
{
    if (e_enter(dev, NULL)) return -ENODEV;
    phx_kmod_t *k = &emu_devs[dev];
    size_t page = (size_t)k->info.page_size;
    len = phx_align_up(len ? len : 1, page);
    struct phxfs_ioctl_emu_alloc a = {sizeof a, PHXFS_UAPI_VERSION, len, 0};
    if (ioctl(k->fd, PHXFS_IOC_EMU_ALLOC, &a) < 0) {
        int e = errno;
        return phx_fail(e, "emu device %d: %zu bytes of device memory: %s%s", dev, len, strerror(e),
                        e == ENOMEM ? " (the ivshmem BAR is full)" : "");
    }
    void *win;
    int rc = phx_kmod_map(k, a.dev_addr, len, PHXFS_MAP_F_EMU_HOST, &win);
    if (!rc) {
        pthread_mutex_lock(&lock);
        if (nallocs == cap) {
            size_t nc = cap ? 2 * cap : 64;
            emu_alloc_t *v = realloc(allocs, nc * sizeof *v);
            if (v) { allocs = v; cap = nc; }
        }
        if (nallocs < cap) allocs[nallocs++] = (emu_alloc_t){(uintptr_t)win, len, a.dev_addr, dev};
        else rc = phx_fail(ENOMEM, "emu: out of memory");
        pthread_mutex_unlock(&lock);
        if (rc) phx_kmod_unmap(win, len);
    }
    if (rc) {
        struct phxfs_ioctl_emu_free f = {sizeof f, PHXFS_UAPI_VERSION, a.dev_addr};
        ioctl(k->fd, PHXFS_IOC_EMU_FREE, &f);
        return rc;
    }
    *p = win;
    return 0;
}

static int e_free(int dev, void *p)
{
    pthread_mutex_lock(&lock);
    emu_alloc_t a = {0};
    for (size_t i = 0; i < nallocs; i++)
        if (allocs[i].ptr == (uintptr_t)p && allocs[i].dev == dev) {
            a = allocs[i];
            allocs[i] = allocs[--nallocs];
            break;
        }
    pthread_mutex_unlock(&lock);
    if (!a.ptr) return phx_fail(EINVAL, "mem_free: %p is not emu device %d memory", p, dev);
    phx_kmod_unmap((void *)a.ptr, a.len);
    /* a registration still mapping it is revoked by the module, as a GPU driver would */
    struct phxfs_ioctl_emu_free f = {sizeof f, PHXFS_UAPI_VERSION, a.dev_addr};
    if (ioctl(emu_devs[dev].fd, PHXFS_IOC_EMU_FREE, &f) < 0)
        return phx_fail(errno, "emu device %d: EMU_FREE of %#llx: %s", dev, (unsigned long long)a.dev_addr, strerror(errno));
    return 0;
}

/* the allocation holding [p, p+len), copied out under the lock; -1 none, -2 runs past it */
static int find(const void *p, size_t len, emu_alloc_t *out)
{
    uintptr_t a = (uintptr_t)p;
    int rc = -1;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nallocs; i++)
        if (a >= allocs[i].ptr && a - allocs[i].ptr < allocs[i].len) {
            *out = allocs[i];
            rc = len > allocs[i].len - (a - allocs[i].ptr) ? -2 : 0;
            break;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int e_check(int dev, const void *p, size_t len, char *why, size_t n)
{
    emu_alloc_t a = {0};
    int rc = find(p, len, &a);
    if (rc == -1) { snprintf(why, n, "host memory, not device memory"); return -EINVAL; }
    if (rc == -2) { snprintf(why, n, "runs %zu bytes past the end of its device allocation", len - (a.len - ((uintptr_t)p - a.ptr))); return -EINVAL; }
    if (a.dev != dev) { snprintf(why, n, "memory of device %d, not of device %d", a.dev, dev); return -EINVAL; }
    return 0;
}

static int e_pdev(const void *p, size_t len, int *dev, char *why, size_t n)
{
    emu_alloc_t a = {0};
    int rc = find(p, len, &a);
    *dev = rc == -1 ? -1 : a.dev;
    if (rc == -2) { snprintf(why, n, "runs %zu bytes past the end of its device allocation", len - (a.len - ((uintptr_t)p - a.ptr))); return -EINVAL; }
    return 0;
}

/* BAR memory of any emu device is mapped into this process: a CPU copy reaches both sides */
static int e_peer_access(int dev, int peer)
{
    if (dev < 0 || dev >= emu_count || peer < 0 || peer >= emu_count) return -ENODEV;
    return 1;
}
static int e_peer_async(void *dst, int dst_dev, const void *src, int src_dev, size_t len, void *s)
{
    (void)dst_dev; (void)src_dev;
    return phx_fstream_copy(dst, src, len, s);
}

static int e_p2p_addr(int dev, const void *p, size_t len, uint64_t *addr, char *why, size_t n)
{
    int rc = e_check(dev, p, len, why, n);
    if (rc) return rc;
    emu_alloc_t a = {0};
    if (find(p, len, &a)) return -EINVAL; /* freed since the check */
    *addr = a.dev_addr + ((uintptr_t)p - a.ptr);
    return 0;
}

static int e_bdf(int dev, char *buf, size_t len)
{
    if (dev < 0 || dev >= emu_count) return -ENODEV;
    snprintf(buf, len, "%s", emu_devs[dev].info.pci);
    return 0;
}

static int e_reg(int dev, void *p, size_t len) { (void)dev; (void)p; (void)len; return 0; }
static int e_unreg(int dev, void *p) { (void)dev; (void)p; return 0; }

static int e_screate(int dev, void **out)
{
    if (e_enter(dev, NULL)) return -ENODEV;
    return phx_fstream_create(dev, out);
}

const phx_connector_t phx_connector_emu = {
    .name = "emu", .is_accelerator = 1, .init = e_init, .device_name = e_name, .enter = e_enter, .leave = e_leave,
    .mem_alloc = e_alloc, .mem_free = e_free, .host_register = e_reg, .host_unregister = e_unreg,
    .stream_create = e_screate, .stream_destroy = phx_fstream_destroy, .stream_sync = phx_fstream_sync,
    .htod_async = phx_fstream_copy, .dtoh_async = phx_fstream_copy, .memset_async = phx_fstream_memset,
    .event_create = phx_fevent_create, .event_destroy = phx_fevent_destroy, .event_record = phx_fevent_record,
    .event_sync = phx_fevent_sync, .launch_host_fn = phx_fstream_launch, .wait_flag = phx_fstream_wait,
    .check_pointer = e_check, .pointer_device = e_pdev, .stream_device = phx_fstream_device,
    .peer_access = e_peer_access, .peer_async = e_peer_async,
    .p2p_addr = e_p2p_addr, .pci_bdf = e_bdf, .dtod_async = phx_fstream_copy,
};
