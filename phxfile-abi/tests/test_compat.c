/* Behaviour measured on NVIDIA's own libcufile (cuFile 1.15, CUDA 13, on the H200) that a
 * program written and tested against it relies on:
 *   - buffer registrations may overlap (a view of a registered buffer, buffers carved from a
 *     registered pool, inner first or outer first); only the same base twice is refused.
 *     Transfers through every one of them move the right bytes, before and after the
 *     covering registration goes, synchronously, in batches and on streams;
 *   - cuFileDriverSet* answer a value they cannot take with CU_FILE_DRIVER_UNSUPPORTED_LIMIT
 *     (the documented "unsupported value or invalid limit"), not CU_FILE_INVALID_VALUE;
 *   - IS_CUFILE_ERR / CUFILE_ERRSTR give cuFile's values on ssize_t results and on statuses;
 *   - the logging level NOTICE (listed in NVIDIA's cufile.json) is taken;
 *   - a transfer through the base of a registered host buffer that runs past the registration
 *     is refused (CU_FILE_INVALID_MAPPING_RANGE) instead of writing past it. */
#include "harness.h"
#include "th_cufile.h"
#include "cufile.h"
#include "phoenix.h"
#include <fcntl.h>
#include <unistd.h>

#define FSIZE ((2u << 20) + 777)
#define MB (1u << 20)

/* device memory on the fake/cuda connector, host memory otherwise */
static int dev = -1;
static unsigned char *mem_alloc(size_t len)
{
    void *p = NULL;
    if (th_have_device()) {
        CHECK_EQ(phxfs_open(0), 0);
        CHECK_EQ(phxfs_mem_alloc(0, len, &p), 0);
        dev = 0;
    } else {
        p = aligned_alloc(4096, len);
    }
    return p;
}
static void mem_free(unsigned char *p)
{
    if (dev >= 0) {
        CHECK_EQ(phxfs_mem_free(dev, p), 0);
        CHECK_EQ(phxfs_close(dev), 0);
    } else {
        free(p);
    }
}

/* the n bytes at p (device or host) equal the file's bytes at foff */
static int same_as_file(const unsigned char *p, size_t n, size_t foff)
{
    unsigned char *h = malloc(n), *want = malloc(n);
    if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_host(dev, h, p, n), 0);
    else memcpy(h, p, n);
    th_fill(want, n, 5, foff);
    int ok = memcmp(h, want, n) == 0;
    free(h);
    free(want);
    return ok;
}

static void put(unsigned char *p, const unsigned char *src, size_t n)
{
    if (dev >= 0) CHECK_EQ(phxfs_memcpy_to_device(dev, p, src, n), 0);
    else memcpy(p, src, n);
}

