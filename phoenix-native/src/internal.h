#ifndef PHX_INTERNAL_H
#define PHX_INTERNAL_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "phoenix.h"
#include "connector.h"
#include "params.h"

#define PHX_MAX_DEVICES 64
#define PHX_ALIGN 4096u

static inline size_t phx_align_down(size_t v, size_t a) { return v & ~(a - 1); }
static inline size_t phx_align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

/* ---- errors (error.c) ---- */
int phx_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void phx_clear_error(void);
void phx_warn_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- registry (registry.c) ---- */
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

/* A late-bound cell of a stream operation, read when the stream gets there. The caller
 * stores it before the stream reaches the operation, ordered by the accelerator's stream
 * (or, on the fake device, by the test's hold) rather than by anything ThreadSanitizer can
 * see, so these reads are not instrumented. */
size_t phx_cell_size(const size_t *p);
off_t phx_cell_off(const off_t *p);

/* ---- engines (engine_*.c) ---- */
typedef struct {
    int fd;
    int is_write;
    char *buf;
    size_t len;
    off_t off;
    ssize_t result;      /* out: bytes or -errno; short only at EOF */
    /* reads only, optional: a file mapping to MADV_POPULATE_READ before the read, so that the
     * read finds its bytes in the page cache as huge folios (huge_fill.c) */
    char *populate;
    size_t populate_len;
    int populate_res;    /* out: 0, or -errno when the populate failed or did not run (the read runs anyway) */
} phx_rw_t;

typedef struct phx_engine phx_engine_t;
struct phx_engine {
    int kind;
    int (*run)(phx_engine_t *e, phx_rw_t *ops, int n);
    void (*destroy)(phx_engine_t *e);
};
phx_engine_t *phx_engine_sync_create(void);
/* NULL with errno when io_uring is unavailable */
phx_engine_t *phx_engine_uring_create(unsigned depth);
/* One complete transfer with the sync loop; used by both engines */
ssize_t phx_rw_full(int fd, int is_write, char *buf, size_t len, off_t off);
/* op->populate, when set, then the read or write, on this thread; sets op->result */
void phx_rw_run(phx_rw_t *op);

#include "pinned.h"
#include "kmod.h"
#include "device.h"
#include "fresh_fill.h"
#include "huge_fill.h"
#include "pool.h"

#endif
