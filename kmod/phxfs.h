/* SPDX-License-Identifier: GPL-2.0 */
/* phxfs internals: devices, backends, mappings. */
#ifndef PHXFS_H
#define PHXFS_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/memremap.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/workqueue.h>
#include "include/uapi/phxfs_ioctl.h"

#define PHXFS_MAX_DEVS 32
#define PHXFS_MAX_RANGES 16

struct phxfs_dev;

/*
 * A backend pins device memory and says where in the BAR it lives. revoke(data) may be called
 * by the backend's driver at any time between a successful get_pages and the matching
 * put_pages, from the driver's own context and possibly under the driver's locks: the core's
 * callback therefore only flips a flag under a spinlock and defers the rest to a workqueue.
 * After revoke the core never calls put_pages for that pin.
 */
struct phxfs_backend {
	const char *name;
	u64 page_size;
	int (*get_pages)(struct phxfs_dev *d, u64 va, u64 len, u64 *bar_off,
			 void (*revoke)(void *data), void *data, void **pin);
	void (*put_pages)(struct phxfs_dev *d, void *pin);
	/* emu only: the BAR's own allocator */
	int (*alloc)(struct phxfs_dev *d, void *owner, u64 len, u64 *va);
	int (*free)(struct phxfs_dev *d, void *owner, u64 va);
	void (*free_owner)(struct phxfs_dev *d, void *owner);
};

extern const struct phxfs_backend phxfs_backend_emu;
extern const struct phxfs_backend phxfs_backend_nvidia;

struct phxfs_range {
	phys_addr_t start;
	u64 len;
	struct dev_pagemap *pgmap; /* NULL when the PCI P2PDMA core owns it */
};

enum { PHXFS_MEM_GENERIC = 0, PHXFS_MEM_P2PDMA = 1 };

struct phxfs_dev {
	int index;
	struct pci_dev *pdev;
	const struct phxfs_backend *be;
	void *be_priv;
	int bar;
	phys_addr_t bar_start;
	u64 bar_len;
	int mem_type;
	struct phxfs_range ranges[PHXFS_MAX_RANGES];
	int nranges;
	u64 registered_bytes;
	atomic64_t mapped_bytes;
	atomic64_t staged_bytes; /* mapped_bytes less emu host views: what staging_mb limits */
	atomic_t live_maps;
	struct device *cdev_dev;
};

/* core (phxfs_main.c) */
int phxfs_dev_add(struct pci_dev *pdev, int bar, const struct phxfs_backend *be, void *be_priv,
		  u64 skip_head, u64 skip_tail, struct phxfs_dev **out);
void phxfs_dev_remove(struct phxfs_dev *d);
extern int phxfs_debug;

/* ZONE_DEVICE registration (phxfs_pgmap.c) */
int phxfs_pgmap_register(struct phxfs_dev *d, u64 skip_head, u64 skip_tail);
void phxfs_pgmap_unregister(struct phxfs_dev *d);
bool phxfs_pgmap_covers(struct phxfs_dev *d, phys_addr_t phys);
extern char *phxfs_mem_type_param;
extern unsigned int phxfs_pat_unit_mb;

/* backends' setup */
int phxfs_emu_init(void);
void phxfs_emu_exit(void);
int phxfs_nvidia_init(void);
void phxfs_nvidia_exit(void);

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define phxfs_vm_flags_set(vma, f) vm_flags_set(vma, f)
#else
#define phxfs_vm_flags_set(vma, f) ((vma)->vm_flags |= (f))
#endif

#endif
