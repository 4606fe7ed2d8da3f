/*
 * peertab.c - the table of the TMs below a hop (see peertab.h).
 *
 * Entries are allocated one by one and indexed by slot; evicted slots
 * are reused, so the slot array is as large as the most entries held at
 * once. A hash table (libspits/hashtab.h) of slot numbers finds an entry
 * from its routing id on each message; another holds the fingerprints
 * of evicted entries. Both are keyed by SipHash, each under its own key,
 * so their probe runs stay short whatever ids the peers choose.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "peertab.h"
#include "util.h"

typedef struct {
    uint64_t hash;                   /* the entry's */
    int32_t slot;
} peertab_ix_t;

typedef struct {
    uint64_t hash;                   /* the fingerprint: its rid's hash
                                        under the lost table's key */
} peertab_fp_t;

struct peertab {
    size_t entry_size;
    peertab_entry_t **ents;          /* by slot; NULL: free */
    size_t nslots, cap, n;           /* slots used so far, room, entries */
    int *free_slots;                 /* evicted entries' slots */
    size_t nfree, fcap;
    spits_hashtab_t ix;              /* of peertab_ix_t: entries by hash */
    peertab_entry_t **live;          /* the live set */
    size_t nlive, caplive;
    peertab_entry_t *dead_head, *dead_tail;   /* oldest first */
    size_t ndead, keep_dead;
    spits_hashtab_t lost;            /* of peertab_fp_t */
    size_t lost_max;
    uint64_t lost_forgotten;
    peertab_evict_fn on_evict;
    peertab_free_fn on_free;
    void *arg;
};

peertab_t *peertab_new(size_t entry_size, size_t keep_dead, size_t lost_max,
                       peertab_evict_fn on_evict, peertab_free_fn on_free, void *arg)
{
    peertab_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->entry_size = entry_size > sizeof(peertab_entry_t) ? entry_size
                                                         : sizeof(peertab_entry_t);
    t->keep_dead = keep_dead ? keep_dead : 1;
    t->lost_max = lost_max;
    t->on_evict = on_evict;
    t->on_free = on_free;
    t->arg = arg;
    if (spits_hashtab_init(&t->ix, sizeof(peertab_ix_t), SPITS_HASHTAB_SIPHASH) != 0) {
        free(t);
        return NULL;
    }
    if (spits_hashtab_init(&t->lost, sizeof(peertab_fp_t), SPITS_HASHTAB_SIPHASH) != 0) {
        spits_hashtab_free(&t->ix);
        free(t);
        return NULL;
    }
    return t;
}

void peertab_destroy(peertab_t **tp)
{
    peertab_t *t = *tp;
    if (!t)
        return;
    for (size_t i = 0; i < t->nslots; i++) {
        if (t->ents[i] && t->on_free)
            t->on_free(t->ents[i]);
        free(t->ents[i]);
    }
    free(t->ents);
    free(t->free_slots);
    spits_hashtab_free(&t->ix);
    free(t->live);
    spits_hashtab_free(&t->lost);
    free(t);
    *tp = NULL;
}

void *peertab_find(const peertab_t *t, const void *rid, size_t len)
{
    if (len == 0 || len > PEERTAB_RID_MAX)
        return NULL;
    uint64_t h = spits_hashtab_hash(&t->ix, rid, len);
    size_t i = spits_hashtab_home(&t->ix, h);
    const peertab_ix_t *s;
    while ((s = spits_hashtab_probe(&t->ix, h, &i))) {
        peertab_entry_t *e = t->ents[s->slot];
        if (e->ridlen == len && memcmp(e->rid, rid, len) == 0)
            return e;
    }
    return NULL;
}

static void peertab_unindex(peertab_t *t, const peertab_entry_t *e)
{
    size_t i = spits_hashtab_home(&t->ix, e->hash);
    peertab_ix_t *s;
    while ((s = spits_hashtab_probe(&t->ix, e->hash, &i)) && s->slot != e->slot)
        ;
    spits_hashtab_remove(&t->ix, s);
}

/* A slot for a new entry: an evicted one's, else a new one. -1: no
 * memory. */
