/* Process exit in every order: a child process leaves with handles, buffers and
 * a device still registered, and cuFileDriverClose (with deregistrations and
 * reads) runs from an exit handler that runs before the library's, from one
 * that runs after it, and from a destructor of the program; or never. Each
 * child must exit 0 and report what its late calls returned. */
#include "harness.h"
#include "cufile.h"
#include "phoenix.h"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static int report_fd = -1;
static CUfileHandle_t fh;
static char *buf;
static int mode;

static void say(const char *what, long v)
{
    char line[96];
    int n = snprintf(line, sizeof line, "%s=%ld\n", what, v);
    if (write(report_fd, line, (size_t)n) != n) _exit(3);
}

/* cleanup a framework would do late */
static void late_cleanup(void)
{
    char tmp[512];
    say("read", (long)cuFileRead(fh, tmp, sizeof tmp, 0, 0));
    cuFileHandleDeregister(fh);
    say("bufdereg", cuFileBufDeregister(buf).err);
    say("close", cuFileDriverClose().err);
    say("close2", cuFileDriverClose().err);
}

__attribute__((destructor)) static void program_destructor(void)
{
    if (mode == 3 && report_fd >= 0) late_cleanup();
}

static void child(int m, int fd, const char *path)
{
    mode = m;
    report_fd = fd;
    if (m == 1) atexit(late_cleanup); /* registered before the library's: runs after it */
    CHECK_ST(cuFileDriverOpen(), CU_FILE_SUCCESS);
    int f = open(path, O_RDONLY);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = f;
    CHECK_ST(cuFileHandleRegister(&fh, &d), CU_FILE_SUCCESS);
    if (th_have_device()) {
        CHECK_EQ(phxfs_open(0), 0);
        CHECK_EQ(phxfs_mem_alloc(0, 1 << 20, (void **)&buf), 0);
    } else {
        buf = malloc(1 << 20);
    }
    CHECK_ST(cuFileBufRegister(buf, 1 << 20, 0), CU_FILE_SUCCESS);
    CHECK_EQ(cuFileRead(fh, buf, 1 << 20, 0, 0), 1 << 20);
    if (m == 2) atexit(late_cleanup); /* registered after the library's: runs before it */
    say("failures", th_failures);
    exit(0); /* nothing closed: whatever runs at exit must cope */
}

int main(void)
{
    char *path = th_make_file(1 << 20, 4);
    const char *names[] = {"nothing closed", "close after the library's exit handler", "close before it",
                           "close from a program destructor"};
    for (int m = 0; m < 4; m++) {
        int pp[2];
        CHECK_EQ(pipe(pp), 0);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            close(pp[0]);
            child(m, pp[1], path);
        }
        close(pp[1]);
        char out[1024] = "";
        size_t have = 0;
        ssize_t r;
        while (have < sizeof out - 1 && (r = read(pp[0], out + have, sizeof out - 1 - have)) > 0) have += (size_t)r;
        out[have] = 0;
        close(pp[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "%s: child ended with status %#x\n", names[m], st);
            th_failures++;
        }
        CHECK(strstr(out, "failures=0\n") != NULL);
        if (m > 0) {
            /* the close succeeds and a second one finds the driver closed, in every order;
             * before the library's handler the handle is gone after close, after it the
             * process is ending and nothing is torn down */
            CHECK(strstr(out, "close=0\n") != NULL);
            char want[64];
            snprintf(want, sizeof want, "close2=%d\n", CU_FILE_DRIVER_NOT_INITIALIZED);
            CHECK(strstr(out, want) != NULL);
            CHECK(strstr(out, "read=512\n") != NULL);
            CHECK(strstr(out, "bufdereg=0\n") != NULL);
        }
        if (th_failures) fprintf(stderr, "%s: child said:\n%s", names[m], out);
    }
    unlink(path);
    free(path);
    return th_finish("test_exit");
}
