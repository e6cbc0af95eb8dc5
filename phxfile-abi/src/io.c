/* Buffer registration entry points, synchronous transfers and stream-ordered
 * transfers. cuFile's argument order (size, file offset, buffer offset) is
 * turned into libphoenix's (buffer offset, size, file offset) here. */
#include "shim.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

CF_API CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags)
{
    int rc = cf_buf_register(bufPtr_base, length, flags, CF_OWNER_CUFILE);
    cf_stats_count(CF_STAT_BUF_REG, rc == 0, 0);
    return cf_status((CUfileOpError)rc);
}

CF_API CUfileError_t cuFileBufDeregister(const void *bufPtr_base)
{
    int rc = cf_buf_deregister(bufPtr_base, CF_OWNER_CUFILE);
    cf_stats_count(CF_STAT_BUF_DEREG, rc == 0, 0);
    return cf_status((CUfileOpError)rc);
}

/* The errno values that are not the file system's answer but the shim's or libphoenix's
 * (no device, memory outside any registration, out of memory, called off): cuFile reports
 * those as its own status, negated, and everything else (EIO, ENOSPC, EBADF, pread's EINVAL,
 * ...) as -1, the file system's error. */
static int is_shim_errno(ssize_t n)
{
    switch (-n) {
    case ENODEV: case ENXIO: case EFAULT: case ENOMEM: case ECANCELED: return 1;
    default: return 0;
    }
}

/* cuFile's convention: bytes; -1 with errno for what the file system said; else -CUfileOpError */
static ssize_t io_result(ssize_t n, const char *what)
{
    if (n >= 0) return n;
    if (is_shim_errno(n)) {
        cf_log(CF_LOG_ERROR, "%s: %s", what, phxfs_last_error());
        return -(ssize_t)cf_from_errno((int)n);
    }
    errno = (int)-n;
    return -1;
}

/* The same convention for *bytes_read_p / *bytes_written_p, which has no errno to carry the
 * cause (the value is stored on another thread when the stream gets there). libphoenix runs
 * this where it stores the value (phxfs_read_stream_ex2's result_fn), so the caller's cell
 * never holds a -errno, not even for the moment between the store and a translation queued
 * behind it. Pure: it runs in host functions and on workers. */
static ssize_t async_result(ssize_t n)
{
    if (n >= 0) return n;
    return is_shim_errno(n) ? -(ssize_t)cf_from_errno((int)n) : -1;
}

ssize_t cf_async_read_result(ssize_t n)
{
    cf_stats_count(CF_STAT_READ, n >= 0, n >= 0 ? (uint64_t)n : 0);
    return async_result(n);
}

ssize_t cf_async_write_result(ssize_t n)
{
    cf_stats_count(CF_STAT_WRITE, n >= 0, n >= 0 ? (uint64_t)n : 0);
    return async_result(n);
}

static ssize_t sync_io(CUfileHandle_t fh, void *base, size_t size, off_t foff, off_t boff, int is_write)
{
    const char *what = is_write ? "cuFileWrite" : "cuFileRead";
    /* a live handle means an open driver: no implicit open for a stale one */
    int fd;
    int rc = cf_handle_fd(fh, &fd);
    if (rc) return -(ssize_t)rc;
    if (!base || foff < 0 || boff < 0 || size > (size_t)SSIZE_MAX || cf_range_bad(base, foff, boff, size))
        return -(ssize_t)CU_FILE_INVALID_VALUE;
    if (size == 0) return 0;
    cf_target_t t;
    rc = cf_target_get(base, boff, size, &t);
    if (rc) return -(ssize_t)rc;
    ssize_t n;
    if (t.bounce) n = cf_bounce_io(fd, t.dev, (char *)base + boff, size, foff, is_write);
    else if (is_write) n = phxfs_write(fd, t.dev, t.buf, t.off, (ssize_t)size, foff);
    else n = phxfs_read(fd, t.dev, t.buf, t.off, (ssize_t)size, foff);
    cf_target_put(&t);
    return io_result(n, what);
}

CF_API ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size, off_t file_offset, off_t bufPtr_offset)
{
    ssize_t n = sync_io(fh, bufPtr_base, size, file_offset, bufPtr_offset, 0);
    cf_stats_count(CF_STAT_READ, n >= 0, n >= 0 ? (uint64_t)n : 0);
    return n;
}

CF_API ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size, off_t file_offset, off_t bufPtr_offset)
{
    ssize_t n = sync_io(fh, (void *)bufPtr_base, size, file_offset, bufPtr_offset, 1);
    cf_stats_count(CF_STAT_WRITE, n >= 0, n >= 0 ? (uint64_t)n : 0);
    return n;
}

/* ---- streams ---- */

