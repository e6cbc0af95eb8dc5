/*
 * cufile.h — Phoenix's cuFile-compatible interface (libphxfile.so, and the same
 * library as libcufile.so.0).
 *
 * Written for Phoenix from the published cuFile facts: the type layouts, enum
 * values, macros and function signatures match NVIDIA's cuFile 1.15, so code
 * written for cuFile compiles against this header and programs built against
 * NVIDIA's header run on this library unchanged. No CUDA header is needed:
 * when <cuda.h> can be found it is used for CUresult and CUstream; otherwise
 * layout-compatible declarations stand in.
 *
 * What Phoenix does differently (see phxfile-abi/README.md):
 *   - no nvidia-fs, no udev data: every path is what cuFile calls compatibility
 *     mode, done by libphoenix's worker pool (io_uring, pinned bounce slots);
 *   - host memory works everywhere a device pointer does;
 *   - the library opens itself on first use; cuFileDriverOpen only stages it.
 */
#ifndef PHX_CUFILE_H
#define PHX_CUFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#if !defined(PHX_CUFILE_NO_CUDA_H) && defined(__has_include)
#if __has_include(<cuda.h>)
#include <cuda.h>
#define PHX_CUFILE_HAVE_CUDA_H 1
#endif
#endif
#ifndef PHX_CUFILE_HAVE_CUDA_H
/* The driver API's types as the ABI sees them: a 32-bit result and an opaque stream pointer. */
typedef int CUresult;
typedef struct CUstream_st *CUstream;
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

#define CUFILEOP_BASE_ERR 5000

typedef enum CUfileOpError {
    CU_FILE_SUCCESS = 0,
    CU_FILE_DRIVER_NOT_INITIALIZED = CUFILEOP_BASE_ERR + 1,
    CU_FILE_DRIVER_INVALID_PROPS = CUFILEOP_BASE_ERR + 2,
    CU_FILE_DRIVER_UNSUPPORTED_LIMIT = CUFILEOP_BASE_ERR + 3,
    CU_FILE_DRIVER_VERSION_MISMATCH = CUFILEOP_BASE_ERR + 4,
    CU_FILE_DRIVER_VERSION_READ_ERROR = CUFILEOP_BASE_ERR + 5,
    CU_FILE_DRIVER_CLOSING = CUFILEOP_BASE_ERR + 6,
    CU_FILE_PLATFORM_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 7,
    CU_FILE_IO_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 8,
    CU_FILE_DEVICE_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 9,
    CU_FILE_NVFS_DRIVER_ERROR = CUFILEOP_BASE_ERR + 10,
    CU_FILE_CUDA_DRIVER_ERROR = CUFILEOP_BASE_ERR + 11,
    CU_FILE_CUDA_POINTER_INVALID = CUFILEOP_BASE_ERR + 12,
    CU_FILE_CUDA_MEMORY_TYPE_INVALID = CUFILEOP_BASE_ERR + 13,
    CU_FILE_CUDA_POINTER_RANGE_ERROR = CUFILEOP_BASE_ERR + 14,
    CU_FILE_CUDA_CONTEXT_MISMATCH = CUFILEOP_BASE_ERR + 15,
    CU_FILE_INVALID_MAPPING_SIZE = CUFILEOP_BASE_ERR + 16,
    CU_FILE_INVALID_MAPPING_RANGE = CUFILEOP_BASE_ERR + 17,
    CU_FILE_INVALID_FILE_TYPE = CUFILEOP_BASE_ERR + 18,
    CU_FILE_INVALID_FILE_OPEN_FLAG = CUFILEOP_BASE_ERR + 19,
    CU_FILE_DIO_NOT_SET = CUFILEOP_BASE_ERR + 20,
    /* 5021 is not used */
    CU_FILE_INVALID_VALUE = CUFILEOP_BASE_ERR + 22,
    CU_FILE_MEMORY_ALREADY_REGISTERED = CUFILEOP_BASE_ERR + 23,
    CU_FILE_MEMORY_NOT_REGISTERED = CUFILEOP_BASE_ERR + 24,
    CU_FILE_PERMISSION_DENIED = CUFILEOP_BASE_ERR + 25,
    CU_FILE_DRIVER_ALREADY_OPEN = CUFILEOP_BASE_ERR + 26,
    CU_FILE_HANDLE_NOT_REGISTERED = CUFILEOP_BASE_ERR + 27,
    CU_FILE_HANDLE_ALREADY_REGISTERED = CUFILEOP_BASE_ERR + 28,
    CU_FILE_DEVICE_NOT_FOUND = CUFILEOP_BASE_ERR + 29,
    CU_FILE_INTERNAL_ERROR = CUFILEOP_BASE_ERR + 30,
    CU_FILE_GETNEWFD_FAILED = CUFILEOP_BASE_ERR + 31,
    /* 5032 is not used */
    CU_FILE_NVFS_SETUP_ERROR = CUFILEOP_BASE_ERR + 33,
    CU_FILE_IO_DISABLED = CUFILEOP_BASE_ERR + 34,
    CU_FILE_BATCH_SUBMIT_FAILED = CUFILEOP_BASE_ERR + 35,
    CU_FILE_GPU_MEMORY_PINNING_FAILED = CUFILEOP_BASE_ERR + 36,
    CU_FILE_BATCH_FULL = CUFILEOP_BASE_ERR + 37,
    CU_FILE_ASYNC_NOT_SUPPORTED = CUFILEOP_BASE_ERR + 38,
    CU_FILE_INTERNAL_BATCH_SETUP_ERROR = CUFILEOP_BASE_ERR + 39,
    CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR = CUFILEOP_BASE_ERR + 40,
    CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR = CUFILEOP_BASE_ERR + 41,
    CU_FILE_INTERNAL_BATCH_CANCEL_ERROR = CUFILEOP_BASE_ERR + 42,
    CU_FILE_NOMEM_ERROR = CUFILEOP_BASE_ERR + 43,
    CU_FILE_IO_ERROR = CUFILEOP_BASE_ERR + 44,
    CU_FILE_INTERNAL_BUF_REGISTER_ERROR = CUFILEOP_BASE_ERR + 45,
    CU_FILE_HASH_OPR_ERROR = CUFILEOP_BASE_ERR + 46,
    CU_FILE_INVALID_CONTEXT_ERROR = CUFILEOP_BASE_ERR + 47,
    CU_FILE_NVFS_INTERNAL_DRIVER_ERROR = CUFILEOP_BASE_ERR + 48,
    CU_FILE_BATCH_NOCOMPAT_ERROR = CUFILEOP_BASE_ERR + 49,
    CU_FILE_IO_MAX_ERROR = CUFILEOP_BASE_ERR + 50
} CUfileOpError;

