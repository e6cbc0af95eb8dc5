/* Devices: open counting, the per-device resources that live from the first
 * open to the last close, and the user count that keeps them alive while
 * anything uses them. */
#ifndef PHX_DEVICE_H
#define PHX_DEVICE_H

typedef struct phx_wctx phx_wctx_t; /* a worker's stream and events on one device (xfer_bounce.c) */

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
    void *helper_stream; /* copies and fills made for callers, serialised */
    pthread_mutex_t helper_lock;
} phx_device_t;

extern const phx_connector_t *phx_conn;
int phx_lib_init(void);
/* The open device with a use taken (NULL and an errno-style code in *err):
 * the device cannot close until phx_device_release. */
phx_device_t *phx_device_acquire(int dev, int *err);
void phx_device_release(phx_device_t *d);
int phx_device_count_internal(void);
const phx_params_t *phx_params(void); /* the frozen set (after phx_lib_init) */

#endif
