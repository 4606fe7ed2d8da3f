/*
 * hashtab.c - the open-addressing hash table under libspits' maps (see
 * hashtab.h).
 */
#include <assert.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

#define HASHTAB_MIN 64                  /* slots of a new table */
#define HASHTAB_TOP (1ULL << 63)        /* set in every hash: never 0 */

_Static_assert(SPITS_HASHTAB_KEYBYTES == crypto_shorthash_KEYBYTES,
               "the table's key is SipHash's");
_Static_assert(crypto_shorthash_BYTES == sizeof(uint64_t), "SipHash gives 64 bits");

int spits_hashtab_init(spits_hashtab_t *t, size_t slot_size, int fn)
{
    memset(t, 0, sizeof *t);
    /* (slots are found by shifting: a size of any other kind would run
     * past the array) */
    if (slot_size < sizeof(uint64_t) || (slot_size & (slot_size - 1)) != 0 ||
        (fn != SPITS_HASHTAB_MIX && fn != SPITS_HASHTAB_SIPHASH))
        return -1;
    if (!(t->slots = calloc(HASHTAB_MIN, slot_size)))
        return -1;
    t->size = slot_size;
    while ((size_t)1 << t->shift < slot_size)
        t->shift++;
    t->cap = HASHTAB_MIN;
    t->fn = fn;
    if (fn == SPITS_HASHTAB_SIPHASH)
        randombytes_buf(t->key, sizeof t->key);
    return 0;
}

void spits_hashtab_free(spits_hashtab_t *t)
{
    free(t->slots);
    sodium_memzero(t, sizeof *t);
}

uint64_t spits_hashtab_hash(const spits_hashtab_t *t, const void *key, size_t len)
{
    unsigned char h[crypto_shorthash_BYTES];
    uint64_t v;
    assert(t->fn == SPITS_HASHTAB_SIPHASH);
    crypto_shorthash(h, key, len, t->key);
    memcpy(&v, h, sizeof v);
    return v | HASHTAB_TOP;
}

/* The free slot that ends h's run. */
static size_t hashtab_end(const spits_hashtab_t *t, uint64_t h)
{
    size_t mask = t->cap - 1, i = h & mask;
    while (*spits_hashtab_at(t, i))
        i = (i + 1) & mask;
    return i;
}

int spits_hashtab_grow(spits_hashtab_t *t)
{
    spits_hashtab_t old = *t;
    if (!(t->slots = calloc(old.cap * 2, t->size))) {
        t->slots = old.slots;
        return -1;
    }
    t->cap = old.cap * 2;
    for (size_t i = 0; i < old.cap; i++) {
        const uint64_t *s = spits_hashtab_at(&old, i);
        if (*s)
            memcpy(spits_hashtab_at(t, hashtab_end(t, *s)), s, t->size);
    }
    free(old.slots);
    return 0;
}

void spits_hashtab_remove(spits_hashtab_t *t, void *slot)
{
    size_t mask = t->cap - 1;
    size_t hole = (size_t)((unsigned char *)slot - t->slots) >> t->shift, i = hole;
    assert(hole < t->cap && *(const uint64_t *)slot != 0);
    /* Backward shift: each later slot of the run moves into the hole
     * unless its home lies cyclically in (hole, i], where the hole would
     * put it before its home. The distances from i compare without
     * caring where the run wraps. */
    for (;;) {
        i = (i + 1) & mask;
        const uint64_t *s = spits_hashtab_at(t, i);
        if (!*s)
            break;
        if (((i - (size_t)*s) & mask) >= ((i - hole) & mask)) {
            memcpy(spits_hashtab_at(t, hole), s, t->size);
            hole = i;
        }
    }
    *spits_hashtab_at(t, hole) = 0;
    t->n--;
}

void *spits_hashtab_next(const spits_hashtab_t *t, size_t *i)
{
    for (; *i < t->cap; (*i)++)
        if (*spits_hashtab_at(t, *i))
            return spits_hashtab_at(t, (*i)++);
    return NULL;
}

/* --- self-test --------------------------------------------------------- */
#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "hashtab: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

typedef struct {
    uint64_t hash;
    uint64_t id;
    uint64_t val;
    uint64_t pad;               /* (to a power of two) */
} t_slot_t;

/* The slot of id under hash h, or NULL. */
static t_slot_t *hashtab_t_find(const spits_hashtab_t *t, uint64_t h, uint64_t id)
{
    size_t i = spits_hashtab_home(t, h);
    t_slot_t *s;
    while ((s = spits_hashtab_probe(t, h, &i)) && s->id != id)
        ;
    return s;
}

/* The table's invariant: n slots in use, each reached from its home
 * without crossing a free slot; the table at most half full. */
