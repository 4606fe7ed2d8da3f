/*
 * idmap.c - task id -> (owner, value) hash map (see idmap.h).
 */
#include <stdlib.h>

#include "idmap.h"

#define IDMAP_MIN 64            /* slots of a new map (a power of two) */

typedef struct {
    uint64_t id;
    void *val;
    int owner;                  /* -1: the slot is free */
} slot_t;

struct spits_idmap {
    slot_t *slots;
    size_t cap;                 /* a power of two */
    size_t n;
};

static size_t idmap_hash(uint64_t id)
{
    id += 0x9e3779b97f4a7c15ULL;          /* splitmix64's finaliser */
    id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ULL;
    id = (id ^ (id >> 27)) * 0x94d049bb133111ebULL;
    return (size_t)(id ^ (id >> 31));
}

static slot_t *idmap_alloc(size_t cap)
{
    slot_t *s = malloc(cap * sizeof *s);
    if (s)
        for (size_t i = 0; i < cap; i++)
            s[i].owner = -1;
    return s;
}

spits_idmap_t *spits_idmap_new(void)
{
    spits_idmap_t *m = calloc(1, sizeof *m);
    if (m && !(m->slots = idmap_alloc(IDMAP_MIN))) {
        free(m);
        return NULL;
    }
    if (m)
        m->cap = IDMAP_MIN;
    return m;
}

void spits_idmap_destroy(spits_idmap_t **mp)
{
    if (!*mp)
        return;
    free((*mp)->slots);
    free(*mp);
    *mp = NULL;
}

/* The slot of id, or the free slot where it would go. */
static slot_t *idmap_find(const spits_idmap_t *m, uint64_t id)
{
    size_t mask = m->cap - 1, i = idmap_hash(id) & mask;
    while (m->slots[i].owner >= 0 && m->slots[i].id != id)
        i = (i + 1) & mask;
    return &m->slots[i];
}

static int idmap_grow(spits_idmap_t *m)
{
    size_t cap = m->cap * 2;
    slot_t *old = m->slots, *s = idmap_alloc(cap);
    if (!s)
        return -1;
    size_t oldcap = m->cap;
    m->slots = s;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].owner >= 0)
            *idmap_find(m, old[i].id) = old[i];
    free(old);
    return 0;
}

int spits_idmap_put(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    if (owner < 0)
        return -1;
    if (2 * (m->n + 1) > m->cap && idmap_grow(m) != 0)
        return -1;
    slot_t *s = idmap_find(m, id);
    if (s->owner < 0)
        m->n++;
    *s = (slot_t){id, val, owner};
    return 0;
}

int spits_idmap_get(const spits_idmap_t *m, uint64_t id, int *owner, void **val)
{
    const slot_t *s = idmap_find(m, id);
    if (s->owner < 0)
        return 0;
    if (owner)
        *owner = s->owner;
    if (val)
        *val = s->val;
    return 1;
}

int spits_idmap_add(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    if (owner < 0)
        return -1;
    slot_t *s = idmap_find(m, id);
    if (s->owner >= 0)
        return 1;
    if (2 * (m->n + 1) > m->cap) {
        if (idmap_grow(m) != 0)
            return -1;
        s = idmap_find(m, id);
    }
    *s = (slot_t){id, val, owner};
    m->n++;
    return 0;
}

/* Empties slot s (occupied). */
static void idmap_remove(spits_idmap_t *m, slot_t *s)
{
    size_t mask = m->cap - 1;
    /* Backward shift: each later entry of the run that may sit in the
     * hole (its home is not between the hole and itself) moves into it. */
    size_t hole = (size_t)(s - m->slots), i = hole;
    for (;;) {
        i = (i + 1) & mask;
        if (m->slots[i].owner < 0)
            break;
        size_t home = idmap_hash(m->slots[i].id) & mask;
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole].owner = -1;
    m->n--;
}

int spits_idmap_del(spits_idmap_t *m, uint64_t id)
{
    slot_t *s = idmap_find(m, id);
    if (s->owner < 0)
        return 0;
    idmap_remove(m, s);
    return 1;
}

int spits_idmap_take(spits_idmap_t *m, uint64_t id, int owner, void **val)
{
    slot_t *s = idmap_find(m, id);
    if (s->owner < 0 || s->owner != owner)
        return 0;
    if (val)
        *val = s->val;
    idmap_remove(m, s);
    return 1;
}

size_t spits_idmap_count(const spits_idmap_t *m)
{
    return m->n;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "idmap: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

int spits_idmap_selftest(void)
{
    enum { N = 5000 };
    static int ref[N];            /* the model: owner of id i, or -1 */
    spits_idmap_t *m = spits_idmap_new();
    uint64_t x = 12345;
    int owner;
    void *val;

    CHECK(m);
    for (size_t i = 0; i < N; i++)
        ref[i] = -1;
    /* Random puts and deletions against the model, ids spread wide and
     * clustered (id * 1024: same low bits) alike. */
    for (int step = 0; step < 200000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t i = (size_t)(x % N);
        uint64_t id = (uint64_t)i * 1024;
        if ((x >> 20) % 3) {
            int o = (int)((x >> 32) % 7);
            CHECK(spits_idmap_put(m, id, o, (void *)(uintptr_t)(i + 1)) == 0);
            ref[i] = o;
        } else {
            CHECK(spits_idmap_del(m, id) == (ref[i] >= 0));
            ref[i] = -1;
        }
    }
    size_t n = 0, of3 = 0;
    for (size_t i = 0; i < N; i++) {
        int in = spits_idmap_get(m, (uint64_t)i * 1024, &owner, &val);
        CHECK(in == (ref[i] >= 0));
        if (in) {
            CHECK(owner == ref[i] && val == (void *)(uintptr_t)(i + 1));
            n++;
            of3 += ref[i] == 3;
        }
    }
    CHECK(spits_idmap_count(m) == n);
    /* Owner 3's entries taken one by one (each a backward shift), by
     * their owner only: the others stay. */
    size_t taken = 0;
    for (size_t i = 0; i < N; i++) {
        uint64_t id = (uint64_t)i * 1024;
        if (ref[i] >= 0 && ref[i] != 3)
            CHECK(spits_idmap_take(m, id, 3, NULL) == 0);
        else if (ref[i] == 3)
            taken += (size_t)spits_idmap_take(m, id, 3, NULL);
    }
    CHECK(taken == of3);
    for (size_t i = 0; i < N; i++) {
        int in = spits_idmap_get(m, (uint64_t)i * 1024, &owner, NULL);
        CHECK(in == (ref[i] >= 0 && ref[i] != 3));
    }
    CHECK(spits_idmap_count(m) == n - of3);
    CHECK(spits_idmap_put(m, 7, -1, NULL) == -1);
    /* add: only when absent; take: only from its owner. */
    CHECK(spits_idmap_add(m, 1u << 30, 2, &n) == 0);
    CHECK(spits_idmap_add(m, 1u << 30, 5, NULL) == 1);
    CHECK(spits_idmap_get(m, 1u << 30, &owner, &val) && owner == 2 && val == &n);
    CHECK(spits_idmap_take(m, 1u << 30, 5, &val) == 0);
    CHECK(spits_idmap_take(m, 1u << 30, 2, &val) == 1 && val == &n);
    CHECK(!spits_idmap_get(m, 1u << 30, NULL, NULL));
    CHECK(spits_idmap_take(m, 1u << 30, 2, NULL) == 0);
    spits_idmap_destroy(&m);
    CHECK(m == NULL);
    return 0;
fail:
    spits_idmap_destroy(&m);
    return -1;
}
#endif
