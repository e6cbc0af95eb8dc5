/* Configuration, parsed from PHX_* and phxfs_set_config into one parameter
 * set. The set is frozen when the library starts; the worker pool and the
 * devices get a copy, so no worker ever reads a value another thread writes. */
#ifndef PHX_PARAMS_H
#define PHX_PARAMS_H
#include <stdatomic.h>
#include <stddef.h>

/* the most devices a process drives (the fake connector's fake_devices is bounded by it too) */
#define PHX_MAX_DEVICES 64

typedef struct {
    int mode;            /* PHXFS_MODE_AUTO or a forced mode (read at device open) */
    int engine;          /* PHXFS_ENGINE_* requested */
    int workers;
    size_t slot_bytes;   /* bounce slot */
    int slots;           /* in-flight slots per worker and device */
    size_t pinned_bytes; /* pinned pool per device */
    size_t chunk_bytes;  /* host-mode split size */
    int queue_depth;     /* host-mode ops a worker takes at once */
    size_t inline_bytes; /* sync device requests up to this run on the caller's thread (0: never) */
    char connector[16];  /* "", "cuda", "fake", "host" */
    int fake_devices;
    int fresh_fill;      /* host reads into missing pages by UFFDIO_COPY (fresh_fill.c) */
    int huge_fill;       /* cold buffered reads fill the page cache in huge folios (huge_fill.c) */
} phx_params_t;

/* Loads PHX_* once and freezes the pool keys; returns the frozen set. */
phx_params_t phx_params_freeze(void);
/* "mode" stays settable until a device opens: read it then. */
int phx_params_mode(void);
/* a PHXFS_MODE_* value's name; phxfs_mode_name exports it */
const char *phx_mode_name(int mode);
extern _Atomic size_t phx_max_io_bytes; /* per-syscall cap (1 GiB; a test hook, applies at once) */

#endif
