/* No accelerator: one "device" whose memory is host memory. Streams are
 * immediate: work runs on the caller's thread, in order. */
#include "align.h"
#include "connector.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char stream_token;
static char event_token;

static int h_init(int fake_devices, char *why, size_t n) { (void)fake_devices; (void)why; (void)n; return 1; }
static int h_name(int dev, char *buf, size_t len) { (void)dev; snprintf(buf, len, "host memory"); return 0; }
static int h_enter(int dev, void *s) { (void)dev; (void)s; return 0; }
static void h_leave(void) {}
static int h_alloc(int dev, size_t len, void **p)
{
    (void)dev;
    *p = aligned_alloc(PHX_ALIGN, phx_align_up(len ? len : 1, PHX_ALIGN));
    return *p ? 0 : -ENOMEM;
}
static int h_free(int dev, void *p) { (void)dev; free(p); return 0; }
static int h_reg(int dev, void *p, size_t len) { (void)dev; (void)p; (void)len; return 0; }
static int h_unreg(int dev, void *p) { (void)dev; (void)p; return 0; }
static int h_screate(int dev, void **s) { (void)dev; *s = &stream_token; return 0; }
static int h_sdestroy(void *s) { (void)s; return 0; }
static int h_ssync(void *s) { (void)s; return 0; }
static int h_copy(void *dst, const void *src, size_t len, void *s) { (void)s; memmove(dst, src, len); return 0; }
static int h_memset(void *dst, int value, size_t len, void *s) { (void)s; memset(dst, value, len); return 0; }
static int h_ecreate(void **e) { *e = &event_token; return 0; }
static int h_edestroy(void *e) { (void)e; return 0; }
static int h_erecord(void *e, void *s) { (void)e; (void)s; return 0; }
static int h_esync(void *e) { (void)e; return 0; }
static int h_launch(void *s, phx_host_fn fn, void *arg) { (void)s; fn(arg); return 0; }
static int h_wait(void *s, volatile uint32_t *flag) { (void)s; (void)flag; return 0; }
static int h_check(int dev, const void *p, size_t len, char *why, size_t n)
{
    (void)dev; (void)len;
    if (!p) { snprintf(why, n, "NULL pointer"); return -EINVAL; }
    return 0; /* device memory is host memory here */
}
static int h_pdev(const void *p, size_t len, int *dev, char *why, size_t n)
{
    (void)p; (void)len; (void)why; (void)n;
    *dev = -1; /* all memory is host memory */
    return 0;
}
static int h_sdev(void *s) { (void)s; return 0; }
static int h_peer_access(int dev, int peer) { (void)dev; (void)peer; return 1; }
static int h_peer_async(void *dst, int dst_dev, const void *src, int src_dev, size_t len, void *s)
{
    (void)dst_dev; (void)src_dev; (void)s;
    memmove(dst, src, len);
    return 0;
}

const phx_connector_t phx_connector_host = {
    .name = "host", .is_accelerator = 0, .init = h_init, .device_name = h_name, .enter = h_enter, .leave = h_leave,
    .mem_alloc = h_alloc, .mem_free = h_free, .host_register = h_reg, .host_unregister = h_unreg,
    .stream_create = h_screate, .stream_destroy = h_sdestroy, .stream_sync = h_ssync,
    .htod_async = h_copy, .dtoh_async = h_copy, .memset_async = h_memset, .event_create = h_ecreate, .event_destroy = h_edestroy,
    .event_record = h_erecord, .event_sync = h_esync, .launch_host_fn = h_launch, .wait_flag = h_wait,
    .check_pointer = h_check, .pointer_device = h_pdev, .stream_device = h_sdev,
    .peer_access = h_peer_access, .peer_async = h_peer_async,
};
