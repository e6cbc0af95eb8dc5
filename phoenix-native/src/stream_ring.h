/* Stream-ordered bounce I/O queued whole at enqueue (stream_ring.c). */
#ifndef PHX_STREAM_RING_H
#define PHX_STREAM_RING_H
#include <stddef.h>
#include <sys/types.h>
#include "phoenix.h"
#include "device.h"

/* Queues a read (or write) of n > 0 bytes between the file and device memory at target (a
 * resolved device address) on stream. f_offset_p non-NULL: the file offset is read from it
 * when the stream gets there, else f_offset. Takes over d's use. 0 (*bytes_done receives
 * result_fn of the result when the stream passes the operation), or -errno, which the caller
 * stores in *bytes_done (nothing here touches the cells after returning; see stream_ring.c
 * for the buffer after a part-way failure). */
int phx_stream_ring_io(phx_device_t *d, int fd, void *target, size_t n, off_t f_offset, const off_t *f_offset_p,
                       ssize_t *bytes_done, phxfs_stream_result_fn result_fn, void *stream, int is_write,
                       const char *what);

/* The same when the size (nbytes_p) or the buffer offset (bo_p, from region) is read only
 * when the stream gets there: every piece of the registered room [region, +region_len) makes
 * a round trip device -> slot -> device around the file I/O of the part the operation
 * covers, so the bytes around it come back as they were. Costs two copies of the room:
 * for rooms up to PHX_STREAM_LATE_ROOM_MAX. */
#define PHX_STREAM_LATE_ROOM_MAX (256u << 20)
int phx_stream_ring_late_io(phx_device_t *d, int fd, void *region, size_t region_len, size_t n, const size_t *nbytes_p,
                            const off_t *bo_p, off_t f_offset, const off_t *f_offset_p, ssize_t *bytes_done,
                            phxfs_stream_result_fn result_fn, void *stream, int is_write, const char *what);

/* What an operation stores in *bytes_done: result through the caller's result_fn, if any. */
static inline ssize_t phx_stream_result(phxfs_stream_result_fn fn, ssize_t result) { return fn ? fn(result) : result; }

#endif
