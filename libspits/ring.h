/*
 * ring.h - the circular queue of tasks in flight.
 *
 * The JM keeps every task that was sent but is not yet resolved (committed
 * or failed) in a ring, in send order. Tasks are numbered in generation
 * order and first sent in that order, so the ring is a circular array
 * indexed by task id: lookup of a result's task is O(1), the oldest
 * unresolved task is the ring's low end, and memory grows with the span of
 * ids in flight, not with the job's size.
 *
 * Ids put must increase (gaps are allowed: a resumed job skips committed
 * ids). The ring stores opaque pointers and never frees them itself.
 * Not thread-safe: one thread (the JM's dispatcher) owns a ring.
 */
#ifndef SPITS_RING_H
#define SPITS_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct spits_ring spits_ring_t;

/* (here only for spits_ring_get, put and take, inline: they run for
 * every task; every other access is ring.c's) */
struct spits_ring {
    void **slots;
    uint64_t cap;     /* power of two */
    uint64_t low;     /* oldest id present, or next when empty */
    uint64_t next;    /* one past the highest id put */
    size_t count;
};

spits_ring_t *spits_ring_new(void);
void spits_ring_destroy(spits_ring_t **ring);

/* spits_ring_put when the ring is empty or must grow (ring.c). */
int spits_ring_put_far(spits_ring_t *r, uint64_t id, void *item);

/* Adds an item; id must be >= spits_ring_next(). -1: bad id or no memory. */
static inline int spits_ring_put(spits_ring_t *r, uint64_t id, void *item)
{
    if (id < r->next || !item || id == UINT64_MAX || !r->count || id - r->low >= r->cap)
        return spits_ring_put_far(r, id, item);
    r->slots[id & (r->cap - 1)] = item;
    r->next = id + 1;
    r->count++;
    return 0;
}

/* The item with this id, or NULL if it was never put or was taken. */
static inline void *spits_ring_get(const spits_ring_t *r, uint64_t id)
{
    if (id < r->low || id >= r->next)
        return NULL;
    return r->slots[id & (r->cap - 1)];
}

/* Removes and returns the item (NULL if absent). */
static inline void *spits_ring_take(spits_ring_t *r, uint64_t id)
{
    void *item = spits_ring_get(r, id);
    if (!item)
        return NULL;
    r->slots[id & (r->cap - 1)] = NULL;
    if (--r->count == 0)
        r->low = r->next;
    else
        while (r->slots[r->low & (r->cap - 1)] == NULL)
            r->low++;
    return item;
}

/* Oldest id present (== next when empty). */
uint64_t spits_ring_low(const spits_ring_t *ring);
/* One past the highest id ever put. */
uint64_t spits_ring_next(const spits_ring_t *ring);
size_t spits_ring_count(const spits_ring_t *ring);

#ifdef SPITS_SELFTEST
int spits_ring_selftest(void);
#endif

#endif
