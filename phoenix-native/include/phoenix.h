/*
 * phoenix.h — the public C API of libphoenix.
 *
 * Every function returns >= 0 on success or a negative errno. Device ids are
 * small integers (0..n-1); a negative device id means "plain host memory" and
 * needs no registration. Buffers used with a device id >= 0 must lie inside a
 * range registered with phxfs_regmem on that device.
 *
 * Thread safety: every function may be called from any thread.
 *
 * Foreign threads and contexts: a call made on the caller's thread leaves that
 * thread's current accelerator context as it found it (the library pushes the
 * device's context and pops it again), so frameworks that keep their own
 * context current need not restore anything.
 *
 * Pinned memory: each open device owns one pool of pinned host memory
 * ("pinned_mb", default 128 MiB; whole bounce slots, never more than that),
 * shared by the workers, by stream-ordered I/O and by every caller thread.
 * Transfers wait for a free slot rather than pin more; the pool is released
 * when the device's last phxfs_open is matched by phxfs_close. A pool smaller
 * than one slot fails phxfs_open with -EINVAL.
 */
#ifndef PHOENIX_H
#define PHOENIX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release this header belongs to: the Maven project's version without its -SNAPSHOT
 * qualifier (the Java tests check that the two agree). */
#define PHXFS_VERSION_MAJOR 0
#define PHXFS_VERSION_MINOR 2
#define PHXFS_VERSION_PATCH 0
#define PHXFS_VERSION_STRING "0.2.0"

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
    char connector[16];       /* "cuda", "emu", "fake" or "host" */
    char name[96];            /* device name as the vendor reports it */
    char why[512];            /* why faster modes were not chosen; "" when none */
} phxfs_device_info_t;

/* 10000 * major + 100 * minor + patch of the loaded library (0.2.0 is 200). */
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
 * "slots", "pinned_mb", "connector", "fake_devices", "chunk_mb",
 * "max_io_bytes", "queue_depth", "inline_kb", "fresh_fill", "huge_fill"). Keys are parsed
 * into a parameter set that is frozen when the library starts its worker pool
 * (the first phxfs_open or phxfs_init): "engine", "workers", "slot_*", "slots",
 * "pinned_mb", "chunk_mb", "queue_depth", "inline_kb", "connector",
 * "fake_devices", "fresh_fill" and "huge_fill" return -EBUSY after that; "mode" applies to
 * devices opened afterwards; "max_io_bytes" (per-syscall cap, a test hook) at once.
 * "fresh_fill" (0 by default, 1 on): the workers place host reads into pages that
 * do not exist yet (fresh anonymous memory) with userfaultfd's UFFDIO_COPY instead
 * of letting the kernel zero-fill each page first; faster where fresh pages fault
 * in slowly (some VMs), slower elsewhere, and it leaves 4 KiB pages; falls back to
 * the plain read wherever userfaultfd is refused or the kernel is older than 6.11. While such a read is in flight,
 * other threads touching its destination wait for it, and kernel accesses to it
 * from other threads (pinning, mlock, O_DIRECT I/O) fail with EFAULT.
 * "huge_fill" (0 by default, 1 on): before a buffered read of a cold file, the
 * workers bring each whole 2 MiB piece of the range into the page cache as one
 * 2 MiB folio, so that later uses of those bytes (a host mapping, a pread) touch
 * fewer, larger folios; it needs Linux 6.5 (cachestat), a file system that keeps
 * large folios, and a regular file the caller owns or may write (not on tmpfs,
 * ramfs, hugetlbfs or overlayfs), and otherwise leaves the read as it is. The
 * bytes read are the same either way. */
int phxfs_set_config(const char *key, const char *value);
/* Writes the effective value into buf (NUL-terminated); returns its length.
 * Besides the keys above, "fresh_fill_bytes" (read-only): bytes placed by
 * UFFDIO_COPY since the library started; "huge_fill_bytes" (read-only): bytes
 * brought into the page cache by huge_fill. */
int phxfs_get_config(const char *key, char *buf, size_t len);

/* Registration (upstream semantics): an exact duplicate increments a refcount;
 * any other overlap is -EINVAL; *target_addr receives the address the library
 * uses for the range. deregmem of a range that is not registered: -EINVAL;
 * of a range an in-flight async batch still uses: -EBUSY. */
int phxfs_regmem(int dev, const void *addr, size_t len, void **target_addr);
int phxfs_deregmem(int dev, const void *addr, size_t len);

