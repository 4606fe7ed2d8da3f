/*
 * adopt.c - results that arrive before their task was sent (see adopt.h).
 *
 * Linear probing with backward-shift deletion, so no tombstones: lookups
 * stay short however many results come and go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"

typedef struct {
    uint64_t id;
    unsigned char *data;
    uint32_t len;
    uint8_t used;
} slot_t;

/* What one kept result costs beyond its bytes: its slot, with the table
 * at most 3/4 full and doubling (so up to 8/3 slots an entry). Counted in
 * the byte bound, so that empty results are bounded in number too. */
#define ADOPT_ENTRY_BYTES (3 * sizeof(slot_t))

struct jm_adopt {
    slot_t *slots;
    size_t cap, count;         /* cap: a power of two */
    size_t bytes, max_bytes;
};

static size_t slot_of(const jm_adopt_t *a, uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;
    return (size_t)id & (a->cap - 1);
}

jm_adopt_t *jm_adopt_new(size_t max_bytes)
{
    jm_adopt_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cap = 64;
    a->max_bytes = max_bytes;
    a->slots = calloc(a->cap, sizeof *a->slots);
    if (!a->slots) {
        free(a);
        return NULL;
    }
    return a;
}

void jm_adopt_destroy(jm_adopt_t **ap)
{
    jm_adopt_t *a = *ap;
    if (!a)
        return;
    for (size_t i = 0; i < a->cap; i++)
        free(a->slots[i].data);
    free(a->slots);
    free(a);
    *ap = NULL;
}

static slot_t *find(const jm_adopt_t *a, uint64_t id)
{
    for (size_t i = slot_of(a, id);; i = (i + 1) & (a->cap - 1)) {
        if (!a->slots[i].used)
            return NULL;
        if (a->slots[i].id == id)
            return &a->slots[i];
    }
}

static int grow(jm_adopt_t *a)
{
    slot_t *old = a->slots;
    size_t oldcap = a->cap;
    slot_t *s = calloc(oldcap * 2, sizeof *s);
    if (!s)
        return -1;
    a->slots = s;
    a->cap = oldcap * 2;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].used)
            continue;
        size_t k = slot_of(a, old[i].id);
        while (a->slots[k].used)
            k = (k + 1) & (a->cap - 1);
        a->slots[k] = old[i];
    }
    free(old);
    return 0;
}

int jm_adopt_put(jm_adopt_t *a, uint64_t id, const void *data, uint32_t len)
{
    if (a->bytes + len + ADOPT_ENTRY_BYTES > a->max_bytes || find(a, id))
        return 1;
    if ((a->count + 1) * 4 > a->cap * 3 && grow(a) != 0)
        return -1;
    unsigned char *copy = NULL;
    if (len && !(copy = malloc(len)))
        return -1;
    if (len)
        memcpy(copy, data, len);
    size_t k = slot_of(a, id);
    while (a->slots[k].used)
        k = (k + 1) & (a->cap - 1);
    a->slots[k] = (slot_t){id, copy, len, 1};
    a->count++;
    a->bytes += len + ADOPT_ENTRY_BYTES;
    return 0;
}

int jm_adopt_take(jm_adopt_t *a, uint64_t id, unsigned char **data,
                  uint32_t *len)
{
    slot_t *s = a->count ? find(a, id) : NULL;
    if (!s)
        return 0;
    *data = s->data;
    *len = s->len;
    a->bytes -= s->len + ADOPT_ENTRY_BYTES;
    a->count--;
    /* Backward shift: pull later members of the probe run into the hole. */
    size_t hole = (size_t)(s - a->slots);
    for (size_t i = (hole + 1) & (a->cap - 1); a->slots[i].used;
         i = (i + 1) & (a->cap - 1)) {
        size_t home = slot_of(a, a->slots[i].id);
        /* Movable if its home is not in (hole, i], cyclically. */
        if ((i > hole && (home <= hole || home > i)) ||
            (i < hole && home <= hole && home > i)) {
            a->slots[hole] = a->slots[i];
            hole = i;
        }
    }
    memset(&a->slots[hole], 0, sizeof a->slots[hole]);
    return 1;
}

size_t jm_adopt_count(const jm_adopt_t *a)
{
    return a->count;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "adopt selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); goto out; } } while (0)

int jm_adopt_selftest(void)
{
    jm_adopt_t *a = jm_adopt_new(1 << 20);
    unsigned char *d;
    uint32_t len;
    int ok = 0;

    CHECK(a);
    /* Many ids, so the table grows and probe runs wrap around. */
    for (uint64_t id = 0; id < 5000; id++)
        CHECK(jm_adopt_put(a, id * 7919, &id, sizeof id) == 0);
    CHECK(jm_adopt_put(a, 7919, "x", 1) == 1);          /* held already */
    CHECK(jm_adopt_count(a) == 5000);
    /* Take every other one, then check the rest are all still found. */
    for (uint64_t id = 0; id < 5000; id += 2) {
        CHECK(jm_adopt_take(a, id * 7919, &d, &len) == 1);
        CHECK(len == sizeof id && memcmp(d, &id, sizeof id) == 0);
        free(d);
    }
    CHECK(jm_adopt_take(a, 0, &d, &len) == 0);
    for (uint64_t id = 1; id < 5000; id += 2) {
        CHECK(jm_adopt_take(a, id * 7919, &d, &len) == 1);
        CHECK(len == sizeof id && memcmp(d, &id, sizeof id) == 0);
        free(d);
    }
    CHECK(jm_adopt_count(a) == 0);
    /* The byte bound, each entry's slot counted. */
    jm_adopt_destroy(&a);
    CHECK((a = jm_adopt_new(10 + 2 * ADOPT_ENTRY_BYTES)) != NULL);
    CHECK(jm_adopt_put(a, 1, "0123456789", 10) == 0);
    CHECK(jm_adopt_put(a, 2, "z", 1) == 1);
    CHECK(jm_adopt_put(a, 3, NULL, 0) == 0);
    CHECK(jm_adopt_put(a, 4, NULL, 0) == 1);              /* full */
    CHECK(jm_adopt_take(a, 3, &d, &len) == 1 && d == NULL && len == 0);
    CHECK(jm_adopt_put(a, 4, NULL, 0) == 0);              /* room again */
    /* Empty results are bounded in number: 1 MiB holds at most
     * 1 MiB / ADOPT_ENTRY_BYTES of them. */
    jm_adopt_destroy(&a);
    CHECK((a = jm_adopt_new(1 << 20)) != NULL);
    size_t kept = 0;
    for (uint64_t id = 0; id < (1 << 20); id++)
        if (jm_adopt_put(a, id, NULL, 0) == 0)
            kept++;
    CHECK(kept == (1 << 20) / ADOPT_ENTRY_BYTES);
    CHECK(jm_adopt_count(a) == kept);
    ok = 1;
out:
    jm_adopt_destroy(&a);
    return ok ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
