/* The header's error macros as C programs use them, built with -Wall -Wextra -Werror:
 * IS_CUFILE_ERR / CUFILE_ERRSTR on cuFileRead's ssize_t result and on a CUfileError_t's err
 * (gcc's -Wabsolute-value, in -Wextra, failed both when the macros called abs() directly). */
#include <cufile.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *describe(ssize_t ret, CUfileError_t st);
const char *describe(ssize_t ret, CUfileError_t st)
{
    if (ret < 0) return IS_CUFILE_ERR(ret) ? CUFILE_ERRSTR(ret) : strerror(errno);
    if (IS_CUFILE_ERR(st.err)) return CUFILE_ERRSTR(st.err);
    if (IS_CUDA_ERR(st)) return CU_FILE_CUDA_ERR(st) ? "cuda" : "";
    return "ok";
}
