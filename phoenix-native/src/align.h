/* O_DIRECT alignment: the granule direct transfers are cut to. */
#ifndef PHX_ALIGN_H
#define PHX_ALIGN_H
#include <stddef.h>

#define PHX_ALIGN 4096u

/* a must be a power of two */
static inline size_t phx_align_down(size_t v, size_t a) { return v & ~(a - 1); }
static inline size_t phx_align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

#endif