static int hashtab_t_valid(const spits_hashtab_t *t)
{
    size_t used = 0, mask = t->cap - 1;
    for (size_t i = 0; i < t->cap; i++) {
        uint64_t h = *spits_hashtab_at(t, i);
        if (!h)
            continue;
        used++;
        for (size_t j = h & mask; j != i; j = (j + 1) & mask)
            if (!*spits_hashtab_at(t, j))
                return -1;
    }
    return used == t->n && 2 * t->n <= t->cap ? 0 : -1;
}

/* A hash whose home is slot cap - 1 - k of any table of 16 slots or more,
 * so that such ids pile up at the table's end and their runs wrap. */
static uint64_t hashtab_t_end(unsigned k)
{
    return ~(uint64_t)(k & 15);
}

/* The churn's hash of id: odd ids at the table's end, even ones mixed. */
static uint64_t hashtab_t_hash(const spits_hashtab_t *t, uint64_t id)
{
    return id % 2 ? hashtab_t_end((unsigned)(id / 2)) : spits_hashtab_hash_id(t, id);
}

/* Insert, find and delete under churn against an exact model: ids below
 * N, half of them hashed to the table's end (16 hashes shared by many
 * ids: long runs that wrap, equal hashes of different ids), half mixed;
 * the table grows from 64 slots on the way. */
static int hashtab_t_churn(spits_hashtab_t *t)
{
    enum { N = 600 };
    static uint64_t model[N];           /* id i's value, 0: absent */
    uint64_t x = 88172645463325252ULL;
    size_t in = 0;

    memset(model, 0, sizeof model);
    for (int step = 0; step < 60000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t id = x % N, h = hashtab_t_hash(t, id);
        t_slot_t *s = hashtab_t_find(t, h, id);
        CHECK((s != NULL) == (model[id] != 0));
        CHECK(!s || s->val == model[id]);
        /* More inserts than deletions early on, the other way later, so
         * the count climbs and falls. */
        int insert = (x >> 40) % 100 < (step < 30000 ? 70u : 30u);
        if (insert && !s) {
            CHECK((s = spits_hashtab_insert(t, h)) != NULL && s->hash == h);
            s->id = id;
            s->val = model[id] = (x >> 8) | 1;
            in++;
        } else if (!insert && s) {
            spits_hashtab_remove(t, s);
            model[id] = 0;
            in--;
        }
        CHECK(spits_hashtab_count(t) == in);
        if (step % 97 == 0)
            CHECK(hashtab_t_valid(t) == 0);
    }
    CHECK(hashtab_t_valid(t) == 0 && t->cap > HASHTAB_MIN);
    /* Every entry once by spits_hashtab_next, and each as the model has it. */
    size_t i = 0, seen = 0;
    t_slot_t *s;
    while ((s = spits_hashtab_next(t, &i)) != NULL) {
        CHECK(s->id < N && model[s->id] == s->val);
        seen++;
    }
    CHECK(seen == in);
    for (uint64_t id = 0; id < N; id++) {
        s = hashtab_t_find(t, hashtab_t_hash(t, id), id);
        CHECK((s != NULL) == (model[id] != 0) && (!s || s->val == model[id]));
    }
    return 0;
fail:
    return -1;
}

/* Deletion in a run that wraps, slot by slot: in a table of 64, A1..A3
 * (home 62), B (home 63), C (home 0) and E (home 3) sit at 62, 63, 0, 1,
 * 2 and 3. Taking A1 moves A2, A3, B and C back one each, and leaves E
 * at its home. */
static int hashtab_t_wrap(spits_hashtab_t *t)
{
    static const struct { uint64_t id; size_t home, at, after; } e[] = {
        {1, 62, 62, 64}, {2, 62, 63, 62}, {3, 62, 0, 63},
        {4, 63, 1, 0}, {5, 0, 2, 1}, {6, 3, 3, 3},
    };
    enum { NE = sizeof e / sizeof *e };
    CHECK(t->cap == 64);
    for (size_t k = 0; k < NE; k++) {
        uint64_t h = HASHTAB_TOP | (uint64_t)e[k].home << 20 | e[k].home;
        t_slot_t *s = spits_hashtab_insert(t, h);
        CHECK(s == (void *)spits_hashtab_at(t, e[k].at));
        s->id = e[k].id;
    }
    spits_hashtab_remove(t, spits_hashtab_at(t, 62));
    for (size_t k = 0; k < NE; k++) {
        if (e[k].after == 64)
            continue;
        t_slot_t *s = (void *)spits_hashtab_at(t, e[k].after);
        CHECK(s->id == e[k].id && (s->hash & 63) == e[k].home);
    }
    CHECK(*spits_hashtab_at(t, 2) == 0 && spits_hashtab_count(t) == NE - 1);
    CHECK(hashtab_t_valid(t) == 0);
    return 0;
fail:
    return -1;
}

