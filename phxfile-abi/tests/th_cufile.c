#include "th_cufile.h"
#include "harness.h"

CUfileHandle_t th_register_fd(int fd)
{
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_SUCCESS);
    return fh;
}
