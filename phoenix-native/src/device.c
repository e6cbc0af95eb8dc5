/* Devices: connector choice, per-device mode selection, open and close. */
#include "device.h"
#include "align.h"
#include "connector.h"
#include "device_xfer.h"
#include "error.h"
#include "kmod.h"
#include "lifecycle.h"
#include "params.h"
#include "phoenix.h"
#include "pinned.h"
#include "registry.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const phx_connector_t *phx_conn;
static int dev_count;
/* Why the connector and the module offered no faster mode: each a part of a device's why,
 * which joins them with "; " and is copied whole into phxfs_device_info's 512 bytes; sized
 * so the joined text always fits there. */
#define PHX_REASON_BYTES 255
_Static_assert(2 * (PHX_REASON_BYTES - 1) + 2 < sizeof ((phx_device_t *)0)->why, "a device's why holds both reasons");
_Static_assert(sizeof ((phx_device_t *)0)->why <= sizeof ((phxfs_device_info_t *)0)->why, "phxfs_device_info holds a device's why");
static char conn_why[PHX_REASON_BYTES];
/* Set once by start-up (lifecycle.c) before any device can open; read only after. */
static phx_params_t params;
static int pool_engine, pool_workers;
static phx_device_t devices[PHX_MAX_DEVICES];
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER; /* serialises open and close */

int phx_devices_init(const phx_params_t *p)
{
    params = *p;
    const char *want = params.connector;
    if (!*want && params.mode == PHXFS_MODE_HOST) want = "host";
    const phx_connector_t *c = NULL;
    int n = -ENODEV;
    if (!strcmp(want, "fake")) {
        c = &phx_connector_fake;
        n = c->init(params.fake_devices, conn_why, sizeof conn_why);
    } else if (!strcmp(want, "emu")) {
        c = &phx_connector_emu;
        n = c->init(0, conn_why, sizeof conn_why);
        if (n <= 0) return phx_fail(ENODEV, "connector emu requested but unavailable: %s", conn_why);
    } else if (!strcmp(want, "host")) {
        c = &phx_connector_host;
        n = c->init(0, conn_why, sizeof conn_why);
        snprintf(conn_why, sizeof conn_why, "bounce: host connector selected by configuration");
    } else {
        c = &phx_connector_cuda;
        n = c->init(0, conn_why, sizeof conn_why);
        if (n <= 0 && !strcmp(want, "cuda")) return phx_fail(ENODEV, "connector cuda requested but unavailable: %s", conn_why);
        if (n <= 0) {
            /* no GPU: a phxfs module driving an emulated accelerator (a QEMU guest) is next */
            char emu_why[256];
            c = &phx_connector_emu;
            n = c->init(0, emu_why, sizeof emu_why);
        }
        if (n <= 0) {
            c = &phx_connector_host;
            n = c->init(0, NULL, 0);
        }
    }
    if (n <= 0) return phx_fail(ENODEV, "connector %s found no device", c->name);
    phx_conn = c;
    dev_count = n;
    for (int i = 0; i < n; i++) {
        devices[i].id = i;
        devices[i].kmod.fd = -1;
        phx_registry_init(&devices[i].reg);
        pthread_mutex_init(&devices[i].helper_lock, NULL);
    }
    return 0;
}

void phx_devices_use_pool(int engine, int workers)
{
    pool_engine = engine;
    pool_workers = workers;
}

int phx_device_count_internal(void) { return dev_count; }

int phxfs_device_count(void)
{
    phx_clear_error();
    int rc = phx_lib_init();
    return rc < 0 ? rc : dev_count;
}

/* The kernel-module modes: the connector must name the device's memory to the module
 * (p2p_addr) and its PCI address (pci_bdf), and a /dev/phxfs_devN must serve that PCI device.
 * On success d->kmod is open; the result is the mode the module's map_mode offers
 * (PHXFS_MODE_P2P or PHXFS_MODE_STAGING), or -1 with why filled. */
