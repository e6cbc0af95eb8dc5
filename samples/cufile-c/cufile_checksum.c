/*
 * cufile_checksum: reads a file into device memory with cuFile, checksums it,
 * and writes it back out to a second file, the way a cuFile program does.
 * Written against the cuFile API only; device memory comes from the CUDA
 * driver (libcuda.so.1, opened at run time so the program builds without the
 * CUDA toolkit). Without a driver or a device it uses host memory, which cuFile
 * also accepts; CUFILE_SAMPLE_HOST=1 asks for host memory where a GPU is.
 *
 *   cufile_checksum INPUT OUTPUT
 *
 * Prints where the buffer is, then the FNV-1a 64 checksum of what cuFileRead put
 * in it, of INPUT read with plain POSIX I/O, and of what cuFileWrite put in
 * OUTPUT; exits 0 when all three match.
 *
 * Build and run lines (against Phoenix's library and NVIDIA's, and without a
 * GPU): the top-level README, "Running cuFile programs on Phoenix".
 */
#include <cufile.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the few driver calls the sample needs, resolved from libcuda.so.1 */
typedef int (*cu_init_t)(unsigned);
typedef int (*cu_dev_get_t)(int *, int);
typedef int (*cu_dev_name_t)(char *, int, int);
typedef int (*cu_ctx_retain_t)(void **, int);
typedef int (*cu_ctx_set_t)(void *);
typedef int (*cu_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_free_t)(unsigned long long);
typedef int (*cu_dtoh_t)(void *, unsigned long long, size_t);

static struct {
    cu_alloc_t alloc;
    cu_free_t free;
    cu_dtoh_t dtoh;
} cu;

/* 0 with a current context on device 0 and its name in name; else -1 and why not */
static int cuda_setup(char *name, int len, const char **why)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) { *why = "no CUDA driver: libcuda.so.1 not found"; return -1; }
    cu_init_t init = (cu_init_t)dlsym(h, "cuInit");
    cu_dev_get_t dev_get = (cu_dev_get_t)dlsym(h, "cuDeviceGet");
    cu_dev_name_t dev_name = (cu_dev_name_t)dlsym(h, "cuDeviceGetName");
    cu_ctx_retain_t retain = (cu_ctx_retain_t)dlsym(h, "cuDevicePrimaryCtxRetain");
    cu_ctx_set_t set = (cu_ctx_set_t)dlsym(h, "cuCtxSetCurrent");
    cu.alloc = (cu_alloc_t)dlsym(h, "cuMemAlloc_v2");
    cu.free = (cu_free_t)dlsym(h, "cuMemFree_v2");
    cu.dtoh = (cu_dtoh_t)dlsym(h, "cuMemcpyDtoH_v2");
    int dev;
    void *ctx;
    if (!init || !dev_get || !dev_name || !retain || !set || !cu.alloc || !cu.free || !cu.dtoh) {
        *why = "libcuda.so.1 lacks a driver call this program uses";
        return -1;
    }
    if (init(0) || dev_get(&dev, 0) || dev_name(name, len, dev) || retain(&ctx, dev) || set(ctx)) {
        *why = "no CUDA device";
        return -1;
    }
    return 0;
}

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* the whole file through pread; returns the bytes read */
static off_t posix_sum(int fd, uint64_t *sum)
{
    unsigned char chunk[65536];
    ssize_t r;
    off_t at = 0;
    *sum = 0xcbf29ce484222325ull;
    while ((r = pread(fd, chunk, sizeof chunk, at)) > 0) {
        *sum = fnv1a(chunk, (size_t)r, *sum);
        at += r;
    }
    return r < 0 ? -1 : at;
}

static int fail(const char *what, CUfileError_t st)
{
    fprintf(stderr, "cufile_checksum: %s failed: %s (%d)\n", what, CUFILE_ERRSTR((int)st.err), st.err);
    return 1;
}

