// SPDX-License-Identifier: GPL-2.0
/*
 * phxfs: accelerator memory as ZONE_DEVICE pages, mapped into user space so that ordinary
 * O_DIRECT and io_uring I/O DMA straight into it.
 *
 * Objects and their owners:
 *  - phxfs_dev: one per accelerator BAR; made by a backend's discovery, lives until unload.
 *  - phxfs_file: one per open() of /dev/phxfs_devN; owns the emu allocations made through it.
 *  - phxfs_vma: one per mmap() window; lives while the VMA or a pending revoke needs it.
 *  - phxfs_map: one per MAP; on its window's list until UNMAP, munmap/exit, holds a backend pin
 *    until release or revoke.
 * Lock order: mmap_lock -> phxfs_vma.lock -> backend locks -> phxfs_map.lock (spinlock).
 * The revoke callback runs under backend (driver) locks and so only takes phxfs_map.lock.
 */
#include <linux/cdev.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include "phxfs.h"

static char *map_mode = "full";
module_param(map_mode, charp, 0444);
MODULE_PARM_DESC(map_mode, "full (map whole registrations) or staging (map at most staging_mb per device)");
static unsigned int staging_mb = 256;
module_param(staging_mb, uint, 0444);
MODULE_PARM_DESC(staging_mb, "staging mode: bytes (MiB) one device may have mapped at a time");
int phxfs_debug;
module_param_named(debug, phxfs_debug, int, 0644);
MODULE_PARM_DESC(debug, "log every map and unmap");

static int mode_staging;
static struct workqueue_struct *phxfs_wq;
static dev_t phxfs_devt;
static struct cdev phxfs_cdev;
static struct class *phxfs_class;
static DEFINE_MUTEX(devs_lock);
static struct phxfs_dev *devs[PHXFS_MAX_DEVS];

struct phxfs_file {
	struct phxfs_dev *d;
};

struct phxfs_vma {
	struct kref ref;
	struct mutex lock;
	struct phxfs_file *f;        /* the open file that made the window */
	struct mm_struct *mm;        /* grabbed: a revoke may outlive the process */
	struct vm_area_struct *vma;  /* NULL once the VMA is closed */
	struct list_head maps;
};

enum { MAP_NEW, MAP_ACTIVE, MAP_REVOKED, MAP_RELEASED };

struct phxfs_map {
	struct kref ref;
	struct list_head node;       /* on vctx->maps, under vctx->lock */
	struct phxfs_vma *vctx;      /* referenced */
	struct phxfs_dev *d;
	u64 host_addr, len, dev_addr;
	void *pin;
	u64 *bar_off;
	spinlock_t lock;
	int state;
	bool counted;                /* against staging_mb (not an emu host view) */
	struct work_struct revoke_work;
};

/* A map's bytes leave the device's counts once: at release or at revoke, whichever is first. */
static void map_uncount(struct phxfs_map *m)
{
	atomic64_sub(m->len, &m->d->mapped_bytes);
	if (m->counted)
		atomic64_sub(m->len, &m->d->staged_bytes);
	atomic_dec(&m->d->live_maps);
}

static void vctx_free(struct kref *k)
{
	struct phxfs_vma *v = container_of(k, struct phxfs_vma, ref);

	mmdrop(v->mm);
	kfree(v);
}

static void map_free(struct kref *k)
{
	struct phxfs_map *m = container_of(k, struct phxfs_map, ref);

	kvfree(m->bar_off);
	if (m->vctx)
		kref_put(&m->vctx->ref, vctx_free);
	kfree(m);
}

static void zap(struct vm_area_struct *vma, unsigned long addr, unsigned long len)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	zap_page_range_single(vma, addr, len, NULL);
#else
	zap_page_range(vma, addr, len);
#endif
}

/* Gives the pin back unless the driver revoked it first. Sleeps (backend locks). */
static void map_release(struct phxfs_map *m)
{
	int was;

	spin_lock(&m->lock);
	was = m->state;
	m->state = MAP_RELEASED;
	spin_unlock(&m->lock);
	if (was == MAP_ACTIVE) {
		m->d->be->put_pages(m->d, m->pin);
		map_uncount(m); /* (a revoke did its own) */
	}
	if (phxfs_debug)
		pr_info("phxfs%d: released %llx+%llx (%s)\n", m->d->index, m->host_addr, m->len,
			was == MAP_REVOKED ? "revoked before" : "pinned");
}