static int probe_module(phx_device_t *d, char *why, size_t n)
{
    if (!phx_conn->p2p_addr || !phx_conn->pci_bdf) {
        snprintf(why, n, "p2p/staging: the %s connector cannot hand device memory to the phxfs module", phx_conn->name);
        return -1;
    }
    char bdf[32] = "";
    if (phx_conn->pci_bdf(d->id, bdf, sizeof bdf) < 0) {
        snprintf(why, n, "p2p/staging: the PCI address of device %d is unknown (%s)", d->id, phx_last_error());
        phx_clear_error(); /* a reason for the mode, not a failure of the open */
        return -1;
    }
    int idx = phx_kmod_find(bdf);
    if (idx == -ENODEV) {
        snprintf(why, n, "p2p/staging: phxfs kernel module not loaded (no /sys/class/phxfs)");
        return -1;
    }
    if (idx < 0) {
        snprintf(why, n, "p2p/staging: the phxfs module serves no device at PCI %s (its BAR could not be registered? see dmesg)", bdf);
        return -1;
    }
    char err[200];
    if (phx_kmod_open(idx, &d->kmod, err, sizeof err) < 0) {
        snprintf(why, n, "p2p/staging: %s", err);
        return -1;
    }
    if (d->kmod.info.version != PHXFS_UAPI_VERSION) {
        snprintf(why, n, "p2p/staging: /dev/phxfs_dev%d speaks ioctl version %u, this library %d", idx, d->kmod.info.version,
                 PHXFS_UAPI_VERSION);
        phx_kmod_close(&d->kmod);
        return -1;
    }
    return d->kmod.info.map_mode == PHXFS_MAP_STAGING ? PHXFS_MODE_STAGING : PHXFS_MODE_P2P;
}

static int choose_mode(phx_device_t *d)
{
    char mod_why[PHX_REASON_BYTES] = "";
    int forced = phx_params_mode();
    int offered = phx_conn->is_accelerator && forced != PHXFS_MODE_BOUNCE && forced != PHXFS_MODE_HOST
                      ? probe_module(d, mod_why, sizeof mod_why) : -1;
    if (!phx_conn->is_accelerator)
        snprintf(mod_why, sizeof mod_why, "p2p/staging: no accelerator");
    /* staging works on a module in either map mode; p2p needs one that maps whole registrations */
    if (forced == PHXFS_MODE_STAGING && offered >= 0) offered = PHXFS_MODE_STAGING;
    if (forced == PHXFS_MODE_P2P && offered == PHXFS_MODE_STAGING) {
        phx_kmod_close(&d->kmod);
        return phx_fail(ENODEV, "device %d: mode p2p requested, but the phxfs module is loaded with map_mode=staging "
                        "(it maps at most staging_mb per device); reload it with map_mode=full or use mode staging", d->id);
    }
    if ((forced == PHXFS_MODE_P2P || forced == PHXFS_MODE_STAGING) && offered < 0)
        return phx_fail(ENODEV, "device %d: mode %s requested, unavailable: %s", d->id, phx_mode_name(forced), mod_why);
    if (offered >= 0) {
        d->mode = offered;
        d->why[0] = 0;
        if (offered == PHXFS_MODE_STAGING && forced != PHXFS_MODE_STAGING)
            snprintf(d->why, sizeof d->why, "p2p: the phxfs module is loaded with map_mode=staging");
        return 0;
    }
    if (phx_conn->is_accelerator) {
        if (forced == PHXFS_MODE_HOST)
            return phx_fail(ENODEV, "device %d: mode host requested but device %d is an accelerator (%s); host mode is for device < 0 or machines without one",
                            d->id, d->id, phx_conn->name);
        d->mode = PHXFS_MODE_BOUNCE;
        snprintf(d->why, sizeof d->why, "%s", forced == PHXFS_MODE_BOUNCE ? "bounce requested by configuration" : mod_why);
    } else {
        if (forced == PHXFS_MODE_BOUNCE)
            return phx_fail(ENODEV, "device %d: mode bounce requested but there is no accelerator (%s)", d->id, conn_why);
        d->mode = PHXFS_MODE_HOST;
        snprintf(d->why, sizeof d->why, "%s; %s", mod_why, conn_why[0] ? conn_why : "bounce: no accelerator");
    }
    return 0;
}

/* Staging: device memory for the slots, mapped through the module once, so file I/O lands in
 * device memory and device-to-device copies move it; bounded by the module's staging_mb. */
