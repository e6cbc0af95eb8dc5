/* The statistics API of cuFile 1.15: the level (cuFileSetStatsLevel and
 * profile.cufile_stats), Start/Stop/Reset with and without an open driver,
 * level 1 counters against the transfers and registrations really made
 * (synchronous, stream-ordered, refused), and levels 2 and 3 answered "not
 * enabled". */
#include "harness.h"
#include "cufile.h"
#include "phoenix.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

static CUfileStatsLevel1_t l1(void)
{
    CUfileStatsLevel1_t s;
    memset(&s, 0xEE, sizeof s);
    CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_SUCCESS);
    return s;
}

/* the level comes from cufile.json too, read at open */
static int scenario_level_from_file(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/phxfile-stats-%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("{ \"profile\": { \"cufile_stats\": 1 } }", f);
    fclose(f);
    setenv("CUFILE_ENV_PATH_JSON", path, 1);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    int level = -1;
    CHECK_ST(cuFileGetStatsLevel(&level), CU_FILE_SUCCESS);
    CHECK_EQ(level, 1);
    CHECK_ST(cuFileStatsStart(), CU_FILE_SUCCESS);
    CUfileStatsLevel1_t s = l1();
    CHECK_EQ(s.read_ops.ok, 0);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    unlink(path);
    return th_failures;
}

/* Snapshots and resets taken while other threads transfer are each one moment: a read's op
 * and its bytes are counted together. They were two separate additions, so a reset between
 * them left bytes with no op (read_bytes / read_ops.ok divided by zero), and a getter between
 * them saw an op without its bytes. */
enum { SNAP_IO = 512 };
static atomic_int snap_stop;
static CUfileHandle_t snap_fh;

static void *snap_reader(void *arg)
{
    (void)arg;
    unsigned char b[SNAP_IO];
    while (!atomic_load(&snap_stop))
        if (cuFileRead(snap_fh, b, SNAP_IO, 0, 0) != SNAP_IO) { atomic_store(&snap_stop, 2); break; }
    return NULL;
}

static int scenario_consistent_snapshots(void)
{
    char *path = th_make_file(1u << 16, 5);
    int fd = open(path, O_RDONLY);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileHandleRegister(&snap_fh, &d), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetStatsLevel(1), CU_FILE_SUCCESS);
    CHECK_ST(cuFileStatsStart(), CU_FILE_SUCCESS);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, snap_reader, NULL);
    int torn = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        CHECK_ST(cuFileStatsReset(), CU_FILE_SUCCESS);
        for (int k = 0; k < 20; k++) {
            CUfileStatsLevel1_t s;
            CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_SUCCESS);
            if (s.read_bytes != s.read_ops.ok * SNAP_IO) torn++;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 2 && !atomic_load(&snap_stop));
    CHECK_EQ(atomic_load(&snap_stop), 0);
    atomic_store(&snap_stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK_EQ(torn, 0);
    CUfileStatsLevel1_t s;
    CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_SUCCESS);
    CHECK_EQ(s.read_bytes, s.read_ops.ok * SNAP_IO);
    cuFileHandleDeregister(snap_fh);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    close(fd);
    unlink(path);
    free(path);
    return th_failures;
}

/* cuFileStatsStart racing the last cuFileDriverClose: its "is the driver open" and its switch
 * were two steps, so a close between them (which stops collecting and drops the counters) was
 * undone, and the closed driver, then the next session, counted without any Start. Detected
 * through a bogus HandleDeregister made while closed (counted as failed without opening the
 * driver): at the next open the counters must still be empty. */
static atomic_int race_stop;

static void *race_starter(void *arg)
{
    (void)arg;
    while (!atomic_load(&race_stop)) cuFileStatsStart();
    return NULL;
}

static int scenario_start_races_close(void)
{
    CHECK_ST(cuFileSetStatsLevel(1), CU_FILE_SUCCESS);
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2); /* one warning per bogus deregistration */
    pthread_t th;
    pthread_create(&th, NULL, race_starter, NULL);
    long leaked = 0, rounds = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
        CUfileStatsLevel1_t s;
        CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_SUCCESS);
        if (s.hdl_deregister_ops.err) leaked++;
        CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
        cuFileHandleDeregister((CUfileHandle_t)(uintptr_t)0x77);
        rounds++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
    atomic_store(&race_stop, 1);
    pthread_join(th, NULL);
    dup2(saved, 2);
    close(saved);
    close(devnull);
    if (leaked) fprintf(stderr, "counted while closed in %ld of %ld rounds\n", leaked, rounds);
    CHECK_EQ(leaked, 0);
    return th_failures;
}

