/* Registered memory of one device: sorted, non-overlapping ranges, each with its
 * target address and the references that keep it alive (registry.c). */
#ifndef PHX_REGISTRY_H
#define PHX_REGISTRY_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct phx_region {
    uintptr_t addr;
    size_t len;
    void *target;
    int refcount;
    int busy;            /* in-flight async references */
    void *win;           /* p2p mode: the phxfs window behind target (unmapped on removal) */
    size_t win_len;
} phx_region_t;

typedef struct {
    pthread_mutex_t lock;
    phx_region_t *v;     /* sorted by addr, non-overlapping */
    size_t n, cap;
} phx_registry_t;

void phx_registry_init(phx_registry_t *r);
void phx_registry_destroy(phx_registry_t *r);
int phx_registry_add(phx_registry_t *r, uintptr_t addr, size_t len, void *target);
/* As phx_registry_add, but a new region's target comes from map(ctx, ...), called under the
 * registry lock after the overlap checks (so a refused registration maps nothing); the
 * window it reports is unmapped when the region's last reference goes. */
typedef int (*phx_region_map_fn)(void *ctx, uintptr_t addr, size_t len, void **target, void **win, size_t *win_len);
int phx_registry_add_mapped(phx_registry_t *r, uintptr_t addr, size_t len, phx_region_map_fn map, void *ctx);
int phx_registry_remove(phx_registry_t *r, uintptr_t addr, size_t len);
/* Resolves [addr+off, +len) to a target address; hold>0 takes a busy ref and
 * stores the region base in *base for phx_registry_release. */
int phx_registry_resolve(phx_registry_t *r, uintptr_t addr, uint64_t off, uint64_t len, int hold,
                         uintptr_t *target, uintptr_t *base);
void phx_registry_release(phx_registry_t *r, uintptr_t base);
/* The target of addr and the bytes from addr to the end of its registered range. */
int phx_registry_room(phx_registry_t *r, uintptr_t addr, uintptr_t *target, size_t *room);
size_t phx_registry_count(phx_registry_t *r);

#endif