/* The pages go from the process now; the pin went with the driver's callback. */
static void revoke_work_fn(struct work_struct *w)
{
	struct phxfs_map *m = container_of(w, struct phxfs_map, revoke_work);
	struct phxfs_vma *v = m->vctx;

	if (mmget_not_zero(v->mm)) {
		mmap_read_lock(v->mm);
		mutex_lock(&v->lock);
		if (v->vma && !list_empty(&m->node))
			zap(v->vma, m->host_addr, m->len);
		mutex_unlock(&v->lock);
		mmap_read_unlock(v->mm);
		mmput_async(v->mm);
	}
	kref_put(&m->ref, map_free);
}

/* The backend's driver takes the memory back. May run under the driver's locks: no sleeping
 * locks here, the zap runs later from a workqueue. */
static void map_revoke(void *data)
{
	struct phxfs_map *m = data;
	unsigned long flags;
	int was;

	spin_lock_irqsave(&m->lock, flags);
	was = m->state;
	if (was == MAP_ACTIVE)
		m->state = MAP_REVOKED;
	spin_unlock_irqrestore(&m->lock, flags);
	if (was != MAP_ACTIVE)
		return;
	map_uncount(m);
	pr_info("phxfs%d: device memory %llx+%llx revoked by the %s driver; its mapping is torn down\n",
		m->d->index, m->dev_addr, m->len, m->d->be->name);
	kref_get(&m->ref);
	queue_work(phxfs_wq, &m->revoke_work);
}

/* ---- VMA ---- */

static void phxfs_vm_close(struct vm_area_struct *vma)
{
	struct phxfs_vma *v = vma->vm_private_data;
	struct phxfs_map *m, *t;

	mutex_lock(&v->lock);
	list_for_each_entry_safe(m, t, &v->maps, node) {
		list_del_init(&m->node);
		map_release(m);
		kref_put(&m->ref, map_free);
	}
	v->vma = NULL;
	mutex_unlock(&v->lock);
	kref_put(&v->ref, vctx_free);
}

/* A window is one object: no partial munmap, no mremap (the maps are keyed by address). */
static int phxfs_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static int phxfs_vm_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

/* Touching a part of the window that has no map (or a revoked one) is a bus error. */
static vm_fault_t phxfs_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct phxfs_vm_ops = {
	.close = phxfs_vm_close,
	.may_split = phxfs_vm_may_split,
	.mremap = phxfs_vm_mremap,
	.fault = phxfs_vm_fault,
};

static int phxfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct phxfs_file *f = file->private_data;
	struct phxfs_vma *v;

	if (vma->vm_pgoff != 0)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	v = kzalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	kref_init(&v->ref);
	mutex_init(&v->lock);
	INIT_LIST_HEAD(&v->maps);
	v->f = f;
	v->mm = vma->vm_mm;
	mmgrab(v->mm);
	v->vma = vma;
	vma->vm_private_data = v;
	vma->vm_ops = &phxfs_vm_ops;
	phxfs_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	if (f->d->mem_type == PHXFS_MEM_P2PDMA)
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	return 0;
}

/* ---- ioctls ---- */

/* Copies a versioned struct in: size must be the one this module knows, version not newer. */
static int copy_versioned(void *dst, const void __user *src, size_t size)
{
	u32 hdr[2];

	if (copy_from_user(hdr, src, sizeof(hdr)))
		return -EFAULT;
	if (hdr[0] != size)
		return -EINVAL;
	if (hdr[1] == 0 || hdr[1] > PHXFS_UAPI_VERSION)
		return -EPROTO;
	if (copy_from_user(dst, src, size))
		return -EFAULT;
	return 0;
}

/* The caller's window at [addr, addr + len): it must be a phxfs window of this very file. */
static struct phxfs_vma *find_window(struct phxfs_file *f, u64 addr, u64 len, struct vm_area_struct **out)
{
	struct vm_area_struct *vma = find_vma(current->mm, addr);
	struct phxfs_vma *v;

	if (!vma || vma->vm_start > addr || addr + len > vma->vm_end)
		return ERR_PTR(-EFAULT);
	if (vma->vm_ops != &phxfs_vm_ops)
		return ERR_PTR(-EINVAL); /* not a phxfs window */
	v = vma->vm_private_data;
	if (v->f != f || v->mm != current->mm)
		return ERR_PTR(-EINVAL); /* a window of another open file */
	*out = vma;
	return v;
}

