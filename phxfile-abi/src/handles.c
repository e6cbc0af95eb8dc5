/* File handles: a table of slots, each a word holding a generation and fd + 1
 * (0: free). A handle encodes its slot and generation, so a deregistered or
 * stale handle (one from before a driver close) is told apart without ever
 * dereferencing freed memory, and a lookup on the I/O path is one atomic load. */
#include "shim.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SLOT_BITS 20
#define MAX_SLOTS ((1u << SLOT_BITS) - 1)

static _Atomic uint64_t *slots;   /* calloc'd once, never freed: untouched pages cost nothing */
static atomic_uint used;          /* slots [0, used) have been handed out at least once */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *free_list;
static size_t nfree, free_cap;
/* fd -> slot of its live handle (-1 none) and the file it was registered for: an fd closed
 * without cuFileHandleDeregister and reused by open() is another file, not a second
 * registration of the same one */
typedef struct {
    int32_t slot;
    dev_t dev;
    ino_t ino;
} fd_reg_t;
static fd_reg_t *by_fd;
static size_t by_fd_cap;

static CUfileHandle_t encode(uint32_t idx, uint32_t gen)
{
    return (CUfileHandle_t)(uintptr_t)(((uint64_t)gen << SLOT_BITS) | (idx + 1));
}

int cf_handle_fd(CUfileHandle_t fh, int *fd)
{
    if (atomic_load_explicit(&cf_forked, memory_order_relaxed)) return cf_fork_refused();
    uint64_t h = (uint64_t)(uintptr_t)fh;
    uint32_t idx = (uint32_t)(h & MAX_SLOTS);
    if (idx == 0 || idx > atomic_load_explicit(&used, memory_order_acquire)) return CU_FILE_HANDLE_NOT_REGISTERED;
    uint64_t w = atomic_load_explicit(&slots[idx - 1], memory_order_acquire);
    if ((uint32_t)w == 0 || (w >> 32) != (h >> SLOT_BITS)) return CU_FILE_HANDLE_NOT_REGISTERED;
    *fd = (int)(uint32_t)w - 1;
    return 0;
}

static void release_slot(uint32_t idx);

static int check_fd(int fd, struct stat *pst)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        cf_log(CF_LOG_ERROR, "HandleRegister: fd %d is not an open file", fd);
        return CU_FILE_INVALID_VALUE;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_PATH)) {
        cf_log(CF_LOG_ERROR, "HandleRegister: fd %d was opened with O_PATH (no I/O possible)", fd);
        return CU_FILE_INVALID_FILE_OPEN_FLAG;
    }
    if (fl & O_APPEND) {
        /* pwrite on an O_APPEND fd ignores the offset (Linux appends), so every cuFileWrite
         * would land at the end of the file; cuFile names O_APPEND an unsupported open flag */
        cf_log(CF_LOG_ERROR, "HandleRegister: fd %d was opened with O_APPEND (writes would ignore their offsets)", fd);
        return CU_FILE_INVALID_FILE_OPEN_FLAG;
    }
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
        cf_log(CF_LOG_ERROR, "HandleRegister: fd %d is not a regular file or block device", fd);
        return CU_FILE_INVALID_FILE_TYPE;
    }
    *pst = st;
    return 0;
}

static CUfileError_t handle_register(CUfileHandle_t *fh, CUfileDescr_t *descr);

CF_API CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr)
{
    CUfileError_t st = handle_register(fh, descr);
    cf_stats_count(CF_STAT_HDL_REG, st.err == CU_FILE_SUCCESS, 0);
    return st;
}