/* Growth: 20,000 ids in, the table doubling on the way and never past
 * half full, each found after; then all out again, every other first. */
static int hashtab_t_grow(spits_hashtab_t *t)
{
    enum { N = 20000 };
    for (uint64_t id = 0; id < N; id++) {
        size_t cap = t->cap;
        uint64_t h = spits_hashtab_hash_id(t, id * 1024);
        t_slot_t *s = hashtab_t_find(t, h, id * 1024);
        CHECK(!s && (s = spits_hashtab_insert(t, h)));
        s->id = id * 1024;
        s->val = id;
        CHECK(t->cap == cap || (t->cap == 2 * cap && 2 * t->n > cap));
    }
    CHECK(hashtab_t_valid(t) == 0 && t->cap == 65536);
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t id = (uint64_t)pass; id < N; id += 2) {
            t_slot_t *s = hashtab_t_find(t, spits_hashtab_hash_id(t, id * 1024), id * 1024);
            CHECK(s && s->val == id);
            spits_hashtab_remove(t, s);
        }
    CHECK(spits_hashtab_count(t) == 0 && hashtab_t_valid(t) == 0);
    size_t i = 0;
    CHECK(spits_hashtab_next(t, &i) == NULL && i == t->cap);
    return 0;
fail:
    return -1;
}

/* The hashes: SipHash under each table's own key (two tables hash the
 * same ids apart), the top bit set; the mix the same in every table. */
static int hashtab_t_keys(void)
{
    spits_hashtab_t a = {0}, b = {0}, m = {0};   /* (free as they are) */
    int rc = -1;
    CHECK(spits_hashtab_init(&a, sizeof(t_slot_t), SPITS_HASHTAB_SIPHASH) == 0);
    CHECK(spits_hashtab_init(&b, sizeof(t_slot_t), SPITS_HASHTAB_SIPHASH) == 0);
    CHECK(spits_hashtab_init(&m, sizeof(t_slot_t), SPITS_HASHTAB_MIX) == 0);
    CHECK(memcmp(a.key, b.key, sizeof a.key) != 0);
    int differ = 0;
    for (uint64_t id = 0; id < 64; id++) {
        unsigned char h[crypto_shorthash_BYTES];
        uint64_t v;
        crypto_shorthash(h, (const unsigned char *)&id, sizeof id, a.key);
        memcpy(&v, h, sizeof v);
        CHECK(spits_hashtab_hash_id(&a, id) == (v | HASHTAB_TOP));
        CHECK(spits_hashtab_hash(&a, &id, sizeof id) == (v | HASHTAB_TOP));
        differ += spits_hashtab_hash_id(&a, id) != spits_hashtab_hash_id(&b, id);
        CHECK(spits_hashtab_hash_id(&m, id) >= HASHTAB_TOP);
        CHECK(spits_hashtab_hash_id(&m, id) != spits_hashtab_hash_id(&m, id + 1));
    }
    CHECK(differ == 64);
    CHECK(spits_hashtab_hash_id(&m, 0) == (0xe220a8397b1dcdafULL | HASHTAB_TOP));
    CHECK(spits_hashtab_hash(&a, "", 0) >= HASHTAB_TOP);
    rc = 0;
fail:
    spits_hashtab_free(&a);
    spits_hashtab_free(&b);
    spits_hashtab_free(&m);
    return rc;
}

int spits_hashtab_selftest(void)
{
    /* (each on a new table of its own) */
    static int (*const tests[])(spits_hashtab_t *) = {
        hashtab_t_churn, hashtab_t_wrap, hashtab_t_grow,
    };
    int rc = hashtab_t_keys();
    spits_hashtab_t bad;
    /* (a slot size the shifts cannot index, and no hash function) */
    if (spits_hashtab_init(&bad, 24, SPITS_HASHTAB_MIX) != -1 ||
        spits_hashtab_init(&bad, 4, SPITS_HASHTAB_MIX) != -1 ||
        spits_hashtab_init(&bad, 16, 7) != -1) {
        fprintf(stderr, "hashtab selftest: a bad slot size or function was taken\n");
        rc = -1;
    }
    for (size_t k = 0; k < sizeof tests / sizeof *tests; k++) {
        spits_hashtab_t t;
        if (spits_hashtab_init(&t, sizeof(t_slot_t), SPITS_HASHTAB_MIX) != 0)
            return -1;
        rc |= tests[k](&t);
        spits_hashtab_free(&t);
    }
    return rc;
}
#endif
