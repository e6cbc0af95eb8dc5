#include "error.h"
#include "phoenix.h"
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static __thread char last_error[512];

int phx_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -err;
}

void phx_clear_error(void) { last_error[0] = 0; }

const char *phx_last_error(void) { return last_error; }

const char *phxfs_last_error(void) { return phx_last_error(); }

void phx_warn_once(atomic_int *flag, const char *fmt, ...)
{
    if (atomic_exchange(flag, 1)) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("phoenix: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
