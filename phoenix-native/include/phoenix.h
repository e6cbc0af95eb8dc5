/*
 * phoenix.h — the public C API of libphoenix.
 *
 * Every function returns >= 0 on success or a negative errno. Device ids are
 * small integers (0..n-1); a negative device id means "plain host memory" and
 * needs no registration. Buffers used with a device id >= 0 must lie inside a
 * range registered with phxfs_regmem on that device.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef PHOENIX_H
#define PHOENIX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PHXFS_VERSION_MAJOR 0
#define PHXFS_VERSION_MINOR 1

/* Transfer modes, in the order `auto` tries them. */
typedef enum {
    PHXFS_MODE_AUTO = -1,
    PHXFS_MODE_P2P = 0,     /* phxfs module, GPU BAR mapped as ZONE_DEVICE pages */
    PHXFS_MODE_STAGING = 1, /* phxfs module, GPU staging slots + device-to-device copy */
    PHXFS_MODE_BOUNCE = 2,  /* pinned host slots + async host<->device copies */
    PHXFS_MODE_HOST = 3     /* no accelerator: straight into host memory */
} phxfs_mode_t;

typedef enum { PHXFS_ENGINE_SYNC = 0, PHXFS_ENGINE_URING = 1 } phxfs_engine_t;

typedef struct {
    int32_t device_id;
    int32_t mode;             /* phxfs_mode_t actually in use */
    int32_t engine;           /* phxfs_engine_t actually in use */
    int32_t workers;          /* I/O worker threads */
    uint64_t page_size;       /* registration granularity (bytes) */
    uint64_t slot_bytes;      /* bounce slot size (bytes) */
    int32_t slots_per_worker;
    int32_t reserved;
    char connector[16];       /* "cuda", "fake" or "host" */
    char name[96];            /* device name as the vendor reports it */
    char why[512];            /* why faster modes were not chosen; "" when none */
} phxfs_device_info_t;

/* 1000 * major + 10 * minor of the loaded library. */
int phxfs_version(void);

/* Library-wide setup; called implicitly by phxfs_open. Reads PHX_* from the
 * environment once. */
int phxfs_init(void);

/* Number of devices the selected connector sees (>= 1: a CPU-only machine
 * exposes one host device). */
int phxfs_device_count(void);

int phxfs_open(int dev);
int phxfs_close(int dev);
int phxfs_get_device_info(int dev, phxfs_device_info_t *info);
uint64_t phxfs_get_page_size(void);
int phxfs_get_map_mode(int dev); /* upstream compatibility: 0 full, 1 staging, <0 neither */

/* Configuration: the same keys as the PHX_* environment variables without the
 * prefix, lower case ("mode", "engine", "workers", "slot_mb", "slot_kb",
 * "slots", "connector", "fake_devices", "chunk_mb", "max_io_bytes",
 * "queue_depth"). "engine", "workers", "slot_*", "slots", "chunk_mb",
 * "connector" and "fake_devices" size the worker pool and must be set before
 * the first device opens (-EBUSY after); "mode" applies to devices opened
 * afterwards; "queue_depth" and "max_io_bytes" (per-syscall cap, a test hook)
 * at once. */
int phxfs_set_config(const char *key, const char *value);
/* Writes the effective value into buf (NUL-terminated); returns its length. */
int phxfs_get_config(const char *key, char *buf, size_t len);

/* Registration (upstream semantics): an exact duplicate increments a refcount;
 * any other overlap is -EINVAL; *target_addr receives the address the library
 * uses for the range. deregmem of a range that is not registered: -EINVAL;
 * of a range an in-flight async batch still uses: -EBUSY. */
int phxfs_regmem(int dev, const void *addr, size_t len, void **target_addr);
int phxfs_deregmem(int dev, const void *addr, size_t len);

/* Synchronous I/O. buf + buf_offset .. + nbytes must be registered on dev
 * (dev >= 0) or be host memory (dev < 0). Returns bytes moved (short only at
 * end of file) or a negative errno. */
ssize_t phxfs_read(int fd, int dev, void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset);
ssize_t phxfs_write(int fd, int dev, const void *buf, off_t buf_offset, ssize_t nbytes, off_t file_offset);

