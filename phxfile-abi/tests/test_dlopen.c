/* A client that finds the library the way KvikIO does: dlopen("libcufile.so.0",
 * RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE) and dlsym of every symbol it requires
 * (a missing one would make KvikIO treat cuFile as unavailable), then uses them
 * through the pointers. Also: loading libphxfile.so beside it and libphoenix
 * directly leaves one libphoenix in the process. */

#include "harness.h"
#include "cufile.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

static const char *required[] = {
    "cuFileHandleRegister", "cuFileHandleDeregister", "cuFileRead", "cuFileWrite", "cuFileBufRegister",
    "cuFileBufDeregister", "cuFileDriverOpen", "cuFileDriverClose_v2", "cuFileDriverGetProperties",
    "cuFileDriverSetPollMode", "cuFileDriverSetMaxCacheSize", "cuFileDriverSetMaxPinnedMemSize",
    "cuFileBatchIOSetUp", "cuFileBatchIOSubmit", "cuFileBatchIOGetStatus", "cuFileBatchIOCancel",
    "cuFileBatchIODestroy", "cuFileReadAsync", "cuFileWriteAsync", "cuFileStreamRegister", "cuFileStreamDeregister",
    /* optional for KvikIO, part of the ABI all the same */
    "cuFileGetVersion", "cuFileDriverClose", "cuFileUseCount", "cuFileDriverSetMaxDirectIOSize",
    "cuFileGetParameterSizeT", "cuFileGetParameterBool", "cuFileGetParameterString", "cuFileSetParameterSizeT",
    "cuFileSetParameterBool", "cuFileSetParameterString",
    "phxFileDriverOpen", "phxFileDriverClose", "phxFileBufRegister", "phxFileBufDeregister", "phxFileHandleRegister",
    "phxFileHandleDeregister", "phxFileStreamRegister", "phxFileStreamDeregister", "phxFileReadAsync", "phxFileWriteAsync",
};

static int count_phoenix(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (strstr(info->dlpi_name, "libphoenix")) ++*(int *)arg;
    return 0;
}

int main(void)
{
    void *h = dlopen("libcufile.so.0", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        fprintf(stderr, "dlopen(libcufile.so.0): %s\n", dlerror());
        return 1;
    }
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        void *f = dlsym(h, required[i]);
        if (!f) { fprintf(stderr, "missing symbol %s\n", required[i]); th_failures++; continue; }
        Dl_info di;
        CHECK(dladdr(f, &di) && strstr(di.dli_fname, "libcufile.so.0"));
    }
    /* no internals leak out: only cuFile* and phxFile* are exported */
    CHECK(dlsym(h, "cf_ensure_open") == NULL);
    CHECK(dlsym(h, "cf_log") == NULL);

    CUfileError_t (*drv_open)(void) = (CUfileError_t (*)(void))dlsym(h, "cuFileDriverOpen");
    CUfileError_t (*drv_close)(void) = (CUfileError_t (*)(void))dlsym(h, "cuFileDriverClose_v2");
    CUfileError_t (*props)(CUfileDrvProps_t *) = (CUfileError_t (*)(CUfileDrvProps_t *))dlsym(h, "cuFileDriverGetProperties");
    CUfileError_t (*poll)(bool, size_t) = (CUfileError_t (*)(bool, size_t))dlsym(h, "cuFileDriverSetPollMode");
    CUfileError_t (*hreg)(CUfileHandle_t *, CUfileDescr_t *) = (CUfileError_t (*)(CUfileHandle_t *, CUfileDescr_t *))dlsym(h, "cuFileHandleRegister");
    void (*hdereg)(CUfileHandle_t) = (void (*)(CUfileHandle_t))dlsym(h, "cuFileHandleDeregister");
    ssize_t (*rd)(CUfileHandle_t, void *, size_t, off_t, off_t) = (ssize_t (*)(CUfileHandle_t, void *, size_t, off_t, off_t))dlsym(h, "cuFileRead");
    CUfileError_t (*ver)(int *) = (CUfileError_t (*)(int *))dlsym(h, "cuFileGetVersion");
    if (!drv_open || !drv_close || !props || !poll || !hreg || !hdereg || !rd || !ver) return th_finish("test_dlopen");

    CHECK_ST(drv_open(), CU_FILE_SUCCESS);
    CUfileDrvProps_t p;
    CHECK_ST(props(&p), CU_FILE_SUCCESS);
    /* KvikIO's test for a peer-to-peer path */
    int gds_available = p.nvfs.major_version != 0 || p.nvfs.minor_version != 0;
    CHECK(!gds_available);
    CHECK_ST(poll(false, 4), CU_FILE_SUCCESS);
    int v = 0;
    CHECK_ST(ver(&v), CU_FILE_SUCCESS);
    CHECK(v >= 1060); /* KvikIO's minimum for batches and streams */
    char *path = th_make_file(100000, 8);
    int fd = open(path, O_RDONLY);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh;
    CHECK_ST(hreg(&fh, &d), CU_FILE_SUCCESS);
    unsigned char got[5000], ref[5000];
    th_fill(ref, sizeof ref, 8, 1234);
    CHECK_EQ(rd(fh, got, sizeof got, 1234, 0), sizeof got);
    CHECK(memcmp(got, ref, sizeof got) == 0);
    hdereg(fh);
    CHECK_ST(drv_close(), CU_FILE_SUCCESS);
    /* the plain name (cuda-python looks it up) closes too */
    CUfileError_t (*plain_close)(void) = (CUfileError_t (*)(void))dlsym(h, "cuFileDriverClose");
    long (*use_count)(void) = (long (*)(void))dlsym(h, "cuFileUseCount");
    if (plain_close && use_count) {
        CHECK_ST(drv_open(), CU_FILE_SUCCESS);
        CHECK_EQ(use_count(), 1);
        CHECK_ST(plain_close(), CU_FILE_SUCCESS);
        CHECK_EQ(use_count(), 0);
        CHECK_ST(plain_close(), CU_FILE_DRIVER_NOT_INITIALIZED);
    }

    /* one libphoenix, however the process reaches it */
    void *h2 = dlopen("libphxfile.so", RTLD_NOW | RTLD_LOCAL);
    CHECK(h2 != NULL);
    void *h3 = dlopen(PHXFILE_DIR "/libphoenix.so", RTLD_NOW | RTLD_LOCAL);
    CHECK(h3 != NULL);
    int n = 0;
    dl_iterate_phdr(count_phoenix, &n);
    CHECK_EQ(n, 1);
    close(fd);
    unlink(path);
    free(path);
    return th_finish("test_dlopen");
}
