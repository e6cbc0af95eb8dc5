/* Upstream Phoenix's frozen phxFile* ABI (include/phxfile.h) over the same
 * state as the cuFile interface: -errno returns, handles that are the fd
 * itself, and all four cells of an async transfer bound late. */
#include "shim.h"
#include "phxfile.h"
#include <errno.h>
#include <fcntl.h>

#define PX_API __attribute__((visibility("default")))

PX_API int phxFileDriverOpen(void) { return cf_ensure_open() ? -ENOTSUP : 0; }

PX_API int phxFileDriverClose(void)
{
    cf_bufs_reset(CF_OWNER_PHXFILE);
    return 0;
}

PX_API int phxFileBufRegister(const void *addr, size_t length) { return cf_buf_register(addr, length, 0, CF_OWNER_PHXFILE); }

PX_API int phxFileBufDeregister(const void *addr)
{
    int rc = cf_buf_deregister(addr, CF_OWNER_PHXFILE);
    return rc == -ENOENT ? 0 : rc; /* an unknown address is tolerated, as upstream does */
}

PX_API int phxFileHandleRegister(void **fh, int fd)
{
    if (!fh) return -EINVAL;
    if (fd < 0 || fcntl(fd, F_GETFL) < 0) return -EBADF;
    if (cf_ensure_open()) return -ENOTSUP; /* a fork child: see cf_forked */
    *fh = (void *)(intptr_t)fd;
    return 0;
}

PX_API int phxFileHandleDeregister(void *fh) { (void)fh; return 0; }
PX_API int phxFileStreamRegister(void *stream) { (void)stream; return 0; }
PX_API int phxFileStreamDeregister(void *stream) { (void)stream; return 0; }

static int async_io(void *fh, void *buf, size_t *nbytes, int64_t *foff, int64_t *boff, int64_t *done, void *stream, int is_write)
{
    if (!buf || !nbytes || !foff || !boff || !done) return -EINVAL;
    _Static_assert(sizeof(off_t) == sizeof(int64_t) && sizeof(ssize_t) == sizeof(int64_t), "LP64 with 64-bit off_t");
    int stored;
    int rc = cf_stream_io((int)(intptr_t)fh, buf, nbytes, (off_t *)foff, (off_t *)boff, (ssize_t *)done, stream,
                          PHXFS_STREAM_LATE_NBYTES | PHXFS_STREAM_LATE_BUF_OFFSET | PHXFS_STREAM_LATE_F_OFFSET, is_write, NULL,
                          &stored);
    switch (rc) {
    case 0: return 0;
    case CU_FILE_MEMORY_NOT_REGISTERED: return -EFAULT;
    case CU_FILE_CUDA_POINTER_INVALID: case CU_FILE_INVALID_VALUE: return -EINVAL;
    case CU_FILE_DEVICE_NOT_FOUND: return -ENODEV;
    case CU_FILE_NOMEM_ERROR: return -ENOMEM;
    case CU_FILE_INVALID_FILE_OPEN_FLAG: return -EBADF;
    case CU_FILE_DRIVER_NOT_INITIALIZED: return -ENOTSUP; /* a fork child: see cf_forked */
    default: return -EIO;
    }
}

PX_API int phxFileReadAsync(void *fh, void *buf_base, size_t *nbytes, int64_t *file_offset, int64_t *buf_offset,
                            int64_t *bytes_done, void *stream)
{
    return async_io(fh, buf_base, nbytes, file_offset, buf_offset, bytes_done, stream, 0);
}

PX_API int phxFileWriteAsync(void *fh, void *buf_base, size_t *nbytes, int64_t *file_offset, int64_t *buf_offset,
                             int64_t *bytes_done, void *stream)
{
    return async_io(fh, buf_base, nbytes, file_offset, buf_offset, bytes_done, stream, 1);
}
