/* The driver: open count, configuration (cufile.json, Set* calls, the
 * parameter API) and properties. Opening is cheap on purpose: it only reads
 * the configuration; libphoenix starts its workers and opens a device when the
 * first buffer or transfer needs one. */
#include "shim.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dlfcn.h>

/* cuFile 1.15's interface */
#define CF_VERSION 1150

static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static long use_count;        /* opens not yet closed; an implicit open counts one */
static int implicit_open;     /* the one reference is the implicit open's */
static atomic_int open_flag;  /* fast path of cf_ensure_open */
static atomic_int exiting;    /* set at process exit: close then touches nothing */
static int atexit_done, atfork_done;
/* fork(): libphoenix's workers and completion thread stay in the parent, so a child that
 * transferred through them would wait forever for threads it does not have (and CUDA does
 * not survive fork either). A child of a process that had opened the driver therefore gets
 * CU_FILE_DRIVER_NOT_INITIALIZED from every call that would reach libphoenix, at once. */
atomic_int cf_forked;
static atomic_int ever_opened;
static atomic_int fork_said;
static void on_fork_child(void)
{
    /* only async-signal-safe work here: other threads' locks may be held forever */
    if (atomic_load(&ever_opened)) atomic_store(&cf_forked, 1);
}

int cf_fork_refused(void)
{
    if (!atomic_exchange(&fork_said, 1))
        cf_log(CF_LOG_ERROR, "this process was forked from one that had opened the cuFile driver; its I/O threads stayed "
                             "in the parent, so cuFile calls fail here (open the driver after fork(), or exec)");
    return CU_FILE_DRIVER_NOT_INITIALIZED;
}
static atomic_int dev_opened[CF_MAX_DEVICES];
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- parameters ---- */
#define N_SIZET 12
#define N_BOOL 12
#define N_STRING 3
static const char *sizet_names[N_SIZET] = {"profile.cufile_stats", "execution.max_io_queue_depth", "execution.max_io_threads",
    "execution.min_io_threshold_size_kb", "execution.max_request_parallelism", "properties.max_direct_io_size_kb",
    "properties.max_device_cache_size_kb", "properties.per_buffer_cache_size_kb", "properties.max_device_pinned_mem_size_kb",
    "properties.io_batchsize", "properties.poll_mode_max_size_kb", "properties.batch_io_timeout_ms"};
static const char *bool_names[N_BOOL] = {"properties.use_poll_mode", "properties.allow_compat_mode", "properties.force_compat_mode",
    "fs.misc.api_check_aggressive", "execution.parallel_io", "profile.nvtx", "properties.allow_system_memory",
    "properties.use_pci_p2pdma", "properties.prefer_io_uring", "properties.force_odirect_mode",
    "properties.skip_topology_detection", "properties.stream_memops_bypass"};
/* What Phoenix acts on. The rest are staged and reported as cuFile does (from cufile.json or
 * Set*), with no effect: clients round-trip every parameter (cuda-python's tests get, set,
 * read back and restore each one before the driver opens) and treat an error as a failure. */
static const int sizet_ok[N_SIZET] = {0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1};
static const int bool_ok[N_BOOL] = {1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0};
static const int string_ok[N_STRING] = {1, 0, 0};

static struct {
    int loaded;
    size_t sz[N_SIZET];
    bool bl[N_BOOL];
    char str[N_STRING][4096];   /* paths, for ENV_LOGFILE_PATH and LOG_DIR */
} cfg;
static atomic_int log_level; /* CF_LOG_ERROR (0) until the configuration says otherwise */
static char config_used[256] = "built-in defaults";
/* What the API set (SetParameter*, DriverSet*, SetPollMode). cufile.json is read afresh at
 * every open, as NVIDIA's library reads it there, so a process that edits the file or points
 * CUFILE_ENV_PATH_JSON elsewhere between sessions gets the new values; a value the program
 * set itself outranks the file, so each read puts these back on top, and a Set before an open
 * (or in an earlier session) is never undone by that open's read. */
static struct {
    uint32_t sz_mask, bl_mask, str_mask;
    size_t sz[N_SIZET];
    bool bl[N_BOOL];
} api_set;
static char api_str[N_STRING][sizeof cfg.str[0]];

