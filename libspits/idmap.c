/*
 * idmap.c - task id -> (owner, value) map (see idmap.h).
 *
 * Two parts, each id in at most one of them: a window, an array of the
 * ids base..base+cap-1 at id & (cap - 1), and a hash table (hashtab.h)
 * of the ids below base. Upstream numbers its tasks in order, so most
 * ids a relay holds are recent and near each other: there a lookup is an
 * index (inline, idmap.h), not a hash and a probe. An id past the
 * window's end grows it (up to IDMAP_WIN_MAX slots, 1 MiB), then slides
 * it up until that id is halfway in, the entries it leaves behind moving
 * to the table; an id below base (a copy sent again, or one held long)
 * is the table's. An empty window starts at the next id put past its
 * end, so a phase's ids, wherever they start, are the window's.
 */
#include <stdlib.h>

#include "hashtab.h"
#include "idmap.h"

#define IDMAP_WIN_MIN 1024u
#define IDMAP_WIN_MAX 65536u

typedef struct {
    uint64_t hash;              /* (the table's) */
    uint64_t id;
    spits_idmap_ent_t e;
} idmap_slot_t;

spits_idmap_t *spits_idmap_new(void)
{
    spits_idmap_t *m = calloc(1, sizeof *m);
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
    free((*mp)->win);
    free(*mp);
    *mp = NULL;
}

/* id's entry, or NULL; *hs is its table slot when the table holds it. */
static inline spits_idmap_ent_t *idmap_find(const spits_idmap_t *m, uint64_t id, idmap_slot_t **hs)
{
    *hs = NULL;
    if (id >= m->base) {
        spits_idmap_ent_t *e = spits_idmap_win(m, id);
        return e && e->used ? e : NULL;
    }
    if (!spits_hashtab_count(&m->t))
        return NULL;
    uint64_t h = spits_hashtab_hash_id(&m->t, id);
    size_t i = spits_hashtab_home(&m->t, h);
    idmap_slot_t *s;
    while ((s = spits_hashtab_probe(&m->t, h, &i)) && s->id != id)
        ;
    *hs = s;
    return s ? &s->e : NULL;
}

static void idmap_remove(spits_idmap_t *m, spits_idmap_ent_t *e, idmap_slot_t *hs)
{
    if (hs) {
        spits_hashtab_remove(&m->t, hs);
    } else {
        *e = (spits_idmap_ent_t){0};
        m->nwin--;
    }
}

/* The window with cap slots (each entry at its place for the new cap):
 * 0, or -1 when out of memory (unchanged). */
static int idmap_regrow(spits_idmap_t *m, size_t cap)
{
    spits_idmap_ent_t *w = calloc(cap, sizeof *w);
    if (!w)
        return -1;
    for (uint64_t id = m->base; id - m->base < m->cap; id++)
        if (m->win[id & (m->cap - 1)].used)
            w[id & (cap - 1)] = m->win[id & (m->cap - 1)];
    free(m->win);
    m->win = w;
    m->cap = cap;
    return 0;
}

/* The window starts at base (above its own): the entries below go to the
 * table, made big enough first, so that no insert fails halfway. 0, or -1
 * when out of memory (unchanged). */
static int idmap_slide(spits_idmap_t *m, uint64_t base)
{
    uint64_t leaving = base - m->base < m->cap ? base - m->base : m->cap;
    size_t moving = 0;
    for (uint64_t k = 0; k < leaving; k++)
        moving += (size_t)m->win[(m->base + k) & (m->cap - 1)].used;
    while (2 * (spits_hashtab_count(&m->t) + moving) > m->t.cap)
        if (spits_hashtab_grow(&m->t) != 0)
            return -1;
    for (uint64_t k = 0; moving && k < leaving; k++) {
        uint64_t id = m->base + k;
        spits_idmap_ent_t *e = &m->win[id & (m->cap - 1)];
        if (!e->used)
            continue;
        idmap_slot_t *s = spits_hashtab_insert(&m->t, spits_hashtab_hash_id(&m->t, id));
        s->id = id;
        s->e = *e;
        *e = (spits_idmap_ent_t){0};
        m->nwin--;
        moving--;
    }
    m->base = base;
    return 0;
}

/* Maps id (not mapped) to (owner, val): 0, or -1 when out of memory. */
static int idmap_insert(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    if (id < m->base) {
        idmap_slot_t *s = spits_hashtab_insert(&m->t, spits_hashtab_hash_id(&m->t, id));
        if (!s)
            return -1;
        s->id = id;
        s->e = (spits_idmap_ent_t){val, owner, 1};
        return 0;
    }
    if (id - m->base >= m->cap) {
        if (!m->nwin)
            m->base = id;
        uint64_t off = id - m->base;
        size_t cap = m->cap ? m->cap : IDMAP_WIN_MIN;
        while (cap <= off && cap < IDMAP_WIN_MAX)
            cap *= 2;
        if (cap != m->cap && idmap_regrow(m, cap) != 0)
            return -1;
        /* (by half the window at least: a slide scans the slots it leaves,
         * one per id past the window's end at most) */
        if (off >= m->cap && idmap_slide(m, id - (m->cap / 2 - 1)) != 0)
            return -1;
    }
    m->win[id & (m->cap - 1)] = (spits_idmap_ent_t){val, owner, 1};
    m->nwin++;
    return 0;
}

