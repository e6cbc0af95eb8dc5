/* The only interface that knows a vendor. Device pointers are opaque
 * uintptr_t-sized values carried in void*. */
#ifndef PHX_CONNECTOR_H
#define PHX_CONNECTOR_H
#include <stddef.h>

typedef void (*phx_host_fn)(void *arg);

typedef struct phx_connector {
    const char *name;
    int is_accelerator;                 /* 0: device memory is host memory */
    int (*init)(char *why, size_t why_len);  /* >=0 device count, <0 -errno */
    int (*device_name)(int dev, char *buf, size_t len);
    int (*bind)(int dev);               /* make dev current on this thread */
    int (*mem_alloc)(int dev, size_t len, void **ptr);
    int (*mem_free)(int dev, void *ptr);
    int (*host_register)(void *p, size_t len);
    int (*host_unregister)(void *p);
    int (*stream_create)(int dev, void **s);
    int (*stream_destroy)(void *s);
    int (*stream_sync)(void *s);
    int (*htod_async)(void *dst, const void *src, size_t len, void *s);
    int (*dtoh_async)(void *dst, const void *src, size_t len, void *s);
    int (*memset_async)(void *dst, int value, size_t len, void *s); /* device memory */
    int (*event_create)(void **e);
    int (*event_destroy)(void *e);
    int (*event_record)(void *e, void *s);
    int (*event_sync)(void *e);
    int (*launch_host_fn)(void *s, phx_host_fn fn, void *arg);
} phx_connector_t;

extern const phx_connector_t phx_connector_cuda;
extern const phx_connector_t phx_connector_fake;
extern const phx_connector_t phx_connector_host;

#endif