static CUfileError_t handle_register(CUfileHandle_t *fh, CUfileDescr_t *descr)
{
    if (!fh || !descr) return cf_status(CU_FILE_INVALID_VALUE);
    switch (descr->type) {
    case CU_FILE_HANDLE_TYPE_OPAQUE_FD: break;
    case CU_FILE_HANDLE_TYPE_OPAQUE_WIN32: return cf_status(CU_FILE_PLATFORM_NOT_SUPPORTED);
    case CU_FILE_HANDLE_TYPE_USERSPACE_FS:
        cf_log(CF_LOG_ERROR, "HandleRegister: user-space file systems (fs_ops) are not supported");
        return cf_status(descr->fs_ops ? CU_FILE_IO_NOT_SUPPORTED : CU_FILE_INVALID_VALUE);
    default: return cf_status(CU_FILE_INVALID_VALUE);
    }
    int rc = cf_ensure_open();
    if (rc) return cf_status((CUfileOpError)rc);
    int fd = descr->handle.fd;
    struct stat st;
    rc = check_fd(fd, &st);
    if (rc) return cf_status((CUfileOpError)rc);
    pthread_mutex_lock(&lock);
    if (!slots) slots = calloc(MAX_SLOTS, sizeof *slots);
    if (!slots) { pthread_mutex_unlock(&lock); return cf_status(CU_FILE_NOMEM_ERROR); }
    if ((size_t)fd >= by_fd_cap) {
        size_t cap = by_fd_cap ? by_fd_cap : 1024;
        while (cap <= (size_t)fd) cap *= 2;
        fd_reg_t *v = realloc(by_fd, cap * sizeof *v);
        if (!v) { pthread_mutex_unlock(&lock); return cf_status(CU_FILE_NOMEM_ERROR); }
        for (size_t i = by_fd_cap; i < cap; i++) v[i].slot = -1;
        by_fd = v;
        by_fd_cap = cap;
    }
    if (by_fd[fd].slot >= 0) {
        if (by_fd[fd].dev == st.st_dev && by_fd[fd].ino == st.st_ino) {
            pthread_mutex_unlock(&lock);
            return cf_status(CU_FILE_HANDLE_ALREADY_REGISTERED);
        }
        /* the registered fd was closed and its number reused: that handle is dead from now on */
        cf_log(CF_LOG_WARN, "HandleRegister: fd %d was closed without cuFileHandleDeregister; its old handle is dropped", fd);
        release_slot((uint32_t)by_fd[fd].slot);
    }
    uint32_t idx;
    if (nfree) idx = free_list[--nfree];
    else if (atomic_load(&used) < MAX_SLOTS) idx = atomic_load(&used);
    else { pthread_mutex_unlock(&lock); return cf_status(CU_FILE_NOMEM_ERROR); }
    uint32_t gen = (uint32_t)(atomic_load(&slots[idx]) >> 32) + 1;
    atomic_store_explicit(&slots[idx], ((uint64_t)gen << 32) | (uint32_t)(fd + 1), memory_order_release);
    if (idx == atomic_load(&used)) atomic_store_explicit(&used, idx + 1, memory_order_release);
    by_fd[fd] = (fd_reg_t){(int32_t)idx, st.st_dev, st.st_ino};
    pthread_mutex_unlock(&lock);
    *fh = encode(idx, gen);
    return cf_status(CU_FILE_SUCCESS);
}

/* Frees slot idx (under lock); the generation stays so old handles stay stale. */
static void release_slot(uint32_t idx)
{
    uint64_t w = atomic_load(&slots[idx]);
    int fd = (int)(uint32_t)w - 1;
    atomic_store_explicit(&slots[idx], w & ~(uint64_t)UINT32_MAX, memory_order_release);
    if (fd >= 0 && (size_t)fd < by_fd_cap && by_fd[fd].slot == (int32_t)idx) by_fd[fd].slot = -1;
    if (nfree == free_cap) {
        size_t cap = free_cap ? free_cap * 2 : 1024;
        uint32_t *v = realloc(free_list, cap * sizeof *v);
        if (!v) return; /* the slot is lost to reuse, nothing worse */
        free_list = v;
        free_cap = cap;
    }
    free_list[nfree++] = idx;
}

CF_API void cuFileHandleDeregister(CUfileHandle_t fh)
{
    int fd;
    pthread_mutex_lock(&lock);
    int ok = cf_handle_fd(fh, &fd) == 0;
    if (ok) release_slot((uint32_t)(((uint64_t)(uintptr_t)fh & MAX_SLOTS) - 1));
    else cf_log(CF_LOG_WARN, "HandleDeregister: %p is not a registered handle", fh);
    pthread_mutex_unlock(&lock);
    cf_stats_count(CF_STAT_HDL_DEREG, ok, 0);
}

void cf_handles_reset(void)
{
    pthread_mutex_lock(&lock);
    uint32_t n = atomic_load(&used);
    for (uint32_t i = 0; i < n; i++)
        if ((uint32_t)atomic_load(&slots[i]) != 0) release_slot(i);
    pthread_mutex_unlock(&lock);
}