int spits_idmap_put(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    idmap_slot_t *hs;
    if (owner < 0)
        return -1;
    spits_idmap_ent_t *e = idmap_find(m, id, &hs);
    if (!e)
        return idmap_insert(m, id, owner, val);
    e->owner = owner;
    e->val = val;
    return 0;
}

int spits_idmap_get_far(const spits_idmap_t *m, uint64_t id, int *owner, void **val)
{
    idmap_slot_t *hs;
    const spits_idmap_ent_t *e = idmap_find(m, id, &hs);
    if (!e)
        return 0;
    if (owner)
        *owner = e->owner;
    if (val)
        *val = e->val;
    return 1;
}

int spits_idmap_add_far(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    idmap_slot_t *hs;
    if (owner < 0)
        return -1;
    if (idmap_find(m, id, &hs))
        return 1;
    return idmap_insert(m, id, owner, val);
}

int spits_idmap_del(spits_idmap_t *m, uint64_t id)
{
    idmap_slot_t *hs;
    spits_idmap_ent_t *e = idmap_find(m, id, &hs);
    if (!e)
        return 0;
    idmap_remove(m, e, hs);
    return 1;
}

int spits_idmap_take_far(spits_idmap_t *m, uint64_t id, int owner, void **val)
{
    idmap_slot_t *hs;
    spits_idmap_ent_t *e = idmap_find(m, id, &hs);
    if (!e || e->owner != owner)
        return 0;
    if (val)
        *val = e->val;
    idmap_remove(m, e, hs);
    return 1;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "idmap: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

/* A relay's stream against a model: ids mostly in order, with gaps (an
 * upstream's copies sent elsewhere) and a jump now and then, older ones
 * again (copies sent again, held ones the window slid past), entries put,
 * added, taken and deleted in any order, and the last ids at the top of
 * the range. */
static int idmap_t_stream(void)
{
    enum { N = 100000 };
    static uint64_t ids[N];
    static int ref[N];            /* the owner of ids[i], or -1 */
    spits_idmap_t *m = spits_idmap_new();
    uint64_t x = 99, id = 1000;
    size_t cur = 0, n = 0;
    int owner;
    void *val;

    CHECK(m);
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        id += 1 + x % 8 + (x % 997 == 0 ? 100000 : 0);
        ids[i] = id;
        ref[i] = -1;
    }
    ids[N - 2] = UINT64_MAX - 1;
    ids[N - 1] = UINT64_MAX;
    for (int step = 0; step < 400000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t i = (x % 4 == 0 && cur) || cur == N ? (size_t)((x >> 8) % cur) : cur++;
        int o = (int)((x >> 20) % 5), r = (int)((x >> 40) % 10);
        if (r < 6) {
            CHECK(spits_idmap_put(m, ids[i], o, &ids[i]) == 0);
            n += ref[i] < 0;
            ref[i] = o;
        } else if (r < 8) {
            CHECK(spits_idmap_add(m, ids[i], o, &ids[i]) == (ref[i] >= 0));
            n += ref[i] < 0;
            ref[i] = ref[i] < 0 ? o : ref[i];
        } else if (r < 9) {
            CHECK(spits_idmap_take(m, ids[i], o, &val) == (ref[i] == o));
            if (ref[i] == o) {
                CHECK(val == &ids[i]);
                ref[i] = -1;
                n--;
            }
        } else {
            CHECK(spits_idmap_del(m, ids[i]) == (ref[i] >= 0));
            n -= ref[i] >= 0;
            ref[i] = -1;
        }
        CHECK(spits_idmap_count(m) == n);
    }
    for (size_t i = 0; i < N; i++) {
        int in = spits_idmap_get(m, ids[i], &owner, &val);
        CHECK(in == (ref[i] >= 0));
        CHECK(!in || (owner == ref[i] && val == &ids[i]));
    }
    spits_idmap_destroy(&m);
    return 0;
fail:
    spits_idmap_destroy(&m);
    return -1;
}

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
    /* A phase's ids in order, wherever they start, are the window's: none
     * goes to the table. */
    CHECK((m = spits_idmap_new()));
    CHECK(spits_idmap_put(m, 1ULL << 40, 0, NULL) == 0 && m->base == 1ULL << 40);
    for (uint64_t id = 1ULL << 40; id < (1ULL << 40) + IDMAP_WIN_MAX; id++)
        CHECK(spits_idmap_put(m, id, 0, NULL) == 0);
    CHECK(m->base == 1ULL << 40 && m->nwin == IDMAP_WIN_MAX && !spits_hashtab_count(&m->t));
    CHECK(spits_idmap_add(m, (1ULL << 40) + 7, -1, NULL) == -1);
    /* The next slides it until that id is halfway in: the half it left
     * went to the table. */
    CHECK(spits_idmap_add(m, (1ULL << 40) + IDMAP_WIN_MAX, 0, NULL) == 0);
    CHECK(m->base == (1ULL << 40) + IDMAP_WIN_MAX / 2 + 1);
    CHECK(spits_hashtab_count(&m->t) == IDMAP_WIN_MAX / 2 + 1 &&
          spits_idmap_count(m) == IDMAP_WIN_MAX + 1);
    CHECK(spits_idmap_get(m, 1ULL << 40, &owner, NULL) && owner == 0);
    spits_idmap_destroy(&m);
    return idmap_t_stream();
fail:
    spits_idmap_destroy(&m);
    return -1;
}
#endif
