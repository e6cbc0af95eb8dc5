/* io_uring refused (as seccomp or io_uring_disabled do): the library falls back to the sync
 * engine, says so once on stderr, and every transfer still works. A seccomp filter makes
 * io_uring_setup fail with EPERM for this process only. */
#include "harness.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int refuse_io_uring(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof *f), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(void)
{
    if (refuse_io_uring()) {
        /* a sandbox without seccomp filters: reported as skipped by ctest, not passed */
        perror("test_uring_refused: cannot install the seccomp filter");
        return 77;
    }
    /* catch what the library prints on stderr */
    char errpath[] = "/tmp/phx_stderr_XXXXXX";
    int errfd = mkstemp(errpath), saved = dup(2);
    dup2(errfd, 2);
    int rc = phxfs_open(0);
    dup2(saved, 2);
    CHECK_EQ(rc, 0);
    phxfs_device_info_t info;
    CHECK_EQ(phxfs_get_device_info(0, &info), 0);
    CHECK_EQ(info.engine, PHXFS_ENGINE_SYNC);
    char msg[512] = {0};
    CHECK(pread(errfd, msg, sizeof msg - 1, 0) >= 0);
    const char *want = getenv("PHX_ENGINE");
    if (!want || strcmp(want, "sync")) { /* asked for uring: the fallback is announced once */
        int said = 0;
        for (const char *p = msg; (p = strstr(p, "io_uring unavailable")) != NULL; p++) said++;
        CHECK_EQ(said, 1); /* one warning, not one per worker */
        CHECK(strstr(msg, "sync engine") != NULL);
    }
    close(errfd);
    unlink(errpath);

    size_t n = (3u << 20) + 11;
    char path[256];
    snprintf(path, sizeof path, "%s", th_make_file(n, 17));
    int fd = th_open(path, 0);
    void *dmem;
    CHECK_EQ(phxfs_mem_alloc(0, n, &dmem), 0);
    CHECK_EQ(phxfs_regmem(0, dmem, n, NULL), 0);
    unsigned char *got = malloc(n), *ref = malloc(n);
    th_fill(ref, n, 17, 0);
    phxfs_io_req_t reqs[3] = {{fd, 0, dmem, 0, n / 2, 0, 0}, {fd, 0, dmem, (off_t)(n / 2), n - n / 2, (off_t)(n / 2), 0},
                              {fd, -1, got, 0, 4096, 0, 0}};
    CHECK_EQ(phxfs_read_batch(reqs, 3), 0);
    CHECK(memcmp(got, ref, 4096) == 0);
    CHECK_EQ(phxfs_memcpy_to_host(0, got, dmem, n), 0);
    CHECK(memcmp(got, ref, n) == 0);
    close(fd);
    unlink(path);
    CHECK_EQ(phxfs_deregmem(0, dmem, n), 0);
    CHECK_EQ(phxfs_mem_free(0, dmem), 0);
    free(got);
    free(ref);
    return th_finish("test_uring_refused");
}