static void staging_teardown(phx_device_t *d)
{
    if (d->staging.free_slots) phx_pinned_pool_destroy(&d->staging);
    phx_kmod_unmap(d->stage_win, d->stage_len);
    d->stage_win = NULL;
    if (d->stage_alloc) phx_conn->mem_free(d->id, d->stage_alloc);
    d->stage_alloc = d->stage_dev = NULL;
}

static int staging_setup(phx_device_t *d)
{
    size_t page = (size_t)d->kmod.info.page_size, slot = params.slot_bytes;
    size_t bytes = params.pinned_bytes;
    const char *limit = "pinned_mb";
    if (d->kmod.info.map_mode == PHXFS_MAP_STAGING && bytes > d->kmod.info.staging_bytes) {
        bytes = (size_t)d->kmod.info.staging_bytes;
        limit = "the module's staging_mb";
    }
    bytes = phx_align_down(bytes, page) / slot * slot;
    if (bytes < slot)
        return phx_fail(EINVAL, "device %d: the staging area (%s, %zu KiB) is smaller than one slot (%zu KiB); lower PHX_SLOT_MB/PHX_SLOT_KB",
                        d->id, limit, bytes >> 10, slot >> 10);
    d->stage_len = phx_align_up(bytes, page);
    int rc = phx_conn->mem_alloc(d->id, d->stage_len + page, &d->stage_alloc);
    if (rc) return rc < 0 ? rc : -ENOMEM;
    /* the first whole device page of the allocation (in device addresses) */
    uint64_t addr = 0;
    char why[200] = "";
    rc = phx_conn->p2p_addr(d->id, d->stage_alloc, d->stage_len + page, &addr, why, sizeof why);
    if (rc) rc = phx_fail(-rc, "device %d: staging memory has no device address: %s", d->id, why);
    size_t lead = (size_t)(((addr + page - 1) & ~(uint64_t)(page - 1)) - addr);
    d->stage_dev = (char *)d->stage_alloc + lead;
    addr += lead;
    if (!rc) rc = phx_kmod_map(&d->kmod, addr, d->stage_len, 0, (void **)&d->stage_win);
    if (!rc) rc = phx_pinned_pool_init_external(&d->staging, d->id, d->stage_win, bytes, slot);
    if (rc) staging_teardown(d);
    return rc;
}

/* What lives from the first open to the last close; safe on a half-made device. */
static void device_teardown(phx_device_t *d)
{
    if (d->wctx) {
        for (int i = 0; i < pool_workers; i++) phx_wctx_free(d->wctx[i]);
        free(d->wctx);
        d->wctx = NULL;
    }
    if (d->helper_stream) {
        phx_conn->stream_destroy(d->helper_stream);
        d->helper_stream = NULL;
    }
    phx_inline_free(d->inl);
    d->inl = NULL;
    phx_pinned_pool_destroy(&d->pinned);
    if (d->mode == PHXFS_MODE_STAGING) staging_teardown(d);
    phx_kmod_close(&d->kmod);
}

/* Each worker's stream and events and the pinned pool are made here, before any I/O on the
 * device can exist, so the first transfer does not pay for registering pinned memory. */
static int device_setup(phx_device_t *d)
{
    int rc = choose_mode(d);
    if (rc) return rc;
    rc = phx_conn->device_name(d->id, d->name, sizeof d->name);
    d->engine = pool_engine;
    if (rc || !phx_conn->is_accelerator) {
        phx_kmod_close(&d->kmod);
        return rc;
    }
    /* p2p and staging move no bytes through pinned slots: one slot, for the stream flags
     * (staging checks its own pool against the slot size) */
    int kmod_mode = d->mode == PHXFS_MODE_P2P || d->mode == PHXFS_MODE_STAGING;
    if (!kmod_mode && params.pinned_bytes < params.slot_bytes)
        return phx_fail(EINVAL, "device %d: the pinned pool (pinned_mb %zu MiB) is smaller than one bounce slot (%zu KiB); "
                        "raise PHX_PINNED_MB or lower PHX_SLOT_MB/PHX_SLOT_KB", d->id, params.pinned_bytes >> 20, params.slot_bytes >> 10);
    rc = phx_pinned_pool_init(&d->pinned, d->id, kmod_mode ? params.slot_bytes : params.pinned_bytes, params.slot_bytes);
    if (!rc && d->mode == PHXFS_MODE_STAGING) rc = staging_setup(d);
    if (!rc) {
        d->wctx = calloc((size_t)pool_workers, sizeof *d->wctx);
        if (!d->wctx) rc = phx_fail(ENOMEM, "device %d: out of memory", d->id);
    }
    for (int i = 0; !rc && i < pool_workers; i++)
        if (!(d->wctx[i] = phx_wctx_new(d, &rc)) && !rc) rc = -ENOMEM;
    if (!rc) rc = phx_conn->stream_create(d->id, &d->helper_stream);
    /* its streams are made on first use: a process that never reads small pays nothing */
    if (!rc && d->mode == PHXFS_MODE_BOUNCE && !(d->inl = phx_inline_new()))
        rc = phx_fail(ENOMEM, "device %d: out of memory", d->id);
    if (rc) device_teardown(d);
    return rc;
}

