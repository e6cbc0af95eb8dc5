/* Configuration: cufile.json (NVIDIA's layout with its comments) through
 * CUFILE_ENV_PATH_JSON, the Get/SetParameter family before and after the driver
 * opens, PHX_* outranking the file, and a broken file. Each in a fresh process. */
#include "harness.h"
#include "cufile.h"
#include "phoenix.h"
#include <unistd.h>

static char json_path[256];

static void write_json(const char *text)
{
    snprintf(json_path, sizeof json_path, "%s/phxfile-cfg-%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(json_path, "w");
    fputs(text, f);
    fclose(f);
    setenv("CUFILE_ENV_PATH_JSON", json_path, 1);
}

static const char *NVIDIA_STYLE =
    "{\n"
    "    // NOTE : Application can override custom configuration via export CUFILE_ENV_PATH_JSON=<filepath>\n"
    "    \"logging\": {\n"
    "        // \"dir\": \"/home/<xxxx>\",\n"
    "        \"level\": \"WARN\"\n"
    "    },\n"
    "    \"profile\": { \"nvtx\": false, \"cufile_stats\": 0 },\n"
    "    \"execution\" : {\n"
    "        \"max_io_queue_depth\": 128,\n"
    "        \"max_io_threads\": 3, /* honoured: libphoenix's workers */\n"
    "        \"parallel_io\" : true,\n"
    "        \"min_io_threshold_size_kb\" : 8192,\n"
    "    },\n"
    "    \"properties\": {\n"
    "        \"max_direct_io_size_kb\" : 16384,\n"
    "        \"max_device_cache_size_kb\" : 65536,\n"
    "        \"per_buffer_cache_size_kb\": 512,\n"
    "        \"max_device_pinned_mem_size_kb\" : 33554432,\n"
    "        \"use_poll_mode\" : false,\n"
    "        \"poll_mode_max_size_kb\": 4,\n"
    "        \"allow_compat_mode\": true,\n"
    "        \"io_batchsize\": 32,\n"
    "        \"rdma_dev_addr_list\": [ \"172.172.1.240\", {\"nested\": [1, 2]} ],\n"
    "        \"unknown_key_from_a_newer_release\": \"ignored\"\n"
    "    },\n"
    "    \"fs\": { \"generic\": { \"posix_unaligned_writes\" : false } },\n"
    "    \"denylist\": { \"drivers\": [ ], \"devices\": [ ], \"mounts\": [ ], \"filesystems\": [ ] }\n"
    "}\n";

static int scenario_file(void)
{
    unsetenv("PHX_SLOT_KB"); /* PHX_* would outrank the file */
    unsetenv("PHX_WORKERS");
    unsetenv("PHX_PINNED_MB");
    write_json(NVIDIA_STYLE);
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 32);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 3);
    char s[32];
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, sizeof s), CU_FILE_SUCCESS);
    CHECK(strcmp(s, "WARN") == 0);
    CHECK(phxfs_get_config("workers", s, sizeof s) > 0 && strcmp(s, "3") == 0);
    CHECK(phxfs_get_config("pinned_mb", s, sizeof s) > 0 && strcmp(s, "64") == 0);
    CHECK(phxfs_get_config("slot_kb", s, sizeof s) > 0 && strcmp(s, "512") == 0);
    CUfileDrvProps_t p;
    CHECK_ST(cuFileDriverGetProperties(&p), CU_FILE_SUCCESS);
    CHECK_EQ(p.max_batch_io_size, 32);
    CHECK_EQ(p.max_device_cache_size, 65536);
    CHECK_EQ(p.per_buffer_cache_size, 512);
    CHECK_EQ(p.max_device_pinned_mem_size, 33554432u);
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, 33), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileBatchIOSetUp(&b, 32), CU_FILE_SUCCESS);
    cuFileBatchIODestroy(b);
    unlink(json_path);
    return th_failures;
}

static int scenario_env_outranks_file(void)
{
    write_json(NVIDIA_STYLE);
    setenv("PHX_WORKERS", "5", 1);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    char s[32];
    CHECK(phxfs_get_config("workers", s, sizeof s) > 0 && strcmp(s, "5") == 0);
    unlink(json_path);
    return th_failures;
}

