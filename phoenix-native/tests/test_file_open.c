/* phxfs_file_open: what a caller gets back for a file, a directory and a missing path. Opening
 * a directory for reading succeeds in open(2), and its size by lseek(SEEK_END) is 2^63 - 1 on
 * ext4: a caller sizing a buffer from it asked for exabytes (ReadFile on /etc ran out of heap). */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static void check_in(const char *parent)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/phx-open-XXXXXX", parent);
    if (!mkdtemp(dir)) { perror(dir); exit(2); }
    char file[300];
    snprintf(file, sizeof file, "%s/f", dir);
    int w = open(file, O_CREAT | O_WRONLY, 0600);
    if (w < 0 || write(w, "abc", 3) != 3) { perror(file); exit(2); }
    close(w);

    for (int direct = 0; direct <= 1; direct++) {
        int d = -1;
        int fd = phxfs_file_open(file, O_RDONLY, 0, direct, &d);
        CHECK(fd >= 0);
        CHECK(d == 0 || d == 1);
        if (fd >= 0) close(fd);

        fd = phxfs_file_open(dir, O_RDONLY, 0, direct, &d);
        CHECK_EQ(fd, -EISDIR);
        CHECK(strstr(phxfs_last_error(), dir) != NULL);
        CHECK(strstr(phxfs_last_error(), "Is a directory") != NULL);

        char missing[300];
        snprintf(missing, sizeof missing, "%s/none", dir);
        fd = phxfs_file_open(missing, O_RDONLY, 0, direct, &d);
        CHECK_EQ(fd, -ENOENT);
        CHECK(strstr(phxfs_last_error(), missing) != NULL);
    }
    unlink(file);
    rmdir(dir);
}

int main(void)
{
    /* /tmp may be tmpfs, which refuses O_DIRECT (the buffered path); the working directory (the
     * build tree) is on a disk file system, where O_DIRECT opens a directory too */
    check_in("/tmp");
    check_in(".");
    return th_finish("test_file_open");
}