int phxfs_open(int dev)
{
    phx_clear_error();
    int rc = phx_lib_init();
    if (rc < 0) return rc;
    if (dev < 0 || dev >= dev_count)
        return phx_fail(ENODEV, "open: no device %d (%d device(s) with connector %s)", dev, dev_count, phx_conn->name);
    pthread_mutex_lock(&dev_lock);
    phx_device_t *d = &devices[dev];
    if (atomic_load(&d->open_count) == 0) rc = device_setup(d);
    if (rc == 0) atomic_fetch_add(&d->open_count, 1);
    pthread_mutex_unlock(&dev_lock);
    return rc;
}

int phxfs_close(int dev)
{
    phx_clear_error();
    if (dev < 0 || dev >= dev_count) return phx_fail(ENODEV, "close: no device %d", dev);
    pthread_mutex_lock(&dev_lock);
    phx_device_t *d = &devices[dev];
    int rc = 0, n = atomic_load(&d->open_count);
    if (n == 0) {
        rc = phx_fail(EINVAL, "close: device %d is not open", dev);
    } else if (n > 1) {
        atomic_fetch_sub(&d->open_count, 1);
    } else if (atomic_load(&d->users) > 0) {
        rc = phx_fail(EBUSY, "close: device %d has %d batch(es), stream operation(s) or call(s) in flight", dev,
                      atomic_load(&d->users));
    } else {
        atomic_store(&d->open_count, 0);
        /* a use that raced in before the store is seen here; one that comes after sees the
         * device closed and takes the slow path in acquire, which waits for this lock */
        int users = atomic_load(&d->users);
        if (users > 0) {
            atomic_store(&d->open_count, 1);
            rc = phx_fail(EBUSY, "close: device %d has %d batch(es), stream operation(s) or call(s) in flight", dev, users);
        } else {
            device_teardown(d);
        }
    }
    pthread_mutex_unlock(&dev_lock);
    return rc;
}

phx_device_t *phx_device_acquire(int dev, int *err)
{
    if (phx_conn == NULL || dev < 0 || dev >= dev_count) {
        *err = phx_fail(ENODEV, "no device %d", dev);
        return NULL;
    }
    phx_device_t *d = &devices[dev];
    atomic_fetch_add(&d->users, 1);
    if (atomic_load(&d->open_count) > 0) return d;
    /* Closed, or a close that will be refused is between its two stores: ask under the lock
     * close holds throughout, so a device that stays open is never reported closed. */
    atomic_fetch_sub(&d->users, 1);
    pthread_mutex_lock(&dev_lock);
    int open = atomic_load(&d->open_count) > 0;
    if (open) atomic_fetch_add(&d->users, 1);
    pthread_mutex_unlock(&dev_lock);
    if (open) return d;
    *err = phx_fail(ENODEV, "device %d is not open (call phxfs_open first)", dev);
    return NULL;
}

void phx_device_release(phx_device_t *d) { atomic_fetch_sub(&d->users, 1); }

/* GPU pages are 64 KiB; host registrations use the CPU page size */
static uint64_t page_size(void)
{
    return phx_conn && phx_conn->is_accelerator ? 65536 : (uint64_t)sysconf(_SC_PAGESIZE);
}