static int scenario_broken_file(void)
{
    write_json("{ \"properties\": { \"io_batchsize\": 16, } \n \"oops\" }");
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 128); /* the file is ignored whole (a message on stderr names it and the line) */
    unlink(json_path);
    setenv("CUFILE_ENV_PATH_JSON", "/nonexistent/cufile.json", 1);
    return th_failures;
}

static int scenario_missing_file(void)
{
    setenv("CUFILE_ENV_PATH_JSON", "/nonexistent/cufile.json", 1);
    setenv("CUFILE_LOGGING_LEVEL", "WARN", 1);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 128);
    /* the level in effect comes from the environment, file or no file */
    char s[32];
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, sizeof s), CU_FILE_SUCCESS);
    CHECK(strcmp(s, "WARN") == 0);
    return th_failures;
}

/* numbers that are not whole sizes are refused key by key (with a message) and the default
 * stays; 1e30 used to be converted to size_t, which is undefined (2^63 on x86) */
static int scenario_bad_numbers(void)
{
    unsetenv("PHX_SLOT_KB");
    write_json("{ \"properties\": { \"io_batchsize\": 1e30, \"max_direct_io_size_kb\": 2.5,\n"
               "  \"per_buffer_cache_size_kb\": 1e400, \"batch_io_timeout_ms\": -3, \"poll_mode_max_size_kb\": 8 } }");
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 128);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 16384);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 0);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 8); /* the good key of the same file applies */
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, 129), CU_FILE_INVALID_VALUE);
    unlink(json_path);
    return th_failures;
}

static size_t get_sz(CUFileSizeTConfigParameter_t p)
{
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(p, &v), CU_FILE_SUCCESS);
    return v;
}

/* cufile.json is read at every open (it was read once per process): a file edited between
 * sessions, or CUFILE_ENV_PATH_JSON pointed elsewhere, takes effect at the next open, explicit
 * or implicit; what the program set itself (before an open, or in an earlier session) still
 * outranks the file */
static int scenario_reopen(void)
{
    unsetenv("PHX_SLOT_KB");
    write_json("{ \"logging\": { \"level\": \"WARN\" },\n"
               "  \"properties\": { \"io_batchsize\": 32, \"poll_mode_max_size_kb\": 8 } }");
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(get_sz(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 32);
    CHECK_EQ(get_sz(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB), 8);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);

    /* the same file, edited: poll_mode_max_size_kb gone (back to the default), the level gone */
    write_json("{ \"properties\": { \"io_batchsize\": 48 } }");
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(get_sz(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 48);
    CHECK_EQ(get_sz(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB), 4);
    char lv[16];
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, lv, sizeof lv), CU_FILE_SUCCESS);
    CHECK(strcmp(lv, "ERROR") == 0);
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, 48), CU_FILE_SUCCESS);
    cuFileBatchIODestroy(b);
    CHECK_ST(cuFileDriverClose_v2(), CU_FILE_SUCCESS);

    /* another file through the variable, opened implicitly (as PyTorch does) */
    char first[256];
    snprintf(first, sizeof first, "%s", json_path);
    char second[300];
    snprintf(second, sizeof second, "%s.second", first);
    FILE *f = fopen(second, "w");
    fputs("{ \"properties\": { \"io_batchsize\": 16, \"per_buffer_cache_size_kb\": 256 } }", f);
    fclose(f);
    setenv("CUFILE_ENV_PATH_JSON", second, 1);
    CUfileDrvProps_t props;
    CHECK_ST(cuFileDriverGetProperties(&props), CU_FILE_SUCCESS);
    CHECK_EQ(props.max_batch_io_size, 16);
    CHECK_EQ(props.per_buffer_cache_size, 256);
    CHECK_ST(cuFileBatchIOSetUp(&b, 17), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);

    /* a parameter set before an open outranks the file that open reads, and stays set in the
     * sessions after it; the keys it does not name follow the file */
    write_json("{ \"properties\": { \"io_batchsize\": 64, \"poll_mode_max_size_kb\": 12 } }");
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 20), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "WARN"), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(get_sz(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 20);
    CHECK_EQ(get_sz(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB), 12);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    write_json("{ \"logging\": { \"level\": \"DEBUG\" }, \"properties\": { \"io_batchsize\": 100 } }");
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(get_sz(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 20);
    CHECK_EQ(get_sz(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB), 4);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, lv, sizeof lv), CU_FILE_SUCCESS);
    CHECK(strcmp(lv, "WARN") == 0);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 8), CU_FILE_DRIVER_ALREADY_OPEN);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    unlink(json_path);
    unlink(second);
    return th_failures;
}

