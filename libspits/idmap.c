/*
 * idmap.c - task id -> (owner, value) hash map (see idmap.h).
 */
#include <stdlib.h>

#include "hashtab.h"
#include "idmap.h"

typedef struct {
    uint64_t hash;              /* (the table's) */
    uint64_t id;
    void *val;
    int owner;
} idmap_slot_t;

struct spits_idmap {
    spits_hashtab_t t;
};

spits_idmap_t *spits_idmap_new(void)
{
    spits_idmap_t *m = malloc(sizeof *m);
    if (m && spits_hashtab_init(&m->t, sizeof(idmap_slot_t), SPITS_HASHTAB_MIX) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void spits_idmap_destroy(spits_idmap_t **mp)
{
    if (!*mp)
        return;
    spits_hashtab_free(&(*mp)->t);
    free(*mp);
    *mp = NULL;
}

/* The slot of id (whose hash is h), or NULL. */
static inline idmap_slot_t *idmap_find(const spits_idmap_t *m, uint64_t id, uint64_t h)
{
    size_t i = spits_hashtab_home(&m->t, h);
    idmap_slot_t *s;
    while ((s = spits_hashtab_probe(&m->t, h, &i)) && s->id != id)
        ;
    return s;
}

/* A new slot for id, not mapped (hash h). -1 when out of memory. */
static int idmap_insert(spits_idmap_t *m, uint64_t id, uint64_t h, int owner, void *val)
{
    idmap_slot_t *s = spits_hashtab_insert(&m->t, h);
    if (!s)
        return -1;
    s->id = id;
    s->val = val;
    s->owner = owner;
    return 0;
}

int spits_idmap_put(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    if (owner < 0)
        return -1;
    uint64_t h = spits_hashtab_hash_id(&m->t, id);
    idmap_slot_t *s = idmap_find(m, id, h);
    if (!s)
        return idmap_insert(m, id, h, owner, val);
    s->owner = owner;
    s->val = val;
    return 0;
}

int spits_idmap_get(const spits_idmap_t *m, uint64_t id, int *owner, void **val)
{
    const idmap_slot_t *s = idmap_find(m, id, spits_hashtab_hash_id(&m->t, id));
    if (!s)
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
    uint64_t h = spits_hashtab_hash_id(&m->t, id);
    if (idmap_find(m, id, h))
        return 1;
    return idmap_insert(m, id, h, owner, val);
}

int spits_idmap_del(spits_idmap_t *m, uint64_t id)
{
    idmap_slot_t *s = idmap_find(m, id, spits_hashtab_hash_id(&m->t, id));
    if (!s)
        return 0;
    spits_hashtab_remove(&m->t, s);
    return 1;
}

int spits_idmap_take(spits_idmap_t *m, uint64_t id, int owner, void **val)
{
    idmap_slot_t *s = idmap_find(m, id, spits_hashtab_hash_id(&m->t, id));
    if (!s || s->owner != owner)
        return 0;
    if (val)
        *val = s->val;
    spits_hashtab_remove(&m->t, s);
    return 1;
}

size_t spits_idmap_count(const spits_idmap_t *m)
{
    return spits_hashtab_count(&m->t);
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
