/* Late-bound cells of stream operations (defined in stream.c). */
#ifndef PHX_CELL_H
#define PHX_CELL_H
#include <stddef.h>
#include <sys/types.h>

/* A late-bound cell of a stream operation, read when the stream gets there. The caller
 * stores it before the stream reaches the operation, ordered by the accelerator's stream
 * (or, on the fake device, by the test's hold) rather than by anything ThreadSanitizer can
 * see, so these reads are not instrumented. */
size_t phx_cell_size(const size_t *p);
off_t phx_cell_off(const off_t *p);

#endif