static int insert_pages(struct vm_area_struct *vma, struct phxfs_map *m)
{
	struct phxfs_dev *d = m->d;
	u64 ps = d->be->page_size, n = m->len / ps, i, j;
	unsigned long addr = m->host_addr;
	int rc;

	for (i = 0; i < n; i++) {
		/* a registration of many GiB is millions of pages: stay preemptible and killable */
		if (!(i & 63)) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
		if (m->bar_off[i] >= d->bar_len || d->bar_len - m->bar_off[i] < ps ||
		    !IS_ALIGNED(m->bar_off[i], PAGE_SIZE))
			return -EFAULT;
		for (j = 0; j < ps; j += PAGE_SIZE, addr += PAGE_SIZE) {
			phys_addr_t phys = d->bar_start + m->bar_off[i] + j;
			struct page *page;

			/* a unit skipped for a PAT conflict has no struct pages */
			if (!phxfs_pgmap_covers(d, phys))
				return -EFAULT;
			page = pfn_to_page(PHYS_PFN(phys));
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0)
			/* from 6.15 P2PDMA pages start with no reference */
			if (d->mem_type == PHXFS_MEM_P2PDMA && page_ref_count(page) == 0)
				set_page_count(page, 1);
#endif
			rc = vm_insert_page(vma, addr, page);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static long ioctl_map(struct phxfs_file *f, void __user *arg)
{
	struct phxfs_dev *d = f->d;
	struct phxfs_ioctl_map a;
	struct vm_area_struct *vma;
	struct phxfs_vma *v;
	struct phxfs_map *m, *o;
	u64 ps = d->be->page_size, end;
	bool pinned = false;
	long rc;

	rc = copy_versioned(&a, arg, sizeof(a));
	if (rc)
		return rc;
	if ((a.flags & ~PHXFS_MAP_F_EMU_HOST) || a.reserved || a.len == 0)
		return -EINVAL;
	if ((a.flags & PHXFS_MAP_F_EMU_HOST) && d->be != &phxfs_backend_emu)
		return -EINVAL;
	if (!IS_ALIGNED(a.dev_addr, ps) || !IS_ALIGNED(a.len, ps) || !PAGE_ALIGNED(a.host_addr))
		return -EINVAL;
	if (check_add_overflow(a.dev_addr, a.len, &end) || check_add_overflow(a.host_addr, a.len, &end))
		return -EOVERFLOW;
	if (a.len > d->registered_bytes)
		return -E2BIG;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->bar_off = kvmalloc_array(a.len / ps, sizeof(u64), GFP_KERNEL);
	if (!m->bar_off) {
		kfree(m);
		return -ENOMEM;
	}
	kref_init(&m->ref);
	INIT_LIST_HEAD(&m->node);
	spin_lock_init(&m->lock);
	INIT_WORK(&m->revoke_work, revoke_work_fn);
	m->d = d;
	m->host_addr = a.host_addr;
	m->len = a.len;
	m->dev_addr = a.dev_addr;
	m->counted = !(a.flags & PHXFS_MAP_F_EMU_HOST);
	/* reserved before the pin, so concurrent MAPs cannot overshoot staging_mb together */
	if (m->counted && atomic64_add_return(a.len, &d->staged_bytes) > ((u64)staging_mb << 20) && mode_staging) {
		atomic64_sub(a.len, &d->staged_bytes);
		kvfree(m->bar_off);
		kfree(m);
		return -ENOSPC;
	}
	atomic64_add(a.len, &d->mapped_bytes);
	atomic_inc(&d->live_maps);

	mmap_read_lock(current->mm);
	v = find_window(f, a.host_addr, a.len, &vma);
	if (IS_ERR(v)) {
		rc = PTR_ERR(v);
		goto out_unlock_mm;
	}
	kref_get(&v->ref);
	m->vctx = v;
	mutex_lock(&v->lock);
	list_for_each_entry(o, &v->maps, node) {
		if (a.host_addr < o->host_addr + o->len && o->host_addr < a.host_addr + a.len) {
			rc = -EBUSY;
			goto out_unlock;
		}
	}
	m->state = MAP_ACTIVE;
	rc = d->be->get_pages(d, a.dev_addr, a.len, m->bar_off, map_revoke, m, &m->pin);
	if (rc) {
		m->state = MAP_NEW;
		goto out_unlock;
	}
	pinned = true;
	/* on the list before any page is in: a revoke from here on finds it to zap */
	list_add_tail(&m->node, &v->maps);
	rc = insert_pages(vma, m);
	if (rc) {
		list_del_init(&m->node);
		zap(vma, a.host_addr, a.len);
		map_release(m);
		goto out_unlock;
	}
	mutex_unlock(&v->lock);
	mmap_read_unlock(current->mm);
	if (phxfs_debug)
		pr_info("phxfs%d: mapped dev %llx+%llx at %llx\n", d->index, a.dev_addr, a.len, a.host_addr);
	return 0;

out_unlock:
	mutex_unlock(&v->lock);
out_unlock_mm:
	mmap_read_unlock(current->mm);
	/* never pinned: give the reservation back (a pinned one was uncounted by release/revoke) */
	if (!pinned)
		map_uncount(m);
	kref_put(&m->ref, map_free);
	return rc;
}

static long ioctl_unmap(struct phxfs_file *f, void __user *arg)
{
	struct phxfs_ioctl_unmap a;
	struct vm_area_struct *vma;
	struct phxfs_vma *v;
	struct phxfs_map *m, *found = NULL;
	u64 end;
	long rc;

	rc = copy_versioned(&a, arg, sizeof(a));
	if (rc)
		return rc;
	if (a.len == 0 || !PAGE_ALIGNED(a.host_addr))
		return -EINVAL;
	if (check_add_overflow(a.host_addr, a.len, &end))
		return -EOVERFLOW;
	mmap_read_lock(current->mm);
	v = find_window(f, a.host_addr, a.len, &vma);
	if (IS_ERR(v)) {
		mmap_read_unlock(current->mm);
		return PTR_ERR(v);
	}
	mutex_lock(&v->lock);
	list_for_each_entry(m, &v->maps, node) {
		if (m->host_addr == a.host_addr && m->len == a.len) {
			found = m;
			break;
		}
	}
	if (found) {
		list_del_init(&found->node);
		zap(vma, found->host_addr, found->len);
		map_release(found);
	}
	mutex_unlock(&v->lock);
	mmap_read_unlock(current->mm);
	if (!found)
		return -ENOENT;
	kref_put(&found->ref, map_free);
	return 0;
}

static long ioctl_info(struct phxfs_file *f, void __user *arg)
{
	struct phxfs_dev *d = f->d;
	struct phxfs_ioctl_info a;
	long rc = copy_versioned(&a, arg, sizeof(a));

	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.version = PHXFS_UAPI_VERSION;
	a.map_mode = mode_staging ? PHXFS_MAP_STAGING : PHXFS_MAP_FULL;
	a.mem_type = d->mem_type;
	a.page_size = d->be->page_size;
	a.bar_size = d->registered_bytes;
	a.mapped_bytes = atomic64_read(&d->mapped_bytes);
	a.staging_bytes = (u64)staging_mb << 20;
	strscpy(a.backend, d->be->name, sizeof(a.backend));
	strscpy(a.pci, pci_name(d->pdev), sizeof(a.pci));
	return copy_to_user(arg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long ioctl_emu_alloc(struct phxfs_file *f, void __user *arg)
{
	struct phxfs_ioctl_emu_alloc a;
	long rc;

	if (!f->d->be->alloc)
		return -EOPNOTSUPP;
	rc = copy_versioned(&a, arg, sizeof(a));
	if (rc)
		return rc;
	if (a.len == 0 || a.len > f->d->registered_bytes)
		return -EINVAL;
	rc = f->d->be->alloc(f->d, f, a.len, &a.dev_addr);
	if (rc)
		return rc;
	if (copy_to_user(arg, &a, sizeof(a))) {
		f->d->be->free(f->d, f, a.dev_addr);
		return -EFAULT;
	}
	return 0;
}

static long ioctl_emu_free(struct phxfs_file *f, void __user *arg)
{
	struct phxfs_ioctl_emu_free a;
	long rc;

	if (!f->d->be->free)
		return -EOPNOTSUPP;
	rc = copy_versioned(&a, arg, sizeof(a));
	if (rc)
		return rc;
	return f->d->be->free(f->d, f, a.dev_addr);
}

static long phxfs_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct phxfs_file *f = file->private_data;
	void __user *p = (void __user *)arg;

	switch (cmd) {
	case PHXFS_IOC_MAP:
		return ioctl_map(f, p);
	case PHXFS_IOC_UNMAP:
		return ioctl_unmap(f, p);
	case PHXFS_IOC_INFO:
		return ioctl_info(f, p);
	case PHXFS_IOC_EMU_ALLOC:
		return ioctl_emu_alloc(f, p);
	case PHXFS_IOC_EMU_FREE:
		return ioctl_emu_free(f, p);
	default:
		return -ENOTTY;
	}
}

static int phxfs_open(struct inode *inode, struct file *file)
{
	unsigned int idx = iminor(inode);
	struct phxfs_file *f;
	struct phxfs_dev *d;

	if (idx >= PHXFS_MAX_DEVS)
		return -ENODEV;
	mutex_lock(&devs_lock);
	d = devs[idx];
	mutex_unlock(&devs_lock);
	if (!d)
		return -ENODEV;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->d = d;
	file->private_data = f;
	return 0;
}

/* Every window of this file is gone by now (each VMA holds the file); what the file still owns
 * is its emu device memory, freed here. */
static int phxfs_release(struct inode *inode, struct file *file)
{
	struct phxfs_file *f = file->private_data;

	if (f->d->be->free_owner)
		f->d->be->free_owner(f->d, f);
	kfree(f);
	return 0;
}

static const struct file_operations phxfs_fops = {
	.owner = THIS_MODULE,
	.open = phxfs_open,
	.release = phxfs_release,
	.mmap = phxfs_mmap,
	.unlocked_ioctl = phxfs_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* ---- sysfs ---- */

static ssize_t pci_bdf_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", pci_name(d->pdev));
}
static DEVICE_ATTR_RO(pci_bdf);

static ssize_t map_mode_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", mode_staging ? "staging" : "full");
}
static DEVICE_ATTR_RO(map_mode);

static ssize_t bar_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n", d->registered_bytes);
}
static DEVICE_ATTR_RO(bar_size);

static ssize_t mapped_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&d->mapped_bytes));
}
static DEVICE_ATTR_RO(mapped_bytes);