/* What a file acted on stops acting when a later file drops the key: the per-syscall cap a
 * session's max_direct_io_size_kb pushed into libphoenix went back to libphoenix's own value
 * in the next session only in what GetParameter reported, and transfers kept the old cap */
static int scenario_reopen_drops_key(void)
{
    char base[32] = "", wbase[32] = "", v[32] = "";
    CHECK(phxfs_get_config("max_io_bytes", base, sizeof base) > 0);
    CHECK(phxfs_get_config("workers", wbase, sizeof wbase) > 0 && strcmp(wbase, "3"));
    /* no transfer in this session: libphoenix has not started, so workers is taken too */
    write_json("{ \"properties\": { \"max_direct_io_size_kb\": 64 }, \"execution\": { \"max_io_threads\": 3 } }");
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK(phxfs_get_config("max_io_bytes", v, sizeof v) > 0 && !strcmp(v, "65536"));
    CHECK(phxfs_get_config("workers", v, sizeof v) > 0 && !strcmp(v, "3"));
    CHECK_EQ(get_sz(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS), 3);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);

    write_json("{ \"properties\": { \"io_batchsize\": 32 } }");
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_EQ(get_sz(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB), 16384);
    CHECK(phxfs_get_config("max_io_bytes", v, sizeof v) > 0 && !strcmp(v, base));
    CHECK(phxfs_get_config("workers", v, sizeof v) > 0 && !strcmp(v, wbase));
    CHECK_EQ(get_sz(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS), strtoull(wbase, NULL, 10));
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);

    /* a value the program set still outranks: it is put back on top after the reset */
    CHECK_ST(cuFileDriverSetMaxDirectIOSize(128), CU_FILE_SUCCESS);
    CHECK(phxfs_get_config("max_io_bytes", v, sizeof v) > 0 && !strcmp(v, "131072"));
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK(phxfs_get_config("max_io_bytes", v, sizeof v) > 0 && !strcmp(v, "131072"));
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    unlink(json_path);
    return th_failures;
}

static int scenario_parameters(void)
{
    setenv("CUFILE_ENV_PATH_JSON", "", 1);
    /* staged before the driver opens */
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB, 1024), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 0), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)99, 1), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)-1, 1), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterBool((CUFileBoolConfigParameter_t)12, true), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterString((CUFileStringConfigParameter_t)3, "x"), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, false), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "INFO"), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "LOUD"), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, NULL), CU_FILE_INVALID_VALUE);
    size_t v = 0;
    bool bv = true;
    char s[8];
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 64);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)12, &v), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterBool(CUFILE_PARAM_PREFER_IO_URING, &bv), CU_FILE_SUCCESS);
    CHECK(!bv);
    CHECK_ST(cuFileGetParameterBool((CUFileBoolConfigParameter_t)99, &bv), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, sizeof s), CU_FILE_SUCCESS);
    CHECK(strcmp(s, "INFO") == 0);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, 3), CU_FILE_INVALID_VALUE); /* no truncation */
    char e[32];
    CHECK(phxfs_get_config("engine", e, sizeof e) > 0 && strcmp(e, "sync") == 0);
    if (!getenv("PHX_SLOT_KB")) CHECK(phxfs_get_config("slot_kb", e, sizeof e) > 0 && strcmp(e, "1024") == 0);
    /* after the driver opens: read-only */
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 8), CU_FILE_DRIVER_ALREADY_OPEN);
    CHECK_ST(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, true), CU_FILE_DRIVER_ALREADY_OPEN);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "ERROR"), CU_FILE_DRIVER_ALREADY_OPEN);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 64);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 8), CU_FILE_SUCCESS);
    return th_failures;
}

/* Every parameter round-trips before the driver opens, as cuda-python's tests do it (get,
 * set, read back, restore), also once libphoenix runs (the pool keys then only report); the
 * ones Phoenix does not use were CU_FILE_INVALID_VALUE, a failure for such a client. */
static const size_t SZ_VALS[12] = {1, 32, 8, 4, 4, 1024, 512, 128, 2048, 16, 64, 5000};
static const bool BL_VALS[12] = {true, false, false, true, true, false, true, true, false, true, false, true};