static int level_of(const char *s)
{
    /* NOTICE is the most severe of the levels cufile.json documents (NOTICE, ERROR, WARN,
     * INFO, DEBUG, TRACE); the shim's quietest level says errors only */
    if (!strcasecmp(s, "error") || !strcasecmp(s, "notice")) return CF_LOG_ERROR;
    if (!strcasecmp(s, "warn")) return CF_LOG_WARN;
    if (!strcasecmp(s, "info")) return CF_LOG_INFO;
    if (!strcasecmp(s, "debug") || !strcasecmp(s, "trace")) return CF_LOG_DEBUG;
    return -1;
}

void cf_log(int level, const char *fmt, ...)
{
    if (level > atomic_load_explicit(&log_level, memory_order_relaxed)) return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "phxfile: %s\n", msg);
}

CUfileOpError cf_from_errno(int neg)
{
    switch (-neg) {
    case 0: return CU_FILE_SUCCESS;
    case EINVAL: case EBADF: case ERANGE: case EOVERFLOW: return CU_FILE_INVALID_VALUE;
    case ENOMEM: return CU_FILE_NOMEM_ERROR;
    case ENODEV: case ENXIO: return CU_FILE_DEVICE_NOT_FOUND;
    case EFAULT: return CU_FILE_MEMORY_NOT_REGISTERED;
    case EIO: return CU_FILE_IO_ERROR;
    case EPERM: case EACCES: return CU_FILE_PERMISSION_DENIED;
    case EOPNOTSUPP: return CU_FILE_IO_NOT_SUPPORTED;
    default: return CU_FILE_INTERNAL_ERROR;
    }
}

/* libphoenix's values for what it owns (pool sizes, workers), so an unconfigured driver
 * reports what really runs */
static size_t phx_kb(const char *key, size_t unit_kb)
{
    char buf[32];
    if (phxfs_get_config(key, buf, sizeof buf) < 0) return 0;
    return (size_t)strtoull(buf, NULL, 10) * unit_kb;
}

/* The defaults, then the JSON file, then what the API set. Under drv_lock. */
static void apply_json(const char *path, char kind, const char *text, double num, int b, void *arg);
static int push_sizet(int p, size_t v, int from_file);
static int push_bool(int p, bool v, int from_file);
static void read_file_locked(void);

static void load_config_locked(void)
{
    if (cfg.loaded) return;
    cfg.loaded = 1;
    /* a re-read starts from nothing: a key the previous file had and this one lacks is back
     * at its default */
    memset(cfg.sz, 0, sizeof cfg.sz);
    memset(cfg.bl, 0, sizeof cfg.bl);
    memset(cfg.str, 0, sizeof cfg.str);
    atomic_store(&log_level, CF_LOG_ERROR);
    snprintf(config_used, sizeof config_used, "built-in defaults");
    read_file_locked();
    for (int i = 0; i < N_SIZET; i++)
        if (api_set.sz_mask & (1u << i)) {
            push_sizet(i, api_set.sz[i], 0); /* accepted when it was set: only "busy" can come back */
            cfg.sz[i] = api_set.sz[i];
        }
    for (int i = 0; i < N_BOOL; i++)
        if (api_set.bl_mask & (1u << i)) {
            push_bool(i, api_set.bl[i], 0);
            cfg.bl[i] = api_set.bl[i];
        }
    for (int i = 0; i < N_STRING; i++)
        if (api_set.str_mask & (1u << i)) {
            /* same-sized arrays, each NUL-terminated: a plain copy (snprintf here trips
             * -Wformat-truncation in -O3 builds, which cannot see that i stays in range) */
            memcpy(cfg.str[i], api_str[i], sizeof cfg.str[i]);
            if (i == CUFILE_PARAM_LOGGING_LEVEL) atomic_store(&log_level, level_of(api_str[i]));
        }
}

/* What the shim pushes into libphoenix, and libphoenix's own value of each (its default or
 * PHX_*) taken before the first push. A re-read puts back those the shim changed and nobody
 * changed since: otherwise a key an earlier session's file had and this one's lacks kept
 * acting (the per-syscall cap at once; pool sizes while libphoenix has not started) while
 * GetParameter reported the default. Once libphoenix runs the pool keys answer EBUSY and
 * keep what runs, which is what is reported. */
#define N_PUSHED 5
static const char *pushed_keys[N_PUSHED] = {"workers", "max_io_bytes", "pinned_mb", "slot_kb", "engine"};
static char pushed_base[N_PUSHED][32], pushed_val[N_PUSHED][32];