static CUfileHandle_t open_handle(const char *path, int flags, int *fd_out)
{
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        fprintf(stderr, "cufile_checksum: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh;
    CUfileError_t st = cuFileHandleRegister(&fh, &d);
    if (st.err != CU_FILE_SUCCESS) exit(fail("cuFileHandleRegister", st));
    *fd_out = fd;
    return fh;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    struct stat sb;
    if (stat(argv[1], &sb) != 0) {
        fprintf(stderr, "cufile_checksum: cannot stat %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    size_t size = (size_t)sb.st_size;
    char name[256] = "";
    const char *why = "CUFILE_SAMPLE_HOST is set";
    int on_device = getenv("CUFILE_SAMPLE_HOST") == NULL && cuda_setup(name, sizeof name, &why) == 0;
    CUfileError_t st = cuFileDriverOpen();
    if (st.err != CU_FILE_SUCCESS) return fail("cuFileDriverOpen", st);

    void *buf;
    unsigned long long dptr = 0;
    if (on_device) {
        if (cu.alloc(&dptr, size ? size : 1)) { fprintf(stderr, "cufile_checksum: cuMemAlloc of %zu bytes failed\n", size); return 1; }
        buf = (void *)(uintptr_t)dptr;
        printf("buffer: device memory on %s\n", name);
    } else {
        buf = malloc(size ? size : 1);
        if (!buf) { fprintf(stderr, "cufile_checksum: out of memory\n"); return 1; }
        printf("buffer: host memory (%s)\n", why);
    }
    st = cuFileBufRegister(buf, size ? size : 1, 0);
    if (st.err != CU_FILE_SUCCESS) return fail("cuFileBufRegister", st);

    int in_fd, out_fd;
    CUfileHandle_t in = open_handle(argv[1], O_RDONLY, &in_fd);
    CUfileHandle_t out = open_handle(argv[2], O_RDWR | O_CREAT | O_TRUNC, &out_fd);
    ssize_t n = cuFileRead(in, buf, size, 0, 0);
    if (n != (ssize_t)size) {
        fprintf(stderr, "cufile_checksum: cuFileRead returned %zd (%s)\n", n,
                n == -1 ? strerror(errno) : n < 0 ? CUFILE_ERRSTR((int)n) : "short read");
        return 1;
    }
    unsigned char *host = malloc(size ? size : 1);
    if (!host) { fprintf(stderr, "cufile_checksum: out of memory\n"); return 1; }
    if (on_device) {
        if (size && cu.dtoh(host, dptr, size)) { fprintf(stderr, "cufile_checksum: cuMemcpyDtoH failed\n"); return 1; }
    } else {
        memcpy(host, buf, size);
    }
    uint64_t sum_in = fnv1a(host, size, 0xcbf29ce484222325ull);
    n = cuFileWrite(out, buf, size, 0, 0);
    if (n != (ssize_t)size) {
        fprintf(stderr, "cufile_checksum: cuFileWrite returned %zd (%s)\n", n,
                n == -1 ? strerror(errno) : n < 0 ? CUFILE_ERRSTR((int)n) : "short write");
        return 1;
    }
    /* INPUT and what landed in OUTPUT, read with plain POSIX I/O: the bytes cuFile moved are
     * checked against the file, not only against each other */
    uint64_t sum_file, sum_out;
    off_t file_len = posix_sum(in_fd, &sum_file), out_len = posix_sum(out_fd, &sum_out);
    printf("%s by cuFileRead: %zu bytes, checksum %016" PRIx64 "\n", argv[1], size, sum_in);
    printf("%s by pread: %jd bytes, checksum %016" PRIx64 "\n", argv[1], (intmax_t)file_len, sum_file);
    printf("%s (cuFileWrite) by pread: %jd bytes, checksum %016" PRIx64 "\n", argv[2], (intmax_t)out_len, sum_out);
    int ok = sum_in == sum_file && sum_out == sum_file && file_len == (off_t)size && out_len == (off_t)size;
    printf("%s\n", ok ? "checksums match" : "CHECKSUMS DIFFER");

    cuFileHandleDeregister(in);
    cuFileHandleDeregister(out);
    close(in_fd);
    close(out_fd);
    cuFileBufDeregister(buf);
    if (on_device) cu.free(dptr);
    else free(buf);
    free(host);
    cuFileDriverClose();
    return ok ? 0 : 1;
}
