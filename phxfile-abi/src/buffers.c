/* Buffer registrations and where a transfer's bytes go.
 *
 * A registration is kept here (sorted, non-overlapping) and, for device memory,
 * in libphoenix's registry of that device. Host memory needs nothing from
 * libphoenix: it reads straight into it. Device memory nobody registered is
 * registered with libphoenix for the one transfer (exact duplicates are
 * refcounted there, so concurrent transfers into the same range are fine); only
 * when that range overlaps another registration does the shim copy through a
 * pinned buffer of its own.
 *
 * cuFile registrations may overlap (NVIDIA's library takes a range inside or
 * across another one and refuses only a second registration of the same base),
 * libphoenix's may not: a device range that overlaps one libphoenix holds is
 * kept here alone ("shadow", phx 0). Transfers into it resolve in the covering
 * registration, or go the unregistered way; when a covering registration goes,
 * the shadows it covered are offered to libphoenix again. */
#include "shim.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    uintptr_t base;
    size_t len;
    int dev;       /* -1: host memory */
    int owner;     /* CF_OWNER_* */
    int refs;      /* phxFile registrations of the same range are counted */
    int phx;       /* device memory registered with libphoenix (else a shadow, or host) */
} reg_t;

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static reg_t *regs;
static size_t nregs, cap;
static size_t dev_bytes; /* device bytes registered with libphoenix, against the pinned-memory cap */
static size_t max_len;   /* the longest registration ever made: how far back an overlap can start */

/* index of the last registration with base <= a, or -1 (under lock) */
static ssize_t find_le(uintptr_t a)
{
    ssize_t lo = 0, hi = (ssize_t)nregs - 1, r = -1;
    while (lo <= hi) {
        ssize_t m = (lo + hi) / 2;
        if (regs[m].base <= a) { r = m; lo = m + 1; } else hi = m - 1;
    }
    return r;
}

/* whether registration r holds [a, a + len) */
static int holds(const reg_t *r, uintptr_t a, size_t len)
{
    return a >= r->base && a - r->base <= r->len && len <= r->len - (a - r->base);
}

int cf_buf_find(const void *p, size_t len, int *dev)
{
    uintptr_t a = (uintptr_t)p;
    pthread_rwlock_rdlock(&lock);
    /* registrations may nest: the one holding the range may start before the last base <= a;
     * only host ones and those libphoenix holds can take a transfer as they are */
    int found = 0;
    for (ssize_t i = find_le(a); i >= 0 && !found && a - regs[i].base < max_len; i--)
        if ((regs[i].dev < 0 || regs[i].phx) && holds(&regs[i], a, len)) {
            found = 1;
            *dev = regs[i].dev;
        }
    pthread_rwlock_unlock(&lock);
    return found;
}

int cf_buf_find_dev(int dev)
{
    pthread_rwlock_rdlock(&lock);
    int any = 0;
    for (size_t i = 0; i < nregs && !any; i++) any = regs[i].dev == dev;
    pthread_rwlock_unlock(&lock);
    return any;
}

/* err for the owner's convention */
static int err_of(int owner, CUfileOpError e, int neg)
{
    return owner == CF_OWNER_CUFILE ? (int)e : neg;
}

/* Whether the first and the last page of a host range are mapped: a made-up pointer is refused
 * at registration (it registered, and every transfer then failed with EFAULT) without touching
 * the memory or walking a large range. */
static int host_mapped(const void *base, size_t len)
{
    long page = sysconf(_SC_PAGESIZE); /* no syscall; a cached static would be a data race */
    uintptr_t first = (uintptr_t)base & ~(uintptr_t)(page - 1), last = ((uintptr_t)base + len - 1) & ~(uintptr_t)(page - 1);
    unsigned char v;
    return mincore((void *)first, 1, &v) == 0 && mincore((void *)last, 1, &v) == 0;
}

