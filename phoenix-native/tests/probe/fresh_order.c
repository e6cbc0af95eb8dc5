/* One-shot copies of a warm file into fresh anonymous memory, alternating (issue 13, host
 * copies; fresh_fill.c): "pread" reads straight into the fresh pages (the kernel zero-fills each
 * on first write), "uffd" reads 1 MiB pieces into a reused buffer and places them with
 * UFFDIO_COPY (no zeroing). Each row also times one read of every page by the program after
 * the fill, since on some VMs the first user access to a new page costs as much as the fill.
 *   gcc -O2 -o /tmp/fresh_order phoenix-native/tests/probe/fresh_order.c -lpthread
 *   /tmp/fresh_order FILE [pause seconds between rounds] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static int fd, uffd; static size_t size; static char *dst; static int mode;
static void *work(void *a){ long i=(long)a; size_t half=(size/2)&~4095UL; size_t lo=i?half:0, hi=i?size:half;
  char *st=aligned_alloc(4096,1<<20);
  for(size_t o=lo;o<hi;o+=1<<20){ size_t n=hi-o<(1<<20)?hi-o:(1<<20);
    if(mode==0){ if(pread(fd,dst+o,n,o)!=(ssize_t)n) abort(); }
    else { if(pread(fd,st,n,o)!=(ssize_t)n) abort(); struct uffdio_copy c={.dst=(unsigned long)(dst+o),.src=(unsigned long)st,.len=(n+4095)&~4095UL};
      if(ioctl(uffd,UFFDIO_COPY,&c)) {perror("copy");abort();} } }
  free(st); return NULL;}
int main(int c, char**v){ fd=open(v[1],O_RDONLY); struct stat s; fstat(fd,&s); size=s.st_size; int sl=atoi(v[2]);
  for(int r=0;r<6;r++){ mode=r%2; size_t len=(size+4095)&~4095UL;
    if(sl) sleep(sl);
    double t0=now(); dst=mmap(NULL,len,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); madvise(dst,len,MADV_NOHUGEPAGE);
    if(mode){ uffd=syscall(SYS_userfaultfd,O_CLOEXEC|1); struct uffdio_api api={.api=UFFD_API}; ioctl(uffd,UFFDIO_API,&api);
      struct uffdio_register reg={.range={(unsigned long)dst,len},.mode=UFFDIO_REGISTER_MODE_MISSING}; if(ioctl(uffd,UFFDIO_REGISTER,&reg)) abort(); }
    pthread_t t[2]; for(long i=0;i<2;i++) pthread_create(&t[i],0,work,(void*)i); for(int i=0;i<2;i++) pthread_join(t[i],0);
    if(mode){ struct uffdio_range ur={(unsigned long)dst,len}; ioctl(uffd,UFFDIO_UNREGISTER,&ur); close(uffd);}
    double fill=now()-t0; volatile unsigned long sum=0; for(size_t o=0;o<size;o+=4096) sum+=dst[o]; double ready=now()-t0;
    printf("%s fill %.2f GB/s, fill + one read of each page %.2f GB/s\n", mode?"uffd ":"pread", size/fill/1e9, size/ready/1e9); fflush(stdout); munmap(dst,len);} }
