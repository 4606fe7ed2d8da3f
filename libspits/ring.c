/*
 * ring.c - the circular queue of tasks in flight (see ring.h).
 *
 * slots[id & (cap - 1)] holds the item for every id in [low, next). The
 * capacity is a power of two and doubles when the span of ids outgrows it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ring.h"

spits_ring_t *spits_ring_new(void)
{
    spits_ring_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->cap = 1024;
    r->slots = calloc(r->cap, sizeof *r->slots);
    if (!r->slots) {
        free(r);
        return NULL;
    }
    return r;
}

void spits_ring_destroy(spits_ring_t **ring)
{
    if (!*ring)
        return;
    free((*ring)->slots);
    free(*ring);
    *ring = NULL;
}

/* (out of line: it would cost every put its register saves) */
__attribute__((noinline)) static int ring_grow(spits_ring_t *r, uint64_t span)
{
    uint64_t cap = r->cap;
    while (cap < span) {
        if (cap > (UINT64_MAX >> 1) || cap > SIZE_MAX / sizeof(void *) / 2)
            return -1;
        cap <<= 1;
    }
    void **slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (uint64_t id = r->low; id < r->next; id++)
        slots[id & (cap - 1)] = r->slots[id & (r->cap - 1)];
    free(r->slots);
    r->slots = slots;
    r->cap = cap;
    return 0;
}

int spits_ring_put_far(spits_ring_t *r, uint64_t id, void *item)
{
    if (id < r->next || !item || id == UINT64_MAX)
        return -1;
    if (r->count == 0)
        r->low = id;              /* skip the gap before the first id */
    if (id - r->low >= r->cap && ring_grow(r, id - r->low + 1) != 0)
        return -1;
    r->slots[id & (r->cap - 1)] = item;
    r->next = id + 1;
    r->count++;
    return 0;
}

uint64_t spits_ring_low(const spits_ring_t *r)
{
    return r->low;
}

uint64_t spits_ring_next(const spits_ring_t *r)
{
    return r->next;
}

size_t spits_ring_count(const spits_ring_t *r)
{
    return r->count;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "ring selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); return -1; } } while (0)

int spits_ring_selftest(void)
{
    spits_ring_t *r = spits_ring_new();
    static int items[5000];

    CHECK(r && spits_ring_count(r) == 0 && spits_ring_low(r) == 0);
    /* Fill past the initial capacity with a gap at the start. */
    for (uint64_t id = 10; id < 5000; id++)
        CHECK(spits_ring_put(r, id, &items[id]) == 0);
    CHECK(spits_ring_low(r) == 10 && spits_ring_next(r) == 5000);
    CHECK(spits_ring_count(r) == 4990);
    CHECK(spits_ring_put(r, 4999, &items[0]) == -1);  /* not increasing */
    CHECK(spits_ring_get(r, 9) == NULL && spits_ring_get(r, 5000) == NULL);
    CHECK(spits_ring_get(r, 4321) == &items[4321]);

    /* Taking out of order: low moves only past the oldest holes. */
    CHECK(spits_ring_take(r, 11) == &items[11]);
    CHECK(spits_ring_low(r) == 10);
    CHECK(spits_ring_take(r, 11) == NULL);
    CHECK(spits_ring_take(r, 10) == &items[10]);
    CHECK(spits_ring_low(r) == 12);
    for (uint64_t id = 12; id < 4999; id++)
        CHECK(spits_ring_take(r, id) == &items[id]);
    CHECK(spits_ring_low(r) == 4999 && spits_ring_count(r) == 1);
    /* Wrap around: ids keep increasing while the span stays small. */
    for (uint64_t id = 5000; id < 100000; id++) {
        CHECK(spits_ring_put(r, id, &items[id % 5000]) == 0);
        CHECK(spits_ring_take(r, id - 1) == &items[(id - 1) % 5000]);
    }
    CHECK(spits_ring_count(r) == 1 && spits_ring_low(r) == 99999);
    CHECK(spits_ring_take(r, 99999) != NULL);
    CHECK(spits_ring_count(r) == 0 && spits_ring_low(r) == 100000);
    /* A put after a gap on an empty ring starts there. */
    CHECK(spits_ring_put(r, 200000, &items[1]) == 0);
    CHECK(spits_ring_low(r) == 200000 && spits_ring_get(r, 200000) == &items[1]);
    spits_ring_destroy(&r);
    CHECK(r == NULL);
    return 0;
}

#endif /* SPITS_SELFTEST */