static int scenario_nested(void)
{
    char *path = th_make_file(FSIZE, 5);
    int fd = open(path, O_RDWR);
    CUfileHandle_t fh = th_register_fd(fd);
    unsigned char *m = mem_alloc(MB);
    unsigned char *inner = m + 65536, *inner2 = m + 65536 + 4096;

    /* outer, then ranges inside it, one overlapping another */
    CHECK_ST(cuFileBufRegister(m, MB, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(inner, 65536, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(inner, 65536, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK_ST(cuFileBufRegister(inner, 4096, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK_ST(cuFileBufRegister(inner2, 65536, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, inner, 65536, 100, 0), 65536);
    CHECK(same_as_file(inner, 65536, 100));
    CHECK_EQ(cuFileRead(fh, inner2, 5000, 7, 3), 5000);
    CHECK(same_as_file(inner2 + 3, 5000, 7));
    /* through the outer base, across the inner ones */
    CHECK_EQ(cuFileRead(fh, m, 200000, 999, 1), 200000);
    CHECK(same_as_file(m + 1, 200000, 999));

    /* the outer goes: the inner ones still carry transfers, both ways */
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, inner, 65536, 300, 0), 65536);
    CHECK(same_as_file(inner, 65536, 300));
    CHECK_EQ(cuFileRead(fh, inner2, 65536, 12345, 0), 65536);
    CHECK(same_as_file(inner2, 65536, 12345));
    unsigned char *src = malloc(65536);
    th_fill(src, 65536, 5, 4096);
    put(inner, src, 65536);
    CHECK_EQ(cuFileWrite(fh, inner, 65536, 4096, 0), 65536); /* the file's own bytes, back in place */
    unsigned char *back = malloc(65536);
    CHECK_EQ(pread(fd, back, 65536, 4096), 65536);
    CHECK(memcmp(back, src, 65536) == 0);
    CHECK_ST(cuFileBufDeregister(inner), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(inner), CU_FILE_MEMORY_NOT_REGISTERED);
    CHECK_ST(cuFileBufDeregister(inner2), CU_FILE_SUCCESS);

    /* inner first, then the outer around it */
    CHECK_ST(cuFileBufRegister(m + 4096, 4096, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(m, MB, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, m, MB, 0, 0), MB);
    CHECK(same_as_file(m, MB, 0));
    CHECK_ST(cuFileBufDeregister(m + 4096), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, m, MB, 17, 0), MB);
    CHECK(same_as_file(m, MB, 17));

    /* a batch and a stream-ordered read through a nested registration */
    CHECK_ST(cuFileBufRegister(inner, 65536, 0), CU_FILE_SUCCESS);
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, 2), CU_FILE_SUCCESS);
    CUfileIOParams_t io[2];
    memset(io, 0, sizeof io);
    for (int i = 0; i < 2; i++) {
        io[i].mode = CUFILE_BATCH;
        io[i].fh = fh;
        io[i].opcode = CUFILE_READ;
        io[i].cookie = (void *)(uintptr_t)(i + 1);
        io[i].u.batch.devPtr_base = i ? m : inner;
        io[i].u.batch.devPtr_offset = i ? 300000 : 0;
        io[i].u.batch.file_offset = i ? 5000 : 8192;
        io[i].u.batch.size = i ? 100000 : 65536;
    }
    CHECK_ST(cuFileBatchIOSubmit(b, 2, io, 0), CU_FILE_SUCCESS);
    CUfileIOEvents_t ev[2];
    unsigned nr = 2;
    CHECK_ST(cuFileBatchIOGetStatus(b, 2, &nr, ev, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(nr, 2);
    for (unsigned k = 0; k < nr; k++) {
        CHECK_EQ(ev[k].status, CUFILE_COMPLETE);
        CHECK_EQ(ev[k].ret, ev[k].cookie == (void *)1 ? 65536 : 100000);
    }
    cuFileBatchIODestroy(b);
    CHECK(same_as_file(inner, 65536, 8192));
    CHECK(same_as_file(m + 300000, 100000, 5000));
    size_t sz = 4096;
    off_t foff = 777, boff = 10;
    ssize_t done = -1;
    CHECK_ST(cuFileReadAsync(fh, inner, &sz, &foff, &boff, &done, NULL), CU_FILE_SUCCESS);
    CHECK_EQ(done, 4096);
    CHECK(same_as_file(inner + 10, 4096, 777));
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(inner), CU_FILE_SUCCESS);

    /* two neighbours and one across both (views of one storage) */
    CHECK_ST(cuFileBufRegister(m, 4096, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(m + 4096, 4096, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(m + 2048, 4096, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, m + 2048, 4096, 50, 0), 4096);
    CHECK(same_as_file(m + 2048, 4096, 50));
    CHECK_ST(cuFileBufDeregister(m + 4096), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(m + 2048), CU_FILE_SUCCESS);

    /* registrations that overlap are all dropped at close */
    CHECK_ST(cuFileBufRegister(m, MB, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufRegister(inner, 4096, 0), CU_FILE_SUCCESS);
    cuFileHandleDeregister(fh);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(inner), CU_FILE_MEMORY_NOT_REGISTERED);
    /* and the memory registers afresh in the next session */
    CHECK_ST(cuFileBufRegister(m, MB, 0), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);

    free(src);
    free(back);
    mem_free(m);
    close(fd);
    unlink(path);
    free(path);
    return th_failures;
}

static int scenario_set_limits(void)
{
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverSetMaxDirectIOSize(0), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    CHECK_ST(cuFileDriverSetMaxDirectIOSize((size_t)1 << 40), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    CHECK_ST(cuFileDriverSetMaxDirectIOSize(SIZE_MAX), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    CHECK_ST(cuFileDriverSetMaxCacheSize(SIZE_MAX), CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    size_t v = 0;
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 16384); /* a refused value changes nothing */
    CHECK_ST(cuFileDriverSetMaxDirectIOSize(1024), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v), CU_FILE_SUCCESS);
    CHECK_EQ(v, 1024);
    /* the parameter API keeps its own code for a value it refuses */
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 0), CU_FILE_INVALID_VALUE);
    return th_failures;
}

/* transfers through the base of a registered host buffer stay inside the registration */
static int scenario_host_bounds(void)
{
    char *path = th_make_file(8 << 20, 5);
    int fd = open(path, O_RDWR);
    CUfileHandle_t fh = th_register_fd(fd);
    size_t alloc = 8 << 20;
    unsigned char *h = aligned_alloc(4096, alloc);
    memset(h, 0x5a, alloc);
    CHECK_ST(cuFileBufRegister(h, MB, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, h, 4 * MB, 0, 0), -CU_FILE_INVALID_MAPPING_RANGE);
    CHECK_EQ(cuFileRead(fh, h, 4096, 0, MB - 100), -CU_FILE_INVALID_MAPPING_RANGE);
    CHECK_EQ(cuFileRead(fh, h, 100, 0, MB + 1), -CU_FILE_INVALID_MAPPING_RANGE);
    CHECK_EQ(cuFileWrite(fh, h, MB + 1, 0, 0), -CU_FILE_INVALID_MAPPING_RANGE);
    int untouched = 1;
    for (size_t i = 0; i < alloc; i++) untouched &= h[i] == 0x5a;
    CHECK(untouched);
    /* up to the end exactly, and through an interior pointer, as before */
    CHECK_EQ(cuFileRead(fh, h, 4096, 77, MB - 4096), 4096);
    CHECK(same_as_file(h + MB - 4096, 4096, 77));
    CHECK_EQ(cuFileRead(fh, h + 4096, 8192, 99, 0), 8192);
    CHECK(same_as_file(h + 4096, 8192, 99));
    /* a nested registration bounds transfers through its own base */
    CHECK_ST(cuFileBufRegister(h + 65536, 65536, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, h + 65536, 131072, 0, 0), -CU_FILE_INVALID_MAPPING_RANGE);
    CHECK_EQ(cuFileRead(fh, h, 131072, 5, 65536), 131072); /* through the outer base: inside it */
    CHECK(same_as_file(h + 65536, 131072, 5));
    /* a batch entry that runs past its registration is refused at submit */
    CUfileBatchHandle_t b;
    CHECK_ST(cuFileBatchIOSetUp(&b, 1), CU_FILE_SUCCESS);
    CUfileIOParams_t io;
    memset(&io, 0, sizeof io);
    io.mode = CUFILE_BATCH;
    io.fh = fh;
    io.opcode = CUFILE_READ;
    io.u.batch.devPtr_base = h;
    io.u.batch.devPtr_offset = MB - 10;
    io.u.batch.size = 4096;
    CHECK_ST(cuFileBatchIOSubmit(b, 1, &io, 0), CU_FILE_INVALID_MAPPING_RANGE);
    cuFileBatchIODestroy(b);
    /* deregistered, it is plain host memory again: any size the caller vouches for */
    CHECK_ST(cuFileBufDeregister(h + 65536), CU_FILE_SUCCESS);
    CHECK_ST(cuFileBufDeregister(h), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, h, 4 * MB, 1, 0), 4 * MB);
    CHECK(same_as_file(h, 4 * MB, 1));
    cuFileHandleDeregister(fh);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    free(h);
    close(fd);
    unlink(path);
    free(path);
    return th_failures;
}

/* NOTICE, the first of the levels NVIDIA's cufile.json lists, from the API and the file */
static int scenario_notice_level(void)
{
    char lv[32] = "";
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "NOTICE"), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, lv, sizeof lv), CU_FILE_SUCCESS);
    CHECK(!strcmp(lv, "NOTICE"));
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "notice"), CU_FILE_SUCCESS);
    char *json = th_make_file(0, 0);
    FILE *f = fopen(json, "w");
    fputs("{ \"logging\": { \"level\": \"NOTICE\" } }\n", f);
    fclose(f);
    setenv("CUFILE_ENV_PATH_JSON", json, 1);
    CHECK_ST(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "ERROR"), CU_FILE_SUCCESS);
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    CHECK_ST(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, lv, sizeof lv), CU_FILE_SUCCESS);
    CHECK(!strcmp(lv, "ERROR")); /* the API's value outranks the file */
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    unlink(json);
    free(json);
    return th_failures;
}

