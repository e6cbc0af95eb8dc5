/* Prints the ABI as a header declares it: sizes, field offsets and enum values.
 * Compiled once against NVIDIA's cufile.h and once against Phoenix's; the two
 * outputs must be identical (scripts/gpu/cufile.sh diffs them). */
#include <stddef.h>
#include <stdio.h>
#include <cufile.h>

#define SZ(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f))
#define VAL(e) printf("%s %ld\n", #e, (long)(e))

int main(void)
{
    SZ(CUfileError_t); OFF(CUfileError_t, err); OFF(CUfileError_t, cu_err);
    SZ(CUfileDescr_t); OFF(CUfileDescr_t, type); OFF(CUfileDescr_t, handle); OFF(CUfileDescr_t, fs_ops);
    SZ(CUfileFSOps_t);
    SZ(CUfileDrvProps_t); OFF(CUfileDrvProps_t, nvfs.major_version); OFF(CUfileDrvProps_t, nvfs.minor_version);
    OFF(CUfileDrvProps_t, nvfs.poll_thresh_size); OFF(CUfileDrvProps_t, nvfs.max_direct_io_size);
    OFF(CUfileDrvProps_t, nvfs.dstatusflags); OFF(CUfileDrvProps_t, nvfs.dcontrolflags); OFF(CUfileDrvProps_t, fflags);
    OFF(CUfileDrvProps_t, max_device_cache_size); OFF(CUfileDrvProps_t, per_buffer_cache_size);
    OFF(CUfileDrvProps_t, max_device_pinned_mem_size); OFF(CUfileDrvProps_t, max_batch_io_size);
    OFF(CUfileDrvProps_t, max_batch_io_timeout_msecs);
    SZ(CUfileIOParams_t); OFF(CUfileIOParams_t, mode); OFF(CUfileIOParams_t, u.batch.devPtr_base);
    OFF(CUfileIOParams_t, u.batch.file_offset); OFF(CUfileIOParams_t, u.batch.devPtr_offset); OFF(CUfileIOParams_t, u.batch.size);
    OFF(CUfileIOParams_t, fh); OFF(CUfileIOParams_t, opcode); OFF(CUfileIOParams_t, cookie);
    SZ(CUfileIOEvents_t); OFF(CUfileIOEvents_t, cookie); OFF(CUfileIOEvents_t, status); OFF(CUfileIOEvents_t, ret);
    SZ(CUfileHandle_t); SZ(CUfileBatchHandle_t); SZ(CUfileOpError); SZ(CUfileStatus_t); SZ(CUfileOpcode_t);
    VAL(CUFILEOP_BASE_ERR);
    VAL(CU_FILE_SUCCESS); VAL(CU_FILE_DRIVER_NOT_INITIALIZED); VAL(CU_FILE_DRIVER_INVALID_PROPS);
    VAL(CU_FILE_DRIVER_UNSUPPORTED_LIMIT); VAL(CU_FILE_DRIVER_VERSION_MISMATCH); VAL(CU_FILE_DRIVER_VERSION_READ_ERROR);
    VAL(CU_FILE_DRIVER_CLOSING); VAL(CU_FILE_PLATFORM_NOT_SUPPORTED); VAL(CU_FILE_IO_NOT_SUPPORTED);
    VAL(CU_FILE_DEVICE_NOT_SUPPORTED); VAL(CU_FILE_NVFS_DRIVER_ERROR); VAL(CU_FILE_CUDA_DRIVER_ERROR);
    VAL(CU_FILE_CUDA_POINTER_INVALID); VAL(CU_FILE_CUDA_MEMORY_TYPE_INVALID); VAL(CU_FILE_CUDA_POINTER_RANGE_ERROR);
    VAL(CU_FILE_CUDA_CONTEXT_MISMATCH); VAL(CU_FILE_INVALID_MAPPING_SIZE); VAL(CU_FILE_INVALID_MAPPING_RANGE);
    VAL(CU_FILE_INVALID_FILE_TYPE); VAL(CU_FILE_INVALID_FILE_OPEN_FLAG); VAL(CU_FILE_DIO_NOT_SET);
    VAL(CU_FILE_INVALID_VALUE); VAL(CU_FILE_MEMORY_ALREADY_REGISTERED); VAL(CU_FILE_MEMORY_NOT_REGISTERED);
    VAL(CU_FILE_PERMISSION_DENIED); VAL(CU_FILE_DRIVER_ALREADY_OPEN); VAL(CU_FILE_HANDLE_NOT_REGISTERED);
    VAL(CU_FILE_HANDLE_ALREADY_REGISTERED); VAL(CU_FILE_DEVICE_NOT_FOUND); VAL(CU_FILE_INTERNAL_ERROR);
    VAL(CU_FILE_GETNEWFD_FAILED); VAL(CU_FILE_NVFS_SETUP_ERROR); VAL(CU_FILE_IO_DISABLED);
    VAL(CU_FILE_BATCH_SUBMIT_FAILED); VAL(CU_FILE_GPU_MEMORY_PINNING_FAILED); VAL(CU_FILE_BATCH_FULL);
    VAL(CU_FILE_ASYNC_NOT_SUPPORTED);
    VAL(CU_FILE_HANDLE_TYPE_OPAQUE_FD); VAL(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32); VAL(CU_FILE_HANDLE_TYPE_USERSPACE_FS);
    VAL(CUFILE_READ); VAL(CUFILE_WRITE); VAL(CUFILE_BATCH);
    VAL(CUFILE_WAITING); VAL(CUFILE_PENDING); VAL(CUFILE_INVALID); VAL(CUFILE_CANCELED); VAL(CUFILE_COMPLETE);
    VAL(CUFILE_TIMEOUT); VAL(CUFILE_FAILED);
    VAL(CU_FILE_RDMA_REGISTER); VAL(CU_FILE_RDMA_RELAXED_ORDERING);
    VAL(CU_FILE_STREAM_FIXED_BUF_OFFSET); VAL(CU_FILE_STREAM_FIXED_FILE_OFFSET); VAL(CU_FILE_STREAM_FIXED_FILE_SIZE);
    VAL(CU_FILE_STREAM_PAGE_ALIGNED_INPUTS);
    VAL(CU_FILE_USE_POLL_MODE); VAL(CU_FILE_ALLOW_COMPAT_MODE);
    VAL(CU_FILE_DYN_ROUTING_SUPPORTED); VAL(CU_FILE_BATCH_IO_SUPPORTED); VAL(CU_FILE_STREAMS_SUPPORTED);
    VAL(CU_FILE_PARALLEL_IO_SUPPORTED);
    VAL(CU_FILE_LUSTRE_SUPPORTED); VAL(CU_FILE_NVME_SUPPORTED); VAL(CU_FILE_BEEGFS_SUPPORTED);
    VAL(CU_FILE_NVME_P2P_SUPPORTED); VAL(CU_FILE_SCATEFS_SUPPORTED);
    VAL(CUFILE_PARAM_PROFILE_STATS); VAL(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS);
    VAL(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB); VAL(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB);
    VAL(CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB); VAL(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB);
    VAL(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE); VAL(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB);
    VAL(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS);
    VAL(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE); VAL(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE);
    VAL(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY);
#ifndef PHX_LAYOUT_CORE /* names a header older than the newest cuFile may lack */
    VAL(CUFILE_PARAM_PREFER_IO_URING); VAL(CUFILE_PARAM_STREAM_MEMOPS_BYPASS);
    /* the statistics API (CUDA 12.9+) */
    SZ(CUfileOpCounter_t); OFF(CUfileOpCounter_t, err);
    SZ(CUfileStatsLevel1_t); OFF(CUfileStatsLevel1_t, write_ops); OFF(CUfileStatsLevel1_t, buf_deregister_ops);
    OFF(CUfileStatsLevel1_t, read_bytes); OFF(CUfileStatsLevel1_t, write_lat_sum_us);
    OFF(CUfileStatsLevel1_t, batch_submit_ops); OFF(CUfileStatsLevel1_t, batch_total_submit_ops);
    OFF(CUfileStatsLevel1_t, batch_read_bytes); OFF(CUfileStatsLevel1_t, last_batch_write_bytes);
    SZ(CUfileStatsLevel2_t); OFF(CUfileStatsLevel2_t, read_size_kb_hist); OFF(CUfileStatsLevel2_t, write_size_kb_hist);
    SZ(CUfilePerGpuStats_t); OFF(CUfilePerGpuStats_t, read_bytes); OFF(CUfilePerGpuStats_t, writes_bytes);
    OFF(CUfilePerGpuStats_t, reg_bytes);
    SZ(CUfileStatsLevel3_t); OFF(CUfileStatsLevel3_t, num_gpus); OFF(CUfileStatsLevel3_t, per_gpu_stats);
#endif
    VAL(CUFILE_PARAM_LOGGING_LEVEL); VAL(CUFILE_PARAM_ENV_LOGFILE_PATH); VAL(CUFILE_PARAM_LOG_DIR);
    VAL(IS_CUFILE_ERR(-5022)); VAL(IS_CUFILE_ERR(-5)); VAL(IS_CUFILE_ERR(5001));
    return 0;
}
