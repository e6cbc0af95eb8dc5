/* The only interface that knows a vendor. Device pointers are opaque
 * uintptr_t-sized values carried in void*.
 *
 * Context discipline: the library never leaves a context current on a thread
 * it does not own. Every call that needs one is bracketed by enter/leave,
 * which push the device's context (or the stream's, for calls on a caller's
 * stream) and pop it again; leave restores exactly what enter found. */
#ifndef PHX_CONNECTOR_H
#define PHX_CONNECTOR_H
#include <stddef.h>
#include <stdint.h>

typedef void (*phx_host_fn)(void *arg);

typedef struct phx_connector {
    const char *name;
    int is_accelerator;                 /* 0: device memory is host memory */
    int (*init)(int fake_devices, char *why, size_t why_len); /* >=0 device count, <0 -errno */
    int (*device_name)(int dev, char *buf, size_t len);
    /* Makes dev's context current (stream != NULL: the stream's own context)
     * until the matching leave. Calls nest. */
    int (*enter)(int dev, void *stream);
    void (*leave)(void);
    int (*mem_alloc)(int dev, size_t len, void **ptr);
    int (*mem_free)(int dev, void *ptr);
    /* pinned and mapped into the device address space (for wait_flag), portable to every
     * context; made in dev's context (dev < 0: the current one, else device 0's) */
    int (*host_register)(int dev, void *p, size_t len);
    int (*host_unregister)(int dev, void *p);
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
    /* The stream stops until the registered host word *flag becomes nonzero. */
    int (*wait_flag)(void *s, volatile uint32_t *flag);
    /* 0 when [p, p+len) is memory of dev; else -EINVAL with what it is in why */
    int (*check_pointer)(int dev, const void *p, size_t len, char *why, size_t n);
    /* Whose memory [p, p+len) is: 0 with *dev the device, or -1 for host memory (any
     * memory the accelerator does not own, pinned or not); -EINVAL (why filled) for
     * device memory that runs past its allocation. Needs no open device. */
    int (*pointer_device)(const void *p, size_t len, int *dev, char *why, size_t n);
    /* the device a caller's stream belongs to, or -errno */
    int (*stream_device)(void *s);
    /* 1 when dev may access peer's memory directly (then enables that access, once), 0 when
     * copies between the two must go through host memory, or -errno */
    int (*peer_access)(int dev, int peer);
    /* a device-to-device copy on s (a stream of dst_dev): direct where peer_access said 1 */
    int (*peer_async)(void *dst, int dst_dev, const void *src, int src_dev, size_t len, void *s);
    /* For the phxfs kernel module (NULL: the connector cannot use it). p2p_addr: the address
     * the module's backend pins for [p, p+len) of dev's memory (a CUDA device address; an
     * emu BAR address), or -EINVAL with why; pci_bdf: dev's PCI address "0000:41:00.0";
     * dtod_async: a device-to-device copy (staging slot <-> caller's buffer). */
    int (*p2p_addr)(int dev, const void *p, size_t len, uint64_t *addr, char *why, size_t n);
    int (*pci_bdf)(int dev, char *buf, size_t len);
    int (*dtod_async)(void *dst, const void *src, size_t len, void *s);
} phx_connector_t;

extern const phx_connector_t phx_connector_cuda;
extern const phx_connector_t phx_connector_fake;
extern const phx_connector_t phx_connector_host;
extern const phx_connector_t phx_connector_emu;

/* The fake device's stream machinery (connectors/fake.c), shared with the emu connector:
 * streams served by their own threads, events, host functions and waits. */
int phx_fstream_create(int dev, void **out);
int phx_fstream_destroy(void *s);
int phx_fstream_sync(void *s);
int phx_fstream_copy(void *dst, const void *src, size_t len, void *s);
int phx_fstream_memset(void *dst, int value, size_t len, void *s);
int phx_fstream_launch(void *s, phx_host_fn fn, void *arg);
int phx_fstream_wait(void *s, volatile uint32_t *flag);
int phx_fstream_device(void *s);
int phx_fevent_create(void **out);
int phx_fevent_destroy(void *e);
int phx_fevent_record(void *e, void *s);
int phx_fevent_sync(void *e);

#endif
