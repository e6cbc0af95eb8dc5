/* The transfer contexts a device owns from its first open to its last close: made and
 * freed by device.c, used by the transfer code that defines them. */
#ifndef PHX_DEVICE_XFER_H
#define PHX_DEVICE_XFER_H
#include "device.h"

/* xfer_bounce.c: a worker's stream and events on d */
phx_wctx_t *phx_wctx_new(phx_device_t *d, int *err);
void phx_wctx_free(phx_wctx_t *c);
/* xfer_inline.c: the copy contexts callers' small transfers share (streams made on first use) */
phx_inline_t *phx_inline_new(void);
void phx_inline_free(phx_inline_t *x);

#endif
