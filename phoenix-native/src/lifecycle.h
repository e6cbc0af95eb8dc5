/* Library start-up (lifecycle.c): the parameters frozen, the connector and devices
 * chosen, the worker pool started; once per process, on the first call that needs it. */
#ifndef PHX_LIFECYCLE_H
#define PHX_LIFECYCLE_H
#include "params.h"

/* 0, or the failure of the one start-up (again for every caller) */
int phx_lib_init(void);
const phx_params_t *phx_params(void); /* the frozen set (after phx_lib_init) */

#endif