/* Synchronous I/O. buf + buf_offset .. + nbytes must be registered on dev
 * (dev >= 0) or be host memory (dev < 0). Returns bytes moved (short only at
 * end of file) or a negative errno. In bounce mode a device transfer of at most
 * "inline_kb" (default 256 KiB) whose file span fits one slot runs on the
 * calling thread, through a slot of the device's pinned pool and one of a few
 * copy contexts the device shares (when all are busy, on the workers): no
 * hand-off, and nothing kept per thread. */
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
/* When the batch ran, in CLOCK_MONOTONIC nanoseconds (on Linux the clock of Java's
 * System.nanoTime): times[0] when it was queued, times[1] when a thread took its first task,
 * times[2] when its last task ended (before any waiter or callback hears of it); 0 for what
 * has not happened yet (a batch with no tasks never takes one). Tells a transfer's own time
 * from the time spent around it. 0, or -EINVAL for a NULL argument. */
int phxfs_batch_times(phxfs_batch_t *batch, int64_t times[3]);

/* Mixed batches with a completion callback. ops[i] is PHXFS_OP_READ or
 * PHXFS_OP_WRITE for reqs[i] (ops NULL: all reads); requests run in no
 * particular order, also when they touch the same bytes. done (may be NULL)
 * runs exactly once, on the library's one completion thread (never an I/O
 * worker), after every result is filled in, with the batch's result (as
 * phxfs_batch_wait returns it); callbacks run one at a time, so one that
 * blocks delays the others (not the I/O); it must not wait for this batch, but
 * may call phxfs_batch_destroy on it and may start and wait for other I/O. No
 * thread of the caller's is held while the batch runs. */
#define PHXFS_OP_READ 0
#define PHXFS_OP_WRITE 1
typedef void (*phxfs_batch_done_fn)(phxfs_batch_t *batch, int result, void *arg);
phxfs_batch_t *phxfs_batch_submit(phxfs_io_req_t *reqs, const uint8_t *ops, int n, phxfs_batch_done_fn done,
                                  void *arg);
/* Cancels what has not started: requests with work no worker has taken yet
 * finish with -ECANCELED (parts already moved stay moved; a request whose
 * started part failed reports that failure instead). Returns the number of
 * requests that had work not yet started; the batch still completes (wait,
 * callback) as usual. */
int phxfs_batch_cancel(phxfs_batch_t *batch);

/* Stream-ordered I/O on an accelerator stream (CUstream for cuda). The values
 * behind f_offset are read when the stream reaches the operation; nbytes and
 * buf_offset are read at enqueue. *bytes_done receives the byte count or
 * -errno; the stream always proceeds, also after a failure. A descriptor not
 * open for the direction fails the call (-EBADF). stream NULL: runs now.
 * The cells behind the pointers must stay valid until the stream has passed
 * the operation.
 * On an accelerator without p2p (bounce, staging) every accelerator call the
 * operation needs is queued by this call, so nothing after it depends on the
 * accelerator taking more work (a kernel the caller launches next may be
 * loaded lazily, which synchronises the context). The operation moves its
 * bytes through a ring of up to 16 slots (at most half) of the device's pinned pool, taken
 * here (waiting only when the pool has none free) and returned when the
 * stream has passed it. Destination bytes past a short read (end of file)
 * keep their previous contents, as with pread: the pieces that the file's size
 * and the offset cell's value at enqueue put past the end are first copied
 * from the destination. Only if the offset changes after enqueue, or the file
 * shrinks, can other pieces end short: their missing bytes arrive as zeros.
 * After a failure the destination range is unspecified.
 * An error return means the operation will not touch the cells after the call
 * returns: either nothing was queued, or the part that was queued has been
 * called off (or had already run) before the call returned; *bytes_done then
 * holds the error. Copies already queued before an accelerator call failed
 * may still write the buffer's range. */
int phxfs_read_stream(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                      const off_t *f_offset, ssize_t *bytes_done, void *stream);
int phxfs_write_stream(int fd, int dev, const void *buf, const size_t *nbytes,
                       const off_t *buf_offset, const off_t *f_offset, ssize_t *bytes_done,
                       void *stream);
/* The same with a choice of which cells are read when the stream reaches the
 * operation (late) rather than at enqueue: an OR of PHXFS_STREAM_LATE_*
 * (phxfs_read_stream is late = PHXFS_STREAM_LATE_F_OFFSET). A cell read at
 * enqueue may change or go away once the call returns; a late one must stay
 * valid until the stream has passed the operation. With a late size or buffer
 * offset the registration is checked when the stream gets there, so a range
 * outside it lands in *bytes_done (-EFAULT) instead of failing the call.
 * With a late size or buffer offset in bounce or staging mode, the copies
 * cover the registered room from buf (up to 256 MiB): each piece of it makes a
 * round trip device -> pinned span -> device around the file I/O, so the bytes
 * around the range come back as they were. Over a larger room the pool's
 * workers make the copies when the stream gets there, so no kernel that is not
 * loaded yet may be launched while the operation is pending unless the process
 * runs with CUDA_MODULE_LOADING=EAGER (CUDA's lazy loading would synchronise
 * the context and deadlock).
 * Late values must be in place before the stream gets to the operation, and a
 * CUDA call that synchronises (the first launch of a lazily loaded kernel, a
 * full stream queue) may let it get there during that call.
 * cuFile's ReadAsync/WriteAsync bind all three late unless the stream was
 * registered with its FIXED_* flags. */
