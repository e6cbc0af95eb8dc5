// SPDX-License-Identifier: GPL-2.0
/*
 * emu backend: the BAR2 of a QEMU ivshmem-plain device (RAM behind a prefetchable PCI BAR)
 * stands in for GPU memory, so the whole path - ZONE_DEVICE pages, MAP, O_DIRECT and io_uring
 * DMA by a real (emulated) NVMe controller, revoke - runs in a guest without a GPU.
 *
 * It plays the GPU driver's part too: device memory comes from its own allocator (EMU_ALLOC,
 * owned by the open file, 64 KiB pages like NVIDIA's), and freeing memory that is still
 * pinned calls the pin's revoke callback, as nvidia.ko does when cudaFree meets a p2p pin.
 */
#include <linux/genalloc.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include "phxfs.h"

static bool emu = true;
module_param(emu, bool, 0444);
MODULE_PARM_DESC(emu, "drive QEMU ivshmem-plain devices (1af4:1110) as emulated accelerators");

#define EMU_PAGE SZ_64K
#define EMU_BAR 2

struct emu_alloc {
	struct list_head node;
	void *owner;
	u64 va, len;
};

struct emu_pin {
	struct list_head node;
	u64 va, len;
	void (*revoke)(void *data);
	void *data;
};

struct emu_dev {
	struct mutex lock; /* the driver's lock: held while revoke callbacks run */
	struct gen_pool *pool;
	struct list_head allocs, pins;
	struct phxfs_dev *d;
};

/* Whole pages of one live allocation: a pin may not reach memory nobody allocated. */
static bool range_allocated(struct emu_dev *e, u64 va, u64 len)
{
	struct emu_alloc *a;

	list_for_each_entry(a, &e->allocs, node)
		if (va >= a->va && va - a->va < a->len && len <= a->len - (va - a->va))
			return true;
	return false;
}

static int emu_get_pages(struct phxfs_dev *d, u64 va, u64 len, u64 *bar_off,
			 void (*revoke)(void *data), void *data, void **pin)
{
	struct emu_dev *e = d->be_priv;
	struct emu_pin *p;
	u64 i;

	if (va < PHXFS_EMU_VA_BASE)
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	mutex_lock(&e->lock);
	if (!range_allocated(e, va, len)) {
		mutex_unlock(&e->lock);
		kfree(p);
		return -EINVAL;
	}
	p->va = va;
	p->len = len;
	p->revoke = revoke;
	p->data = data;
	list_add_tail(&p->node, &e->pins);
	mutex_unlock(&e->lock);
	/* the allocator hands out offsets into the registered part of the BAR */
	for (i = 0; i < len / EMU_PAGE; i++)
		bar_off[i] = (d->ranges[0].start - d->bar_start) + (va - PHXFS_EMU_VA_BASE) + i * EMU_PAGE;
	*pin = p;
	return 0;
}

/* The pin may have been revoked (and freed) already: only a pointer still listed is ours. */
static void emu_put_pages(struct phxfs_dev *d, void *pin)
{
	struct emu_dev *e = d->be_priv;
	struct emu_pin *p, *found = NULL;

	mutex_lock(&e->lock);
	list_for_each_entry(p, &e->pins, node)
		if (p == pin) {
			found = p;
			list_del(&p->node);
			break;
		}
	mutex_unlock(&e->lock);
	kfree(found);
}

static int emu_alloc(struct phxfs_dev *d, void *owner, u64 len, u64 *va)
{
	struct emu_dev *e = d->be_priv;
	struct emu_alloc *a = kzalloc(sizeof(*a), GFP_KERNEL);
	unsigned long addr;

	if (!a)
		return -ENOMEM;
	len = ALIGN(len, EMU_PAGE);
	addr = gen_pool_alloc(e->pool, len);
	if (!addr) {
		kfree(a);
		return -ENOMEM;
	}
	a->owner = owner;
	a->va = addr;
	a->len = len;
	mutex_lock(&e->lock);
	list_add_tail(&a->node, &e->allocs);
	mutex_unlock(&e->lock);
	*va = addr;
	return 0;
}

/* Frees one allocation; pins on it are revoked, under the driver lock, as nvidia.ko does. */
static void free_locked(struct emu_dev *e, struct emu_alloc *a)
{
	struct emu_pin *p, *t;

	list_for_each_entry_safe(p, t, &e->pins, node) {
		if (p->va < a->va + a->len && a->va < p->va + p->len) {
			list_del(&p->node);
			p->revoke(p->data);
			kfree(p);
		}
	}
	list_del(&a->node);
	gen_pool_free(e->pool, a->va, a->len);
	kfree(a);
}