/* err is a CUfileOpError; cu_err the driver's result when err is CU_FILE_CUDA_DRIVER_ERROR. */
typedef struct CUfileError {
    CUfileOpError err;
    CUresult cu_err;
} CUfileError_t;

/* A cuFile error (as opposed to an errno), in either sign, as cuFileRead returns them. The
 * value goes through long, so a ssize_t result or a CUfileOpError (unsigned to gcc) passes
 * -Wall -Wextra without -Wabsolute-value warnings, with the values NVIDIA's abs() gives. */
#define IS_CUFILE_ERR(err) (labs((long)(err)) > CUFILEOP_BASE_ERR)
#define IS_CUDA_ERR(status) ((status).err == CU_FILE_CUDA_DRIVER_ERROR)
#define CU_FILE_CUDA_ERR(status) ((status).cu_err)
#define CUDA_DRV_ERR(status) ((status).cu_err)

/* A short English description of a CUfileOpError. */
static inline const char *cufileop_status_error(CUfileOpError e)
{
    switch (e) {
    case CU_FILE_SUCCESS: return "cufile success";
    case CU_FILE_DRIVER_NOT_INITIALIZED: return "driver not initialized";
    case CU_FILE_DRIVER_INVALID_PROPS: return "invalid driver property";
    case CU_FILE_DRIVER_UNSUPPORTED_LIMIT: return "driver property out of range";
    case CU_FILE_DRIVER_VERSION_MISMATCH: return "driver version mismatch";
    case CU_FILE_DRIVER_VERSION_READ_ERROR: return "driver version read error";
    case CU_FILE_DRIVER_CLOSING: return "driver is closing";
    case CU_FILE_PLATFORM_NOT_SUPPORTED: return "platform not supported";
    case CU_FILE_IO_NOT_SUPPORTED: return "I/O not supported on this file";
    case CU_FILE_DEVICE_NOT_SUPPORTED: return "device not supported";
    case CU_FILE_NVFS_DRIVER_ERROR: return "kernel driver error";
    case CU_FILE_CUDA_DRIVER_ERROR: return "CUDA driver error";
    case CU_FILE_CUDA_POINTER_INVALID: return "invalid device pointer";
    case CU_FILE_CUDA_MEMORY_TYPE_INVALID: return "invalid memory type";
    case CU_FILE_CUDA_POINTER_RANGE_ERROR: return "pointer range beyond its allocation";
    case CU_FILE_CUDA_CONTEXT_MISMATCH: return "CUDA context mismatch";
    case CU_FILE_INVALID_MAPPING_SIZE: return "beyond the maximum pinned size";
    case CU_FILE_INVALID_MAPPING_RANGE: return "beyond the mapped range";
    case CU_FILE_INVALID_FILE_TYPE: return "unsupported file type";
    case CU_FILE_INVALID_FILE_OPEN_FLAG: return "unsupported file open flags";
    case CU_FILE_DIO_NOT_SET: return "O_DIRECT not set";
    case CU_FILE_INVALID_VALUE: return "invalid argument";
    case CU_FILE_MEMORY_ALREADY_REGISTERED: return "memory already registered";
    case CU_FILE_MEMORY_NOT_REGISTERED: return "memory not registered";
    case CU_FILE_PERMISSION_DENIED: return "permission denied";
    case CU_FILE_DRIVER_ALREADY_OPEN: return "driver already open";
    case CU_FILE_HANDLE_NOT_REGISTERED: return "file handle not registered";
    case CU_FILE_HANDLE_ALREADY_REGISTERED: return "file handle already registered";
    case CU_FILE_DEVICE_NOT_FOUND: return "device not found";
    case CU_FILE_INTERNAL_ERROR: return "internal error";
    case CU_FILE_GETNEWFD_FAILED: return "cannot get a new file descriptor";
    case CU_FILE_NVFS_SETUP_ERROR: return "kernel driver setup error";
    case CU_FILE_IO_DISABLED: return "I/O disabled by configuration";
    case CU_FILE_BATCH_SUBMIT_FAILED: return "batch submit failed";
    case CU_FILE_GPU_MEMORY_PINNING_FAILED: return "device memory pinning failed";
    case CU_FILE_BATCH_FULL: return "batch queue full";
    case CU_FILE_ASYNC_NOT_SUPPORTED: return "stream I/O not supported";
    case CU_FILE_INTERNAL_BATCH_SETUP_ERROR: return "batch setup error";
    case CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR: return "batch submit error";
    case CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR: return "batch status error";
    case CU_FILE_INTERNAL_BATCH_CANCEL_ERROR: return "batch cancel error";
    case CU_FILE_NOMEM_ERROR: return "out of memory";
    case CU_FILE_IO_ERROR: return "I/O error";
    case CU_FILE_INTERNAL_BUF_REGISTER_ERROR: return "buffer registration error";
    case CU_FILE_HASH_OPR_ERROR: return "hash table error";
    case CU_FILE_INVALID_CONTEXT_ERROR: return "invalid context";
    case CU_FILE_NVFS_INTERNAL_DRIVER_ERROR: return "kernel driver internal error";
    case CU_FILE_BATCH_NOCOMPAT_ERROR: return "batch needs compatibility mode";
    default: return "unknown cufile error";
    }
}
#define CUFILE_ERRSTR(err) cufileop_status_error((CUfileOpError)labs((long)(err)))