static int peertab_slot_take(peertab_t *t)
{
    if (t->nfree)
        return t->free_slots[--t->nfree];
    /* The free list may come to hold every slot. */
    if (spits_grow((void **)&t->ents, &t->cap, t->nslots + 1, sizeof *t->ents, 16) ||
        spits_grow((void **)&t->free_slots, &t->fcap, t->nslots + 1,
                   sizeof *t->free_slots, 16))
        return -1;
    t->ents[t->nslots] = NULL;
    return (int)t->nslots++;
}

static void peertab_dead_append(peertab_t *t, peertab_entry_t *e);

void *peertab_add(peertab_t *t, const void *rid, size_t len)
{
    if (len == 0 || len > PEERTAB_RID_MAX)
        return NULL;
    uint64_t h = spits_hashtab_hash(&t->ix, rid, len);
    peertab_ix_t *ix = spits_hashtab_insert(&t->ix, h);
    if (!ix)
        return NULL;
    peertab_entry_t *e = calloc(1, t->entry_size);
    int slot = e ? peertab_slot_take(t) : -1;
    if (slot < 0) {
        spits_hashtab_remove(&t->ix, ix);
        free(e);
        return NULL;
    }
    ix->slot = slot;
    memcpy(e->rid, rid, len);
    e->ridlen = len;
    e->hash = h;
    e->slot = slot;
    t->ents[slot] = e;
    t->n++;
    /* Dead until set alive: the newest of the dead, so that one that is
     * never set alive (no memory for the live set) is evicted in turn.
     * (Nothing is evicted here: a caller's other entries stay good.) */
    peertab_dead_append(t, e);
    return e;
}

/* --- the lost fingerprints ---------------------------------------------- */

/* Remembers an evicted entry; past lost_max, or out of memory, it is
 * counted as forgotten. */
static void peertab_lost_put(peertab_t *t, const peertab_entry_t *e)
{
    if (spits_hashtab_count(&t->lost) >= t->lost_max) {
        t->lost_forgotten++;
        return;
    }
    uint64_t fp = spits_hashtab_hash(&t->lost, e->rid, e->ridlen);
    size_t i = spits_hashtab_home(&t->lost, fp);
    if (!spits_hashtab_probe(&t->lost, fp, &i) && !spits_hashtab_insert(&t->lost, fp))
        t->lost_forgotten++;
}

int peertab_take_lost(peertab_t *t, const void *rid, size_t len)
{
    if (!spits_hashtab_count(&t->lost) || len == 0 || len > PEERTAB_RID_MAX)
        return 0;
    uint64_t fp = spits_hashtab_hash(&t->lost, rid, len);
    size_t i = spits_hashtab_home(&t->lost, fp);
    peertab_fp_t *s = spits_hashtab_probe(&t->lost, fp, &i);
    if (!s)
        return 0;
    spits_hashtab_remove(&t->lost, s);
    return 1;
}

uint64_t peertab_lost_forgotten(const peertab_t *t) { return t->lost_forgotten; }

/* --- live and dead ------------------------------------------------------ */

static void peertab_dead_unlink(peertab_t *t, peertab_entry_t *e)
{
    *(e->dead_prev ? &e->dead_prev->dead_next : &t->dead_head) = e->dead_next;
    *(e->dead_next ? &e->dead_next->dead_prev : &t->dead_tail) = e->dead_prev;
    e->dead_prev = e->dead_next = NULL;
    t->ndead--;
}

static void peertab_dead_append(peertab_t *t, peertab_entry_t *e)
{
    e->dead_prev = t->dead_tail;
    e->dead_next = NULL;
    *(t->dead_tail ? &t->dead_tail->dead_next : &t->dead_head) = e;
    t->dead_tail = e;
    t->ndead++;
}

/* The oldest dead entry goes: the caller's on_evict first (which may
 * keep its fingerprint), on_free, then its slot back to the free list. */
static void peertab_evict_oldest(peertab_t *t)
{
    peertab_entry_t *e = t->dead_head;
    peertab_dead_unlink(t, e);
    if (t->on_evict && t->on_evict(e, t->arg))
        peertab_lost_put(t, e);
    if (t->on_free)
        t->on_free(e);
    peertab_unindex(t, e);
    t->ents[e->slot] = NULL;
    t->free_slots[t->nfree++] = e->slot;
    t->n--;
    free(e);
}

static int peertab_live_add(peertab_t *t, peertab_entry_t *e)
{
    if (spits_grow((void **)&t->live, &t->caplive, t->nlive + 1, sizeof *t->live, 16))
        return -1;
    e->live_ix = t->nlive;
    t->live[t->nlive++] = e;
    return 0;
}

