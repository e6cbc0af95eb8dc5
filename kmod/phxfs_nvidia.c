// SPDX-License-Identifier: GPL-2.0
/*
 * nvidia backend: GPU memory pinned through nv-p2p (64 KiB pages), found in the GPU's BAR1.
 *
 * The driver's exports are plain EXPORT_SYMBOL. Kernels before 6.5 let symbol_get import them
 * at run time, so phxfs loads with or without nvidia.ko; from 6.5 symbol_get only resolves
 * GPL exports, and the module must be built against the open driver's Module.symvers
 * (make NVIDIA_SYMVERS=...), which makes nvidia.ko a load-time dependency. Without either, the
 * backend is compiled (CI builds it on 6.1 and 6.12) but reports itself unavailable.
 */
#include <linux/kref.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include "phxfs.h"
#include "nv-p2p.h"

static bool nvidia = true;
module_param(nvidia, bool, 0444);
MODULE_PARM_DESC(nvidia, "drive NVIDIA GPUs through nv-p2p");
static unsigned int nv_bar_reserve_mb = 128;
module_param(nv_bar_reserve_mb, uint, 0444);
MODULE_PARM_DESC(nv_bar_reserve_mb, "MiB at each end of BAR1 left out of the ZONE_DEVICE range (the driver's own use)");

#define NV_PAGE SZ_64K
#define NV_MAX_GPUS 16

struct nv_ops {
	typeof(&nvidia_p2p_get_pages) get_pages;
	typeof(&nvidia_p2p_put_pages) put_pages;
	typeof(&nvidia_p2p_free_page_table) free_page_table;
};
static struct nv_ops nv;
static bool nv_symbols_held;
static struct phxfs_dev *gpus[NV_MAX_GPUS];
static int ngpus;

static int nv_resolve(void)
{
#if defined(PHXFS_NV_LINKED)
	nv.get_pages = nvidia_p2p_get_pages;
	nv.put_pages = nvidia_p2p_put_pages;
	nv.free_page_table = nvidia_p2p_free_page_table;
	return 0;
#elif LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
	nv.get_pages = symbol_get(nvidia_p2p_get_pages);
	nv.put_pages = symbol_get(nvidia_p2p_put_pages);
	nv.free_page_table = symbol_get(nvidia_p2p_free_page_table);
	if (nv.get_pages && nv.put_pages && nv.free_page_table) {
		nv_symbols_held = true;
		return 0;
	}
	if (nv.get_pages)
		symbol_put(nvidia_p2p_get_pages);
	if (nv.put_pages)
		symbol_put(nvidia_p2p_put_pages);
	if (nv.free_page_table)
		symbol_put(nvidia_p2p_free_page_table);
	memset(&nv, 0, sizeof(nv));
	return -ENOENT;
#else
	return -EOPNOTSUPP;
#endif
}

static void nv_release_symbols(void)
{
#if !defined(PHXFS_NV_LINKED) && LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
	if (nv_symbols_held) {
		symbol_put(nvidia_p2p_get_pages);
		symbol_put(nvidia_p2p_put_pages);
		symbol_put(nvidia_p2p_free_page_table);
	}
#endif
	nv_symbols_held = false;
}

/*
 * One pin. Two references: the core's (dropped by put_pages) and the driver's (dropped when
 * the driver is done with the table: by the free callback, or by a put_pages that succeeded,
 * after which the driver never calls back).
 */
struct nv_pin {
	struct kref ref;
	nvidia_p2p_page_table_t *pt;
	u64 va;
	void (*revoke)(void *data);
	void *data;
};

static void nv_pin_free(struct kref *k)
{
	kfree(container_of(k, struct nv_pin, ref));
}

/* Driver context, driver locks held: the core's revoke only flips state and queues work. */
static void nv_free_callback(void *data)
{
	struct nv_pin *p = data;

	p->revoke(p->data);
	nv.free_page_table(p->pt);
	kref_put(&p->ref, nv_pin_free);
}

