#ifndef PHXFILE_TEST_HARNESS_H
#define PHXFILE_TEST_HARNESS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

extern int th_failures;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); th_failures++; } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); th_failures++; } } while (0)
/* a cuFile status: CHECK_ST(call, CU_FILE_SUCCESS) */
#define CHECK_ST(call, want) CHECK_EQ((call).err, (want))

/* a temp file of size deterministic bytes (seed); returns a malloc'd path */
char *th_make_file(size_t size, unsigned seed);
void th_fill(unsigned char *p, size_t n, unsigned seed, size_t start);
/* 1 when the connector gives real device memory distinct from host memory (fake, cuda) */
int th_have_device(void);
/* runs fn in a child process (a fresh library state); returns the child's failure count */
int th_in_child(const char *name, int (*fn)(void));
int th_finish(const char *name);
#endif
