/* Device-to-device copies: every pair of the devices there are (one on the host connector,
 * two on the fake device, PHX_FAKE_DEVICES more), byte-exact, at sizes below, at and across
 * the pinned slot; through host memory as well as directly (PHX_FAKE_PEER=0, or
 * FAKECUDA_NO_PEER=1 under the fake driver). */
#include "harness.h"
#include <errno.h>

int main(void)
{
    int n = phxfs_device_count();
    CHECK(n >= 1);
    if (n > 4) n = 4;
    for (int d = 0; d < n; d++) CHECK_EQ(phxfs_open(d), 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    size_t slot = info.slot_bytes ? info.slot_bytes : 1 << 20;
    size_t sizes[] = {1, 4097, slot, 3 * slot + 12345};
    size_t max = sizes[3];
    void *mem[4] = {0};
    for (int d = 0; d < n; d++) CHECK_EQ(phxfs_mem_alloc(d, max, &mem[d]), 0);
    unsigned char *want = malloc(max), *got = malloc(max);
    for (int src = 0; src < n; src++) {
        th_fill(want, max, 11u + (unsigned)src, 0);
        CHECK_EQ(phxfs_memcpy_to_device(src, mem[src], want, max), 0);
        for (int dst = 0; dst < n; dst++) {
            if (dst == src) continue;
            int can = phxfs_device_can_access_peer(dst, src);
            CHECK(can == 0 || can == 1);
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
                size_t len = sizes[k];
                memset(got, 0, max);
                CHECK_EQ(phxfs_memcpy_to_device(dst, mem[dst], got, max), 0); /* zero the destination */
                /* at an odd offset on both sides, as a tensor inside a buffer would be */
                size_t off = len < max ? 3 : 0;
                if (len + off > max) len = max - off;
                CHECK_EQ(phxfs_memcpy_peer(dst, (char *)mem[dst] + off, src, (char *)mem[src] + off, len), 0);
                CHECK_EQ(phxfs_memcpy_to_host(dst, got, mem[dst], max), 0);
                size_t bad = 0;
                for (size_t i = 0; i < max; i++) {
                    unsigned char w = i >= off && i < off + len ? want[i] : 0;
                    bad += got[i] != w;
                }
                if (bad) fprintf(stderr, "device %d -> %d, %zu bytes: %zu bytes wrong\n", src, dst, len, bad);
                CHECK_EQ(bad, 0);
            }
        }
    }
    /* within one device, and the argument checks */
    th_fill(want, max, 5, 0);
    CHECK_EQ(phxfs_memcpy_to_device(0, mem[0], want, max), 0);
    CHECK_EQ(phxfs_memcpy_peer(0, (char *)mem[0] + max / 2, 0, mem[0], max / 2), 0);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, mem[0], max), 0);
    CHECK_EQ(memcmp(got + max / 2, want, max / 2), 0);
    CHECK_EQ(phxfs_memcpy_peer(0, mem[0], 0, mem[0], 0), 0);
    CHECK_EQ(phxfs_memcpy_peer(0, NULL, 0, mem[0], 1), -EINVAL);
    CHECK_EQ(phxfs_memcpy_peer(0, mem[0], 63, mem[0], 1), -ENODEV);
    CHECK_EQ(phxfs_device_can_access_peer(0, 63), -ENODEV);
    CHECK_EQ(phxfs_device_can_access_peer(0, 0), 1);
    for (int d = 0; d < n; d++) {
        CHECK_EQ(phxfs_mem_free(d, mem[d]), 0);
        CHECK_EQ(phxfs_close(d), 0);
    }
    free(want);
    free(got);
    return th_finish("test_peer");
}
