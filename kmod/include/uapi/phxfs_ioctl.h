/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * phxfs_ioctl.h — the user/kernel contract of the phxfs module, shared by the module (kmod/)
 * and libphoenix (phoenix-native/). One character device per accelerator: /dev/phxfs_devN.
 *
 * Flow: mmap(/dev/phxfs_devN, len, MAP_SHARED, offset 0) reserves a window of host addresses;
 * PHXFS_IOC_MAP pins [dev_addr, dev_addr + len) of device memory through the device's backend
 * and inserts the BAR pages behind it into the window at host_addr, so that O_DIRECT and
 * io_uring I/O on host_addr DMA straight into device memory. PHXFS_IOC_UNMAP (or munmap, or the
 * process exiting) releases the pin.
 *
 * Versioning: every struct starts with {size, version}; the caller sets size = sizeof(struct)
 * and version = PHXFS_UAPI_VERSION. The kernel refuses sizes it does not know (-EINVAL) and
 * versions newer than its own (-EPROTO), so an old module never misreads a newer struct.
 */
#ifndef PHXFS_IOCTL_H
#define PHXFS_IOCTL_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define PHXFS_UAPI_VERSION 1
#define PHXFS_IOC_MAGIC 0x88

/* map_mode (sysfs map_mode, phxfs_ioctl_info.map_mode) */
#define PHXFS_MAP_FULL 0    /* every registration is mapped whole */
#define PHXFS_MAP_STAGING 1 /* only a bounded staging area is mapped (staging_mb per device) */

/* emu device addresses: EMU_VA_BASE + offset into the BAR (never 0, never a host address) */
#define PHXFS_EMU_VA_BASE 0x100000000000ull

/* emu backend only: the mapping stands for the device's own view of its memory (what CUDA's
 * device pointers are on a GPU), so the emu connector can copy to and from it; it is not
 * BAR space a GPU would spend, so staging mode does not count it against staging_mb. */
#define PHXFS_MAP_F_EMU_HOST 1u

struct phxfs_ioctl_map {
	__u32 size;      /* sizeof(struct phxfs_ioctl_map) */
	__u32 version;   /* PHXFS_UAPI_VERSION */
	__u64 dev_addr;  /* device virtual address; aligned to page_size */
	__u64 len;       /* bytes; a multiple of page_size, > 0 */
	__u64 host_addr; /* inside a window mmapped from this same open file; page aligned */
	__u32 flags;     /* PHXFS_MAP_F_*; unknown bits: -EINVAL */
	__u32 reserved;  /* must be 0 */
};

struct phxfs_ioctl_unmap {
	__u32 size;
	__u32 version;
	__u64 host_addr; /* exactly as passed to MAP */
	__u64 len;       /* exactly as passed to MAP */
};

struct phxfs_ioctl_info {
	__u32 size;
	__u32 version;      /* out: the module's PHXFS_UAPI_VERSION */
	__u32 map_mode;     /* PHXFS_MAP_* */
	__u32 mem_type;     /* 0 generic (write-back), 1 p2pdma (uncached) */
	__u64 page_size;    /* backend page: MAP alignment */
	__u64 bar_size;     /* bytes of the BAR registered as ZONE_DEVICE pages */
	__u64 mapped_bytes; /* bytes currently mapped on this device, every process */
	__u64 staging_bytes;/* map limit per device in staging mode */
	char backend[16];   /* "nvidia" or "emu" */
	char pci[16];       /* "0000:00:04.0" */
};

/* emu backend only: device memory from the BAR's own allocator, owned by the open file. */
struct phxfs_ioctl_emu_alloc {
	__u32 size;
	__u32 version;
	__u64 len;      /* in: bytes (rounded up to page_size) */
	__u64 dev_addr; /* out */
};

struct phxfs_ioctl_emu_free {
	__u32 size;
	__u32 version;
	__u64 dev_addr; /* as returned by EMU_ALLOC; pins on it are revoked */
};

#define PHXFS_IOC_MAP       _IOW(PHXFS_IOC_MAGIC, 1, struct phxfs_ioctl_map)
#define PHXFS_IOC_UNMAP     _IOW(PHXFS_IOC_MAGIC, 2, struct phxfs_ioctl_unmap)
#define PHXFS_IOC_INFO      _IOWR(PHXFS_IOC_MAGIC, 3, struct phxfs_ioctl_info)
#define PHXFS_IOC_EMU_ALLOC _IOWR(PHXFS_IOC_MAGIC, 4, struct phxfs_ioctl_emu_alloc)
#define PHXFS_IOC_EMU_FREE  _IOW(PHXFS_IOC_MAGIC, 5, struct phxfs_ioctl_emu_free)

#endif
