/* Per-device registrations: sorted, non-overlapping intervals, looked up by
 * binary search so resolve stays O(log n) on the I/O path. */
#include "registry.h"
#include "error.h"
#include "kmod.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

void phx_registry_init(phx_registry_t *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
}

void phx_registry_destroy(phx_registry_t *r)
{
    free(r->v);
    pthread_mutex_destroy(&r->lock);
    memset(r, 0, sizeof *r);
}

/* index of the last region with addr <= a, or -1 */
static ssize_t find_le(phx_registry_t *r, uintptr_t a)
{
    ssize_t lo = 0, hi = (ssize_t)r->n - 1, best = -1;
    while (lo <= hi) {
        ssize_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].addr <= a) { best = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return best;
}

int phx_registry_add(phx_registry_t *r, uintptr_t addr, size_t len, void *target)
{
    return phx_registry_add_mapped(r, addr, len, NULL, target);
}

int phx_registry_add_mapped(phx_registry_t *r, uintptr_t addr, size_t len, phx_region_map_fn map, void *ctx)
{
    void *target = ctx, *win = NULL;
    size_t win_len = 0;
    if (!addr || !len) return phx_fail(EINVAL, "regmem: address and length must be non-zero");
    if (addr + len < addr) return phx_fail(EINVAL, "regmem: range wraps the address space");
    pthread_mutex_lock(&r->lock);
    ssize_t i = find_le(r, addr);
    int rc = 0;
    if (i >= 0 && r->v[i].addr == addr && r->v[i].len == len) {
        r->v[i].refcount++;
        goto out;
    }
    if ((i >= 0 && r->v[i].addr + r->v[i].len > addr) ||
        ((size_t)(i + 1) < r->n && r->v[i + 1].addr < addr + len)) {
        rc = phx_fail(EINVAL, "regmem: [%#lx, +%zu) overlaps an existing registration",
                      (unsigned long)addr, len);
        goto out;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        phx_region_t *v = realloc(r->v, cap * sizeof *v);
        if (!v) { rc = phx_fail(ENOMEM, "regmem: out of memory"); goto out; }
        r->v = v;
        r->cap = cap;
    }
    if (map && (rc = map(ctx, addr, len, &target, &win, &win_len)) != 0) goto out;
    size_t at = (size_t)(i + 1);
    memmove(&r->v[at + 1], &r->v[at], (r->n - at) * sizeof *r->v);
    r->v[at] = (phx_region_t){addr, len, target, 1, 0, win, win_len};
    r->n++;
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int phx_registry_remove(phx_registry_t *r, uintptr_t addr, size_t len)
{
    pthread_mutex_lock(&r->lock);
    ssize_t i = find_le(r, addr);
    int rc = 0;
    if (i < 0 || r->v[i].addr != addr || r->v[i].len != len) {
        rc = phx_fail(EINVAL, "deregmem: [%#lx, +%zu) is not a registered range", (unsigned long)addr, len);
    } else if (r->v[i].busy && r->v[i].refcount == 1) {
        rc = phx_fail(EBUSY, "deregmem: [%#lx, +%zu) is in use by %d in-flight batch request(s)",
                      (unsigned long)addr, len, r->v[i].busy);
    } else if (--r->v[i].refcount == 0) {
        phx_kmod_unmap(r->v[i].win, r->v[i].win_len);
        memmove(&r->v[i], &r->v[i + 1], (r->n - (size_t)i - 1) * sizeof *r->v);
        r->n--;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int phx_registry_resolve(phx_registry_t *r, uintptr_t addr, uint64_t off, uint64_t len, int hold,
                         uintptr_t *target, uintptr_t *base)
{
    uintptr_t start = addr + off;
    if (start < addr || start + len < start)
        return phx_fail(EFAULT, "buffer %#lx + %llu (+%llu bytes) wraps the address space",
                        (unsigned long)addr, (unsigned long long)off, (unsigned long long)len);
    pthread_mutex_lock(&r->lock);
    ssize_t i = find_le(r, start);
    int rc = 0;
    if (i < 0 || start + len > r->v[i].addr + r->v[i].len || (len == 0 && start > r->v[i].addr + r->v[i].len)) {
        rc = phx_fail(EFAULT, "buffer %#lx + %llu (+%llu bytes) is outside every registered range",
                      (unsigned long)addr, (unsigned long long)off, (unsigned long long)len);
    } else {
        *target = (uintptr_t)r->v[i].target + (start - r->v[i].addr);
        if (hold) {
            r->v[i].busy++;
            *base = r->v[i].addr;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int phx_registry_room(phx_registry_t *r, uintptr_t addr, uintptr_t *target, size_t *room)
{
    pthread_mutex_lock(&r->lock);
    ssize_t i = find_le(r, addr);
    int rc = 0;
    if (i < 0 || addr > r->v[i].addr + r->v[i].len) {
        rc = phx_fail(EFAULT, "buffer %#lx is outside every registered range", (unsigned long)addr);
    } else {
        *target = (uintptr_t)r->v[i].target + (addr - r->v[i].addr);
        *room = r->v[i].addr + r->v[i].len - addr;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void phx_registry_release(phx_registry_t *r, uintptr_t base)
{
    pthread_mutex_lock(&r->lock);
    ssize_t i = find_le(r, base);
    if (i >= 0 && r->v[i].addr == base && r->v[i].busy > 0) r->v[i].busy--;
    pthread_mutex_unlock(&r->lock);
}

size_t phx_registry_count(phx_registry_t *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->n;
    pthread_mutex_unlock(&r->lock);
    return n;
}
