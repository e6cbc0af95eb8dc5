/* LD_PRELOAD shim for load_bench.py: opens files without O_DIRECT. torch.cuda.gds opens its
 * files with O_DIRECT, so cuFile's compatibility mode reads them from the disk even when they
 * sit in the page cache; with this shim the same torch code reads through the page cache, the
 * setting the reference's 18.7-22.1 GB/s came from. Build: gcc -shared -fPIC -o no_odirect.so
 * no_odirect.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>

#define SHIM(name, ...)                                                                      \
    int name(__VA_ARGS__, int flags, ...)                                                    \
    {                                                                                        \
        va_list ap;                                                                          \
        va_start(ap, flags);                                                                 \
        int mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, int) : 0;                    \
        va_end(ap);

SHIM(open, const char *path)
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    return real(path, flags & ~O_DIRECT, mode);
}
SHIM(open64, const char *path)
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    return real(path, flags & ~O_DIRECT, mode);
}
SHIM(openat, int dirfd, const char *path)
    static int (*real)(int, const char *, int, ...);
    if (!real) real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    return real(dirfd, path, flags & ~O_DIRECT, mode);
}
SHIM(openat64, int dirfd, const char *path)
    static int (*real)(int, const char *, int, ...);
    if (!real) real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat64");
    return real(dirfd, path, flags & ~O_DIRECT, mode);
}
