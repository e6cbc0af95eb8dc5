/* Pinned host memory of one device: a fixed pool of bounce slots, registered
 * with the accelerator once, and the stream-wait flags. Every user of pinned
 * memory on the device (workers, stream-ordered I/O through them, inline
 * callers) takes slots from here, so the device never pins more than the pool:
 * a taker waits for a slot instead of growing it. */
#ifndef PHX_PINNED_H
#define PHX_PINNED_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct phx_flag_chunk phx_flag_chunk_t;

typedef struct phx_flag {
    volatile uint32_t *word;  /* in registered, device-mapped memory */
    struct phx_flag *next;
} phx_flag_t;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int dev;                  /* registrations are made in this device's context */
    char *base;
    size_t bytes, slot_bytes;
    int nslots, nfree, waiters;
    char **free_slots;
    phx_flag_t *free_flags;
    phx_flag_chunk_t *chunks;
    int flags_out;            /* flags handed out and not yet returned */
    int external;             /* base belongs to someone else (staging window) */
    int lost;                 /* slots a queued copy may still read: the memory outlives the pool */
} phx_pinned_pool_t;

/* Exactly bytes / slot_bytes slots (the caller checks bytes >= slot_bytes): never more than bytes. */
int phx_pinned_pool_init(phx_pinned_pool_t *p, int dev, size_t bytes, size_t slot_bytes);
/* A pool of slots in memory the caller owns and keeps until destroy (the staging window):
 * nothing is allocated or registered. */
int phx_pinned_pool_init_external(phx_pinned_pool_t *p, int dev, char *base, size_t bytes, size_t slot_bytes);
/* Releases the pool; flags still out (a stream that never passed its wait) keep their chunk. */
void phx_pinned_pool_destroy(phx_pinned_pool_t *p);
/* A free slot, or NULL: wait=0 never blocks, wait=1 blocks until one is returned. */
char *phx_pinned_take(phx_pinned_pool_t *p, int wait);
void phx_pinned_give(phx_pinned_pool_t *p, char *slot);
/* Up to want adjacent free slots as one span (the longest run there is), *got of them; NULL
 * when none is free (never waits; not for external pools). */
char *phx_pinned_take_run(phx_pinned_pool_t *p, int want, int *got);
void phx_pinned_give_run(phx_pinned_pool_t *p, char *run, int n);
/* A slot that must never be reused or freed (a copy that may still read it was queued and
 * the rest of its operation could not be): the pool's memory is then kept at destroy. */
void phx_pinned_lose(phx_pinned_pool_t *p, char *slot);
phx_flag_t *phx_flag_take(phx_pinned_pool_t *p);
void phx_flag_give(phx_pinned_pool_t *p, phx_flag_t *f);

/* Caller-owned pinned memory (phxfs_host_alloc_pinned): page-aligned, registered. */
char *phx_pinned_alloc(size_t len);
void phx_pinned_free(char *p, size_t len);

#endif