/* the error macros on what cuFileRead and the status calls return */
static void macros(void)
{
    ssize_t r = -(ssize_t)CU_FILE_INVALID_VALUE;
    CHECK(IS_CUFILE_ERR(r));
    CHECK(!strcmp(CUFILE_ERRSTR(r), cufileop_status_error(CU_FILE_INVALID_VALUE)));
    CHECK(!IS_CUFILE_ERR((ssize_t)-1));
    CHECK(!IS_CUFILE_ERR((ssize_t)4096));
    CHECK(IS_CUFILE_ERR(-(ssize_t)CU_FILE_BATCH_NOCOMPAT_ERROR));
    CUfileError_t st = {CU_FILE_HANDLE_NOT_REGISTERED, 0};
    CHECK(IS_CUFILE_ERR(st.err));
    CHECK(!strcmp(CUFILE_ERRSTR(st.err), "file handle not registered"));
    CHECK(!IS_CUFILE_ERR(CU_FILE_SUCCESS));
    CHECK(!strcmp(CUFILE_ERRSTR(0), "cufile success"));
}

int main(void)
{
    macros();
    th_in_child("nested buffer registrations", scenario_nested);
    th_in_child("DriverSet* limits", scenario_set_limits);
    th_in_child("logging level NOTICE", scenario_notice_level);
    th_in_child("host registration bounds", scenario_host_bounds);
    return th_finish("test_compat");
}