static int shim_set_config(const char *key, const char *val)
{
    int rc = phxfs_set_config(key, val);
    for (int k = 0; k < N_PUSHED && !rc; k++)
        if (!strcmp(key, pushed_keys[k])) phxfs_get_config(key, pushed_val[k], sizeof pushed_val[k]);
    return rc;
}

static void restore_pushed_locked(void)
{
    for (int k = 0; k < N_PUSHED; k++) {
        char cur[32] = "";
        if (!pushed_base[k][0]) {
            phxfs_get_config(pushed_keys[k], pushed_base[k], sizeof pushed_base[k]);
            continue;
        }
        if (pushed_val[k][0] && phxfs_get_config(pushed_keys[k], cur, sizeof cur) > 0 && !strcmp(cur, pushed_val[k]) &&
            strcmp(cur, pushed_base[k]) && phxfs_set_config(pushed_keys[k], pushed_base[k]) == 0)
            pushed_val[k][0] = 0;
    }
}

static void read_file_locked(void)
{
    restore_pushed_locked();
    cfg.sz[1] = 128;                    /* cuFile's defaults for what Phoenix only reports */
    cfg.sz[3] = 8192;
    cfg.sz[4] = 4;
    cfg.bl[4] = true;
    cfg.sz[2] = phx_kb("workers", 1);
    cfg.sz[5] = 16384;                  /* cuFile's default; also the per-syscall cap below */
    cfg.sz[6] = phx_kb("pinned_mb", 1024);
    cfg.sz[7] = phx_kb("slot_kb", 1);
    cfg.sz[8] = (size_t)UINT_MAX;       /* registration costs no pinned memory in bounce mode */
    cfg.sz[9] = 128;
    cfg.sz[10] = 4;
    cfg.sz[11] = 0;
    cfg.bl[1] = true;                   /* every path is what cuFile calls compatibility mode */
    cfg.bl[6] = true;                   /* host memory works everywhere */
    char eng[16] = "";
    phxfs_get_config("engine", eng, sizeof eng);
    cfg.bl[8] = strcmp(eng, "uring") == 0;
    snprintf(cfg.str[0], sizeof cfg.str[0], "ERROR");
    const char *logfile = getenv("CUFILE_LOGFILE_PATH");
    if (logfile) snprintf(cfg.str[1], sizeof cfg.str[1], "%s", logfile);
    const char *env = getenv("CUFILE_ENV_PATH_JSON");
    const char *path = env && *env ? env : "/etc/cufile.json";
    /* CUFILE_LOGGING_LEVEL, as NVIDIA's library reads it, outranks the file's logging.level */
    const char *lv = getenv("CUFILE_LOGGING_LEVEL");
    FILE *f = fopen(path, "r");
    if (!f) {
        /* reported by GetParameterString(LOGGING_LEVEL) as in effect, file or not */
        if (lv && level_of(lv) >= 0) {
            atomic_store(&log_level, level_of(lv));
            snprintf(cfg.str[0], sizeof cfg.str[0], "%s", lv);
        }
        /* no file is the normal case outside a GDS installation; a named one that is missing is not */
        if (env && *env) fprintf(stderr, "phxfile: cannot read CUFILE_ENV_PATH_JSON=%s: %s; using defaults\n", path, strerror(errno));
        return;
    }
    char *text = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *t = realloc(text, cap = cap ? cap * 2 : 16384);
            if (!t) { free(text); fclose(f); return; }
            text = t;
        }
        size_t got = fread(text + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0 || n > (1u << 20)) break;
    }
    fclose(f);
    text[n] = 0;
    char err[160];
    /* checked whole before anything is applied: a broken file changes nothing */
    if (cf_json_parse(text, NULL, NULL, err, sizeof err))
        fprintf(stderr, "phxfile: ignoring %s: %s\n", path, err);
    else {
        cf_json_parse(text, apply_json, NULL, err, sizeof err);
        snprintf(config_used, sizeof config_used, "%s", path);
    }
    free(text);
    if (lv && level_of(lv) >= 0) {
        atomic_store(&log_level, level_of(lv));
        snprintf(cfg.str[0], sizeof cfg.str[0], "%s", lv);
    }
}

/* Pushes one honoured value into libphoenix; 0 or a CUfileOpError. PHX_* in the environment
 * outranks the cuFile configuration for the keys they share. */