/* ---- driver ------------------------------------------------------------ */

/* Bit numbers in CUfileDrvProps_t.nvfs.dstatusflags */
typedef enum CUfileDriverStatusFlags {
    CU_FILE_LUSTRE_SUPPORTED = 0,
    CU_FILE_WEKAFS_SUPPORTED = 1,
    CU_FILE_NFS_SUPPORTED = 2,
    CU_FILE_GPFS_SUPPORTED = 3,
    CU_FILE_NVME_SUPPORTED = 4,
    CU_FILE_NVMEOF_SUPPORTED = 5,
    CU_FILE_SCSI_SUPPORTED = 6,
    CU_FILE_SCALEFLUX_CSD_SUPPORTED = 7,
    CU_FILE_NVMESH_SUPPORTED = 8,
    CU_FILE_BEEGFS_SUPPORTED = 9,
    CU_FILE_NVME_P2P_SUPPORTED = 11,
    CU_FILE_SCATEFS_SUPPORTED = 12
} CUfileDriverStatusFlags_t;

/* Bit numbers in CUfileDrvProps_t.nvfs.dcontrolflags */
typedef enum CUfileDriverControlFlags {
    CU_FILE_USE_POLL_MODE = 0,
    CU_FILE_ALLOW_COMPAT_MODE = 1
} CUfileDriverControlFlags_t;