typedef struct {
    void *stream;
    unsigned flags;
} stream_reg_t;
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static stream_reg_t *streams;
static size_t nstreams, streams_cap;

#define STREAM_FLAGS (CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET | CU_FILE_STREAM_FIXED_FILE_SIZE | CU_FILE_STREAM_PAGE_ALIGNED_INPUTS)

CF_API CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags)
{
    if (flags & ~(unsigned)STREAM_FLAGS) return cf_status(CU_FILE_INVALID_VALUE);
    int rc = cf_ensure_open();
    if (rc) return cf_status((CUfileOpError)rc);
    pthread_mutex_lock(&streams_lock);
    size_t i = 0;
    while (i < nstreams && streams[i].stream != (void *)stream) i++;
    if (i == nstreams) {
        if (nstreams == streams_cap) {
            size_t c = streams_cap ? streams_cap * 2 : 16;
            stream_reg_t *v = realloc(streams, c * sizeof *v);
            if (!v) { pthread_mutex_unlock(&streams_lock); return cf_status(CU_FILE_NOMEM_ERROR); }
            streams = v;
            streams_cap = c;
        }
        nstreams++;
    }
    streams[i] = (stream_reg_t){(void *)stream, flags};
    pthread_mutex_unlock(&streams_lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileStreamDeregister(CUstream stream)
{
    pthread_mutex_lock(&streams_lock);
    size_t i = 0;
    while (i < nstreams && streams[i].stream != (void *)stream) i++;
    int found = i < nstreams;
    if (found) streams[i] = streams[--nstreams];
    pthread_mutex_unlock(&streams_lock);
    return cf_status(found ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
}

/* cuFileDriverClose deregisters every stream, as cuFile documents: their FIXED_* flags do not
 * outlive the session */
void cf_streams_reset(void)
{
    pthread_mutex_lock(&streams_lock);
    nstreams = 0;
    pthread_mutex_unlock(&streams_lock);
}

static unsigned stream_flags(void *stream)
{
    unsigned f = 0;
    pthread_mutex_lock(&streams_lock);
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i].stream == stream) f = streams[i].flags;
    pthread_mutex_unlock(&streams_lock);
    return f;
}

/* The device for a stream-ordered transfer into base: its registration's, or -1 for host
 * memory; *unreg set for device memory nobody registered: 0 or a CUfileOpError. */
static int stream_target(void *base, void *stream, int *dev, int *unreg)
{
    *unreg = 0;
    if (!cf_buf_find(base, 1, dev)) {
        int rc = phxfs_pointer_device(base, 1, dev);
        if (rc) return CU_FILE_CUDA_POINTER_INVALID;
        if (*dev >= 0) {
            *unreg = 1;
            return 0;
        }
    }
    /* libphoenix needs the stream's device open, also for host memory */
    int rc = *dev >= 0 ? cf_device_use(*dev) : 0;
    if (!rc && stream && *dev < 0) rc = cf_stream_device(stream) < 0 ? -EINVAL : 0;
    return rc ? cf_from_errno(rc) : 0;
}

/* Unregistered device memory (cuFile takes any cudaMalloc'd buffer; KvikIO hands in CuPy
 * arrays): libphoenix's stream path needs a registration that lasts until the stream has
 * passed the operation, which the shim cannot see, and the size may be bound late. So the
 * transfer keeps the stream's order the plain way: the caller waits until the stream gets
 * here, then moves the bytes synchronously (registered for the transfer alone) with the
 * values the cells hold now. Failures land in *done_p through xlate (NULL: as -errno), as on
 * the stream path. */
static int stream_io_blocking(int fd, int dev, void *base, size_t *size_p, off_t *foff_p, off_t *boff_p,
                              ssize_t *done_p, void *stream, int is_write, phxfs_stream_result_fn xlate, int *stored)
{
    int rc = cf_device_use(dev);
    if (rc) return cf_from_errno(rc);
    if (stream) {
        int sdev = cf_stream_device(stream);
        if (sdev < 0 || (rc = phxfs_stream_synchronize(sdev, stream)) != 0) {
            cf_log(CF_LOG_ERROR, "%s: stream %p: %s", is_write ? "WriteAsync" : "ReadAsync", stream, phxfs_last_error());
            return sdev < 0 ? CU_FILE_INVALID_VALUE : cf_from_errno(rc);
        }
    }
    size_t size = *size_p;
    off_t foff = *foff_p, boff = *boff_p;
    ssize_t n = 0;
    if (foff < 0 || boff < 0 || size > (size_t)SSIZE_MAX || cf_range_bad(base, foff, boff, size)) n = -EINVAL;
    else if (size) {
        cf_target_t t;
        if (cf_target_get(base, boff, size, &t)) n = -EFAULT; /* past the allocation */
        else {
            if (t.bounce) n = cf_bounce_io(fd, t.dev, (char *)base + boff, size, foff, is_write);
            else if (is_write) n = phxfs_write(fd, t.dev, t.buf, t.off, (ssize_t)size, foff);
            else n = phxfs_read(fd, t.dev, t.buf, t.off, (ssize_t)size, foff);
            cf_target_put(&t);
        }
    }
    *done_p = xlate ? xlate(n) : n;
    *stored = 1;
    return 0;
}

int cf_stream_io(int fd, void *base, size_t *size_p, off_t *foff_p, off_t *boff_p, ssize_t *done_p, void *stream,
                 unsigned late, int is_write, phxfs_stream_result_fn xlate, int *stored)
{
    *stored = 0;
    if (atomic_load_explicit(&cf_forked, memory_order_relaxed)) return cf_fork_refused();
    /* the wrong direction is an open-flag error in cuFile's terms (KvikIO expects "unsupported
     * file open flags"); *done_p says so too, as libphoenix's own refusal does */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_ACCMODE) == (is_write ? O_RDONLY : O_WRONLY)) {
        cf_log(CF_LOG_ERROR, "%s: fd %d is not open for %s", is_write ? "WriteAsync" : "ReadAsync", fd, is_write ? "writing" : "reading");
        *done_p = -EBADF; /* the caller (async_io) writes its own convention's value */
        return CU_FILE_INVALID_FILE_OPEN_FLAG;
    }
    int dev, unreg;
    int rc = stream_target(base, stream, &dev, &unreg);
    if (rc) return rc;
    if (unreg) return stream_io_blocking(fd, dev, base, size_p, foff_p, boff_p, done_p, stream, is_write, xlate, stored);
    *stored = 1; /* libphoenix runs xlate once, also when it refuses the call */
    rc = is_write ? phxfs_write_stream_ex2(fd, dev, base, size_p, boff_p, foff_p, done_p, stream, late, xlate)
                  : phxfs_read_stream_ex2(fd, dev, base, size_p, boff_p, foff_p, done_p, stream, late, xlate);
    if (rc) {
        cf_log(CF_LOG_ERROR, "%s: %s", is_write ? "WriteAsync" : "ReadAsync", phxfs_last_error());
        return cf_from_errno(rc);
    }
    return 0;
}