static int push_sizet(int p, size_t v, int from_file)
{
    const char *key = NULL;
    char val[32];
    /* the statistics level, as cuFileSetStatsLevel takes it: a 7 from the file or the
     * parameter API was reported as 7 by GetParameterSizeT and as 3 by GetStatsLevel */
    if (p == 0 && v > 3) {
        if (from_file) fprintf(stderr, "phxfile: cufile.json %s: expected 0..3, got %zu\n", sizet_names[p], v);
        return CU_FILE_INVALID_VALUE;
    }
    /* KiB values whose byte count does not fit: v * 1024 wrapped (2^54 + 1 KiB became 1 KiB) */
    if ((p == 5 || p == 6 || p == 7) && v > SIZE_MAX / 1024) return CU_FILE_INVALID_VALUE;
    switch (p) {
    case 2: key = "workers"; snprintf(val, sizeof val, "%zu", v); break;
    case 5: key = "max_io_bytes"; snprintf(val, sizeof val, "%zu", v * 1024); break;
    case 6: key = "pinned_mb"; snprintf(val, sizeof val, "%zu", (v + 1023) / 1024); break;
    case 7: key = "slot_kb"; snprintf(val, sizeof val, "%zu", v); break;
    default: return 0;
    }
    char env[32] = "PHX_";
    for (size_t i = 0; key[i] && i < 20; i++) env[4 + i] = (char)(key[i] >= 'a' && key[i] <= 'z' ? key[i] - 32 : key[i]);
    env[4 + strlen(key)] = 0;
    if (from_file && getenv(env)) return 0;
    if (v == 0) return CU_FILE_INVALID_VALUE;
    int rc = shim_set_config(key, val);
    if (rc == -EBUSY) {
        cf_log(CF_LOG_WARN, "%s: %s", sizet_names[p], phxfs_last_error());
        return CU_FILE_DRIVER_UNSUPPORTED_LIMIT;
    }
    if (rc < 0) {
        cf_log(CF_LOG_WARN, "%s = %zu: %s", sizet_names[p], v, phxfs_last_error());
        return CU_FILE_INVALID_VALUE;
    }
    return 0;
}

static int push_bool(int p, bool v, int from_file)
{
    /* allow_compat_mode / allow_system_memory false: there is no other path to insist on and
     * host memory is always accepted, so the value is only reported */
    if (p == 8) {
        if (from_file && getenv("PHX_ENGINE")) return 0;
        int rc = shim_set_config("engine", v ? "uring" : "sync");
        if (rc == -EBUSY) return CU_FILE_DRIVER_UNSUPPORTED_LIMIT;
        if (rc < 0) return CU_FILE_INVALID_VALUE;
    }
    return 0;
}

static void apply_json(const char *path, char kind, const char *text, double num, int b, void *arg)
{
    (void)arg;
    for (int i = 0; i < N_SIZET; i++)
        if (!strcmp(path, sizet_names[i])) {
            /* a whole number that fits: converting anything else to size_t is undefined (1e30
             * became 2^63 on x86) */
            if (kind != 'n' || !(num >= 0 && num < 18446744073709551616.0) || num != (double)(size_t)num) {
                fprintf(stderr, "phxfile: cufile.json %s: expected a whole number >= 0, got %s\n", path, text);
                return;
            }
            int rc = push_sizet(i, (size_t)num, 1);
            if (rc == 0 || rc == CU_FILE_DRIVER_UNSUPPORTED_LIMIT) cfg.sz[i] = (size_t)num;
            return;
        }
    for (int i = 0; i < N_BOOL; i++)
        if (!strcmp(path, bool_names[i])) {
            if (kind != 'b') { fprintf(stderr, "phxfile: cufile.json %s: expected true or false, got %s\n", path, text); return; }
            int rc = push_bool(i, b, 1);
            if (rc == 0 || rc == CU_FILE_DRIVER_UNSUPPORTED_LIMIT) cfg.bl[i] = b;
            return;
        }
    if (!strcmp(path, "logging.level") && kind == 's') {
        int l = level_of(text);
        if (l < 0) { fprintf(stderr, "phxfile: cufile.json logging.level: unknown level %s\n", text); return; }
        atomic_store(&log_level, l);
        snprintf(cfg.str[0], sizeof cfg.str[0], "%s", text);
    }
    if (!strcmp(path, "logging.dir") && kind == 's') snprintf(cfg.str[2], sizeof cfg.str[2], "%s", text);
    /* anything else is a key of NVIDIA's that Phoenix has no use for */
}

