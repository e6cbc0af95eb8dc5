/* Internals of the cuFile-compatible library: one process-wide driver state
 * over libphoenix. Files: driver.c (open/close, properties, parameters,
 * configuration), json.c (cufile.json reader), handles.c (file handles),
 * buffers.c (buffer registrations and where an I/O's bytes go), io.c (sync
 * and stream-ordered I/O), batch.c (the batch API), phxfile.c (upstream's
 * phxFile* ABI). */
#ifndef PHX_CUFILE_SHIM_H
#define PHX_CUFILE_SHIM_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "cufile.h"
#include "phoenix.h"

#define CF_API __attribute__((visibility("default")))
#define CF_MAX_DEVICES 64

static inline CUfileError_t cf_status(CUfileOpError e) { return (CUfileError_t){e, 0}; }
/* libphoenix's -errno as a CUfileOpError */
CUfileOpError cf_from_errno(int neg);

/* ---- driver.c ---- */
enum { CF_LOG_ERROR, CF_LOG_WARN, CF_LOG_INFO, CF_LOG_DEBUG };
void cf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Opens the driver on first use (PyTorch never calls cuFileDriverOpen): 0 or a CUfileOpError. */
int cf_ensure_open(void);
/* Set in a fork() child of a process that had opened the driver: nothing reaches libphoenix
 * there. cf_fork_refused says so once and returns CU_FILE_DRIVER_NOT_INITIALIZED. */
extern atomic_int cf_forked;
int cf_fork_refused(void);
/* Opens libphoenix's device dev once per driver session: 0 or -errno. */
int cf_device_use(int dev);
/* The registration cap (bytes) and the batch size cap, as configured. */
size_t cf_pinned_cap(void);
unsigned cf_max_batch(void);
/* JSON reader (json.c): calls fn for each scalar with its dotted path ("properties.io_batchsize");
 * kind 's' string, 'n' number, 'b' boolean. 0, or -1 with a message in err. */
typedef void (*cf_json_fn)(const char *path, char kind, const char *text, double num, int b, void *arg);
int cf_json_parse(const char *text, cf_json_fn fn, void *arg, char *err, size_t errlen);

/* ---- handles.c ---- */
/* The fd behind a live handle: 0 or CU_FILE_HANDLE_NOT_REGISTERED. */
int cf_handle_fd(CUfileHandle_t fh, int *fd);
void cf_handles_reset(void);

/* ---- buffers.c ---- */
enum { CF_OWNER_CUFILE = 0, CF_OWNER_PHXFILE = 1 };
/* 0, or a CUfileOpError (owner cuFile) / -errno (owner phxFile) */
int cf_buf_register(const void *base, size_t len, int flags, int owner);
int cf_buf_deregister(const void *base, int owner);
/* Drops every registration of owner (-1: all). */
void cf_bufs_reset(int owner);
/* Whether any registration on device dev remains. */
int cf_buf_find_dev(int dev);
/* The device a registration covering [p, p+len) belongs to: 1 (found, *dev set) or 0. */
int cf_buf_find(const void *p, size_t len, int *dev);

/* Where one transfer's bytes go: a registered range, host memory, or unregistered device
 * memory registered with libphoenix for the transfer alone (temp); bounce when even that
 * is impossible (the range overlaps another registration) and the shim must copy itself. */
typedef struct {
    int dev;
    int temp;
    int bounce;
    void *buf;       /* what libphoenix gets, with off */
    off_t off;
    size_t len;
} cf_target_t;
/* 0 or a CUfileOpError */
int cf_target_get(void *base, off_t off, size_t len, cf_target_t *t);
void cf_target_put(cf_target_t *t);
/* Transfers through a pinned host buffer of the shim's own (the bounce case). */
ssize_t cf_bounce_io(int fd, int dev, void *dst, size_t len, off_t foff, int is_write);
/* The device whose stream s is (opening devices until one claims it): >= 0 or -errno. */
int cf_stream_device(void *s);

/* An I/O whose file end (offset + size) or buffer end (base + offset + size) does not fit
 * in 64 bits: refused before any arithmetic on it (it overflowed further down). Offsets are
 * known to be >= 0 and size <= SSIZE_MAX. */
static inline int cf_range_bad(const void *base, off_t foff, off_t boff, size_t size)
{
    return (uint64_t)foff + size > (uint64_t)INT64_MAX || (uint64_t)boff + size > (uint64_t)INT64_MAX ||
           (uintptr_t)base + (uint64_t)boff + size < (uintptr_t)base;
}

/* ---- stats.c ---- */
enum { CF_STAT_READ, CF_STAT_WRITE, CF_STAT_HDL_REG, CF_STAT_HDL_DEREG, CF_STAT_BUF_REG, CF_STAT_BUF_DEREG, CF_STAT_N };
/* One cuFile call's outcome for the level 1 statistics (bytes: reads and writes). */
void cf_stats_count(int which, int ok, uint64_t bytes);
void cf_stats_close(void);
/* Sets whether counting runs; driver.c calls it under its lock (see cf_stats_switch). */
void cf_stats_collect(int on);
/* cuFileStatsStart (start: collect if the level is >= 1) / Stop as one step against the
 * driver's close: the level (0..3), or -1 when the driver is not open. */
int cf_stats_switch(int start);
/* driver.c: whether the driver is open; the statistics level (0..3) */
int cf_driver_is_open(void);
int cf_stats_level(void);

/* ---- io.c ---- */
void cf_streams_reset(void);
/* A stream-ordered transfer (late: PHXFS_STREAM_LATE_*): 0 or a CUfileOpError. xlate turns
 * the -errno result into the caller's convention where it is stored (NULL: -errno, phxFile*'s);
 * *stored says whether it ran (exactly once) for this call. */
int cf_stream_io(int fd, void *base, size_t *size_p, off_t *foff_p, off_t *boff_p, ssize_t *done_p, void *stream,
                 unsigned late, int is_write, phxfs_stream_result_fn xlate, int *stored);
/* cuFile's value for *bytes_read_p / *bytes_written_p from libphoenix's bytes or -errno
 * (counted in the statistics as a read or a write). */
ssize_t cf_async_read_result(ssize_t n);
ssize_t cf_async_write_result(ssize_t n);

#endif