#define PHXFS_STREAM_LATE_NBYTES 0x1u
#define PHXFS_STREAM_LATE_BUF_OFFSET 0x2u
#define PHXFS_STREAM_LATE_F_OFFSET 0x4u
int phxfs_read_stream_ex(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                         const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late);
int phxfs_write_stream_ex(int fd, int dev, const void *buf, const size_t *nbytes, const off_t *buf_offset,
                          const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late);
/* The same, with the value stored in *bytes_done first passed through result_fn
 * (NULL: stored as it is). A caller whose own API promises another convention
 * for that cell (cuFile: -1 for file-system errors, a negated status for the
 * rest) cannot rewrite it after the call: the value is stored when the stream
 * reaches the operation, and rewriting it then would take a host function of
 * the caller's own per operation, a stream round trip to a CPU thread. So the
 * function runs where the value is stored, on whatever thread stores it (a
 * host function, a worker, or the caller itself, also for the error a failed
 * call leaves there): it must be quick, thread-safe, and make no accelerator
 * calls. It runs exactly once per call that returns (bytes_done not NULL): for
 * the value the operation stores, or for the error a failed call returns, so a
 * caller may also count operations in it. */
typedef ssize_t (*phxfs_stream_result_fn)(ssize_t result);
int phxfs_read_stream_ex2(int fd, int dev, void *buf, const size_t *nbytes, const off_t *buf_offset,
                          const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late,
                          phxfs_stream_result_fn result_fn);
int phxfs_write_stream_ex2(int fd, int dev, const void *buf, const size_t *nbytes, const off_t *buf_offset,
                           const off_t *f_offset, ssize_t *bytes_done, void *stream, unsigned late,
                           phxfs_stream_result_fn result_fn);

/* Files: opens with O_DIRECT when want_direct and the file system accepts it,
 * buffered otherwise; *is_direct (may be NULL) says which. Returns fd or -errno;
 * a directory is -EISDIR (open(2) itself would hand one out for reading). */
int phxfs_file_open(const char *path, int flags, int mode, int want_direct, int *is_direct);

/* How much of the file is in the page cache, in permille (0..1000, estimated from 64
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
/* Pinned (page-locked, accelerator-registered) host memory for the caller's own
 * asynchronous copies; outside the device pools. On machines without an
 * accelerator it is ordinary page-aligned memory. len 0: -EINVAL. */
int phxfs_host_alloc_pinned(size_t len, void **ptr);
int phxfs_host_free_pinned(void *ptr);

/* Copies queued on a caller's stream; they complete when the stream gets
 * there. Host memory should be pinned (phxfs_host_alloc_pinned) for the copy
 * to be asynchronous. stream NULL: the device's helper stream, waited for. */
int phxfs_memcpy_to_device_async(int dev, void *dst, const void *src, size_t len, void *stream);
int phxfs_memcpy_to_host_async(int dev, void *dst, const void *src, size_t len, void *stream);

/* Several devices. phxfs_device_can_access_peer: 1 when dev can read and write peer's
 * memory directly (peer access over NVLink or PCIe; the library enables it on this first
 * ask), 0 when copies between the two go through host memory, or -errno (a device that does
 * not exist). phxfs_memcpy_peer copies len bytes from src (memory of src_dev) to dst (memory
 * of dst_dev) and waits for them: directly where the pair allows peer access, otherwise
 * through src_dev's pinned pool (two slots in flight: the read of one from src_dev overlaps
 * the write of the other into dst_dev). dst_dev == src_dev: a copy within the device. Both
 * devices must be open; len 0 does nothing. */
int phxfs_device_can_access_peer(int dev, int peer);
int phxfs_memcpy_peer(int dst_dev, void *dst, int src_dev, const void *src, size_t len);

/* Checks that [ptr, ptr + len) is memory of device dev: 0, or -EINVAL naming
 * what it is instead (host memory, another device's memory, unknown). */
int phxfs_check_device_pointer(int dev, const void *ptr, size_t len);
/* Whose memory [ptr, ptr + len) is, without opening any device: 0 with *dev the
 * device, or -1 for host memory (anything the accelerator does not own: plain,
 * pinned or managed); -EINVAL when it is device memory that runs past the end
 * of its allocation. For adapters (the cuFile ABI) that get bare pointers. */
int phxfs_pointer_device(const void *ptr, size_t len, int *dev);
/* Checks that stream (a caller's CUstream) belongs to device dev: 0 or -EINVAL. */
int phxfs_check_stream(int dev, void *stream);

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
