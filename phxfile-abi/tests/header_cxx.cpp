// The header must compile as C++ too (C++ callers include it unchanged).
#include <cufile.h>
#include <phxfile.h>
int main() { CUfileDrvProps_t p; CUfileError_t e = cuFileDriverGetProperties(&p); return IS_CUFILE_ERR(-(int)e.err) ? 1 : 0; }