typedef struct {
    int fd;
    int device_id;      /* < 0: host memory */
    void *buf;
    off_t buf_offset;
    size_t nbytes;
    off_t f_offset;
    ssize_t result;     /* out: bytes moved or -errno */
} phxfs_io_req_t;

/* Batches: 0 when every request succeeded, the number that failed, or a
 * negative errno when the batch could not run at all. */
int phxfs_read_batch(phxfs_io_req_t *reqs, int n);
int phxfs_write_batch(phxfs_io_req_t *reqs, int n);

/* Asynchronous batches: the handle keeps the devices and the registrations
 * the requests use alive until phxfs_batch_wait returns. Submit returns NULL
 * and sets errno on failure. reqs must stay valid until wait returns. */
typedef struct phxfs_batch phxfs_batch_t;
phxfs_batch_t *phxfs_batch_submit_read(phxfs_io_req_t *reqs, int n);
phxfs_batch_t *phxfs_batch_submit_write(phxfs_io_req_t *reqs, int n);
int phxfs_batch_wait(phxfs_batch_t *batch);     /* same result as the sync batch */
int phxfs_batch_poll(phxfs_batch_t *batch);     /* 1 done, 0 running */
/* Bytes the batch's requests have moved so far: progress for a long batch, without
 * splitting it into smaller ones. */
int64_t phxfs_batch_bytes_done(phxfs_batch_t *batch);
int phxfs_batch_destroy(phxfs_batch_t *batch);  /* waits first if needed */

/* Stream-ordered I/O on an accelerator stream (CUstream for cuda). The values
 * behind f_offset are read when the stream reaches the operation; nbytes and
 * buf_offset are read at enqueue. *bytes_done receives the byte count or
 * -errno; the stream always proceeds, also after a failure. Destination bytes
 * past a short read keep their previous contents. stream NULL: runs now.
 * The cells behind the pointers must stay valid until the stream has passed
 * the operation. An error return means nothing was queued, except when part
 * of a large operation was already queued (-ENOMEM or an accelerator error
 * midway): that part still runs and *bytes_done receives the error, so keep
 * the cells until the stream is synchronised in every case. */
int phxfs_read_stream(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                      const off_t *f_offset, ssize_t *bytes_done, void *stream);
int phxfs_write_stream(int fd, int dev, const void *buf, const size_t *nbytes,
                       const off_t *buf_offset, const off_t *f_offset, ssize_t *bytes_done,
                       void *stream);

/* Files: opens with O_DIRECT when want_direct and the file system accepts it,
 * buffered otherwise; *is_direct (may be NULL) says which. Returns fd or -errno. */
int phxfs_file_open(const char *path, int flags, int mode, int want_direct, int *is_direct);

/* How much of the file is in the page cache, in permille (0..1000, estimated from 1024
 * evenly spread pages), or -errno. Lets a loader choose O_DIRECT for cold files and the
 * page cache for warm ones. */
int phxfs_file_cached_permille(int fd);

/* Device-memory helpers for callers without another framework. phxfs_mem_alloc
 * returns zeroed memory on accelerators (on the host connector the contents are
 * undefined); phxfs_mem_alloc_uninit skips the fill (1.2 ms per 5 GB on an H200) for
 * callers that overwrite every byte they expose, such as a weight loader. */
int phxfs_mem_alloc(int dev, size_t len, void **ptr);
int phxfs_mem_alloc_uninit(int dev, size_t len, void **ptr);
int phxfs_mem_free(int dev, void *ptr);
int phxfs_memcpy_to_host(int dev, void *dst, const void *src, size_t len);
int phxfs_memcpy_to_device(int dev, void *dst, const void *src, size_t len);
int phxfs_stream_create(int dev, void **stream);
int phxfs_stream_synchronize(int dev, void *stream);
int phxfs_stream_destroy(int dev, void *stream);

/* The message of the last failure on this thread ("" if none). */
const char *phxfs_last_error(void);
const char *phxfs_mode_name(int mode);

#ifdef __cplusplus
}
#endif
#endif
