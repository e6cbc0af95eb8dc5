/* The per-device pinned pool and caller-owned pinned memory. Registration
 * (cuMemHostRegister) costs far more than a copy through the memory, so the
 * pool registers once, when the device opens, and only hands slots out after. */
#include "pinned.h"
#include "align.h"
#include "device.h"
#include "error.h"
#include "lifecycle.h"
#include "phoenix.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FLAGS_PER_CHUNK (PHX_ALIGN / sizeof(uint32_t))

struct phx_flag_chunk {
    uint32_t *words;
    phx_flag_t flags[FLAGS_PER_CHUNK];
    phx_flag_chunk_t *next;
};

/* Chunks whose flags a stream may still poll (a launch failed after the wait was queued)
 * outlive their pool here: a few bytes, and only after an accelerator refused a launch. */
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static phx_flag_chunk_t *retired;
static struct lost_pool { char *base; struct lost_pool *next; } *lost_pools;

int phx_pinned_pool_init(phx_pinned_pool_t *p, int dev, size_t bytes, size_t slot_bytes)
{
    memset(p, 0, sizeof *p);
    p->dev = dev;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->slot_bytes = slot_bytes;
    p->nslots = (int)(bytes / slot_bytes);
    p->bytes = (size_t)p->nslots * slot_bytes;
    p->free_slots = calloc((size_t)p->nslots, sizeof *p->free_slots);
    p->base = aligned_alloc(PHX_ALIGN, p->bytes);
    if (!p->free_slots || !p->base) {
        free(p->free_slots);
        free(p->base);
        p->base = NULL;
        return phx_fail(ENOMEM, "pinned pool: cannot allocate %zu bytes", p->bytes);
    }
    int rc = phx_conn->host_register(dev, p->base, p->bytes);
    if (rc < 0) {
        free(p->free_slots);
        free(p->base);
        p->base = NULL;
        return rc;
    }
    for (int i = 0; i < p->nslots; i++) p->free_slots[i] = p->base + (size_t)(p->nslots - 1 - i) * slot_bytes;
    p->nfree = p->nslots;
    return 0;
}

int phx_pinned_pool_init_external(phx_pinned_pool_t *p, int dev, char *base, size_t bytes, size_t slot_bytes)
{
    memset(p, 0, sizeof *p);
    p->dev = dev;
    p->external = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->slot_bytes = slot_bytes;
    p->nslots = (int)(bytes / slot_bytes);
    p->bytes = (size_t)p->nslots * slot_bytes;
    p->free_slots = calloc((size_t)p->nslots, sizeof *p->free_slots);
    if (!p->free_slots) return phx_fail(ENOMEM, "staging pool: out of memory");
    p->base = base;
    for (int i = 0; i < p->nslots; i++) p->free_slots[i] = p->base + (size_t)(p->nslots - 1 - i) * slot_bytes;
    p->nfree = p->nslots;
    return 0;
}

