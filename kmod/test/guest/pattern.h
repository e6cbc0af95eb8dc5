/* The test pattern both the host (disk images) and the guest programs write and verify. */
#ifndef PHX_PATTERN_H
#define PHX_PATTERN_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- the pattern: a 64-bit xorshift stream, keyed by seed and position ---- */
static inline uint64_t pat_word(uint64_t seed, uint64_t idx)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + idx * 0xD1B54A32D192ED03ull + 1;
    x ^= x >> 31; x *= 0x7FB5D329728EA185ull; x ^= x >> 27; x *= 0x81DADEF4BC2DD44Dull; x ^= x >> 33;
    return x;
}
static inline void pat_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = pat_word(seed, (off + i) / 8);
        memcpy((char *)buf + i, &w, len - i < 8 ? len - i : 8);
    }
}
/* first differing byte, or -1 */
static inline long pat_cmp(const void *buf, size_t len, uint64_t seed, uint64_t off)
{
    char tmp[4096];
    for (size_t i = 0; i < len; i += sizeof tmp) {
        size_t n = len - i < sizeof tmp ? len - i : sizeof tmp;
        pat_fill(tmp, n, seed, off + i);
        if (memcmp(tmp, (const char *)buf + i, n))
            for (size_t k = 0; k < n; k++)
                if (tmp[k] != ((const char *)buf)[i + k]) return (long)(i + k);
    }
    return -1;
}

#endif
