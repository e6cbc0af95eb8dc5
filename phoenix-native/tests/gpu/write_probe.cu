// Probe: how buffered pwrite into the page cache scales with threads (one file and one
// file per thread) against pread of the same bytes, and whether cuStreamWaitValue32 on
// device-mapped pinned host memory releases a stream when a host thread sets the word.
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
struct job { int fd; char *buf; size_t off, len; int write; };
static void *run(void *a) {
  job *j = (job *)a; size_t chunk = 2u << 20;
  for (size_t p = 0; p < j->len; p += chunk) {
    ssize_t r = j->write ? pwrite(j->fd, j->buf, chunk, j->off + p) : pread(j->fd, j->buf, chunk, j->off + p);
    if (r != (ssize_t)chunk) { perror("io"); exit(1); }
  }
  return 0;
}
static double phase(int *fds, int nf, int threads, size_t total, int write) {
  pthread_t th[64]; job js[64]; size_t per = total / threads;
  double t0 = now();
  for (int i = 0; i < threads; i++) {
    js[i] = {fds[i % nf], (char *)aligned_alloc(4096, 2u << 20), (nf > 1 ? 0 : (size_t)i * per), per, write};
    memset(js[i].buf, i, 2u << 20);
    pthread_create(&th[i], 0, run, &js[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(th[i], 0);
  double dt = now() - t0;
  for (int i = 0; i < threads; i++) free(js[i].buf);
  return total / dt / 1e9;
}
volatile int *flag;
static void *setter(void *) { usleep(200000); __atomic_store_n(flag, 1, __ATOMIC_RELEASE); return 0; }
int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  size_t total = 4ull << 30;
  char p[256]; int fds[16];
  for (int i = 0; i < 8; i++) { snprintf(p, sizeof p, "%s/wp%d.bin", dir, i); fds[i] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644); }
  printf("one file: fresh write 8 thr %.2f GB/s\n", phase(fds, 1, 8, total, 1));
  for (int t : {1, 8, 16}) {
    printf("one file: t=%2d overwrite %.2f GB/s  read %.2f GB/s\n", t, phase(fds, 1, t, total, 1), phase(fds, 1, t, total, 0));
  }
  printf("8 files : fresh write 8 thr %.2f GB/s\n", phase(fds + 0, 8, 8, total, 1) );
  printf("8 files : overwrite 8 thr %.2f GB/s  read %.2f GB/s\n", phase(fds, 8, 8, total, 1), phase(fds, 8, 8, total, 0));
  for (int i = 0; i < 8; i++) { snprintf(p, sizeof p, "%s/wp%d.bin", dir, i); unlink(p); }
  // stream mem ops
  cuInit(0); CUdevice d; cuDeviceGet(&d, 0); CUcontext c; cuDevicePrimaryCtxRetain(&c, d); cuCtxSetCurrent(c);
  int a1 = -1; cuDeviceGetAttribute(&a1, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, d);
  printf("CAN_USE_STREAM_MEM_OPS_V1=%d\n", a1);
  int *h = (int *)aligned_alloc(4096, 4096); memset(h, 0, 4096); flag = h;
  CUresult r = cuMemHostRegister(h, 4096, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
  CUdeviceptr dp = 0; CUresult r2 = cuMemHostGetDevicePointer(&dp, h, 0);
  printf("register %d devptr %d same=%d\n", r, r2, (void *)dp == (void *)h);
  CUstream s; cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  pthread_t th; double t0 = now(); pthread_create(&th, 0, setter, 0);
  CUresult r3 = cuStreamWaitValue32(s, dp, 1, CU_STREAM_WAIT_VALUE_GEQ);
  CUresult r4 = cuStreamSynchronize(s);
  printf("waitValue32 %d sync %d after %.3f s (setter sleeps 0.2)\n", r3, r4, now() - t0);
  pthread_join(th, 0);
  CUcontext cur; cuCtxGetCurrent(&cur); printf("ctx ok %d\n", cur == c);
  return 0;
}
