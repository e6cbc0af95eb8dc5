/* phxfs_pointer_device: device memory names its device, anything else is host
 * memory, a range past a device allocation is refused; no device need be open. */
#include "harness.h"
#include <errno.h>

int main(void)
{
    int dev = 99;
    char stack[64] = {0};
    CHECK_EQ(phxfs_pointer_device(stack, sizeof stack, &dev), 0);
    CHECK_EQ(dev, -1);
    CHECK_EQ(phxfs_pointer_device(stack, 1, NULL), -EINVAL);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_open(0), 0);
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    int accel = strcmp(info.connector, "host") != 0;
    int last = phxfs_device_count() - 1;
    CHECK_EQ(phxfs_open(last), 0);
    void *m;
    CHECK_EQ(phxfs_mem_alloc(last, 1 << 20, &m), 0);
    dev = 99;
    CHECK_EQ(phxfs_pointer_device((char *)m + 4096, 8192, &dev), 0);
    CHECK_EQ(dev, accel ? last : -1);
    if (accel) {
        CHECK_EQ(phxfs_pointer_device((char *)m + 4096, 1 << 20, &dev), -EINVAL);
        CHECK(strstr(phxfs_last_error(), "past the end") != NULL);
    }
    CHECK_EQ(phxfs_mem_free(last, m), 0);
    CHECK_EQ(phxfs_close(last), 0);
    CHECK_EQ(phxfs_close(0), 0);
    return th_finish("test_pointer_device");
}
