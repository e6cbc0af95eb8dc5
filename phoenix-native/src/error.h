/* The calling thread's last error (phxfs_last_error) and warnings printed once (error.c). */
#ifndef PHX_ERROR_H
#define PHX_ERROR_H
#include <errno.h> /* callers pass errno codes to phx_fail */
#include <stdatomic.h>

/* Records the message as the thread's last error; returns -err. */
int phx_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void phx_clear_error(void);
/* the calling thread's last error ("" when none); phxfs_last_error exports it */
const char *phx_last_error(void);
void phx_warn_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
