/* Host copies into fresh memory against dd, on one warm file (issue 13, docs/benchmarks.md):
 * dd-like 16 MiB preads into one buffer; preads into fresh anonymous memory with 4 KiB pages or
 * transparent huge pages (MADV_HUGEPAGE), 1 and 2 threads; the same memory a second time (a
 * reused pool); and MADV_POPULATE_WRITE by each thread over its half before reading. Two rounds.
 *   gcc -O2 -o /tmp/host_copy phoenix-native/tests/probe/host_copy.c -lpthread && /tmp/host_copy FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static int fd; static size_t size; static char *dst; static int nth; static size_t chunk = 8<<20; static int popw;
static void *worker(void *a){ long id=(long)a; size_t per=(size/ nth + (2<<20)-1) & ~((size_t)(2<<20)-1);
  size_t lo=id*per, hi=lo+per>size?size:lo+per;
  if (popw && hi>lo) madvise(dst+lo, ((hi-lo)+(2<<20)-1)&~((size_t)(2<<20)-1), MADV_POPULATE_WRITE);
  for(size_t o=lo;o<hi;o+=chunk){size_t n=hi-o<chunk?hi-o:chunk; if(pread(fd,dst+o,n,o)!=(ssize_t)n){perror("pread");exit(1);}} return 0;}
static char *base_p; static size_t base_len;
static char *fresh(int thp){ size_t len=((size+(2<<20)-1)&~((size_t)(2<<20)-1))+(2<<20);
  char *p=mmap(0,len,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); base_p=p; base_len=len; char *a=(char*)(((unsigned long)p+(2<<20)-1)&~((unsigned long)(2<<20)-1));
  if(thp) madvise(a,len-(a-p)-0,MADV_HUGEPAGE); else madvise(a, len-(a-p), MADV_NOHUGEPAGE); return a;}
static double run(int threads){ nth=threads; pthread_t t[16]; double t0=now(); for(long i=0;i<threads;i++)pthread_create(&t[i],0,worker,(void*)i); for(int i=0;i<threads;i++)pthread_join(t[i],0); return size/(now()-t0)/1e9;}
int main(int c,char**v){ fd=open(v[1],O_RDONLY); struct stat st; fstat(fd,&st); size=st.st_size;
  char *buf=aligned_alloc(4096,16<<20); double t0=now(); for(size_t o=0;o<size;o+=16<<20) pread(fd,buf,16<<20,o); printf("dd-like 16M 1 thread: %.2f GB/s\n", size/(now()-t0)/1e9);
  for (int rep=0; rep<2; rep++) {
  for (int thp=0; thp<2; thp++) for (int th=1; th<=2; th++) { dst=fresh(thp); double t1=now(); double r=run(th); (void)t1; printf("fresh %s, %d threads: %.2f GB/s\n", thp?"THP":"4K ", th, r);
     if (thp && th==2) { double r2=run(2); printf("  same memory again (reused pool), 2 threads: %.2f GB/s\n", r2);} munmap(base_p, base_len); }
  popw=1; dst=fresh(1); printf("fresh THP + MADV_POPULATE_WRITE per worker, 2 threads: %.2f GB/s\n", run(2)); munmap(base_p, base_len);
  dst=fresh(0); printf("fresh 4K + MADV_POPULATE_WRITE per worker, 2 threads: %.2f GB/s\n", run(2)); munmap(base_p, base_len); popw=0;
  t0=now(); for(size_t o=0;o<size;o+=16<<20) pread(fd,buf,16<<20,o); printf("dd-like 16M 1 thread: %.2f GB/s\n", size/(now()-t0)/1e9);
  }
  return 0; }
