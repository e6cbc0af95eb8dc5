/* Pinned host memory: page-aligned allocations registered with the
 * accelerator, and a free list of stream slots reused across calls because
 * registering memory costs far more than a copy through it. */
#include "internal.h"
#include <stdlib.h>

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static phx_slot_t *free_slots;

char *phx_pinned_alloc(size_t len)
{
    char *p = aligned_alloc(PHX_ALIGN, phx_align_up(len, PHX_ALIGN));
    if (!p) return NULL;
    if (phx_conn->host_register(p, phx_align_up(len, PHX_ALIGN)) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

void phx_pinned_free(char *p, size_t len)
{
    (void)len;
    if (!p) return;
    phx_conn->host_unregister(p);
    free(p);
}

phx_slot_t *phx_slot_get(size_t min_len)
{
    pthread_mutex_lock(&slot_lock);
    phx_slot_t **pp = &free_slots;
    while (*pp && (*pp)->len < min_len) pp = &(*pp)->next;
    phx_slot_t *s = *pp;
    if (s) *pp = s->next;
    pthread_mutex_unlock(&slot_lock);
    if (s) return s;
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->len = min_len;
    s->mem = phx_pinned_alloc(min_len);
    if (!s->mem) { free(s); return NULL; }
    return s;
}

void phx_slot_put(phx_slot_t *s)
{
    pthread_mutex_lock(&slot_lock);
    s->next = free_slots;
    free_slots = s;
    pthread_mutex_unlock(&slot_lock);
}