static ssize_t maps_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", atomic_read(&d->live_maps));
}
static DEVICE_ATTR_RO(maps);

static ssize_t backend_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", d->be->name);
}
static DEVICE_ATTR_RO(backend);

static ssize_t mem_type_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", d->mem_type == PHXFS_MEM_P2PDMA ? "p2pdma" : "generic");
}
static DEVICE_ATTR_RO(mem_type);

static ssize_t page_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct phxfs_dev *d = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n", d->be->page_size);
}
static DEVICE_ATTR_RO(page_size);

static struct attribute *phxfs_attrs[] = {
	&dev_attr_pci_bdf.attr, &dev_attr_map_mode.attr, &dev_attr_bar_size.attr,
	&dev_attr_mapped_bytes.attr, &dev_attr_maps.attr, &dev_attr_backend.attr,
	&dev_attr_mem_type.attr, &dev_attr_page_size.attr, NULL,
};
ATTRIBUTE_GROUPS(phxfs);

/* ---- devices ---- */

int phxfs_dev_add(struct pci_dev *pdev, int bar, const struct phxfs_backend *be, void *be_priv,
		  u64 skip_head, u64 skip_tail, struct phxfs_dev **out)
{
	struct phxfs_dev *d;
	int idx, rc;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pdev = pdev;
	d->be = be;
	d->be_priv = be_priv;
	d->bar = bar;
	d->bar_start = pci_resource_start(pdev, bar);
	d->bar_len = pci_resource_len(pdev, bar);
	atomic64_set(&d->mapped_bytes, 0);
	mutex_lock(&devs_lock);
	for (idx = 0; idx < PHXFS_MAX_DEVS && devs[idx]; idx++)
		;
	if (idx == PHXFS_MAX_DEVS) {
		mutex_unlock(&devs_lock);
		kfree(d);
		return -ENOSPC;
	}
	d->index = idx;
	devs[idx] = d; /* the index is taken; its node appears only once the BAR is registered */
	mutex_unlock(&devs_lock);

	rc = phxfs_pgmap_register(d, skip_head, skip_tail);
	if (rc)
		goto fail;
	d->cdev_dev = device_create_with_groups(phxfs_class, &pdev->dev, MKDEV(MAJOR(phxfs_devt), idx), d,
						phxfs_groups, "phxfs_dev%d", idx);
	if (IS_ERR(d->cdev_dev)) {
		rc = PTR_ERR(d->cdev_dev);
		phxfs_pgmap_unregister(d);
		goto fail;
	}
	dev_info(&pdev->dev, "phxfs_dev%d: %s backend, BAR%d %pa+%llx, %llu MiB as %s ZONE_DEVICE pages, %s mode\n",
		 idx, be->name, bar, &d->bar_start, d->bar_len, d->registered_bytes >> 20,
		 d->mem_type == PHXFS_MEM_P2PDMA ? "p2pdma" : "generic", mode_staging ? "staging" : "full");
	*out = d;
	return 0;
fail:
	mutex_lock(&devs_lock);
	devs[idx] = NULL;
	mutex_unlock(&devs_lock);
	kfree(d);
	return rc;
}