static void at_exit(void) { atomic_store(&exiting, 1); }
/* also when the library is unloaded, or exit() ran before any open */
__attribute__((destructor)) static void on_unload(void) { atomic_store(&exiting, 1); }

static void open_locked(void)
{
    cfg.loaded = 0; /* read at every open: see api_set */
    load_config_locked();
    /* CUFILE_LOGGING_LEVEL=INFO shows that this library, not NVIDIA's, answered */
    Dl_info self;
    /* the libphoenix actually loaded, which may not be the one this library was built with */
    int phx = phxfs_version();
    cf_log(CF_LOG_INFO, "Phoenix cuFile-compatible library %s (cuFile API %d.%d, libphoenix %d.%d.%d), configuration: %s",
           dladdr((void *)cuFileDriverOpen, &self) && self.dli_fname ? self.dli_fname : "?", CF_VERSION / 1000,
           CF_VERSION % 1000 / 10, phx / 10000, phx / 100 % 100, phx % 100, config_used);
    /* registered at the first open, so it runs before the exit handlers of CUDA and of the
     * frameworks that opened us earlier: a close after it only drops the count */
    if (!atexit_done) atexit_done = atexit(at_exit) == 0;
    if (!atfork_done) atfork_done = pthread_atfork(NULL, NULL, on_fork_child) == 0;
    atomic_store(&ever_opened, 1);
    atomic_store(&open_flag, 1);
}

int cf_ensure_open(void)
{
    if (atomic_load_explicit(&cf_forked, memory_order_relaxed)) return cf_fork_refused();
    if (atomic_load_explicit(&open_flag, memory_order_acquire)) return 0;
    pthread_mutex_lock(&drv_lock);
    if (use_count == 0) {
        open_locked();
        use_count = 1;
        implicit_open = 1;
    }
    pthread_mutex_unlock(&drv_lock);
    return 0;
}

int cf_device_use(int dev)
{
    if (dev < 0 || dev >= CF_MAX_DEVICES) return -ENODEV;
    if (atomic_load_explicit(&dev_opened[dev], memory_order_acquire)) return 0;
    pthread_mutex_lock(&dev_lock);
    int rc = 0;
    if (!atomic_load(&dev_opened[dev])) {
        rc = phxfs_open(dev);
        if (rc == 0) atomic_store_explicit(&dev_opened[dev], 1, memory_order_release);
        else cf_log(CF_LOG_ERROR, "cannot open device %d: %s", dev, phxfs_last_error());
    }
    pthread_mutex_unlock(&dev_lock);
    return rc;
}

int cf_stream_device(void *s)
{
    int n = phxfs_device_count();
    if (n < 0) return n;
    for (int d = 0; d < n && d < CF_MAX_DEVICES; d++) {
        int rc = cf_device_use(d);
        if (rc) return rc;
        if (phxfs_check_stream(d, s) == 0) return d;
    }
    return -EINVAL;
}

size_t cf_pinned_cap(void)
{
    pthread_mutex_lock(&drv_lock);
    size_t v = cfg.sz[8];
    pthread_mutex_unlock(&drv_lock);
    return v > SIZE_MAX / 1024 ? SIZE_MAX : v * 1024;
}

unsigned cf_max_batch(void)
{
    pthread_mutex_lock(&drv_lock);
    size_t v = cfg.sz[9];
    pthread_mutex_unlock(&drv_lock);
    return v > UINT_MAX ? UINT_MAX : (unsigned)v;
}

CF_API CUfileError_t cuFileDriverOpen(void)
{
    if (atomic_load(&cf_forked)) return cf_status((CUfileOpError)cf_fork_refused());
    pthread_mutex_lock(&drv_lock);
    if (use_count == 0) open_locked();
    if (implicit_open) implicit_open = 0; /* the caller's open takes over the implicit one */
    else use_count++;
    if (use_count == 0) use_count = 1;
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}

