/* Small cuFileRead/cuFileWrite into registered device memory run on the caller's
 * thread (libphoenix's inline path, as NVIDIA's compatibility mode does it), large
 * ones on libphoenix's workers. pread and pwrite are interposed to see which thread
 * does the file I/O; every byte is checked. On the host connector only the bytes. */
#include "harness.h"
#include "th_cufile.h"
#include "cufile.h"
#include "phoenix.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
__attribute__((constructor)) static void find_real(void)
{
    real_pread = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
}

static __thread int in_call;
static atomic_int counting;
static atomic_long on_caller, on_other;

static void seen(void)
{
    if (atomic_load(&counting)) atomic_fetch_add(in_call ? &on_caller : &on_other, 1);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    seen();
    return real_pread(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    seen();
    return real_pwrite(fd, buf, n, off);
}

static void start(void)
{
    atomic_store(&on_caller, 0);
    atomic_store(&on_other, 0);
    atomic_store(&counting, 1);
    in_call = 1;
}

/* 1 when the call's file I/O ran on the caller's thread only, 0 on others' only, -1 mixed or none */
static int stop(void)
{
    in_call = 0;
    atomic_store(&counting, 0);
    long c = atomic_load(&on_caller), o = atomic_load(&on_other);
    return c && !o ? 1 : o && !c ? 0 : -1;
}

#define FSIZE ((2u << 20) + 333)
#define BLEN (2u << 20)

int main(void)
{
    int device = th_have_device();
    char *path = th_make_file(FSIZE, 21);
    unsigned char *ref = malloc(FSIZE), *got = malloc(BLEN);
    th_fill(ref, FSIZE, 21, 0);
    int fd = open(path, O_RDWR);
    CUfileHandle_t fh = th_register_fd(fd);
    char *m;
    if (device) {
        CHECK_EQ(phxfs_open(0), 0);
        CHECK_EQ(phxfs_mem_alloc(0, BLEN, (void **)&m), 0);
    } else {
        m = aligned_alloc(4096, BLEN);
    }
    CHECK_ST(cuFileBufRegister(m, BLEN, 0), CU_FILE_SUCCESS);
    char v[32];
    CHECK(phxfs_get_config("inline_kb", v, sizeof v) > 0);
    size_t inline_bytes = (size_t)atol(v) << 10;

    /* reads: 4 KiB and 64 KiB (the sizes issue 11 measured) and odd ones, then one larger than
     * the inline limit */
    struct { size_t size; off_t foff, boff; } rd[] = {{4096, 0, 0}, {4096, 8192, 4096}, {65536, 65536, 0}, {4097, 3, 5},
                                                      {1, FSIZE - 1, 7}, {200001, 12345, 999}, {1u << 20, 4096, 0}};
    for (size_t i = 0; i < sizeof rd / sizeof *rd; i++) {
        start();
        ssize_t n = cuFileRead(fh, m, rd[i].size, rd[i].foff, rd[i].boff);
        int where = stop();
        CHECK_EQ(n, (ssize_t)rd[i].size);
        if (device) {
            CHECK_EQ(phxfs_memcpy_to_host(0, got, m + rd[i].boff, rd[i].size), 0);
            /* small: the caller's thread; larger than inline_kb: the workers */
            if (where != (rd[i].size <= inline_bytes)) {
                fprintf(stderr, "cuFileRead of %zu: file I/O on %s, expected %s\n", rd[i].size,
                        where < 0 ? "both or none" : where ? "the caller's thread" : "workers",
                        rd[i].size <= inline_bytes ? "the caller's thread" : "workers");
                th_failures++;
            }
        } else {
            memcpy(got, m + rd[i].boff, rd[i].size);
        }
        CHECK(memcmp(got, ref + rd[i].foff, rd[i].size) == 0);
    }

    /* writes: a small one on the caller's thread, bytes checked through plain I/O */
    char *out = th_make_file(0, 0);
    int ofd = open(out, O_RDWR);
    CUfileHandle_t ofh = th_register_fd(ofd);
    CHECK_EQ(cuFileRead(fh, m, 100000, 777, 11), 100000);
    start();
    CHECK_EQ(cuFileWrite(ofh, m, 4096, 4096, 11), 4096);
    int where = stop();
    if (device) CHECK_EQ(where, 4096 <= inline_bytes);
    start();
    CHECK_EQ(cuFileWrite(ofh, m, 60000, 8192, 11 + 4096), 60000);
    where = stop();
    if (device) CHECK_EQ(where, 60000 <= inline_bytes);
    CHECK_EQ(real_pread(ofd, got, 4096 + 60000, 4096), 4096 + 60000);
    CHECK(memcmp(got, ref + 777, 4096 + 60000) == 0);

    cuFileHandleDeregister(ofh);
    close(ofd);
    unlink(out);
    free(out);
    CHECK_ST(cuFileBufDeregister(m), CU_FILE_SUCCESS);
    if (device) {
        CHECK_EQ(phxfs_mem_free(0, m), 0);
        CHECK_EQ(phxfs_close(0), 0);
    } else {
        free(m);
    }
    cuFileHandleDeregister(fh);
    close(fd);
    unlink(path);
    free(path);
    free(ref);
    free(got);
    CHECK_ST(cuFileDriverClose(), CU_FILE_SUCCESS);
    return th_finish("test_smallio");
}