static int nv_get_pages(struct phxfs_dev *d, u64 va, u64 len, u64 *bar_off,
			void (*revoke)(void *data), void *data, void **pin)
{
	struct nv_pin *p = kzalloc(sizeof(*p), GFP_KERNEL);
	nvidia_p2p_page_table_t *pt = NULL;
	u32 i;
	int rc;

	if (!p)
		return -ENOMEM;
	kref_init(&p->ref);
	kref_get(&p->ref);
	p->va = va;
	p->revoke = revoke;
	p->data = data;
	rc = nv.get_pages(0, 0, va, len, &pt, nv_free_callback, p);
	if (rc) {
		kfree(p);
		return rc;
	}
	p->pt = pt;
	rc = -EINVAL;
	if (!NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(pt) || pt->page_size != NVIDIA_P2P_PAGE_SIZE_64KB ||
	    (u64)pt->entries * NV_PAGE != len)
		goto bad;
	for (i = 0; i < pt->entries; i++) {
		u64 phys = pt->pages[i]->physical_address;

		/* the page must lie in this GPU's BAR1 (and not in a unit skipped for PAT) */
		if (phys < d->bar_start || phys - d->bar_start >= d->bar_len)
			goto bad;
		bar_off[i] = phys - d->bar_start;
	}
	*pin = p;
	return 0;
bad:
	pr_warn("phxfs%d: nv-p2p table for %llx+%llx unusable (version %x, page size %u, %u entries)\n",
		d->index, va, len, pt->version, pt->page_size, pt->entries);
	if (nv.put_pages(0, 0, va, pt) == 0)
		kref_put(&p->ref, nv_pin_free);
	kref_put(&p->ref, nv_pin_free);
	return rc;
}

static void nv_put_pages(struct phxfs_dev *d, void *pin)
{
	struct nv_pin *p = pin;

	/* non-zero: the driver's callback has started and will free the table itself */
	if (nv.put_pages(0, 0, p->va, p->pt) == 0)
		kref_put(&p->ref, nv_pin_free);
	kref_put(&p->ref, nv_pin_free);
}

const struct phxfs_backend phxfs_backend_nvidia = {
	.name = "nvidia",
	.page_size = NV_PAGE,
	.get_pages = nv_get_pages,
	.put_pages = nv_put_pages,
};

static int largest_mem_bar(struct pci_dev *pdev)
{
	int bar, best = -1;

	for (bar = 0; bar < PCI_STD_NUM_BARS; bar++)
		if ((pci_resource_flags(pdev, bar) & IORESOURCE_MEM) &&
		    (best < 0 || pci_resource_len(pdev, bar) > pci_resource_len(pdev, best)))
			best = bar;
	return best;
}

int phxfs_nvidia_init(void)
{
	struct pci_dev *pdev = NULL;
	int rc;

	if (!nvidia)
		return 0;
	while ((pdev = pci_get_device(PCI_VENDOR_ID_NVIDIA, PCI_ANY_ID, pdev))) {
		u64 reserve = (u64)nv_bar_reserve_mb << 20;
		struct phxfs_dev *d;
		int bar;

		if ((pdev->class >> 16) != PCI_BASE_CLASS_DISPLAY)
			continue;
		if (!nv.get_pages) {
			rc = nv_resolve();
			if (rc) {
				dev_warn(&pdev->dev, "phxfs: NVIDIA GPU found but nv-p2p is unavailable (%s)\n",
					 rc == -EOPNOTSUPP ? "kernel >= 6.5: rebuild phxfs with NVIDIA_SYMVERS=<open driver>/Module.symvers" :
					 "load nvidia.ko first");
				pci_dev_put(pdev);
				return 0;
			}
		}
		bar = largest_mem_bar(pdev);
		if (bar < 0 || pci_resource_len(pdev, bar) <= 4 * reserve) {
			dev_warn(&pdev->dev, "phxfs: BAR%d too small to map (%llu MiB)\n", bar,
				 bar < 0 ? 0ull : (u64)pci_resource_len(pdev, bar) >> 20);
			continue;
		}
		if (ngpus == NV_MAX_GPUS)
			break;
		rc = phxfs_dev_add(pci_dev_get(pdev), bar, &phxfs_backend_nvidia, NULL, reserve, reserve, &d);
		if (rc) {
			dev_warn(&pdev->dev, "phxfs: BAR%d not registered: %d\n", bar, rc);
			pci_dev_put(pdev);
			continue;
		}
		gpus[ngpus++] = d;
	}
	return 0;
}

void phxfs_nvidia_exit(void)
{
	while (ngpus > 0) {
		struct phxfs_dev *d = gpus[--ngpus];
		struct pci_dev *pdev = d->pdev;

		phxfs_dev_remove(d);
		pci_dev_put(pdev);
	}
	nv_release_symbols();
}