static CUfileError_t driver_close(void)
{
    pthread_mutex_lock(&drv_lock);
    if (use_count == 0) {
        pthread_mutex_unlock(&drv_lock);
        return cf_status(CU_FILE_DRIVER_NOT_INITIALIZED);
    }
    if (--use_count > 0) {
        pthread_mutex_unlock(&drv_lock);
        return cf_status(CU_FILE_SUCCESS);
    }
    implicit_open = 0;
    atomic_store(&open_flag, 0);
    if (atomic_load(&exiting) || atomic_load(&cf_forked)) {
        /* CUDA may already be gone (or, in a fork child, libphoenix's threads never came
         * along): leave everything to the process's end */
        pthread_mutex_unlock(&drv_lock);
        return cf_status(CU_FILE_SUCCESS);
    }
    cf_handles_reset();
    cf_bufs_reset(CF_OWNER_CUFILE);
    cf_streams_reset();
    cf_stats_close();
    pthread_mutex_lock(&dev_lock);
    for (int d = 0; d < CF_MAX_DEVICES; d++)
        if (atomic_load(&dev_opened[d])) {
            /* a device that still has phxFile registrations or transfers in flight stays open */
            if (cf_buf_find_dev(d)) continue;
            if (phxfs_close(d) == 0) atomic_store(&dev_opened[d], 0);
            else cf_log(CF_LOG_WARN, "device %d stays open: %s", d, phxfs_last_error());
        }
    pthread_mutex_unlock(&dev_lock);
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileDriverClose_v2(void) { return driver_close(); }
#undef cuFileDriverClose
CF_API CUfileError_t cuFileDriverClose(void);
CF_API CUfileError_t cuFileDriverClose(void) { return driver_close(); }

int cf_driver_is_open(void)
{
    pthread_mutex_lock(&drv_lock);
    int open = use_count > 0;
    pthread_mutex_unlock(&drv_lock);
    return open;
}

int cf_stats_level(void)
{
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    size_t v = cfg.sz[0];
    pthread_mutex_unlock(&drv_lock);
    return v > 3 ? 3 : (int)v;
}

/* Under drv_lock, as the close's cf_stats_close is: a Start whose "is it open" came before a
 * close and its switch after it would leave the closed driver (and the next session) counting
 * without any Start. */
int cf_stats_switch(int start)
{
    pthread_mutex_lock(&drv_lock);
    if (use_count == 0) {
        pthread_mutex_unlock(&drv_lock);
        return -1;
    }
    load_config_locked();
    int level = cfg.sz[0] > 3 ? 3 : (int)cfg.sz[0];
    cf_stats_collect(start && level >= 1);
    pthread_mutex_unlock(&drv_lock);
    return level;
}

/* profile.cufile_stats by another name, settable at any time (it takes effect at the next
 * cuFileStatsStart); kept across sessions like the other values the program sets */
CF_API CUfileError_t cuFileSetStatsLevel(int level)
{
    if (level < 0 || level > 3) return cf_status(CU_FILE_INVALID_VALUE);
    if (level > 1) cf_log(CF_LOG_INFO, "cuFileSetStatsLevel(%d): Phoenix collects level 1 only; GetStatsL2/L3 say not enabled", level);
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    cfg.sz[0] = (size_t)level;
    api_set.sz[0] = (size_t)level;
    api_set.sz_mask |= 1u;
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileGetStatsLevel(int *level)
{
    if (!level) return cf_status(CU_FILE_INVALID_VALUE);
    *level = cf_stats_level();
    return cf_status(CU_FILE_SUCCESS);
}

CF_API long cuFileUseCount(void)
{
    pthread_mutex_lock(&drv_lock);
    long n = use_count;
    pthread_mutex_unlock(&drv_lock);
    return n;
}

CF_API CUfileError_t cuFileGetVersion(int *version)
{
    if (!version) return cf_status(CU_FILE_INVALID_VALUE);
    *version = CF_VERSION;
    return cf_status(CU_FILE_SUCCESS);
}

static unsigned kb32(size_t v) { return v > UINT_MAX ? UINT_MAX : (unsigned)v; }

CF_API CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props)
{
    if (!props) return cf_status(CU_FILE_INVALID_VALUE);
    int rc = cf_ensure_open();
    if (rc) return cf_status((CUfileOpError)rc);
    /* Direct storage-to-device transfers need the phxfs kernel module (p2p/staging modes);
     * without it every transfer bounces through pinned host memory, and the nvfs version
     * stays 0.0 so clients know there is no peer-to-peer path. */
    int p2p = 0;
    for (int d = 0; d < CF_MAX_DEVICES; d++)
        if (atomic_load(&dev_opened[d])) {
            phxfs_device_info_t info;
            if (phxfs_get_device_info(d, &info) == 0 && (info.mode == PHXFS_MODE_P2P || info.mode == PHXFS_MODE_STAGING)) p2p = 1;
        }
    memset(props, 0, sizeof *props);
    pthread_mutex_lock(&drv_lock);
    props->nvfs.major_version = p2p ? 1 : 0;
    props->nvfs.minor_version = 0;
    props->nvfs.poll_thresh_size = cfg.sz[10];
    props->nvfs.max_direct_io_size = cfg.sz[5];
    props->nvfs.dstatusflags = 0;
    props->nvfs.dcontrolflags = (1u << CU_FILE_ALLOW_COMPAT_MODE) | (cfg.bl[0] ? 1u << CU_FILE_USE_POLL_MODE : 0);
    props->fflags = (1u << CU_FILE_BATCH_IO_SUPPORTED) | (1u << CU_FILE_STREAMS_SUPPORTED) | (1u << CU_FILE_PARALLEL_IO_SUPPORTED);
    props->max_device_cache_size = kb32(cfg.sz[6]);
    props->per_buffer_cache_size = kb32(cfg.sz[7]);
    props->max_device_pinned_mem_size = kb32(cfg.sz[8]);
    props->max_batch_io_size = kb32(cfg.sz[9]);
    props->max_batch_io_timeout_msecs = kb32(cfg.sz[11]);
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}

static CUfileError_t set_sizet(int p, size_t v)
{
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    int rc = push_sizet(p, v, 0);
    if (rc == CU_FILE_DRIVER_UNSUPPORTED_LIMIT) {
        /* libphoenix sized its pool at start. Clients set these at any time and treat an
         * error as fatal (KvikIO's set_max_device_cache_size, which also restores the old
         * value later), so the value is kept and reported; the running pool keeps its size. */
        cf_log(CF_LOG_INFO, "%s = %zu recorded; libphoenix's running pool keeps its size", sizet_names[p], v);
        rc = 0;
    }
    /* cuFileDriverSet*'s documented (and NVIDIA's measured) answer to a value it cannot take:
     * "unsupported value or invalid limit"; the parameter API keeps CU_FILE_INVALID_VALUE */
    if (rc == CU_FILE_INVALID_VALUE) rc = CU_FILE_DRIVER_UNSUPPORTED_LIMIT;
    if (!rc) {
        cfg.sz[p] = v;
        api_set.sz[p] = v;
        api_set.sz_mask |= 1u << p;
    }
    pthread_mutex_unlock(&drv_lock);
    return cf_status((CUfileOpError)rc);
}

/* Polling does not apply (completions come from libphoenix's workers); the values are kept
 * and reported. */
CF_API CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size)
{
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    cfg.bl[0] = poll;
    cfg.sz[10] = poll_threshold_size;
    api_set.bl[0] = poll;
    api_set.bl_mask |= 1u << 0;
    api_set.sz[10] = poll_threshold_size;
    api_set.sz_mask |= 1u << 10;
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}
CF_API CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t kb) { return set_sizet(5, kb); }
CF_API CUfileError_t cuFileDriverSetMaxCacheSize(size_t kb) { return set_sizet(6, kb); }
CF_API CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t kb) { return set_sizet(8, kb); }