static int emu_free(struct phxfs_dev *d, void *owner, u64 va)
{
	struct emu_dev *e = d->be_priv;
	struct emu_alloc *a;
	int rc = -EINVAL;

	mutex_lock(&e->lock);
	list_for_each_entry(a, &e->allocs, node)
		if (a->va == va && a->owner == owner) {
			free_locked(e, a);
			rc = 0;
			break;
		}
	mutex_unlock(&e->lock);
	return rc;
}

static void emu_free_owner(struct phxfs_dev *d, void *owner)
{
	struct emu_dev *e = d->be_priv;
	struct emu_alloc *a, *t;

	mutex_lock(&e->lock);
	list_for_each_entry_safe(a, t, &e->allocs, node)
		if (a->owner == owner)
			free_locked(e, a);
	mutex_unlock(&e->lock);
}

const struct phxfs_backend phxfs_backend_emu = {
	.name = "emu",
	.page_size = EMU_PAGE,
	.get_pages = emu_get_pages,
	.put_pages = emu_put_pages,
	.alloc = emu_alloc,
	.free = emu_free,
	.free_owner = emu_free_owner,
};

static int emu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct emu_dev *e;
	int rc;

	if (!(pci_resource_flags(pdev, EMU_BAR) & IORESOURCE_MEM) || pci_resource_len(pdev, EMU_BAR) < SZ_4M) {
		dev_info(&pdev->dev, "phxfs: ivshmem without a memory BAR%d of 4 MiB or more, not used\n", EMU_BAR);
		return -ENODEV;
	}
	rc = pci_enable_device_mem(pdev);
	if (rc)
		return rc;
	rc = pci_request_region(pdev, EMU_BAR, "phxfs");
	if (rc)
		goto out_disable;
	e = devm_kzalloc(&pdev->dev, sizeof(*e), GFP_KERNEL);
	rc = -ENOMEM;
	if (!e)
		goto out_release;
	mutex_init(&e->lock);
	INIT_LIST_HEAD(&e->allocs);
	INIT_LIST_HEAD(&e->pins);
	e->pool = gen_pool_create(ilog2(EMU_PAGE), dev_to_node(&pdev->dev));
	if (!e->pool)
		goto out_release;
	rc = phxfs_dev_add(pdev, EMU_BAR, &phxfs_backend_emu, e, 0, 0, &e->d);
	if (rc)
		goto out_pool;
	/* device addresses: EMU_VA_BASE + offset into the registered range */
	rc = gen_pool_add(e->pool, PHXFS_EMU_VA_BASE, e->d->ranges[0].len, dev_to_node(&pdev->dev));
	if (rc) {
		phxfs_dev_remove(e->d);
		goto out_pool;
	}
	pci_set_drvdata(pdev, e);
	return 0;
out_pool:
	gen_pool_destroy(e->pool);
out_release:
	pci_release_region(pdev, EMU_BAR);
out_disable:
	pci_disable_device(pdev);
	return rc;
}

static void emu_remove(struct pci_dev *pdev)
{
	struct emu_dev *e = pci_get_drvdata(pdev);

	/* no file is open (module references), so no allocation and no pin is left */
	WARN_ON(!list_empty(&e->allocs) || !list_empty(&e->pins));
	phxfs_dev_remove(e->d);
	gen_pool_destroy(e->pool);
	pci_release_region(pdev, EMU_BAR);
	pci_disable_device(pdev);
}

static const struct pci_device_id emu_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1110) },
	{ 0 }
};
MODULE_DEVICE_TABLE(pci, emu_ids);

static struct pci_driver emu_driver = {
	.name = "phxfs_emu",
	.id_table = emu_ids,
	.probe = emu_probe,
	.remove = emu_remove,
	/* an unbind while windows exist would free struct pages under them */
	.driver.suppress_bind_attrs = true,
};

static bool emu_registered;

int phxfs_emu_init(void)
{
	int rc;

	if (!emu)
		return 0;
	rc = pci_register_driver(&emu_driver);
	emu_registered = !rc;
	return rc;
}

void phxfs_emu_exit(void)
{
	if (emu_registered)
		pci_unregister_driver(&emu_driver);
}
