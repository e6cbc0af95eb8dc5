/* PHX_* and phxfs_set_config parsed into one parameter set (params.h). */
#include "error.h"
#include "fresh_fill.h"
#include "huge_fill.h"
#include "params.h"
#include "phoenix.h"
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static phx_params_t phx_cfg;
static int frozen;
_Atomic size_t phx_max_io_bytes = (size_t)1 << 30; /* Linux MAX_RW_COUNT rounds to this */

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static int cfg_loaded;

static int default_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    /* Up to 12. Writes need them: on the H200 host device -> page cache over 8 files reached
     * 21.5-24.4 GB/s with 10 workers (0.79-0.86x the kernel's own pwrite from host memory,
     * same run) and 27.9 with 12 (1.03x); loads are level past 10 (0.985-0.991x of 10 with
     * 12, 48.7 against 48.4 GB/s in an earlier run): there the link, not the page-cache copy,
     * is the limit (docs/benchmarks.md, issues 13 and 23). */
    if (n < 1) n = 1;
    return n > 12 ? 12 : (int)n;
}

static int parse_size(const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return -EINVAL;
    *out = x;
    return 0;
}

static int parse_mode(const char *v)
{
    static const char *names[] = {"p2p", "staging", "bounce", "host"};
    if (!strcasecmp(v, "auto")) return PHXFS_MODE_AUTO;
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(v, names[i])) return i;
    return -100;
}

static int set_locked(const char *key, const char *value)
{
    long long x;
    if (!strcmp(key, "mode")) {
        int m = parse_mode(value);
        if (m == -100) return phx_fail(EINVAL, "mode '%s': expected auto, p2p, staging, bounce or host", value);
        phx_cfg.mode = m;
    } else if (!strcmp(key, "engine")) {
        if (!strcasecmp(value, "uring")) phx_cfg.engine = PHXFS_ENGINE_URING;
        else if (!strcasecmp(value, "sync")) phx_cfg.engine = PHXFS_ENGINE_SYNC;
        else return phx_fail(EINVAL, "engine '%s': expected uring or sync", value);
    } else if (!strcmp(key, "workers")) {
        if (parse_size(value, 1, 256, &x)) return phx_fail(EINVAL, "workers '%s': expected 1..256", value);
        phx_cfg.workers = (int)x;
    } else if (!strcmp(key, "slot_mb")) {
        if (parse_size(value, 1, 1024, &x)) return phx_fail(EINVAL, "slot_mb '%s': expected 1..1024", value);
        phx_cfg.slot_bytes = (size_t)x << 20;
    } else if (!strcmp(key, "slot_kb")) {
        if (parse_size(value, 4, 1 << 20, &x) || x % 4) return phx_fail(EINVAL, "slot_kb '%s': expected a multiple of 4 in 4..1048576", value);
        phx_cfg.slot_bytes = (size_t)x << 10;
    } else if (!strcmp(key, "slots")) {
        if (parse_size(value, 2, 64, &x)) return phx_fail(EINVAL, "slots '%s': expected 2..64", value);
        phx_cfg.slots = (int)x;
    } else if (!strcmp(key, "pinned_mb")) {
        if (parse_size(value, 1, 1 << 20, &x)) return phx_fail(EINVAL, "pinned_mb '%s': expected 1..1048576", value);
        phx_cfg.pinned_bytes = (size_t)x << 20;
    } else if (!strcmp(key, "chunk_mb")) {
        if (parse_size(value, 1, 1024, &x)) return phx_fail(EINVAL, "chunk_mb '%s': expected 1..1024", value);
        phx_cfg.chunk_bytes = (size_t)x << 20;
    } else if (!strcmp(key, "queue_depth")) {
        if (parse_size(value, 1, 4096, &x)) return phx_fail(EINVAL, "queue_depth '%s': expected 1..4096", value);
        phx_cfg.queue_depth = (int)x;
    } else if (!strcmp(key, "inline_kb")) {
        if (parse_size(value, 0, 1 << 20, &x)) return phx_fail(EINVAL, "inline_kb '%s': expected 0..1048576", value);
        phx_cfg.inline_bytes = (size_t)x << 10;
    } else if (!strcmp(key, "connector")) {
        if (strcmp(value, "cuda") && strcmp(value, "emu") && strcmp(value, "fake") && strcmp(value, "host") && strcmp(value, "auto"))
            return phx_fail(EINVAL, "connector '%s': expected auto, cuda, emu, fake or host", value);
        snprintf(phx_cfg.connector, sizeof phx_cfg.connector, "%s", strcmp(value, "auto") ? value : "");
    } else if (!strcmp(key, "fake_devices")) {
        if (parse_size(value, 1, PHX_MAX_DEVICES, &x)) return phx_fail(EINVAL, "fake_devices '%s': expected 1..64", value);
        phx_cfg.fake_devices = (int)x;
    } else if (!strcmp(key, "huge_fill")) {
        if (parse_size(value, 0, 1, &x)) return phx_fail(EINVAL, "huge_fill '%s': expected 0 or 1", value);
        phx_cfg.huge_fill = (int)x;
    } else if (!strcmp(key, "fresh_fill")) {
        if (parse_size(value, 0, 1, &x)) return phx_fail(EINVAL, "fresh_fill '%s': expected 0 or 1", value);
        phx_cfg.fresh_fill = (int)x;
    } else if (!strcmp(key, "max_io_bytes")) {
        if (parse_size(value, 1, (long long)1 << 30, &x)) return phx_fail(EINVAL, "max_io_bytes '%s': expected 1..1073741824", value);
        phx_max_io_bytes = (size_t)x;
    } else {
        return phx_fail(EINVAL, "unknown configuration key '%s'", key);
    }
    return 0;
}