int phxfs_get_device_info(int dev, phxfs_device_info_t *info)
{
    phx_clear_error();
    if (!info) return phx_fail(EINVAL, "device_info: info is NULL");
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    memset(info, 0, sizeof *info);
    info->device_id = dev;
    info->mode = d->mode;
    info->engine = d->engine;
    info->workers = pool_workers;
    info->page_size = page_size();
    info->slot_bytes = params.slot_bytes;
    info->slots_per_worker = params.slots;
    snprintf(info->connector, sizeof info->connector, "%s", phx_conn->name);
    snprintf(info->name, sizeof info->name, "%s", d->name);
    snprintf(info->why, sizeof info->why, "%s", d->why);
    phx_device_release(d);
    return 0;
}

uint64_t phxfs_get_page_size(void) { return page_size(); }

int phxfs_get_map_mode(int dev)
{
    phx_clear_error();
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    int m = d->mode;
    phx_device_release(d);
    return m == PHXFS_MODE_P2P ? 0 : m == PHXFS_MODE_STAGING ? 1 : -EOPNOTSUPP;
}

/* p2p registration: the enclosing device pages pinned and mapped into a window of the
 * module; I/O on the registration goes to the window. */
static int p2p_map(void *ctx, uintptr_t addr, size_t len, void **target, void **win, size_t *win_len)
{
    phx_device_t *d = ctx;
    uint64_t page = d->kmod.info.page_size, dev_addr;
    char why[200] = "";
    if (phx_conn->p2p_addr(d->id, (void *)addr, len, &dev_addr, why, sizeof why))
        return phx_fail(EINVAL, "regmem: [%#lx, +%zu) on device %d: p2p mode maps device memory, and this is %s",
                        (unsigned long)addr, len, d->id, why);
    /* whole device pages (the driver pins 64 KiB at a time), counted in device addresses */
    uint64_t s = dev_addr & ~(page - 1), e = (dev_addr + len + page - 1) & ~(page - 1);
    int rc = phx_kmod_map(&d->kmod, s, (size_t)(e - s), 0, win);
    if (rc) return rc;
    *win_len = (size_t)(e - s);
    *target = (char *)*win + (dev_addr - s);
    return 0;
}

int phxfs_regmem(int dev, const void *addr, size_t len, void **target_addr)
{
    phx_clear_error();
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    int rc;
    if (d->mode == PHXFS_MODE_P2P) {
        rc = phx_registry_add_mapped(&d->reg, (uintptr_t)addr, len, p2p_map, d);
        /* the caller keeps using its device pointer; the window is the library's business */
        if (rc == 0 && target_addr) *target_addr = (void *)addr;
    } else {
        rc = phx_registry_add(&d->reg, (uintptr_t)addr, len, (void *)addr);
        if (rc == 0 && target_addr) *target_addr = (void *)addr;
    }
    phx_device_release(d);
    return rc;
}

int phxfs_deregmem(int dev, const void *addr, size_t len)
{
    phx_clear_error();
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    int rc = phx_registry_remove(&d->reg, (uintptr_t)addr, len);
    phx_device_release(d);
    return rc;
}

/* open(2) gives a directory to O_RDONLY, and its lseek(SEEK_END) on ext4 answers 2^63 - 1: a
 * caller sizing a buffer from it would ask for exabytes. Refused, as read(2) would refuse it. */
static int refuse_directory(int fd, const char *path)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return phx_fail(EISDIR, "open %s: %s", path, strerror(EISDIR));
    }
    return fd;
}

int phxfs_file_open(const char *path, int flags, int mode, int want_direct, int *is_direct)
{
    phx_clear_error();
    if (!path) return phx_fail(EINVAL, "file_open: path is NULL");
    flags |= O_CLOEXEC;
    if (want_direct) {
        int fd = open(path, flags | O_DIRECT, mode);
        if (fd >= 0) {
            if (is_direct) *is_direct = 1;
            return refuse_directory(fd, path);
        }
        if (errno != EINVAL) return phx_fail(errno, "open %s: %s", path, strerror(errno));
        /* EINVAL: the file system refuses O_DIRECT (tmpfs, some FUSE) */
    }
    int fd = open(path, flags, mode);
    if (fd < 0) return phx_fail(errno, "open %s: %s", path, strerror(errno));
    if (is_direct) *is_direct = 0;
    return refuse_directory(fd, path);
}