int cf_buf_register(const void *base, size_t len, int flags, int owner)
{
    if (!base || len == 0 || (uintptr_t)base + len < (uintptr_t)base || (flags & ~(CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING)))
        return err_of(owner, CU_FILE_INVALID_VALUE, -EINVAL);
    if (cf_ensure_open()) return err_of(owner, CU_FILE_DRIVER_NOT_INITIALIZED, -ENOTSUP);
    int dev;
    int rc = phxfs_pointer_device(base, len, &dev);
    if (rc) {
        cf_log(CF_LOG_ERROR, "BufRegister: %s", phxfs_last_error());
        return err_of(owner, CU_FILE_CUDA_POINTER_RANGE_ERROR, rc);
    }
    if (dev >= 0 && (rc = cf_device_use(dev)) != 0) return err_of(owner, cf_from_errno(rc), rc);
    if (dev < 0 && !host_mapped(base, len)) {
        cf_log(CF_LOG_ERROR, "BufRegister: %p + %zu is not mapped memory", base, len);
        return err_of(owner, CU_FILE_INVALID_VALUE, -EFAULT);
    }
    uintptr_t a = (uintptr_t)base;
    size_t cap_bytes = cf_pinned_cap(); /* before the lock: the driver lock is taken first elsewhere */
    pthread_rwlock_wrlock(&lock);
    ssize_t i = find_le(a);
    if (i >= 0 && regs[i].base == a && regs[i].len == len && owner == CF_OWNER_PHXFILE && regs[i].owner == owner) {
        regs[i].refs++;
        pthread_rwlock_unlock(&lock);
        return 0;
    }
    /* the same base twice is refused; otherwise cuFile ranges may overlap cuFile ranges (as
     * NVIDIA's do: a view of a registered buffer, a pool and buffers carved from it), while
     * phxFile keeps its one-registration-per-byte rule */
    int overlap = 0, refuse = i >= 0 && regs[i].base == a;
    for (ssize_t j = i; j >= 0 && !refuse && a - regs[j].base < max_len; j--)
        if (regs[j].base + regs[j].len > a) {
            overlap = 1;
            refuse = owner == CF_OWNER_PHXFILE || regs[j].owner != owner;
        }
    for (size_t j = (size_t)(i + 1); j < nregs && !refuse && regs[j].base < a + len; j++) {
        overlap = 1;
        refuse = owner == CF_OWNER_PHXFILE || regs[j].owner != owner;
    }
    if (refuse) {
        pthread_rwlock_unlock(&lock);
        return err_of(owner, CU_FILE_MEMORY_ALREADY_REGISTERED, -EEXIST);
    }
    if (dev >= 0 && dev_bytes + len > cap_bytes) {
        pthread_rwlock_unlock(&lock);
        cf_log(CF_LOG_ERROR, "BufRegister: %zu bytes would exceed max_device_pinned_mem_size (%zu KiB)", len, cap_bytes >> 10);
        return err_of(owner, CU_FILE_INVALID_MAPPING_SIZE, -ENOMEM);
    }
    if (nregs == cap) {
        size_t c = cap ? cap * 2 : 64;
        reg_t *v = realloc(regs, c * sizeof *v);
        if (!v) { pthread_rwlock_unlock(&lock); return err_of(owner, CU_FILE_NOMEM_ERROR, -ENOMEM); }
        regs = v;
        cap = c;
    }
    int phx = 0;
    if (dev >= 0) {
        rc = phxfs_regmem(dev, base, len, NULL);
        if (rc == 0) phx = 1;
        else if (!(rc == -EINVAL && overlap)) {
            pthread_rwlock_unlock(&lock);
            /* libphoenix refuses an overlap with a range a transfer has registered for itself */
            cf_log(CF_LOG_ERROR, "BufRegister: %s", phxfs_last_error());
            return err_of(owner, rc == -EINVAL ? CU_FILE_MEMORY_ALREADY_REGISTERED : CU_FILE_INTERNAL_BUF_REGISTER_ERROR, rc);
        }
        /* else it overlaps a registration libphoenix holds: a shadow of it */
    }
    size_t at = (size_t)(i + 1);
    memmove(&regs[at + 1], &regs[at], (nregs - at) * sizeof *regs);
    regs[at] = (reg_t){a, len, dev, owner, 1, phx};
    nregs++;
    if (phx) dev_bytes += len;
    if (len > max_len) max_len = len;
    pthread_rwlock_unlock(&lock);
    return 0;
}

/* removes entry i (under the write lock): 0 or libphoenix's -errno (entry kept). With adopt,
 * the shadows that libphoenix's registration of it covered are offered to libphoenix. */
static int remove_at(size_t i, int adopt)
{
    reg_t r = regs[i];
    if (r.phx) {
        int rc = phxfs_deregmem(r.dev, (void *)r.base, r.len);
        if (rc) return rc;
        dev_bytes -= r.len;
    }
    memmove(&regs[i], &regs[i + 1], (nregs - i - 1) * sizeof *regs);
    nregs--;
    for (size_t j = 0; adopt && r.phx && j < nregs && regs[j].base < r.base + r.len; j++)
        if (regs[j].dev == r.dev && !regs[j].phx && regs[j].base + regs[j].len > r.base &&
            phxfs_regmem(regs[j].dev, (void *)regs[j].base, regs[j].len, NULL) == 0) {
            regs[j].phx = 1; /* a shadow overlapping another one stays a shadow */
            dev_bytes += regs[j].len;
        }
    return 0;
}

int cf_buf_deregister(const void *base, int owner)
{
    if (!base) return err_of(owner, CU_FILE_INVALID_VALUE, -EINVAL);
    if (atomic_load(&cf_forked)) return err_of(owner, (CUfileOpError)cf_fork_refused(), -ENOTSUP);
    pthread_rwlock_wrlock(&lock);
    ssize_t i = find_le((uintptr_t)base);
    int rc = 0;
    if (i < 0 || regs[i].base != (uintptr_t)base || regs[i].owner != owner) {
        rc = err_of(owner, CU_FILE_MEMORY_NOT_REGISTERED, -ENOENT);
    } else if (--regs[i].refs == 0) {
        int e = remove_at((size_t)i, 1);
        if (e) {
            regs[i].refs = 1;
            cf_log(CF_LOG_ERROR, "BufDeregister: %s", phxfs_last_error());
            rc = err_of(owner, e == -EBUSY ? CU_FILE_INTERNAL_ERROR : cf_from_errno(e), e);
        }
    }
    pthread_rwlock_unlock(&lock);
    return rc;
}

