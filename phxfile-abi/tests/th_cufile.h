#ifndef PHXFILE_TEST_TH_CUFILE_H
#define PHXFILE_TEST_TH_CUFILE_H
/* Helpers for the tests that link libcufile.so.0 (all but test_dlopen, which finds the library
 * at run time as KvikIO does, and so cannot link these). */
#include "cufile.h"

/* fd registered as an opaque-fd handle; a refusal counts as a failure (and gives NULL) */
CUfileHandle_t th_register_fd(int fd);
#endif