/* ---- the parameter API: staged before the driver opens, read-only after ---- */

CF_API CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t *value)
{
    if (!value || (unsigned)param >= N_SIZET) return cf_status(CU_FILE_INVALID_VALUE);
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    *value = cfg.sz[param];
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value)
{
    if (!value || (unsigned)param >= N_BOOL) return cf_status(CU_FILE_INVALID_VALUE);
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    *value = cfg.bl[param];
    pthread_mutex_unlock(&drv_lock);
    return cf_status(CU_FILE_SUCCESS);
}

CF_API CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param, char *desc_str, int len)
{
    if (!desc_str || len <= 0 || (unsigned)param >= N_STRING) return cf_status(CU_FILE_INVALID_VALUE);
    pthread_mutex_lock(&drv_lock);
    load_config_locked();
    int fits = strlen(cfg.str[param]) < (size_t)len;
    if (fits) strcpy(desc_str, cfg.str[param]);
    pthread_mutex_unlock(&drv_lock);
    return cf_status(fits ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
}

/* The range Set accepts for a size parameter (cuFile 1.15; cuda-python reads it): libphoenix's
 * bounds for what it acts on (workers 1..256, max_io_bytes up to 1 GiB, pinned pool up to
 * 2^20 MiB, slot 4 KiB..1 GiB), anything that fits for the rest. */
CF_API CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param, size_t *min_value, size_t *max_value)
{
    static const size_t lo[N_SIZET] = {0, 0, 1, 0, 0, 1, 1, 4, 0, 0, 0, 0};
    static const size_t hi[N_SIZET] = {3, SIZE_MAX, 256, SIZE_MAX, SIZE_MAX, 1u << 20, (size_t)1 << 30, 1u << 20,
                                       SIZE_MAX / 1024, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    if (!min_value || !max_value || (unsigned)param >= N_SIZET) return cf_status(CU_FILE_INVALID_VALUE);
    *min_value = lo[param];
    *max_value = hi[param];
    return cf_status(CU_FILE_SUCCESS);
}

/* 0, CU_FILE_DRIVER_ALREADY_OPEN, or CU_FILE_INVALID_VALUE; leaves drv_lock held on 0 */
static int set_begin(unsigned param, unsigned n, const int *ok, const char *name)
{
    if (param >= n) {
        cf_log(CF_LOG_ERROR, "SetParameter: %u is not a parameter of this kind", param);
        return CU_FILE_INVALID_VALUE;
    }
    if (!ok[param]) cf_log(CF_LOG_INFO, "SetParameter: %s is staged and reported; Phoenix does not use it", name);
    pthread_mutex_lock(&drv_lock);
    if (use_count > 0) {
        pthread_mutex_unlock(&drv_lock);
        return CU_FILE_DRIVER_ALREADY_OPEN;
    }
    load_config_locked();
    return 0;
}

CF_API CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value)
{
    int rc = set_begin((unsigned)param, N_SIZET, sizet_ok, (unsigned)param < N_SIZET ? sizet_names[param] : "");
    if (rc) return cf_status((CUfileOpError)rc);
    rc = push_sizet(param, value, 0);
    /* libphoenix already runs (an earlier open and close, or the Java bindings): staged and
     * reported like the rest; the running pool keeps its size */
    if (rc == CU_FILE_DRIVER_UNSUPPORTED_LIMIT) rc = 0;
    if (!rc) {
        cfg.sz[param] = value;
        api_set.sz[param] = value;
        api_set.sz_mask |= 1u << param;
    }
    pthread_mutex_unlock(&drv_lock);
    return cf_status((CUfileOpError)rc);
}