/* Only at unload (the emu driver cannot be unbound by hand): no file, so no window, is open. */
void phxfs_dev_remove(struct phxfs_dev *d)
{
	mutex_lock(&devs_lock);
	devs[d->index] = NULL;
	mutex_unlock(&devs_lock);
	device_destroy(phxfs_class, MKDEV(MAJOR(phxfs_devt), d->index));
	/* revoke work still queued holds map references, not pages: let it finish first */
	flush_workqueue(phxfs_wq);
	WARN_ON(atomic_read(&d->live_maps));
	phxfs_pgmap_unregister(d);
	kfree(d);
}

static int __init phxfs_init(void)
{
	int rc;

	if (!strcmp(map_mode, "staging")) {
		mode_staging = 1;
	} else if (strcmp(map_mode, "full")) {
		pr_err("phxfs: map_mode=%s: must be full or staging\n", map_mode);
		return -EINVAL;
	}
	if (mode_staging && staging_mb == 0) {
		pr_err("phxfs: staging_mb=0: staging mode needs a staging area\n");
		return -EINVAL;
	}
	phxfs_wq = alloc_workqueue("phxfs", 0, 0);
	if (!phxfs_wq)
		return -ENOMEM;
	rc = alloc_chrdev_region(&phxfs_devt, 0, PHXFS_MAX_DEVS, "phxfs");
	if (rc)
		goto out_wq;
	cdev_init(&phxfs_cdev, &phxfs_fops);
	phxfs_cdev.owner = THIS_MODULE;
	rc = cdev_add(&phxfs_cdev, phxfs_devt, PHXFS_MAX_DEVS);
	if (rc)
		goto out_region;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	phxfs_class = class_create("phxfs");
#else
	phxfs_class = class_create(THIS_MODULE, "phxfs");
#endif
	if (IS_ERR(phxfs_class)) {
		rc = PTR_ERR(phxfs_class);
		goto out_cdev;
	}
	rc = phxfs_nvidia_init();
	if (rc)
		goto out_class;
	rc = phxfs_emu_init();
	if (rc)
		goto out_nvidia;
	pr_info("phxfs: loaded (uapi %d, %s mode)\n", PHXFS_UAPI_VERSION, mode_staging ? "staging" : "full");
	return 0;
out_nvidia:
	phxfs_nvidia_exit();
out_class:
	class_destroy(phxfs_class);
out_cdev:
	cdev_del(&phxfs_cdev);
out_region:
	unregister_chrdev_region(phxfs_devt, PHXFS_MAX_DEVS);
out_wq:
	destroy_workqueue(phxfs_wq);
	return rc;
}

static void __exit phxfs_exit(void)
{
	phxfs_emu_exit();
	phxfs_nvidia_exit();
	class_destroy(phxfs_class);
	cdev_del(&phxfs_cdev);
	unregister_chrdev_region(phxfs_devt, PHXFS_MAX_DEVS);
	destroy_workqueue(phxfs_wq);
	pr_info("phxfs: unloaded\n");
}

module_init(phxfs_init);
module_exit(phxfs_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Phoenix: accelerator memory as ZONE_DEVICE pages for direct storage I/O");
MODULE_AUTHOR("Phoenix for Java");