static void load_env(void)
{
    static const char *keys[] = {"mode", "engine", "workers", "slot_mb", "slot_kb", "slots", "pinned_mb", "chunk_mb",
                                 "queue_depth", "inline_kb", "connector", "fake_devices", "fresh_fill", "huge_fill", "max_io_bytes"};
    pthread_mutex_lock(&cfg_lock);
    if (!cfg_loaded) {
        cfg_loaded = 1;
        phx_cfg.mode = PHXFS_MODE_AUTO;
        phx_cfg.engine = PHXFS_ENGINE_URING;
        phx_cfg.workers = default_workers();
        /* 2 x 4 MiB per worker. What a worker keeps in flight (8 MiB) must stay small enough
         * to be in the CPU cache when the DMA engine reads it: 4 x 4 MiB or 4 x 8 MiB a worker
         * fall to 0.57-0.72x of the link on the H200 host. Within that, larger copies win:
         * copies of 2 MiB alone reach only 0.92x of the link, of 4 MiB 0.96x, and the page-cache
         * copy plus DMA reached 0.94x with 2 x 4 MiB against 0.89x with 4 x 2 MiB
         * (phoenix-native/tests/gpu/copy_ceiling.cu, docs/benchmarks.md). */
        phx_cfg.slot_bytes = 4u << 20;
        phx_cfg.slots = 2;
        /* 32 slots: more than 12 workers keep in flight at 2 each, with room for callers'
         * small transfers and stream-ordered I/O */
        phx_cfg.pinned_bytes = 128u << 20;
        phx_cfg.chunk_bytes = 8u << 20;
        phx_cfg.queue_depth = 8;
        /* Up to where one pread + one copy on the caller's thread beats a hand-off to the
         * workers. On the H200 host NVIDIA's compatibility mode (which does just that) took
         * 9.4 us for 4 KiB, 21 us for 64 KiB and 187 us for 1 MiB; the workers, which cut a
         * 1 MiB read into eight 128 KiB tasks, 34, 53 and 118 us (docs/benchmarks.md, issue
         * 11). Lines through those points cross near 370 KiB: below, the hand-off costs more
         * than it saves; above, the parallel split wins. 256 KiB stays clear of the crossing
         * and is also where small host batches stop running inline (batch.c). */
        phx_cfg.inline_bytes = 256u << 10;
        phx_cfg.fake_devices = 1;
        /* opt-in: faster only where fresh pages fault in slowly (fresh_fill.c) */
        phx_cfg.fresh_fill = 0;
        /* opt-in: cold host loads ran 2.1-2.6x slower with it on the build machine (huge_fill.c) */
        phx_cfg.huge_fill = 0;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
            char env[32] = "PHX_";
            for (size_t j = 0; keys[i][j] && j + 5 < sizeof env; j++) env[4 + j] = (char)toupper((unsigned char)keys[i][j]);
            const char *v = getenv(env);
            if (v && *v && set_locked(keys[i], v) < 0)
                fprintf(stderr, "phoenix: ignoring %s=%s: %s\n", env, v, phx_last_error());
        }
        phx_clear_error();
    }
    pthread_mutex_unlock(&cfg_lock);
}

phx_params_t phx_params_freeze(void)
{
    load_env();
    pthread_mutex_lock(&cfg_lock);
    frozen = 1;
    phx_params_t p = phx_cfg;
    pthread_mutex_unlock(&cfg_lock);
    return p;
}