static CUfileError_t async_io(CUfileHandle_t fh, void *base, size_t *size_p, off_t *foff_p, off_t *boff_p,
                              ssize_t *done_p, CUstream stream, int is_write)
{
    int fd;
    int rc = cf_handle_fd(fh, &fd);
    if (!rc && (!base || !size_p || !foff_p || !boff_p || !done_p)) rc = CU_FILE_INVALID_VALUE;
    if (rc) {
        /* counted as cuFileRead's refusals are; the cell may not exist */
        cf_stats_count(is_write ? CF_STAT_WRITE : CF_STAT_READ, 0, 0);
        return cf_status((CUfileOpError)rc);
    }
    unsigned f = stream_flags((void *)stream), late = 0;
    if (!(f & CU_FILE_STREAM_FIXED_FILE_SIZE)) late |= PHXFS_STREAM_LATE_NBYTES;
    if (!(f & CU_FILE_STREAM_FIXED_BUF_OFFSET)) late |= PHXFS_STREAM_LATE_BUF_OFFSET;
    if (!(f & CU_FILE_STREAM_FIXED_FILE_OFFSET)) late |= PHXFS_STREAM_LATE_F_OFFSET;
    int stored;
    rc = cf_stream_io(fd, base, size_p, foff_p, boff_p, done_p, (void *)stream, late, is_write,
                      is_write ? cf_async_write_result : cf_async_read_result, &stored);
    /* a refused call moves nothing: its cell says what the call returned, as a failed
     * operation's would (libphoenix's own refusals left cuFile's -1 or a status there). The
     * statistics saw the call already if the result function ran for it. */
    if (rc) {
        if (!stored) cf_stats_count(is_write ? CF_STAT_WRITE : CF_STAT_READ, 0, 0);
        *done_p = -(ssize_t)rc;
    }
    return cf_status((CUfileOpError)rc);
}

CF_API CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
                                     off_t *bufPtr_offset_p, ssize_t *bytes_read_p, CUstream stream)
{
    return async_io(fh, bufPtr_base, size_p, file_offset_p, bufPtr_offset_p, bytes_read_p, stream, 0);
}

CF_API CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
                                      off_t *bufPtr_offset_p, ssize_t *bytes_written_p, CUstream stream)
{
    return async_io(fh, bufPtr_base, size_p, file_offset_p, bufPtr_offset_p, bytes_written_p, stream, 1);
}