static void peertab_live_remove(peertab_t *t, peertab_entry_t *e)
{
    peertab_entry_t *last = t->live[--t->nlive];
    t->live[e->live_ix] = last;
    last->live_ix = e->live_ix;
}

int peertab_set_alive(peertab_t *t, void *entry, int alive)
{
    peertab_entry_t *e = entry;
    alive = !!alive;
    if (e->alive == alive)
        return 0;
    if (alive) {
        if (peertab_live_add(t, e) != 0)
            return -1;
        if (e->dead_prev || t->dead_head == e)
            peertab_dead_unlink(t, e);
        e->alive = 1;
        return 0;
    }
    peertab_live_remove(t, e);
    e->alive = 0;
    peertab_dead_append(t, e);
    while (t->ndead > t->keep_dead)
        peertab_evict_oldest(t);
    return 0;
}

size_t peertab_live_count(const peertab_t *t) { return t->nlive; }
void *peertab_live_at(const peertab_t *t, size_t i) { return t->live[i]; }
size_t peertab_count(const peertab_t *t) { return t->n; }
size_t peertab_slots(const peertab_t *t) { return t->nslots; }

void *peertab_at(const peertab_t *t, size_t slot)
{
    return slot < t->nslots ? t->ents[slot] : NULL;
}

/* --- self-test --------------------------------------------------------- */
#ifdef SPITS_SELFTEST
#include <stdio.h>

#define T_KEEP 7
#define T_TMS 500
#define T_GROW 5000

typedef struct {
    peertab_entry_t pe;
    int k;                   /* its number in the test */
    int lost;
    uint64_t sent;
} t_peer_t;

typedef struct {
    uint64_t evicted, sent;
} t_totals_t;

static int peertab_t_evict(peertab_entry_t *e, void *arg)
{
    t_peer_t *p = (t_peer_t *)e;
    t_totals_t *tot = arg;
    tot->evicted++;
    tot->sent += p->sent;
    return p->lost;
}

static int peertab_t_freed;   /* entries on_free saw */

static void peertab_t_free(peertab_entry_t *e)
{
    (void)e;
    peertab_t_freed++;
}

/* The live set is exactly the live entries, each at its index; the
 * dead list holds the others, oldest first, and every entry is found. */
static int peertab_t_check(const peertab_t *t, const unsigned char *alive, int ntms)
{
    size_t want = 0, dead = 0;
    for (int k = 0; k < ntms; k++)
        want += alive[k];
    if (t->nlive != want || t->ndead > t->keep_dead || t->n != t->nlive + t->ndead)
        return -1;
    for (size_t i = 0; i < t->nlive; i++) {
        t_peer_t *p = (t_peer_t *)t->live[i];
        if (!p->pe.alive || p->pe.live_ix != i || !alive[p->k])
            return -1;
    }
    for (const peertab_entry_t *e = t->dead_head; e; e = e->dead_next, dead++)
        if (e->alive || (e->dead_next && e->dead_next->dead_prev != e))
            return -1;
    size_t held = 0;
    for (size_t s = 0; s < t->nslots; s++) {
        const peertab_entry_t *e = t->ents[s];
        if (e && ((size_t)e->slot != s || peertab_find(t, e->rid, e->ridlen) != e))
            return -1;
        held += e != NULL;
    }
    return dead == t->ndead && held == t->n ? 0 : -1;
}

/* Churn of T_TMS peers (two-byte routing ids) joining, dying (lost or
 * left) and coming back, at random: the dead kept never exceed T_KEEP,
 * the live set is exactly the live peers, a dead peer still held is
 * found, an evicted lost one is known once, and the evicted counters
 * add up. */