static void round_trip_all(void)
{
    for (int p = 0; p < 12; p++) {
        size_t orig = 0, got = 0;
        CHECK_ST(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &orig), CU_FILE_SUCCESS);
        CHECK_ST(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)p, SZ_VALS[p]), CU_FILE_SUCCESS);
        CHECK_ST(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &got), CU_FILE_SUCCESS);
        if (got != SZ_VALS[p]) fprintf(stderr, "size_t parameter %d\n", p);
        CHECK_EQ(got, SZ_VALS[p]);
        if (orig) CHECK_ST(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)p, orig), CU_FILE_SUCCESS);
    }
    for (int p = 0; p < 12; p++) {
        bool orig = false, got = !BL_VALS[p];
        CHECK_ST(cuFileGetParameterBool((CUFileBoolConfigParameter_t)p, &orig), CU_FILE_SUCCESS);
        CHECK_ST(cuFileSetParameterBool((CUFileBoolConfigParameter_t)p, BL_VALS[p]), CU_FILE_SUCCESS);
        CHECK_ST(cuFileGetParameterBool((CUFileBoolConfigParameter_t)p, &got), CU_FILE_SUCCESS);
        if (got != BL_VALS[p]) fprintf(stderr, "bool parameter %d\n", p);
        CHECK_EQ(got, BL_VALS[p]);
        CHECK_ST(cuFileSetParameterBool((CUFileBoolConfigParameter_t)p, orig), CU_FILE_SUCCESS);
    }
    char longpath[300], s[256];
    memset(longpath, 'd', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[200] = 0; /* longer than the old 64-byte cell */
    const char *vals[3] = {"DEBUG", "/tmp/phxfile-test/cufile.log", longpath};
    for (int p = 0; p < 3; p++) {
        char orig[256];
        CHECK_ST(cuFileGetParameterString((CUFileStringConfigParameter_t)p, orig, sizeof orig), CU_FILE_SUCCESS);
        CHECK_ST(cuFileSetParameterString((CUFileStringConfigParameter_t)p, vals[p]), CU_FILE_SUCCESS);
        CHECK_ST(cuFileGetParameterString((CUFileStringConfigParameter_t)p, s, sizeof s), CU_FILE_SUCCESS);
        CHECK(strcmp(s, vals[p]) == 0);
        if (p == 0) CHECK_ST(cuFileSetParameterString((CUFileStringConfigParameter_t)p, orig), CU_FILE_SUCCESS);
    }
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "ERROR"), CU_FILE_SUCCESS);
}

static int scenario_round_trip(void)
{
    size_t lo = 1, hi = 0;
    CHECK_ST(cuFileGetParameterMinMaxValue(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, &lo, &hi), CU_FILE_SUCCESS);
    CHECK(lo <= hi && hi > 0);
    CHECK_ST(cuFileGetParameterMinMaxValue(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, &lo, &hi), CU_FILE_SUCCESS);
    CHECK(lo == 1 && hi == 256);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, hi + 1), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterMinMaxValue(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, NULL, &hi), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)12, &lo, &hi), CU_FILE_INVALID_VALUE);
    setenv("CUFILE_ENV_PATH_JSON", "", 1);
    unsetenv("PHX_SLOT_KB");
    round_trip_all();
    /* the values Phoenix acts on reach libphoenix */
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 8), CU_FILE_SUCCESS);
    char e[32];
    CHECK(phxfs_get_config("workers", e, sizeof e) > 0 && strcmp(e, "8") == 0);
    /* libphoenix running (an earlier open and close does this): still staged and reported */
    CHECK_EQ(phxfs_init(), 0);
    round_trip_all();
    CHECK(phxfs_get_config("workers", e, sizeof e) > 0 && strcmp(e, "8") == 0);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 1);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 0), CU_FILE_DRIVER_ALREADY_OPEN);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_failures;
}

int main(void)
{
    th_in_child("NVIDIA-style cufile.json", scenario_file);
    th_in_child("PHX_* outranks cufile.json", scenario_env_outranks_file);
    th_in_child("broken cufile.json", scenario_broken_file);
    th_in_child("missing cufile.json", scenario_missing_file);
    th_in_child("numbers out of range in cufile.json", scenario_bad_numbers);
    th_in_child("cufile.json read again at every open", scenario_reopen);
    th_in_child("a key dropped from cufile.json stops acting", scenario_reopen_drops_key);
    th_in_child("parameter API", scenario_parameters);
    th_in_child("every parameter round-trips", scenario_round_trip);
    return th_finish("test_config");
}