void phx_pinned_pool_destroy(phx_pinned_pool_t *p)
{
    if (p->base && !p->external && !p->lost) {
        phx_conn->host_unregister(p->dev, p->base);
        free(p->base);
    } else if (p->base && !p->external) {
        /* a queued copy may still read a lost slot: the memory stays registered, and reachable */
        struct lost_pool *l = malloc(sizeof *l);
        if (l) {
            pthread_mutex_lock(&retired_lock);
            *l = (struct lost_pool){p->base, lost_pools};
            lost_pools = l;
            pthread_mutex_unlock(&retired_lock);
        }
    }
    free(p->free_slots);
    for (phx_flag_chunk_t *c = p->chunks, *next; c; c = next) {
        next = c->next;
        if (p->flags_out) {
            pthread_mutex_lock(&retired_lock);
            c->next = retired;
            retired = c;
            pthread_mutex_unlock(&retired_lock);
            continue;
        }
        phx_conn->host_unregister(p->dev, c->words);
        free(c->words);
        free(c);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    memset(p, 0, sizeof *p);
}

void phx_pinned_lose(phx_pinned_pool_t *p, char *slot)
{
    (void)slot;
    pthread_mutex_lock(&p->lock);
    p->lost++;
    pthread_mutex_unlock(&p->lock);
}

char *phx_pinned_take(phx_pinned_pool_t *p, int wait)
{
    pthread_mutex_lock(&p->lock);
    while (p->nfree == 0 && wait) {
        p->waiters++;
        pthread_cond_wait(&p->cond, &p->lock);
        p->waiters--;
    }
    char *s = p->nfree ? p->free_slots[--p->nfree] : NULL;
    pthread_mutex_unlock(&p->lock);
    return s;
}

char *phx_pinned_take_run(phx_pinned_pool_t *p, int want, int *got)
{
    *got = 0;
    if (want < 1 || p->external) return NULL;
    pthread_mutex_lock(&p->lock);
    char *run = NULL;
    unsigned char *free_at = calloc((size_t)p->nslots, 1);
    if (free_at) {
        for (int i = 0; i < p->nfree; i++) free_at[(p->free_slots[i] - p->base) / p->slot_bytes] = 1;
        /* the longest run of free slots, up to want */
        int best = 0, best_at = -1;
        for (int i = 0, len = 0; i < p->nslots && best < want; i++) {
            len = free_at[i] ? len + 1 : 0;
            if (len > best) { best = len; best_at = i - len + 1; }
        }
        if (best > 0) {
            run = p->base + (size_t)best_at * p->slot_bytes;
            for (int i = 0; i < p->nfree;) {
                size_t k = (size_t)(p->free_slots[i] - p->base) / p->slot_bytes;
                if (k >= (size_t)best_at && k < (size_t)(best_at + best)) p->free_slots[i] = p->free_slots[--p->nfree];
                else i++;
            }
            *got = best;
        }
        free(free_at);
    }
    pthread_mutex_unlock(&p->lock);
    return run;
}

void phx_pinned_give_run(phx_pinned_pool_t *p, char *run, int n)
{
    for (int i = 0; i < n; i++) phx_pinned_give(p, run + (size_t)i * p->slot_bytes);
}

void phx_pinned_give(phx_pinned_pool_t *p, char *slot)
{
    pthread_mutex_lock(&p->lock);
    p->free_slots[p->nfree++] = slot;
    if (p->waiters) pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

phx_flag_t *phx_flag_take(phx_pinned_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    if (!p->free_flags) {
        /* flags are tiny and registered a page at a time, so pending stream operations are
         * bounded by memory, not by a fixed count that could stall a caller's stream */
        phx_flag_chunk_t *c = calloc(1, sizeof *c);
        uint32_t *w = aligned_alloc(PHX_ALIGN, PHX_ALIGN);
        if (!c || !w || phx_conn->host_register(p->dev, w, PHX_ALIGN) < 0) {
            free(c);
            free(w);
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        memset(w, 0, PHX_ALIGN);
        c->words = w;
        for (size_t i = 0; i < FLAGS_PER_CHUNK; i++) {
            c->flags[i].word = &w[i];
            c->flags[i].next = p->free_flags;
            p->free_flags = &c->flags[i];
        }
        c->next = p->chunks;
        p->chunks = c;
    }
    phx_flag_t *f = p->free_flags;
    p->free_flags = f->next;
    p->flags_out++;
    pthread_mutex_unlock(&p->lock);
    __atomic_store_n(f->word, 0, __ATOMIC_RELEASE);
    return f;
}

void phx_flag_give(phx_pinned_pool_t *p, phx_flag_t *f)
{
    pthread_mutex_lock(&p->lock);
    f->next = p->free_flags;
    p->free_flags = f;
    p->flags_out--;
    pthread_mutex_unlock(&p->lock);
}

/* ---- caller-owned pinned memory ---- */
typedef struct pinned_block {
    char *p;
    size_t len;
    struct pinned_block *next;
} pinned_block_t;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static pinned_block_t *blocks;

char *phx_pinned_alloc(size_t len)
{
    size_t n = phx_align_up(len, PHX_ALIGN);
    char *p = aligned_alloc(PHX_ALIGN, n);
    if (!p) return NULL;
    /* -1: whatever context is current, else device 0's; PORTABLE makes it usable from all */
    if (phx_conn->host_register(-1, p, n) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

void phx_pinned_free(char *p, size_t len)
{
    (void)len;
    if (!p) return;
    phx_conn->host_unregister(-1, p);
    free(p);
}

int phxfs_host_alloc_pinned(size_t len, void **ptr)
{
    phx_clear_error();
    if (!ptr || len == 0) return phx_fail(EINVAL, "host_alloc_pinned: %s", ptr ? "length 0" : "ptr is NULL");
    int rc = phx_lib_init();
    if (rc < 0) return rc;
    pinned_block_t *b = malloc(sizeof *b);
    char *p = b ? phx_pinned_alloc(len) : NULL;
    if (!p) {
        free(b);
        if (!*phx_last_error()) phx_fail(ENOMEM, "host_alloc_pinned: cannot pin %zu bytes", len);
        return -ENOMEM;
    }
    *b = (pinned_block_t){p, len, NULL};
    pthread_mutex_lock(&blocks_lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&blocks_lock);
    *ptr = p;
    return 0;
}

int phxfs_host_free_pinned(void *ptr)
{
    phx_clear_error();
    pthread_mutex_lock(&blocks_lock);
    pinned_block_t **pp = &blocks;
    while (*pp && (*pp)->p != ptr) pp = &(*pp)->next;
    pinned_block_t *b = *pp;
    if (b) *pp = b->next;
    pthread_mutex_unlock(&blocks_lock);
    if (!b) return phx_fail(EINVAL, "host_free_pinned: %p was not allocated by phxfs_host_alloc_pinned (or was freed)", ptr);
    phx_pinned_free(b->p, b->len);
    free(b);
    return 0;
}