static int peertab_t_churn(void)
{
    t_totals_t tot = {0, 0};
    peertab_t *t = peertab_new(sizeof(t_peer_t), T_KEEP, 1u << 18, peertab_t_evict, NULL, &tot);
    unsigned char alive[T_TMS] = {0}, lost[T_TMS] = {0}, seen[T_TMS] = {0};
    uint64_t sent = 0, back = 0;
    unsigned seed = 12345;
    int rc = t ? 0 : -1;

    for (int step = 0; step < 20000 && rc == 0; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % T_TMS);
        unsigned char rid[2] = {(unsigned char)(k & 0xff), (unsigned char)(k >> 8)};
        t_peer_t *p = peertab_find(t, rid, 2);
        if (alive[k]) {
            lost[k] = (seed >> 20) & 1;
            p->lost = lost[k];
            p->sent++;
            sent++;
            peertab_set_alive(t, p, 0);
            alive[k] = 0;
        } else {
            /* An evicted peer is known as lost exactly when it was. */
            int was_lost = !p && peertab_take_lost(t, rid, 2);
            if (was_lost != (!p && seen[k] && lost[k]))
                rc = -1;
            if (was_lost && peertab_take_lost(t, rid, 2))
                rc = -1;   /* (once only) */
            if (!p && (!(p = peertab_add(t, rid, 2)) || p->sent || p->pe.alive)) {
                rc = -1;
                break;
            }
            back += was_lost;
            seen[k] = 1;
            lost[k] = 0;
            p->k = k;
            p->lost = 0;
            if (peertab_set_alive(t, p, 1) != 0 || peertab_set_alive(t, p, 1) != 0)
                rc = -1;
            alive[k] = 1;
        }
        if (rc == 0 && peertab_t_check(t, alive, T_TMS) != 0)
            rc = -1;
    }
    uint64_t held = 0;
    for (size_t s = 0; rc == 0 && s < peertab_slots(t); s++) {
        t_peer_t *p = peertab_at(t, s);
        held += p ? p->sent : 0;
    }
    if (rc == 0 && (held + tot.sent != sent || back == 0 || tot.evicted == 0 ||
                    peertab_slots(t) > T_TMS + T_KEEP || peertab_lost_forgotten(t) != 0 ||
                    peertab_at(t, peertab_slots(t)) != NULL))
        rc = -1;
    peertab_destroy(&t);
    return rc || t ? -1 : 0;
}

/* Many peers at once: the index grows (and stays at least twice the
 * entries), every one is found by its id and slot, slots are dense; bad
 * ids are refused; two tables hash the same id apart (their own keys). */
static int peertab_t_grow(void)
{
    peertab_t *t = peertab_new(sizeof(t_peer_t), 1, 0, NULL, NULL, NULL);
    peertab_t *u = peertab_new(0, 1, 0, NULL, NULL, NULL);
    unsigned char big[PEERTAB_RID_MAX + 1] = {0};
    int rc = t && u ? 0 : -1, differ = 0;

    for (uint32_t k = 0; rc == 0 && k < T_GROW; k++) {
        unsigned char rid[4];
        memcpy(rid, &k, sizeof rid);
        t_peer_t *p = peertab_add(t, rid, sizeof rid);
        if (!p || p->pe.slot != (int)k || p->pe.alive)
            rc = -1;
        else
            p->k = (int)k;
    }
    for (uint32_t k = 0; rc == 0 && k < T_GROW; k++) {
        unsigned char rid[4];
        memcpy(rid, &k, sizeof rid);
        t_peer_t *p = peertab_find(t, rid, sizeof rid);
        peertab_entry_t *q = k < 64 ? peertab_add(u, rid, sizeof rid) : NULL;
        if (!p || p->k != (int)k || peertab_at(t, k) != p || (k < 64 && !q))
            rc = -1;
        differ += q && q->hash != p->pe.hash;
        rc = rc ? rc : peertab_find(t, rid, 3) != NULL ? -1 : 0;
    }
    if (rc == 0 && (peertab_count(t) != T_GROW || peertab_slots(t) != T_GROW ||
                    t->ix.cap < 2 * (size_t)T_GROW || peertab_live_count(t) != 0 ||
                    differ != 64 || peertab_add(t, big, sizeof big) ||
                    peertab_add(t, big, 0) || peertab_find(t, big, sizeof big) ||
                    peertab_take_lost(t, big, sizeof big)))
        rc = -1;
    /* The hash is SipHash under the index's key (the top bit set). */
    if (rc == 0) {
        peertab_entry_t *e = peertab_at(t, 7);
        unsigned char h[crypto_shorthash_BYTES];
        uint64_t v;
        crypto_shorthash(h, e->rid, e->ridlen, t->ix.key);
        memcpy(&v, h, sizeof v);
        rc = (v | 1ULL << 63) == e->hash ? 0 : -1;
    }
    peertab_destroy(&t);
    peertab_destroy(&u);
    return rc;
}

