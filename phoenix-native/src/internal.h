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

#define PHX_MAX_DEVICES 64
#define PHX_ALIGN 4096u

/* ---- configuration (config.c) ---- */
typedef struct {
    int mode;            /* PHXFS_MODE_AUTO or a forced mode */
    int engine;          /* PHXFS_ENGINE_* requested */
    int workers;
    size_t slot_bytes;
    int slots;
    size_t chunk_bytes;  /* host-mode split size */
    int queue_depth;     /* per worker, host mode */
    char connector[16];  /* "", "cuda", "fake", "host" */
    int fake_devices;
} phx_config_t;

extern phx_config_t phx_cfg;
extern _Atomic size_t phx_max_io_bytes; /* per-syscall cap (1 GiB; a test hook) */
void phx_config_load_env(void);

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
} phx_region_t;

typedef struct {
    pthread_mutex_t lock;
    phx_region_t *v;     /* sorted by addr, non-overlapping */
    size_t n, cap;
} phx_registry_t;

void phx_registry_init(phx_registry_t *r);
void phx_registry_destroy(phx_registry_t *r);
int phx_registry_add(phx_registry_t *r, uintptr_t addr, size_t len, void *target);
int phx_registry_remove(phx_registry_t *r, uintptr_t addr, size_t len);
/* Resolves [addr+off, +len) to a target address; hold>0 takes a busy ref and
 * stores the region base in *base for phx_registry_release. */
int phx_registry_resolve(phx_registry_t *r, uintptr_t addr, uint64_t off, uint64_t len, int hold,
                         uintptr_t *target, uintptr_t *base);
void phx_registry_release(phx_registry_t *r, uintptr_t base);
size_t phx_registry_count(phx_registry_t *r);

/* ---- engines (engine_*.c) ---- */
typedef struct {
    int fd;
    int is_write;
    char *buf;
    size_t len;
    off_t off;
    ssize_t result;      /* out: bytes or -errno; short only at EOF */
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

/* ---- devices (device.c) ---- */
typedef struct phx_device {
    int id;
    int open_count;
    int mode;
    int engine;
    char why[512];
    char name[96];
    phx_registry_t reg;
    atomic_int users;    /* in-flight batches */
} phx_device_t;

extern const phx_connector_t *phx_conn;
int phx_lib_init(void);
/* Returns the open device or NULL (errno-style code in *err). */
phx_device_t *phx_device_get(int dev, int *err);
int phx_device_count_internal(void);

/* ---- worker pool and transfers (pool.c) ---- */
typedef struct phx_batch_state phx_batch_state_t;
int phx_pool_start(void);
void phx_pool_stop(void);
int phx_pool_workers(void);
int phx_pool_engine(void);
int phx_pool_started(void);
int phx_pool_prepare_device(int dev);
size_t phx_pool_slot_bytes(void);
int phx_pool_slots(void);
/* Runs reqs (all read or all write) and returns without waiting; may_inline lets
 * small host-memory batches complete on the calling thread before returning. */
phx_batch_state_t *phx_batch_start(phxfs_io_req_t *reqs, int n, int is_write, int may_inline, int *err);
int phx_batch_state_wait(phx_batch_state_t *b);
int phx_batch_state_done(phx_batch_state_t *b);
int64_t phx_batch_state_bytes(phx_batch_state_t *b);
void phx_batch_state_free(phx_batch_state_t *b);

/* ---- pinned slots shared by streams (slots.c) ---- */
typedef struct phx_slot {
    char *mem;
    size_t len;
    struct phx_slot *next;
} phx_slot_t;
phx_slot_t *phx_slot_get(size_t min_len);
void phx_slot_put(phx_slot_t *s);
char *phx_pinned_alloc(size_t len);
void phx_pinned_free(char *p, size_t len);

static inline size_t phx_align_down(size_t v, size_t a) { return v & ~(a - 1); }
static inline size_t phx_align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

#endif