CF_API CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value)
{
    int rc = set_begin((unsigned)param, N_BOOL, bool_ok, (unsigned)param < N_BOOL ? bool_names[param] : "");
    if (rc) return cf_status((CUfileOpError)rc);
    rc = push_bool(param, value, 0);
    if (rc == CU_FILE_DRIVER_UNSUPPORTED_LIMIT) rc = 0; /* as for sizes */
    if (!rc) {
        cfg.bl[param] = value;
        api_set.bl[param] = value;
        api_set.bl_mask |= 1u << param;
    }
    pthread_mutex_unlock(&drv_lock);
    return cf_status((CUfileOpError)rc);
}

CF_API CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param, const char *desc_str)
{
    if (!desc_str) return cf_status(CU_FILE_INVALID_VALUE);
    static const char *names[N_STRING] = {"logging.level", "logfile path", "logging.dir"};
    int rc = set_begin((unsigned)param, N_STRING, string_ok, (unsigned)param < N_STRING ? names[param] : "");
    if (rc) return cf_status((CUfileOpError)rc);
    int l = param == CUFILE_PARAM_LOGGING_LEVEL ? level_of(desc_str) : 0;
    /* set_begin refused a param out of range already; tested again here because gcc 13 (ASan,
     * _FORTIFY_SOURCE) does not carry that range past the call and fails the build with a
     * write past cfg.str */
    if (l < 0 || (unsigned)param >= N_STRING || strlen(desc_str) >= sizeof cfg.str[param]) rc = CU_FILE_INVALID_VALUE;
    else {
        if (param == CUFILE_PARAM_LOGGING_LEVEL) atomic_store(&log_level, l);
        snprintf(cfg.str[param], sizeof cfg.str[param], "%s", desc_str);
        snprintf(api_str[param], sizeof api_str[param], "%s", desc_str);
        api_set.str_mask |= 1u << param;
    }
    pthread_mutex_unlock(&drv_lock);
    return cf_status((CUfileOpError)rc);
}