/* Eviction order, slot reuse, and the lost set's bound: the oldest dead
 * goes first, its slot goes to the next entry, a new entry in a reused
 * slot is zeroed, and fingerprints past lost_max are counted forgotten. */
static int peertab_t_evict_order(void)
{
    t_totals_t tot = {0, 0};
    peertab_t_freed = 0;
    peertab_t *t = peertab_new(sizeof(t_peer_t), 3, 2, peertab_t_evict, peertab_t_free, &tot);
    t_peer_t *p[6];
    int rc = t ? 0 : -1;

    for (int k = 0; rc == 0 && k < 6; k++) {
        unsigned char rid = (unsigned char)('a' + k);
        if (!(p[k] = peertab_add(t, &rid, 1)) || peertab_set_alive(t, p[k], 1) != 0)
            rc = -1;
        else
            p[k]->lost = 1, p[k]->sent = 10;
    }
    if (rc != 0) {
        peertab_destroy(&t);
        return -1;
    }
    /* (keep 3) a, b die; a comes back (off the dead list); c, d die:
     * none evicted; then a, e and f die: b, c and d go, oldest first. */
    peertab_set_alive(t, p[0], 0);
    peertab_set_alive(t, p[1], 0);
    if (tot.evicted != 0 || peertab_count(t) != 6)
        rc = -1;
    peertab_set_alive(t, p[0], 1);
    peertab_set_alive(t, p[2], 0);
    peertab_set_alive(t, p[3], 0);
    if (tot.evicted != 0 || peertab_live_count(t) != 3)
        rc = -1;
    p[0]->lost = 0;
    peertab_set_alive(t, p[0], 0);   /* the dead: b c d a: b goes */
    if (rc == 0 && (tot.evicted != 1 || peertab_find(t, "b", 1) || !peertab_find(t, "c", 1) ||
                    peertab_at(t, 1) != NULL))
        rc = -1;
    peertab_set_alive(t, p[4], 0);   /* c goes */
    peertab_set_alive(t, p[5], 0);   /* d goes: a third lost one, past lost_max */
    peertab_set_alive(t, p[5], 0);   /* (no-op) */
    if (rc == 0 && (tot.evicted != 3 || tot.sent != 30 || peertab_lost_forgotten(t) != 1 ||
                    peertab_count(t) != 3 || peertab_live_count(t) != 0 ||
                    peertab_t_freed != 3))
        rc = -1;
    /* b and c are known, d was forgotten; a is held, e and f too. */
    if (rc == 0 && (!peertab_take_lost(t, "b", 1) || !peertab_take_lost(t, "c", 1) ||
                    peertab_take_lost(t, "d", 1) || peertab_take_lost(t, "b", 1)))
        rc = -1;
    /* The next entries take the evicted slots (last freed first), zeroed. */
    t_peer_t *n1 = rc == 0 ? peertab_add(t, "x", 1) : NULL;
    t_peer_t *n2 = n1 ? peertab_add(t, "y", 1) : NULL;
    t_peer_t *n3 = n2 ? peertab_add(t, "z", 1) : NULL;
    t_peer_t *n4 = n3 ? peertab_add(t, "w", 1) : NULL;
    if (rc == 0 && (!n4 || n1->pe.slot != 3 || n2->pe.slot != 2 || n3->pe.slot != 1 ||
                    n4->pe.slot != 6 || n1->sent || n1->lost || n1->pe.alive ||
                    peertab_slots(t) != 7 || peertab_at(t, 3) != n1))
        rc = -1;
    peertab_destroy(&t);   /* (the 7 left are freed too, not evicted) */
    return rc == 0 && peertab_t_freed == 10 && tot.evicted == 3 ? 0 : -1;
}

int peertab_selftest(void)
{
    int rc = 0;
    if (peertab_t_churn() != 0) {
        fprintf(stderr, "peertab selftest: churn failed\n");
        rc = -1;
    }
    if (peertab_t_grow() != 0) {
        fprintf(stderr, "peertab selftest: growth failed\n");
        rc = -1;
    }
    if (peertab_t_evict_order() != 0) {
        fprintf(stderr, "peertab selftest: eviction order failed\n");
        rc = -1;
    }
    return rc;
}
#endif