/* Bit numbers in CUfileDrvProps_t.fflags */
typedef enum CUfileFeatureFlags {
    CU_FILE_DYN_ROUTING_SUPPORTED = 0,
    CU_FILE_BATCH_IO_SUPPORTED = 1,
    CU_FILE_STREAMS_SUPPORTED = 2,
    CU_FILE_PARALLEL_IO_SUPPORTED = 3
} CUfileFeatureFlags_t;

/* Sizes in KiB. nvfs.major_version and minor_version are both 0 when storage cannot move
 * bytes into device memory directly (no peer-to-peer path): clients such as KvikIO read
 * that as "GPUDirect Storage unavailable". */
typedef struct CUfileDrvProps {
    struct {
        unsigned int major_version;
        unsigned int minor_version;
        size_t poll_thresh_size;
        size_t max_direct_io_size;
        unsigned int dstatusflags;
        unsigned int dcontrolflags;
    } nvfs;
    unsigned int fflags;
    unsigned int max_device_cache_size;
    unsigned int per_buffer_cache_size;
    unsigned int max_device_pinned_mem_size;
    unsigned int max_batch_io_size;
    unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

CUfileError_t cuFileDriverOpen(void);
CUfileError_t cuFileDriverClose_v2(void);
/* Both names are exported; sources written for cuFile call the _v2 one through this macro. */
#define cuFileDriverClose cuFileDriverClose_v2
long cuFileUseCount(void);
CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props);
CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size);
CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size);
CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size);
CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size);
/* 1000 * major + 10 * minor of the cuFile API this library implements */
CUfileError_t cuFileGetVersion(int *version);

/* ---- file handles ------------------------------------------------------ */

typedef enum CUfileFileHandleType {
    CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1,
    CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 = 2,
    CU_FILE_HANDLE_TYPE_USERSPACE_FS = 3
} CUfileFileHandleType;

struct sockaddr;
typedef struct sockaddr sockaddr_t;
typedef struct cufileRDMAInfo {
    int version;
    int desc_len;
    const char *desc_str;
} cufileRDMAInfo_t;

/* Callbacks of a user-space file system (CU_FILE_HANDLE_TYPE_USERSPACE_FS; not supported by Phoenix). */
typedef struct CUfileFSOps {
    const char *(*fs_type)(void *handle);
    int (*getRDMADeviceList)(void *handle, sockaddr_t **hostaddrs);
    int (*getRDMADevicePriority)(void *handle, char *, size_t, off_t, sockaddr_t *hostaddr);
    ssize_t (*read)(void *handle, char *, size_t, off_t, cufileRDMAInfo_t *);
    ssize_t (*write)(void *handle, const char *, size_t, off_t, cufileRDMAInfo_t *);
} CUfileFSOps_t;

typedef struct CUfileDescr {
    CUfileFileHandleType type;
    union {
        int fd;
        void *handle;
    } handle;
    const CUfileFSOps_t *fs_ops;
} CUfileDescr_t;

typedef void *CUfileHandle_t;

CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr);
void cuFileHandleDeregister(CUfileHandle_t fh);

/* ---- buffers ----------------------------------------------------------- */

#define CU_FILE_RDMA_REGISTER 1
#define CU_FILE_RDMA_RELAXED_ORDERING (1 << 1)

/* Device memory, or host memory (accepted as newer cuFile does). */
CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags);
CUfileError_t cuFileBufDeregister(const void *bufPtr_base);

/* ---- synchronous I/O --------------------------------------------------- */

/* Bytes moved (short only at end of file); -1 with errno for a file-system error; otherwise
 * the negated CUfileOpError. The buffer need not be registered nor aligned. */
ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size, off_t file_offset, off_t bufPtr_offset);
ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size, off_t file_offset, off_t bufPtr_offset);

/* ---- batches ----------------------------------------------------------- */

typedef enum CUfileOpcode { CUFILE_READ = 0, CUFILE_WRITE = 1 } CUfileOpcode_t;

