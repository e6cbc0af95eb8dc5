// SPDX-License-Identifier: GPL-2.0
/*
 * The BAR as ZONE_DEVICE pages.
 *
 * Memory type: with CONFIG_PCI_P2PDMA the P2PDMA core registers the BAR
 * (pci_p2pdma_add_resource), so the block layer knows the pages are peer memory. Without it
 * (stock Debian 6.1/6.12) the module calls memremap_pages itself: MEMORY_DEVICE_PCI_P2PDMA
 * (mapped uncached, the safe choice for real device memory) for GPUs, and
 * MEMORY_DEVICE_GENERIC (write-back) for the emu backend, whose "BAR" is RAM.
 *
 * PAT: memremap_pages fails with -EBUSY when part of the range already has another memory
 * type (the GPU driver's write-combined mappings of BAR1). Then the BAR is probed in units of
 * pat_unit_mb (at least one memory section, since two pgmaps may not share one) and the
 * conflict-free runs are registered, as upstream Phoenix does from the PAT memtype list.
 */
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#ifdef CONFIG_PCI_P2PDMA
#include <linux/pci-p2pdma.h>
#endif
#include "phxfs.h"

char *phxfs_mem_type_param = "auto";
module_param_named(mem_type, phxfs_mem_type_param, charp, 0444);
MODULE_PARM_DESC(mem_type, "auto (p2pdma for GPUs, generic for emu), generic or p2pdma");
unsigned int phxfs_pat_unit_mb = 128;
module_param_named(pat_unit_mb, phxfs_pat_unit_mb, uint, 0444);
MODULE_PARM_DESC(pat_unit_mb, "unit (MiB) in which a BAR with PAT conflicts is probed");

static int pick_type(struct phxfs_dev *d)
{
	if (!strcmp(phxfs_mem_type_param, "generic"))
		return PHXFS_MEM_GENERIC;
	if (!strcmp(phxfs_mem_type_param, "p2pdma"))
		return PHXFS_MEM_P2PDMA;
	if (strcmp(phxfs_mem_type_param, "auto"))
		return -EINVAL;
	return d->be == &phxfs_backend_emu ? PHXFS_MEM_GENERIC : PHXFS_MEM_P2PDMA;
}

static struct dev_pagemap *map_range(struct phxfs_dev *d, phys_addr_t start, u64 len)
{
	struct dev_pagemap *pgmap = kzalloc(sizeof(*pgmap), GFP_KERNEL);
	void *addr;

	if (!pgmap)
		return ERR_PTR(-ENOMEM);
	pgmap->type = d->mem_type == PHXFS_MEM_P2PDMA ? MEMORY_DEVICE_PCI_P2PDMA : MEMORY_DEVICE_GENERIC;
	pgmap->range.start = start;
	pgmap->range.end = start + len - 1;
	pgmap->nr_range = 1;
	addr = memremap_pages(pgmap, dev_to_node(&d->pdev->dev));
	if (IS_ERR(addr)) {
		kfree(pgmap);
		return ERR_CAST(addr);
	}
	return pgmap;
}

static int register_run(struct phxfs_dev *d, phys_addr_t start, u64 len)
{
	struct dev_pagemap *pgmap;

	if (d->nranges == PHXFS_MAX_RANGES)
		return -ENOSPC;
	pgmap = map_range(d, start, len);
	if (IS_ERR(pgmap))
		return PTR_ERR(pgmap);
	d->ranges[d->nranges++] = (struct phxfs_range){ start, len, pgmap };
	d->registered_bytes += len;
	return 0;
}

/* The whole range failed for a PAT conflict: find the units that map, register their runs. */
static int register_around_conflicts(struct phxfs_dev *d, phys_addr_t start, u64 len)
{
	u64 unit = max_t(u64, (u64)phxfs_pat_unit_mb << 20, 1ull << SECTION_SIZE_BITS);
	u64 off, run = 0, nunits = len / unit, skipped = 0;
	phys_addr_t run_start = start;
	int rc = 0;

	for (off = 0; off < nunits * unit; off += unit) {
		struct dev_pagemap *probe = map_range(d, start + off, unit);

		if (!IS_ERR(probe)) {
			memunmap_pages(probe);
			kfree(probe);
			if (!run)
				run_start = start + off;
			run += unit;
			continue;
		}
		skipped++;
		if (run)
			rc = register_run(d, run_start, run);
		run = 0;
		if (rc)
			break;
	}
	if (!rc && run)
		rc = register_run(d, run_start, run);
	dev_info(&d->pdev->dev, "phxfs: BAR%d has memory-type (PAT) conflicts: %llu unit(s) of %llu MiB skipped, %llu MiB registered in %d run(s)\n",
		 d->bar, skipped, unit >> 20, d->registered_bytes >> 20, d->nranges);
	return d->registered_bytes ? 0 : (rc ? rc : -EBUSY);
}

int phxfs_pgmap_register(struct phxfs_dev *d, u64 skip_head, u64 skip_tail)
{
	phys_addr_t start;
	u64 len;
	int type = pick_type(d), rc;

	if (type < 0) {
		dev_err(&d->pdev->dev, "phxfs: mem_type=%s: must be auto, generic or p2pdma\n", phxfs_mem_type_param);
		return -EINVAL;
	}
	d->mem_type = type;
	if (skip_head + skip_tail >= d->bar_len)
		return -ENOSPC;
	/* sub-section (2 MiB) alignment is what memremap_pages accepts */
	start = ALIGN(d->bar_start + skip_head, SZ_2M);
	len = ALIGN_DOWN(d->bar_start + d->bar_len - skip_tail, SZ_2M);
	if (len <= start)
		return -ENOSPC;
	len -= start;
#ifdef CONFIG_PCI_P2PDMA
	if (type == PHXFS_MEM_P2PDMA) {
		rc = pci_p2pdma_add_resource(d->pdev, d->bar, len, start - d->bar_start);
		if (!rc) {
			d->ranges[d->nranges++] = (struct phxfs_range){ start, len, NULL };
			d->registered_bytes = len;
		}
		return rc;
	}
#endif
	rc = register_run(d, start, len);
	if (rc == -EBUSY)
		rc = register_around_conflicts(d, start, len);
	return rc;
}

void phxfs_pgmap_unregister(struct phxfs_dev *d)
{
	int i;

	for (i = 0; i < d->nranges; i++) {
		/* ranges the P2PDMA core registered are devm-managed by the PCI device */
		if (!d->ranges[i].pgmap)
			continue;
		memunmap_pages(d->ranges[i].pgmap);
		kfree(d->ranges[i].pgmap);
	}
	d->nranges = 0;
	d->registered_bytes = 0;
}

bool phxfs_pgmap_covers(struct phxfs_dev *d, phys_addr_t phys)
{
	int i;

	for (i = 0; i < d->nranges; i++)
		if (phys >= d->ranges[i].start && phys - d->ranges[i].start < d->ranges[i].len)
			return true;
	return false;
}