void cf_bufs_reset(int owner)
{
    if (atomic_load(&cf_forked)) return; /* libphoenix's registry is the parent's */
    pthread_rwlock_wrlock(&lock);
    for (size_t i = nregs; i-- > 0;)
        if ((owner < 0 || regs[i].owner == owner) && remove_at(i, 0))
            cf_log(CF_LOG_WARN, "driver close: registration %#lx kept: %s", (unsigned long)regs[i].base, phxfs_last_error());
    pthread_rwlock_unlock(&lock);
}

/* A transfer through the base of a registered host buffer stays inside that registration, as
 * NVIDIA's library keeps every transfer through a registered base (measured on host memory:
 * -1, errno 5017, "beyond the mapped range"). The registration's length is the only size the
 * shim knows of host memory: past it, a read landed wherever the address pointed (a 4 MiB read
 * into a 1 MiB registration overwrote the heap behind it). Device memory keeps the shim's
 * leniency: the allocation's end is checked, and bytes past the registration move through a
 * bounce buffer. 0 or CU_FILE_INVALID_MAPPING_RANGE. */
static int host_within_registration(const void *base, off_t off, size_t len)
{
    uintptr_t a = (uintptr_t)base;
    int rc = 0;
    pthread_rwlock_rdlock(&lock);
    ssize_t i = find_le(a);
    if (i >= 0 && regs[i].base == a && regs[i].owner == CF_OWNER_CUFILE && regs[i].dev < 0 &&
        ((uint64_t)off > regs[i].len || len > regs[i].len - (uint64_t)off)) {
        cf_log(CF_LOG_ERROR, "I/O buffer %p: offset %lld + %zu bytes runs past its registration of %zu bytes", base,
               (long long)off, len, regs[i].len);
        rc = CU_FILE_INVALID_MAPPING_RANGE;
    }
    pthread_rwlock_unlock(&lock);
    return rc;
}

int cf_target_get(void *base, off_t off, size_t len, cf_target_t *t)
{
    *t = (cf_target_t){-1, 0, 0, base, off, len};
    char *p = (char *)base + off;
    int dev;
    if (len == 0) return 0; /* moves nothing: no memory is touched */
    int rc = host_within_registration(base, off, len);
    if (rc) return rc;
    if (cf_buf_find(p, len, &dev)) {
        /* libphoenix resolves base + off inside the registration itself */
        t->dev = dev;
        return 0;
    }
    rc = phxfs_pointer_device(p, len, &dev);
    if (rc) {
        cf_log(CF_LOG_ERROR, "I/O buffer: %s", phxfs_last_error());
        return CU_FILE_CUDA_POINTER_RANGE_ERROR;
    }
    if (dev < 0) return 0; /* host memory */
    if ((rc = cf_device_use(dev)) != 0) return cf_from_errno(rc);
    t->dev = dev;
    t->buf = p;
    t->off = 0;
    if (phxfs_regmem(dev, p, len, NULL) == 0) t->temp = 1;
    else t->bounce = 1;
    return 0;
}

void cf_target_put(cf_target_t *t)
{
    if (t->temp && phxfs_deregmem(t->dev, t->buf, t->len))
        cf_log(CF_LOG_ERROR, "dropping a transfer's registration: %s", phxfs_last_error());
    t->temp = 0;
}

/* ---- the shim's own bounce buffer (overlapping unregistered ranges only) ---- */
#define BOUNCE_BYTES (8u << 20)
static pthread_mutex_t bounce_lock = PTHREAD_MUTEX_INITIALIZER;
static void *bounce_buf;

ssize_t cf_bounce_io(int fd, int dev, void *dst, size_t len, off_t foff, int is_write)
{
    pthread_mutex_lock(&bounce_lock);
    int rc = bounce_buf ? 0 : phxfs_host_alloc_pinned(BOUNCE_BYTES, &bounce_buf);
    ssize_t done = 0;
    while (rc == 0 && (size_t)done < len) {
        size_t n = len - (size_t)done < BOUNCE_BYTES ? len - (size_t)done : BOUNCE_BYTES;
        char *d = (char *)dst + done;
        ssize_t got;
        if (is_write) {
            rc = phxfs_memcpy_to_host(dev, bounce_buf, d, n);
            if (rc) break;
            got = phxfs_write(fd, -1, bounce_buf, 0, (ssize_t)n, foff + done);
        } else {
            got = phxfs_read(fd, -1, bounce_buf, 0, (ssize_t)n, foff + done);
            if (got > 0) rc = phxfs_memcpy_to_device(dev, d, bounce_buf, (size_t)got);
        }
        if (got < 0) rc = (int)got;
        if (rc) break;
        done += got;
        if ((size_t)got < n) break; /* end of file */
    }
    pthread_mutex_unlock(&bounce_lock);
    return rc ? rc : done;
}