typedef enum CUFILEStatus_enum {
    CUFILE_WAITING = 0x000001,
    CUFILE_PENDING = 0x000002,
    CUFILE_INVALID = 0x000004,
    CUFILE_CANCELED = 0x000008,
    CUFILE_COMPLETE = 0x0000010,
    CUFILE_TIMEOUT = 0x0000020,
    CUFILE_FAILED = 0x0000040
} CUfileStatus_t;

typedef enum cufileBatchMode { CUFILE_BATCH = 1 } CUfileBatchMode_t;

typedef struct CUfileIOParams {
    CUfileBatchMode_t mode;
    union {
        struct {
            void *devPtr_base;
            off_t file_offset;
            off_t devPtr_offset;
            size_t size;
        } batch;
    } u;
    CUfileHandle_t fh;
    CUfileOpcode_t opcode;
    void *cookie;
} CUfileIOParams_t;

/* ret: bytes moved for CUFILE_COMPLETE; a negative errno (as ssize_t) for CUFILE_FAILED. */
typedef struct CUfileIOEvents {
    void *cookie;
    CUfileStatus_t status;
    size_t ret;
} CUfileIOEvents_t;

typedef void *CUfileBatchHandle_t;

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr);
CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr, CUfileIOParams_t *iocbp, unsigned int flags);
/* Waits until min_nr requests have completed (or timeout, NULL = no limit), then reports up
 * to *nr of them, each once; *nr receives the count. */
CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr, unsigned *nr,
                                     CUfileIOEvents_t *iocbp, struct timespec *timeout);
CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp);
void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp);

/* ---- stream-ordered I/O ------------------------------------------------ */

/* cuFileStreamRegister flags: the values behind these pointers are final at enqueue. */
#define CU_FILE_STREAM_FIXED_BUF_OFFSET 1
#define CU_FILE_STREAM_FIXED_FILE_OFFSET 2
#define CU_FILE_STREAM_FIXED_FILE_SIZE 4
#define CU_FILE_STREAM_PAGE_ALIGNED_INPUTS 8

/* Queued on stream; *size_p, *file_offset_p and *bufPtr_offset_p are read when the stream
 * reaches the operation (unless the stream was registered with the FIXED_* flag for it);
 * *bytes_read_p receives the byte count, -1 for a file-system error, else the negated
 * CUfileOpError, as cuFileRead returns. */
CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
                              off_t *bufPtr_offset_p, ssize_t *bytes_read_p, CUstream stream);
CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p, off_t *file_offset_p,
                               off_t *bufPtr_offset_p, ssize_t *bytes_written_p, CUstream stream);
CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags);
CUfileError_t cuFileStreamDeregister(CUstream stream);

/* ---- parameters -------------------------------------------------------- */

typedef enum CUFileSizeTConfigParameter_t {
    CUFILE_PARAM_PROFILE_STATS,
    CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH,
    CUFILE_PARAM_EXECUTION_MAX_IO_THREADS,
    CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB,
    CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM,
    CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE,
    CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB,
    CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS
} CUFileSizeTConfigParameter_t;

typedef enum CUFileBoolConfigParameter_t {
    CUFILE_PARAM_PROPERTIES_USE_POLL_MODE,
    CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE,
    CUFILE_PARAM_FORCE_COMPAT_MODE,
    CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE,
    CUFILE_PARAM_EXECUTION_PARALLEL_IO,
    CUFILE_PARAM_PROFILE_NVTX,
    CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY,
    CUFILE_PARAM_USE_PCIP2PDMA,
    CUFILE_PARAM_PREFER_IO_URING,
    CUFILE_PARAM_FORCE_ODIRECT_MODE,
    CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION,
    CUFILE_PARAM_STREAM_MEMOPS_BYPASS
} CUFileBoolConfigParameter_t;

typedef enum CUFileStringConfigParameter_t {
    CUFILE_PARAM_LOGGING_LEVEL,
    CUFILE_PARAM_ENV_LOGFILE_PATH,
    CUFILE_PARAM_LOG_DIR
} CUFileStringConfigParameter_t;

/* Set*: before the driver opens (explicitly or on first use), else CU_FILE_DRIVER_ALREADY_OPEN;
 * a parameter Phoenix does not honour: CU_FILE_INVALID_VALUE. */
CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t *value);
CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value);
CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param, char *desc_str, int len);
CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value);
CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value);
CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param, const char *desc_str);
/* the range cuFileSetParameterSizeT accepts for param (cuFile 1.15) */
CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param, size_t *min_value, size_t *max_value);

/* ---- statistics (cuFile 1.15; the layouts of CUDA 12.9 to 13.0) --------- */

typedef struct CUfileOpCounter {
    uint64_t ok;
    uint64_t err;
} CUfileOpCounter_t;

/* Phoenix fills the read/write counters and bytes (synchronous and stream-ordered transfers)
 * and the handle and buffer (de)registration counters; the rest stays 0. */
typedef struct CUfileStatsLevel1 {
    CUfileOpCounter_t read_ops, write_ops;
    CUfileOpCounter_t hdl_register_ops, hdl_deregister_ops;
    CUfileOpCounter_t buf_register_ops, buf_deregister_ops;
    uint64_t read_bytes, write_bytes;
    uint64_t read_bw_bytes_per_sec, write_bw_bytes_per_sec;
    uint64_t read_lat_avg_us, write_lat_avg_us;
    uint64_t read_ops_per_sec, write_ops_per_sec;
    uint64_t read_lat_sum_us, write_lat_sum_us;
    CUfileOpCounter_t batch_submit_ops, batch_complete_ops, batch_setup_ops, batch_cancel_ops, batch_destroy_ops;
    CUfileOpCounter_t batch_enqueued_ops, batch_posix_enqueued_ops, batch_processed_ops, batch_posix_processed_ops;
    CUfileOpCounter_t batch_nvfs_submit_ops, batch_p2p_submit_ops, batch_aio_submit_ops, batch_iouring_submit_ops;
    CUfileOpCounter_t batch_mixed_io_submit_ops, batch_total_submit_ops;
    uint64_t batch_read_bytes, batch_write_bytes, batch_read_bw_bytes, batch_write_bw_bytes;
    uint64_t batch_submit_lat_avg_us, batch_completion_lat_avg_us;
    uint64_t batch_submit_ops_per_sec, batch_complete_ops_per_sec;
    uint64_t batch_submit_lat_sum_us, batch_completion_lat_sum_us;
    uint64_t last_batch_read_bytes, last_batch_write_bytes;
} CUfileStatsLevel1_t;

typedef struct CUfileStatsLevel2 {
    CUfileStatsLevel1_t basic;
    uint64_t read_size_kb_hist[32];
    uint64_t write_size_kb_hist[32];
} CUfileStatsLevel2_t;

typedef struct CUfilePerGpuStats {
    char uuid[16];
    uint64_t read_bytes, read_bw_bytes_per_sec, read_utilization, read_duration_us;
    uint64_t n_total_reads, n_p2p_reads, n_nvfs_reads, n_posix_reads, n_unaligned_reads, n_dr_reads;
    uint64_t n_sparse_regions, n_inline_regions, n_reads_err;
    uint64_t writes_bytes, write_bw_bytes_per_sec, write_utilization, write_duration_us;
    uint64_t n_total_writes, n_p2p_writes, n_nvfs_writes, n_posix_writes, n_unaligned_writes, n_dr_writes;
    uint64_t n_writes_err;
    uint64_t n_mmap, n_mmap_ok, n_mmap_err, n_mmap_free;
    uint64_t reg_bytes;
} CUfilePerGpuStats_t;

typedef struct CUfileStatsLevel3 {
    CUfileStatsLevel2_t detailed;
    uint32_t num_gpus;
    CUfilePerGpuStats_t per_gpu_stats[16];
} CUfileStatsLevel3_t;

/* level 0 (off) to 3; also the configuration's profile.cufile_stats. Phoenix collects level 1
 * only: at levels 2 and 3 it collects level 1, and GetStatsL2/L3 answer CU_FILE_INVALID_VALUE
 * ("that level is not enabled"). */
CUfileError_t cuFileSetStatsLevel(int level);
CUfileError_t cuFileGetStatsLevel(int *level);
/* with the driver open (else CU_FILE_DRIVER_NOT_INITIALIZED); counting needs a level >= 1 */
CUfileError_t cuFileStatsStart(void);
CUfileError_t cuFileStatsStop(void);
CUfileError_t cuFileStatsReset(void);
/* CU_FILE_INVALID_VALUE for NULL or a level not enabled */
CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats);
CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats);
CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats);

#ifdef __cplusplus
}
#endif
#endif