int phxfs_file_cached_permille(int fd)
{
    phx_clear_error();
    struct stat st;
    if (fstat(fd, &st) < 0) return phx_fail(errno, "cached_permille: fd %d: %s", fd, strerror(errno));
    if (!S_ISREG(st.st_mode)) return phx_fail(EINVAL, "cached_permille: fd %d is not a regular file", fd);
    if (st.st_size == 0) return 1000;
    /* Sampled, not exhaustive: mincore over every page of a 5 GB file costs tens of
     * milliseconds, and cachestat(2) walks every page too (0.8 ms for 1.8 GB). 64 evenly
     * spread pages answer "warm or cold" (±6 %) in about 50 us; 1024 took 0.7 ms, one
     * syscall each. The mapping only reserves addresses. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = (size_t)st.st_size;
    size_t pages = (size + page - 1) / page, samples = pages < 64 ? pages : 64;
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return phx_fail(errno, "cached_permille: mmap of fd %d: %s", fd, strerror(errno));
    size_t resident = 0;
    int rc = 0;
    for (size_t k = 0; k < samples && !rc; k++) {
        unsigned char v = 0;
        size_t at = (pages - 1) * k / (samples > 1 ? samples - 1 : 1);
        if (mincore((char *)m + at * page, 1, &v) < 0) rc = phx_fail(errno, "cached_permille: mincore: %s", strerror(errno));
        resident += v & 1;
    }
    munmap(m, size);
    return rc ? rc : (int)(resident * 1000 / samples);
}

/* ---- device-memory helpers ---- */
enum { HELPER_TO_HOST, HELPER_TO_DEVICE, HELPER_ZERO };

static int helper_queue(int kind, void *dst, const void *src, size_t len, void *stream)
{
    return kind == HELPER_ZERO        ? phx_conn->memset_async(dst, 0, len, stream)
           : kind == HELPER_TO_DEVICE ? phx_conn->htod_async(dst, src, len, stream)
                                      : phx_conn->dtoh_async(dst, src, len, stream);
}

/* One copy or memset on the device's helper stream (made when the device opened), waited
 * for; or queued on the caller's stream when one is given. */
static int helper_run(int dev, int kind, void *dst, const void *src, size_t len, void *stream)
{
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    int rc = 0;
    if (!dst || (!src && kind != HELPER_ZERO)) {
        rc = phx_fail(EINVAL, "memcpy: NULL %s", dst ? "source" : "destination");
    } else if (!phx_conn->is_accelerator) {
        if (kind == HELPER_ZERO) memset(dst, 0, len);
        else memmove(dst, src, len);
    } else if (stream) {
        rc = helper_queue(kind, dst, src, len, stream);
    } else {
        pthread_mutex_lock(&d->helper_lock);
        rc = helper_queue(kind, dst, src, len, d->helper_stream);
        int rc2 = phx_conn->stream_sync(d->helper_stream);
        pthread_mutex_unlock(&d->helper_lock);
        if (!rc) rc = rc2;
    }
    phx_device_release(d);
    return rc;
}

int phxfs_memcpy_to_host(int dev, void *dst, const void *src, size_t len)
{
    phx_clear_error();
    return helper_run(dev, HELPER_TO_HOST, dst, src, len, NULL);
}
int phxfs_memcpy_to_device(int dev, void *dst, const void *src, size_t len)
{
    phx_clear_error();
    return helper_run(dev, HELPER_TO_DEVICE, dst, src, len, NULL);
}
int phxfs_memcpy_to_host_async(int dev, void *dst, const void *src, size_t len, void *stream)
{
    phx_clear_error();
    return helper_run(dev, HELPER_TO_HOST, dst, src, len, stream);
}
int phxfs_memcpy_to_device_async(int dev, void *dst, const void *src, size_t len, void *stream)
{
    phx_clear_error();
    return helper_run(dev, HELPER_TO_DEVICE, dst, src, len, stream);
}

int phxfs_check_device_pointer(int dev, const void *ptr, size_t len)
{
    phx_clear_error();
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    char why[200] = "";
    int rc = phx_conn->check_pointer(dev, ptr, len, why, sizeof why);
    phx_device_release(d);
    if (rc) return phx_fail(EINVAL, "device %d: pointer %p (%zu bytes) is %s", dev, ptr, len, why);
    return 0;
}

int phxfs_pointer_device(const void *ptr, size_t len, int *dev)
{
    phx_clear_error();
    if (!dev) return phx_fail(EINVAL, "pointer_device: dev is NULL");
    int rc = phx_lib_init();
    if (rc < 0) return rc;
    char why[200] = "";
    rc = phx_conn->pointer_device(ptr, len, dev, why, sizeof why);
    if (rc) return phx_fail(-rc, "pointer %p (%zu bytes) %s", ptr, len, why);
    return 0;
}

int phxfs_check_stream(int dev, void *stream)
{
    phx_clear_error();
    int err;
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    int rc = stream ? phx_conn->stream_device(stream) : phx_fail(EINVAL, "check_stream: stream is NULL");
    phx_device_release(d);
    if (rc >= 0 && rc != dev) return phx_fail(EINVAL, "stream %p belongs to device %d, not device %d", stream, rc, dev);
    if (rc < 0 && !strstr(phx_last_error(), "stream")) phx_fail(-rc, "check_stream: %p is not a stream of device %d: %s", stream, dev, phx_last_error());
    return rc < 0 ? rc : 0;
}

static int mem_alloc(int dev, size_t len, void **ptr, int zero)
{
    phx_clear_error();
    int err;
    if (!ptr) return phx_fail(EINVAL, "mem_alloc: ptr is NULL");
    phx_device_t *d = phx_device_acquire(dev, &err);
    if (!d) return err;
    int rc = phx_conn->mem_alloc(dev, len, ptr);
    if (rc < 0) {
        if (!*phx_last_error()) phx_fail(-rc, "mem_alloc: %zu bytes on device %d failed: %s", len, dev, strerror(-rc));
        phx_device_release(d);
        return rc;
    }
    phx_device_release(d);
    /* Zeroed on accelerators, so contents never depend on what the driver handed out; the
     * memset takes about 1.2 ms for 5 GB on an H200. Reading into zeroed and into
     * unzeroed fresh memory ran at the same rate there (tests/gpu/load_shape.cu, f and r). */
    if (zero && phx_conn->is_accelerator) {
        rc = helper_run(dev, HELPER_ZERO, *ptr, NULL, len, NULL);
        if (rc < 0) {
            phx_conn->mem_free(dev, *ptr);
            *ptr = NULL;
        }
    }
    return rc;
}

int phxfs_mem_alloc(int dev, size_t len, void **ptr) { return mem_alloc(dev, len, ptr, 1); }
int phxfs_mem_alloc_uninit(int dev, size_t len, void **ptr) { return mem_alloc(dev, len, ptr, 0); }

/* The simple calls below only bracket one connector call with a use of the device. */
#define WITH_DEVICE(dev, what, call) do {                                                          \
        phx_clear_error();                                                                         \
        int err_;                                                                                  \
        phx_device_t *d_ = phx_device_acquire((dev), &err_);                                       \
        if (!d_) return err_;                                                                      \
        int rc_ = (call);                                                                          \
        phx_device_release(d_);                                                                    \
        if (rc_ < 0 && !*phx_last_error()) phx_fail(-rc_, "%s on device %d: %s", what, (dev), strerror(-rc_)); \
        return rc_;                                                                                \
    } while (0)