/* profile.cufile_stats is the statistics level by another name: 0..3 through every door.
 * cuFileSetStatsLevel refused 4 while SetParameterSizeT and cufile.json took it (GetStatsLevel
 * then said 3, GetParameterSizeT 4), and GetParameterMinMaxValue offered up to SIZE_MAX. */
static int scenario_level_range(void)
{
    size_t lo = 1, hi = 0, v = 99;
    int level = -1;
    char path[256];
    snprintf(path, sizeof path, "%s/phxfile-stats-%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("{ \"profile\": { \"cufile_stats\": 7 } }", f);
    fclose(f);
    setenv("CUFILE_ENV_PATH_JSON", path, 1);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 0);
    CHECK_ST(cuFileGetStatsLevel(&level), CU_FILE_SUCCESS);
    CHECK_EQ(level, 0);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    unlink(path);

    CHECK_ST(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &lo, &hi), CU_FILE_SUCCESS);
    CHECK_EQ(lo, 0);
    CHECK_EQ(hi, 3);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 4), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, (size_t)-1), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 0);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 3), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetStatsLevel(&level), CU_FILE_SUCCESS);
    CHECK_EQ(level, 3);

    return th_failures;
}

int main(void)
{
    th_in_child("statistics level from cufile.json", scenario_level_from_file);
    th_in_child("consistent snapshots while reads run", scenario_consistent_snapshots);
    th_in_child("StatsStart racing DriverClose", scenario_start_races_close);
    th_in_child("statistics level 0..3 through every door", scenario_level_range);

    size_t fsize = 1u << 20;
    char *path = th_make_file(fsize, 17), *out = th_make_file(0, 0);
    unsigned char *ref = malloc(fsize), *buf = malloc(fsize);
    th_fill(ref, fsize, 17, 0);
    CUfileStatsLevel1_t s;
    CUfileStatsLevel2_t s2;
    CUfileStatsLevel3_t *s3 = malloc(sizeof *s3);
    int level = -1;

    /* before the driver opens */
    CHECK_ST(cuFileStatsStart(), CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK_ST(cuFileStatsStop(), CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK_ST(cuFileStatsReset(), CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK_ST(cuFileGetStatsL1(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetStatsLevel(NULL), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetStatsLevel(&level), CU_FILE_SUCCESS);
    CHECK_EQ(level, 0); /* profile.cufile_stats' default */
    CHECK_ST(cuFileSetStatsLevel(4), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetStatsLevel(-1), CU_FILE_INVALID_VALUE);

    /* level 0: nothing collected, level 1 not enabled */
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileStatsStart(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_INVALID_VALUE);

    /* level 1 */
    CHECK_ST(cuFileSetStatsLevel(1), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetStatsLevel(&level), CU_FILE_SUCCESS);
    CHECK_EQ(level, 1);
    size_t pv = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, &pv), CU_FILE_SUCCESS);
    CHECK_EQ(pv, 1);
    s = l1(); /* started at level 0: still nothing counted */
    CHECK_EQ(s.read_ops.ok, 0);
    CHECK_EQ(s.read_bytes, 0);
    CHECK_ST(cuFileStatsStart(), CU_FILE_SUCCESS);

    int fd = open(path, O_RDONLY), ofd = open(out, O_RDWR);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL, ofh = NULL;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_SUCCESS);
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_HANDLE_ALREADY_REGISTERED);
    d.handle.fd = ofd;
    CHECK_ST(cuFileHandleRegister(&ofh, &d), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(buf, fsize, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(buf, fsize, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);

    CHECK_EQ(cuFileRead(fh, buf, 4096, 100, 0), 4096);
    CHECK(memcmp(buf, ref + 100, 4096) == 0);
    CHECK_EQ(cuFileRead(fh, buf, 8192, fsize - 1000, 0), 1000); /* short at the end of the file */
    CHECK_EQ(cuFileWrite(ofh, buf, 3000, 0, 0), 3000);
    CHECK_EQ(cuFileRead(fh, buf, 4096, -1, 0), -CU_FILE_INVALID_VALUE);
    CHECK_EQ(cuFileWrite(fh, buf, 4096, 0, 0), -1); /* read-only fd: the file system's error */

    /* stream-ordered: counted when the stream passes them; a refused call counts as failed */
    CHECK_EQ(phxfs_open(0), 0);
    void *st;
    CHECK_EQ(phxfs_stream_create(0, &st), 0);
    size_t n = 5000, nw = 700;
    off_t fo = 10, bo = 0, wo = 4096;
    ssize_t done = -999, wdone = -999, bad = -999;
    CHECK_ST(cuFileReadAsync(fh, buf, &n, &fo, &bo, &done, (CUstream)st), CU_FILE_SUCCESS);
    CHECK_ST(cuFileWriteAsync(ofh, buf, &nw, &wo, &bo, &wdone, (CUstream)st), CU_FILE_SUCCESS);
    CHECK_ST(cuFileWriteAsync(fh, buf, &nw, &wo, &bo, &bad, (CUstream)st), CU_FILE_INVALID_FILE_OPEN_FLAG);
    CHECK_ST(cuFileReadAsync((CUfileHandle_t)(uintptr_t)0x99, buf, &n, &fo, &bo, &bad, (CUstream)st),
             CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK_EQ(phxfs_stream_synchronize(0, st), 0);
    CHECK_EQ(done, 5000);
    CHECK_EQ(wdone, 700);
    CHECK_EQ(bad, -(ssize_t)CU_FILE_INVALID_FILE_OPEN_FLAG);

    s = l1();
    CHECK_EQ(s.read_ops.ok, 3);
    CHECK_EQ(s.read_ops.err, 2);
    CHECK_EQ(s.read_bytes, 4096 + 1000 + 5000);
    CHECK_EQ(s.write_ops.ok, 2);
    CHECK_EQ(s.write_ops.err, 2);
    CHECK_EQ(s.write_bytes, 3000 + 700);
    CHECK_EQ(s.hdl_register_ops.ok, 2);
    CHECK_EQ(s.hdl_register_ops.err, 1);
    CHECK_EQ(s.buf_register_ops.ok, 1);
    CHECK_EQ(s.buf_register_ops.err, 1);
    CHECK_EQ(s.batch_submit_ops.ok, 0); /* not collected: zero, not the memset pattern */
    CHECK_EQ(s.last_batch_write_bytes, 0);

    /* levels 2 and 3 are not collected, whatever the level says */
    CHECK_ST(cuFileGetStatsL2(&s2), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetStatsL3(s3), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileSetStatsLevel(3), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetStatsL2(&s2), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetStatsL3(s3), CU_FILE_INVALID_VALUE);
    CHECK_ST(cuFileGetStatsL2(NULL), CU_FILE_INVALID_VALUE);
    s = l1();
    CHECK_EQ(s.read_ops.ok, 3);

    /* stopped: not counted, kept; started again: accumulates; reset: zero */
    CHECK_ST(cuFileStatsStop(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), 4096);
    s = l1();
    CHECK_EQ(s.read_ops.ok, 3);
    CHECK_ST(cuFileStatsStart(), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, buf, 4096, 0, 0), 4096);
    cuFileHandleDeregister(ofh);
    cuFileHandleDeregister(ofh);
    CHECK_ST(cuFileBufDeregister(buf), CU_FILE_SUCCESS);
    s = l1();
    CHECK_EQ(s.read_ops.ok, 4);
    CHECK_EQ(s.read_bytes, 4096 + 1000 + 5000 + 4096);
    CHECK_EQ(s.hdl_deregister_ops.ok, 1);
    CHECK_EQ(s.hdl_deregister_ops.err, 1);
    CHECK_EQ(s.buf_deregister_ops.ok, 1);
    CHECK_ST(cuFileStatsReset(), CU_FILE_SUCCESS);
    s = l1();
    CHECK_EQ(s.read_ops.ok, 0);
    CHECK_EQ(s.read_bytes, 0);
    CHECK_EQ(s.hdl_register_ops.ok, 0);

    /* the close drops the counters and stops collecting; the level stays (the program set it) */
    CHECK_EQ(cuFileRead(fh, buf, 100, 0, 0), 100);
    CHECK_EQ(phxfs_stream_destroy(0, st), 0);
    CHECK_EQ(phxfs_close(0), 0);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetStatsL1(&s), CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetStatsLevel(&level), CU_FILE_SUCCESS);
    CHECK_EQ(level, 3);
    s = l1();
    CHECK_EQ(s.read_ops.ok, 0);
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_SUCCESS); /* not collecting until Start */
    s = l1();
    CHECK_EQ(s.hdl_register_ops.ok, 0);
    cuFileHandleDeregister(fh);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);

    close(fd);
    close(ofd);
    unlink(path);
    unlink(out);
    free(path); free(out); free(ref); free(buf); free(s3);
    return th_finish("test_stats");
}
