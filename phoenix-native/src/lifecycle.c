/* Library start-up, once per process: the parameters are frozen, then the devices
 * (connector first: without a device nothing else is worth starting), then the worker
 * pool, whose engine and size the devices are then given. This module owns the pool and
 * the frozen set (phx_params); the devices keep a copy of it. Nothing is torn down: the
 * pool's threads and the devices' tables live as long as the process. */
#include "lifecycle.h"
#include "device.h"
#include "error.h"
#include "params.h"
#include "phoenix.h"
#include "pool.h"
#include <pthread.h>

static phx_params_t params;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

const phx_params_t *phx_params(void) { return &params; }

static void lib_init_once(void)
{
    params = phx_params_freeze();
    init_rc = phx_devices_init(&params);
    if (init_rc == 0) init_rc = phx_pool_start(&params);
    if (init_rc == 0) phx_devices_use_pool(phx_pool_engine(), phx_pool_workers());
}

int phx_lib_init(void)
{
    pthread_once(&init_once, lib_init_once);
    if (init_rc < 0) return phx_fail(-init_rc, "phoenix initialisation failed: %s", phx_last_error());
    return 0;
}

int phxfs_init(void)
{
    phx_clear_error();
    return phx_lib_init();
}

int phxfs_version(void)
{
    return PHXFS_VERSION_MAJOR * 10000 + PHXFS_VERSION_MINOR * 100 + PHXFS_VERSION_PATCH;
}