int phxfs_mem_free(int dev, void *ptr) { WITH_DEVICE(dev, "mem_free", phx_conn->mem_free(dev, ptr)); }

int phxfs_stream_create(int dev, void **stream)
{
    if (!stream) return phx_fail(EINVAL, "stream_create: stream is NULL");
    WITH_DEVICE(dev, "stream_create", phx_conn->stream_create(dev, stream));
}

int phxfs_stream_synchronize(int dev, void *stream) { WITH_DEVICE(dev, "stream_synchronize", phx_conn->stream_sync(stream)); }
int phxfs_stream_destroy(int dev, void *stream) { WITH_DEVICE(dev, "stream_destroy", phx_conn->stream_destroy(stream)); }

/* ---- several devices: peer access and device-to-device copies ---- */

int phxfs_device_can_access_peer(int dev, int peer)
{
    phx_clear_error();
    int err;
    phx_device_t *a = phx_device_acquire(dev, &err);
    if (!a) return err;
    phx_device_t *b = phx_device_acquire(peer, &err);
    if (!b) { phx_device_release(a); return err; }
    int rc = phx_conn->peer_access(dev, peer);
    phx_device_release(b);
    phx_device_release(a);
    return rc;
}

/* Through host memory: src's pinned slots, two in flight. Chunk k is copied out of src on
 * src's helper stream, then into dst on dst's helper stream, where an event marks when its
 * slot is free again; chunk k+1's copy out of src runs meanwhile. */
