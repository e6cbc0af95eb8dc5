#ifndef PHX_HARNESS_H
#define PHX_HARNESS_H
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "phoenix.h"

extern int th_failures;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, phxfs_last_error()); th_failures++; } } while (0)
#define CHECK_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ != b_) { fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld (last error: %s)\n", __FILE__, __LINE__, #a, a_, #b, b_, phxfs_last_error()); th_failures++; } } while (0)

/* a temp file of `size` deterministic bytes; returns its path (static buffer) */
const char *th_make_file(size_t size, unsigned seed);
void th_fill(unsigned char *p, size_t n, unsigned seed, size_t start);
int th_open(const char *path, int direct);
/* a temp file of `size` bytes of stream `seed` (its path into path[path_len]), opened read-only
 * without the library; *ref gets the bytes it holds (malloc'd). Exits 2 when it cannot. */
int th_open_reference(size_t size, unsigned seed, char *path, size_t path_len, unsigned char **ref);
int th_finish(const char *name);
#endif
