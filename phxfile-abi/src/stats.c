/* cuFile's statistics API (1.15): level 1 counters of what this library did.
 * Levels 2 (size histograms) and 3 (per-GPU breakdown) are not collected: their
 * bucket and per-path semantics are not published, and numbers that only look
 * like NVIDIA's would mislead a tuning session more than a clear "not enabled".
 * Counting costs one relaxed load per call while statistics are off. */
#include "shim.h"
#include <string.h>

static atomic_int collecting; /* between cuFileStatsStart (at level >= 1) and Stop */
static struct {
    _Atomic uint64_t ok[CF_STAT_N], err[CF_STAT_N];
    _Atomic uint64_t read_bytes, write_bytes;
} counters;
/* An op and its bytes are two additions: counting holds this shared (counters stay atomic,
 * as many threads count at once), a reset or a snapshot exclusive, so neither lands between
 * the two (a reset there left bytes with no op, for good). Writers first: transfers that
 * never pause must not starve a monitoring thread's GetStatsL1. */
static pthread_rwlock_t counters_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

void cf_stats_count(int which, int ok, uint64_t bytes)
{
    if (!atomic_load_explicit(&collecting, memory_order_relaxed)) return;
    pthread_rwlock_rdlock(&counters_lock);
    if (!ok) {
        atomic_fetch_add_explicit(&counters.err[which], 1, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&counters.ok[which], 1, memory_order_relaxed);
        if (which == CF_STAT_READ) atomic_fetch_add_explicit(&counters.read_bytes, bytes, memory_order_relaxed);
        if (which == CF_STAT_WRITE) atomic_fetch_add_explicit(&counters.write_bytes, bytes, memory_order_relaxed);
    }
    pthread_rwlock_unlock(&counters_lock);
}

static void reset_counters(void)
{
    pthread_rwlock_wrlock(&counters_lock);
    for (int i = 0; i < CF_STAT_N; i++) {
        atomic_store(&counters.ok[i], 0);
        atomic_store(&counters.err[i], 0);
    }
    atomic_store(&counters.read_bytes, 0);
    atomic_store(&counters.write_bytes, 0);
    pthread_rwlock_unlock(&counters_lock);
}

/* cuFile keeps the counters until a reset or the driver's close */
void cf_stats_close(void)
{
    atomic_store(&collecting, 0);
    reset_counters();
}

void cf_stats_collect(int on) { atomic_store(&collecting, on); }

CF_API CUfileError_t cuFileStatsStart(void)
{
    /* the level is taken now, as cuFile documents ("must be called before cuFileStatsStart") */
    int level = cf_stats_switch(1);
    if (level < 0) return cf_status(CU_FILE_DRIVER_NOT_INITIALIZED);
    if (level < 1) cf_log(CF_LOG_WARN, "cuFileStatsStart: statistics level is 0 (cuFileSetStatsLevel or profile.cufile_stats); nothing is counted");
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileStatsStop(void)
{
    return cf_status(cf_stats_switch(0) < 0 ? CU_FILE_DRIVER_NOT_INITIALIZED : CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileStatsReset(void)
{
    if (!cf_driver_is_open()) return cf_status(CU_FILE_DRIVER_NOT_INITIALIZED);
    reset_counters();
    return cf_status(CU_FILE_SUCCESS);
}

static CUfileOpCounter_t counter(int which)
{
    return (CUfileOpCounter_t){atomic_load(&counters.ok[which]), atomic_load(&counters.err[which])};
}

CF_API CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats)
{
    if (!stats) return cf_status(CU_FILE_INVALID_VALUE);
    if (!cf_driver_is_open()) return cf_status(CU_FILE_DRIVER_NOT_INITIALIZED);
    if (cf_stats_level() < 1) return cf_status(CU_FILE_INVALID_VALUE);
    memset(stats, 0, sizeof *stats);
    pthread_rwlock_wrlock(&counters_lock);
    stats->read_ops = counter(CF_STAT_READ);
    stats->write_ops = counter(CF_STAT_WRITE);
    stats->hdl_register_ops = counter(CF_STAT_HDL_REG);
    stats->hdl_deregister_ops = counter(CF_STAT_HDL_DEREG);
    stats->buf_register_ops = counter(CF_STAT_BUF_REG);
    stats->buf_deregister_ops = counter(CF_STAT_BUF_DEREG);
    stats->read_bytes = atomic_load(&counters.read_bytes);
    stats->write_bytes = atomic_load(&counters.write_bytes);
    pthread_rwlock_unlock(&counters_lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats)
{
    if (!stats) return cf_status(CU_FILE_INVALID_VALUE);
    if (!cf_driver_is_open()) return cf_status(CU_FILE_DRIVER_NOT_INITIALIZED);
    return cf_status(CU_FILE_INVALID_VALUE); /* never enabled: see the top of this file */
}

CF_API CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats)
{
    if (!stats) return cf_status(CU_FILE_INVALID_VALUE);
    if (!cf_driver_is_open()) return cf_status(CU_FILE_DRIVER_NOT_INITIALIZED);
    return cf_status(CU_FILE_INVALID_VALUE);
}