int phx_params_mode(void)
{
    pthread_mutex_lock(&cfg_lock);
    int m = phx_cfg.mode;
    pthread_mutex_unlock(&cfg_lock);
    return m;
}

int phxfs_set_config(const char *key, const char *value)
{
    phx_clear_error();
    if (!key || !value) return phx_fail(EINVAL, "set_config: key and value are required");
    load_env();
    /* the pool sizes its threads, rings, slots, pinned pools and scratch once, at start */
    static const char *fixed[] = {"engine", "workers", "slot_mb", "slot_kb", "slots", "pinned_mb", "chunk_mb",
                                  "queue_depth", "inline_kb", "connector", "fake_devices", "fresh_fill", "huge_fill"};
    pthread_mutex_lock(&cfg_lock);
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(key, fixed[i]) && frozen) {
            pthread_mutex_unlock(&cfg_lock);
            char env[32] = "PHX_";
            for (size_t j = 0; key[j] && j + 5 < sizeof env; j++) env[4 + j] = (char)toupper((unsigned char)key[j]);
            return phx_fail(EBUSY, "%s can only be set before the library starts (first phxfs_init or phxfs_open), or through %s", key, env);
        }
    int rc = set_locked(key, value);
    pthread_mutex_unlock(&cfg_lock);
    return rc;
}

int phxfs_get_config(const char *key, char *buf, size_t len)
{
    phx_clear_error();
    if (!key || !buf || !len) return phx_fail(EINVAL, "get_config: key and buffer are required");
    load_env();
    static const char *engines[] = {"sync", "uring"};
    int n;
    pthread_mutex_lock(&cfg_lock);
    if (!strcmp(key, "mode")) n = snprintf(buf, len, "%s", phx_cfg.mode == PHXFS_MODE_AUTO ? "auto" : phx_mode_name(phx_cfg.mode));
    else if (!strcmp(key, "engine")) n = snprintf(buf, len, "%s", engines[phx_cfg.engine]);
    else if (!strcmp(key, "workers")) n = snprintf(buf, len, "%d", phx_cfg.workers);
    else if (!strcmp(key, "slot_mb")) n = snprintf(buf, len, "%zu", phx_cfg.slot_bytes >> 20);
    else if (!strcmp(key, "slot_kb")) n = snprintf(buf, len, "%zu", phx_cfg.slot_bytes >> 10);
    else if (!strcmp(key, "slots")) n = snprintf(buf, len, "%d", phx_cfg.slots);
    else if (!strcmp(key, "pinned_mb")) n = snprintf(buf, len, "%zu", phx_cfg.pinned_bytes >> 20);
    else if (!strcmp(key, "chunk_mb")) n = snprintf(buf, len, "%zu", phx_cfg.chunk_bytes >> 20);
    else if (!strcmp(key, "queue_depth")) n = snprintf(buf, len, "%d", phx_cfg.queue_depth);
    else if (!strcmp(key, "inline_kb")) n = snprintf(buf, len, "%zu", phx_cfg.inline_bytes >> 10);
    else if (!strcmp(key, "connector")) n = snprintf(buf, len, "%s", phx_cfg.connector[0] ? phx_cfg.connector : "auto");
    else if (!strcmp(key, "fake_devices")) n = snprintf(buf, len, "%d", phx_cfg.fake_devices);
    else if (!strcmp(key, "fresh_fill")) n = snprintf(buf, len, "%d", phx_cfg.fresh_fill);
    else if (!strcmp(key, "fresh_fill_bytes"))
        n = snprintf(buf, len, "%llu", (unsigned long long)atomic_load(&phx_fresh_bytes));
    else if (!strcmp(key, "huge_fill")) n = snprintf(buf, len, "%d", phx_cfg.huge_fill);
    else if (!strcmp(key, "huge_fill_bytes"))
        n = snprintf(buf, len, "%llu", (unsigned long long)atomic_load(&phx_huge_fill_bytes));
    else if (!strcmp(key, "max_io_bytes")) n = snprintf(buf, len, "%zu", (size_t)phx_max_io_bytes);
    else n = -1;
    pthread_mutex_unlock(&cfg_lock);
    if (n < 0) return phx_fail(EINVAL, "unknown configuration key '%s'", key);
    return n;
}

const char *phx_mode_name(int mode)
{
    switch (mode) {
    case PHXFS_MODE_P2P: return "p2p";
    case PHXFS_MODE_STAGING: return "staging";
    case PHXFS_MODE_BOUNCE: return "bounce";
    case PHXFS_MODE_HOST: return "host";
    case PHXFS_MODE_AUTO: return "auto";
    default: return "unknown";
    }
}

const char *phxfs_mode_name(int mode) { return phx_mode_name(mode); }