static int peer_staged(phx_device_t *dd, void *dst, phx_device_t *sd, const void *src, size_t len)
{
    char *slot[2] = {NULL, NULL};
    void *ev[2] = {NULL, NULL};
    int used[2] = {0, 0};
    size_t chunk = sd->pinned.slot_bytes;
    int rc = phx_conn->enter(dd->id, NULL);
    if (rc) return rc;
    for (int i = 0; i < 2 && !rc; i++) rc = phx_conn->event_create(&ev[i]);
    phx_conn->leave();
    slot[0] = rc ? NULL : phx_pinned_take(&sd->pinned, 1);
    slot[1] = rc ? NULL : phx_pinned_take(&sd->pinned, 0); /* one slot is enough, two overlap */
    int nslots = slot[1] ? 2 : 1;
    for (size_t off = 0, k = 0; !rc && off < len; off += chunk, k++) {
        int i = (int)(k % (size_t)nslots);
        size_t n = len - off < chunk ? len - off : chunk;
        if (used[i]) rc = phx_conn->event_sync(ev[i]);
        if (!rc) rc = phx_conn->dtoh_async(slot[i], (const char *)src + off, n, sd->helper_stream);
        if (!rc) rc = phx_conn->stream_sync(sd->helper_stream);
        if (!rc) rc = phx_conn->htod_async((char *)dst + off, slot[i], n, dd->helper_stream);
        if (!rc) rc = phx_conn->event_record(ev[i], dd->helper_stream);
        used[i] = !rc;
    }
    /* whatever happened, nothing may still be copying out of a slot when it goes back */
    int rc2 = phx_conn->stream_sync(dd->helper_stream);
    if (!rc) rc = rc2;
    for (int i = 0; i < 2; i++) {
        if (slot[i]) phx_pinned_give(&sd->pinned, slot[i]);
        if (ev[i]) phx_conn->event_destroy(ev[i]);
    }
    return rc;
}

int phxfs_memcpy_peer(int dst_dev, void *dst, int src_dev, const void *src, size_t len)
{
    phx_clear_error();
    if (!dst || !src) return phx_fail(EINVAL, "memcpy_peer: NULL %s", dst ? "source" : "destination");
    int err;
    phx_device_t *dd = phx_device_acquire(dst_dev, &err);
    if (!dd) return err;
    phx_device_t *sd = phx_device_acquire(src_dev, &err);
    if (!sd) { phx_device_release(dd); return err; }
    int rc = 0;
    if (len == 0) {
        /* nothing to move */
    } else if (!phx_conn->is_accelerator) {
        memmove(dst, src, len);
    } else {
        /* both helper streams are held, lower id first, so two opposite copies cannot deadlock */
        phx_device_t *lo = dd->id < sd->id ? dd : sd, *hi = dd->id < sd->id ? sd : dd;
        pthread_mutex_lock(&lo->helper_lock);
        if (hi != lo) pthread_mutex_lock(&hi->helper_lock);
        int direct = phx_conn->peer_access(dst_dev, src_dev);
        if (direct < 0) {
            rc = direct;
        } else if (direct) {
            rc = phx_conn->peer_async(dst, dst_dev, src, src_dev, len, dd->helper_stream);
            int rc2 = phx_conn->stream_sync(dd->helper_stream);
            if (!rc) rc = rc2;
        } else {
            rc = peer_staged(dd, dst, sd, src, len);
        }
        if (hi != lo) pthread_mutex_unlock(&hi->helper_lock);
        pthread_mutex_unlock(&lo->helper_lock);
        if (rc < 0 && !*phx_last_error())
            phx_fail(-rc, "memcpy_peer: device %d -> device %d, %zu bytes", src_dev, dst_dev, len);
    }
    phx_device_release(sd);
    phx_device_release(dd);
    return rc;
}
