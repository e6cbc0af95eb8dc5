/* LD_PRELOAD shim for load_bench.py: opens files without O_DIRECT. torch.cuda.gds opens its
 * files with O_DIRECT, so cuFile's compatibility mode reads them from the disk even when they
 * sit in the page cache; with this shim the same torch code reads through the page cache, the
 * setting the reference's 18.7-22.1 GB/s came from. Build: gcc -shared -fPIC -o no_odirect.so
 * no_odirect.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* The mode argument exists only when the flags create a file. */
#define MODE_ARG(flags, mode)                                        \
    do {                                                             \
        va_list ap;                                                  \
        va_start(ap, flags);                                         \
        mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, int) : 0; \
        va_end(ap);                                                  \
    } while (0)

static int via_open(const char *name, const char *path, int flags, int mode)
{
    open_fn real = (open_fn)dlsym(RTLD_NEXT, name);
    return real(path, flags & ~O_DIRECT, mode);
}

static int via_openat(const char *name, int dirfd, const char *path, int flags, int mode)
{
    openat_fn real = (openat_fn)dlsym(RTLD_NEXT, name);
    return real(dirfd, path, flags & ~O_DIRECT, mode);
}

int open(const char *path, int flags, ...) { int mode; MODE_ARG(flags, mode); return via_open("open", path, flags, mode); }
int open64(const char *path, int flags, ...) { int mode; MODE_ARG(flags, mode); return via_open("open64", path, flags, mode); }
int openat(int dirfd, const char *path, int flags, ...) { int mode; MODE_ARG(flags, mode); return via_openat("openat", dirfd, path, flags, mode); }
int openat64(int dirfd, const char *path, int flags, ...) { int mode; MODE_ARG(flags, mode); return via_openat("openat64", dirfd, path, flags, mode); }
