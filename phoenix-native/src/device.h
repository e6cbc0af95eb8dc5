/* Devices: open counting, the per-device resources that live from the first
 * open to the last close, and the user count that keeps them alive while
 * anything uses them. */
#ifndef PHX_DEVICE_H
#define PHX_DEVICE_H
#include <pthread.h>
#include <stdatomic.h>
#include "phoenix.h"
#include "connector.h"
#include "kmod.h"
#include "params.h"
#include "pinned.h"
#include "registry.h"

typedef struct phx_wctx phx_wctx_t; /* a worker's stream and events on one device (xfer_bounce.c) */
typedef struct phx_inline phx_inline_t; /* copy contexts for callers' small transfers (xfer_inline.c) */

typedef struct phx_device {
    int id;
    /* A use is taken by incrementing users and then seeing open_count > 0; close
     * zeroes open_count and then looks at users. Both sequentially consistent, so
     * either the user sees the device closed or close sees the user. */
    atomic_int open_count;
    atomic_int users;    /* in-flight batches, stream operations and calls */
    int mode;
    int engine;
    char why[512];
    char name[96];
    phx_registry_t reg;
    /* from the first open to the last close: */
    phx_pinned_pool_t pinned;
    phx_wctx_t **wctx;   /* one per pool worker */
    phx_inline_t *inl;   /* a few copy contexts shared by every caller thread */
    void *helper_stream; /* copies and fills made for callers, serialised */
    pthread_mutex_t helper_lock;
    phx_kmod_t kmod;     /* p2p and staging: the module's device (fd -1 otherwise) */
    /* staging: device memory mapped through the module, cut into slots (staging) that file
     * I/O lands in; device-to-device copies move the bytes to and from callers' buffers */
    void *stage_alloc;   /* the connector's allocation */
    char *stage_dev;     /* its page-aligned part: the device side of slot 0 */
    char *stage_win;     /* the same memory through the module's window: the file side */
    size_t stage_len;
    phx_pinned_pool_t staging;
} phx_device_t;

/* The pool bounce slots come from: the staging slots in staging mode, else pinned memory. */
static inline phx_pinned_pool_t *phx_slot_pool(phx_device_t *d)
{
    return d->mode == PHXFS_MODE_STAGING ? &d->staging : &d->pinned;
}

extern const phx_connector_t *phx_conn; /* the connector phx_devices_init chose */
/* Library start-up (lifecycle.c) hands the device layer what it needs, in this order. */
/* Chooses the connector and makes the device table; keeps a copy of p (the frozen set). */
int phx_devices_init(const phx_params_t *p);
/* The worker pool's engine (after any fallback) and its size: devices report the one and make
 * a stream per worker for the other. The pool is started, and owned, by lifecycle.c. */
void phx_devices_use_pool(int engine, int workers);
/* The open device with a use taken (NULL and an errno-style code in *err):
 * the device cannot close until phx_device_release. */
phx_device_t *phx_device_acquire(int dev, int *err);
void phx_device_release(phx_device_t *d);
int phx_device_count_internal(void);

#endif
