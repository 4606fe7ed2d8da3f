/*
 * tmtable.c - the registry of Task Managers (see tmtable.h).
 *
 * Entries live in an array indexed by slot; freed slots are reused, so
 * the array is as large as the most entries held at once. An
 * open-addressing hash table of slot numbers finds a TM from the routing
 * id on each message; another holds the fingerprints of evicted lost
 * TMs. Both use linear probing with backward-shift deletion, so no
 * tombstones build up under churn.
 */
#include <stdlib.h>
#include <string.h>

#include "tmtable.h"
#include "util.h"

struct jm_tmtab {
    jm_tm_t **tms;                   /* by slot; NULL: free */
    size_t nslots, cap, n;           /* slots used so far, room, entries */
    int *free_slots;                 /* evicted entries' slots */
    size_t nfree, fcap;
    int32_t *hash;                   /* slot, or -1 */
    size_t hcap;                     /* power of two, > 2 * n */
    jm_tm_t **live;                  /* the live set */
    size_t nlive, caplive;
    jm_tm_t *dead_head, *dead_tail;  /* oldest first */
    size_t ndead, keep_dead;
    uint64_t *lost;                  /* fingerprints (never 0), 0: empty */
    size_t nlost, lcap;
    jm_tm_totals_t evicted;
};

static uint64_t rid_hash(const unsigned char *rid, size_t len)
{
    uint64_t h = 1469598103934665603ULL;     /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ rid[i]) * 1099511628211ULL;
    return h;
}

/* The lost set's key: the hash with its top bit set, so never 0. */
static uint64_t rid_print(const void *rid, size_t len)
{
    return rid_hash(rid, len) | (1ULL << 63);
}

jm_tmtab_t *jm_tmtab_new(size_t keep_dead)
{
    jm_tmtab_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->keep_dead = keep_dead ? keep_dead : 1;
    t->hcap = 64;
    t->hash = malloc(t->hcap * sizeof *t->hash);
    if (!t->hash) {
        free(t);
        return NULL;
    }
    memset(t->hash, 0xff, t->hcap * sizeof *t->hash);
    return t;
}

/* An entry and what it owns. */
static void entry_free(jm_tm_t *tm)
{
    if (tm)
        json_decref(tm->id.behind);
    free(tm);
}

void jm_tmtab_destroy(jm_tmtab_t **tp)
{
    jm_tmtab_t *t = *tp;
    if (!t)
        return;
    for (size_t i = 0; i < t->nslots; i++)
        entry_free(t->tms[i]);
    free(t->tms);
    free(t->free_slots);
    free(t->hash);
    free(t->live);
    free(t->lost);
    free(t);
    *tp = NULL;
}

jm_tm_t *jm_tmtab_find(const jm_tmtab_t *t, const void *rid, size_t len)
{
    size_t mask = t->hcap - 1;
    for (size_t i = rid_hash(rid, len) & mask; t->hash[i] >= 0; i = (i + 1) & mask) {
        jm_tm_t *tm = t->tms[t->hash[i]];
        if (tm->id.ridlen == len && memcmp(tm->id.rid, rid, len) == 0)
            return tm;
    }
    return NULL;
}

static void hash_insert(int32_t *hash, size_t hcap, const jm_tm_t *tm)
{
    size_t mask = hcap - 1, i = rid_hash(tm->id.rid, tm->id.ridlen) & mask;
    while (hash[i] >= 0)
        i = (i + 1) & mask;
    hash[i] = tm->id.slot;
}

/* 1 if an entry whose home is h may move from j to the hole at i (that
 * is, h is not cyclically within (i, j]). */
static int may_fill(size_t i, size_t j, size_t h)
{
    return i <= j ? (h <= i || h > j) : (h <= i && h > j);
}

static void hash_remove(jm_tmtab_t *t, const jm_tm_t *tm)
{
    size_t mask = t->hcap - 1, i = rid_hash(tm->id.rid, tm->id.ridlen) & mask;
    while (t->hash[i] != tm->id.slot)
        i = (i + 1) & mask;
    for (size_t j = (i + 1) & mask; t->hash[j] >= 0; j = (j + 1) & mask) {
        const jm_tm_t *o = t->tms[t->hash[j]];
        if (may_fill(i, j, rid_hash(o->id.rid, o->id.ridlen) & mask)) {
            t->hash[i] = t->hash[j];
            i = j;
        }
    }
    t->hash[i] = -1;
}

static int hash_grow(jm_tmtab_t *t)
{
    size_t hcap = t->hcap * 2;
    int32_t *hash = malloc(hcap * sizeof *hash);
    if (!hash)
        return -1;
    memset(hash, 0xff, hcap * sizeof *hash);
    for (size_t i = 0; i < t->nslots; i++)
        if (t->tms[i])
            hash_insert(hash, hcap, t->tms[i]);
    free(t->hash);
    t->hash = hash;
    t->hcap = hcap;
    return 0;
}

/* A slot for a new entry: a freed one, else a new one. -1: no memory. */
static int slot_take(jm_tmtab_t *t)
{
    if (t->nfree)
        return t->free_slots[--t->nfree];
    /* The free list may come to hold every slot. */
    if (spits_grow((void **)&t->tms, &t->cap, t->nslots + 1, sizeof *t->tms, 16) ||
        spits_grow((void **)&t->free_slots, &t->fcap, t->nslots + 1,
                   sizeof *t->free_slots, 16))
        return -1;
    t->tms[t->nslots] = NULL;
    return (int)t->nslots++;
}

jm_tm_t *jm_tmtab_add(jm_tmtab_t *t, const void *rid, size_t len)
{
    if (len == 0 || len > JM_RID_MAX)
        return NULL;
    if (2 * (t->n + 1) >= t->hcap && hash_grow(t) != 0)
        return NULL;
    jm_tm_t *tm = calloc(1, sizeof *tm);
    int slot = tm ? slot_take(t) : -1;
    if (slot < 0) {
        free(tm);
        return NULL;
    }
    memcpy(tm->id.rid, rid, len);
    tm->id.ridlen = len;
    tm->id.slot = slot;
    tm->stats.running = tm->stats.queued = -1;
    t->tms[slot] = tm;
    t->n++;
    hash_insert(t->hash, t->hcap, tm);
    return tm;
}

/* --- the lost fingerprints ---------------------------------------------- */

static int lost_grow(jm_tmtab_t *t)
{
    size_t lcap = t->lcap ? t->lcap * 2 : 64, mask = lcap - 1;
    uint64_t *l = calloc(lcap, sizeof *l);
    if (!l)
        return -1;
    for (size_t k = 0; k < t->lcap; k++) {
        if (!t->lost[k])
            continue;
        size_t i = t->lost[k] & mask;
        while (l[i])
            i = (i + 1) & mask;
        l[i] = t->lost[k];
    }
    free(t->lost);
    t->lost = l;
    t->lcap = lcap;
    return 0;
}

/* Remembers an evicted lost TM; past the bound, or out of memory, it is
 * counted as forgotten (a return of it then counts as a join). */
static void lost_put(jm_tmtab_t *t, uint64_t fp)
{
    if (t->nlost >= JM_TMTAB_LOST_MAX ||
        (2 * (t->nlost + 1) >= t->lcap && lost_grow(t) != 0)) {
        t->evicted.lost_forgotten++;
        return;
    }
    size_t mask = t->lcap - 1, i = fp & mask;
    while (t->lost[i] && t->lost[i] != fp)
        i = (i + 1) & mask;
    t->nlost += !t->lost[i];
    t->lost[i] = fp;
}

int jm_tmtab_take_lost(jm_tmtab_t *t, const void *rid, size_t len)
{
    if (!t->nlost)
        return 0;
    uint64_t fp = rid_print(rid, len);
    size_t mask = t->lcap - 1, i = fp & mask;
    while (t->lost[i] != fp) {
        if (!t->lost[i])
            return 0;
        i = (i + 1) & mask;
    }
    for (size_t j = (i + 1) & mask; t->lost[j]; j = (j + 1) & mask)
        if (may_fill(i, j, t->lost[j] & mask)) {
            t->lost[i] = t->lost[j];
            i = j;
        }
    t->lost[i] = 0;
    t->nlost--;
    return 1;
}

/* --- live and dead ------------------------------------------------------ */

static void dead_unlink(jm_tmtab_t *t, jm_tm_t *tm)
{
    *(tm->dead_prev ? &tm->dead_prev->dead_next : &t->dead_head) = tm->dead_next;
    *(tm->dead_next ? &tm->dead_next->dead_prev : &t->dead_tail) = tm->dead_prev;
    tm->dead_prev = tm->dead_next = NULL;
    t->ndead--;
}

static void dead_append(jm_tmtab_t *t, jm_tm_t *tm)
{
    tm->dead_prev = t->dead_tail;
    tm->dead_next = NULL;
    *(t->dead_tail ? &t->dead_tail->dead_next : &t->dead_head) = tm;
    t->dead_tail = tm;
    t->ndead++;
}

/* The oldest dead entry goes: its counters into the totals, its routing
 * id into the lost set if it was lost, its slot back to the free list. */
static void evict_oldest(jm_tmtab_t *t)
{
    jm_tm_t *tm = t->dead_head;
    jm_tm_totals_t *e = &t->evicted;
    dead_unlink(t, tm);
    e->tms++;
    e->reattaches += tm->id.reattaches;
    e->sent += tm->stats.sent;
    e->done += tm->stats.done;
    e->failed += tm->stats.failed;
    e->runs += tm->stats.runs;
    e->busy_s += tm->stats.busy_s;
    if (tm->life.lost)
        lost_put(t, rid_print(tm->id.rid, tm->id.ridlen));
    hash_remove(t, tm);
    t->tms[tm->id.slot] = NULL;
    t->free_slots[t->nfree++] = tm->id.slot;
    t->n--;
    entry_free(tm);
}

static int live_add(jm_tmtab_t *t, jm_tm_t *tm)
{
    if (spits_grow((void **)&t->live, &t->caplive, t->nlive + 1, sizeof *t->live, 16))
        return -1;
    tm->live_ix = t->nlive;
    t->live[t->nlive++] = tm;
    return 0;
}

static void live_remove(jm_tmtab_t *t, jm_tm_t *tm)
{
    jm_tm_t *last = t->live[--t->nlive];
    t->live[tm->live_ix] = last;
    last->live_ix = tm->live_ix;
}

int jm_tmtab_set_alive(jm_tmtab_t *t, jm_tm_t *tm, int alive)
{
    alive = !!alive;
    if (tm->life.alive == alive)
        return 0;
    if (alive) {
        if (live_add(t, tm) != 0)
            return -1;
        if (tm->dead_prev || t->dead_head == tm)
            dead_unlink(t, tm);
        tm->life.alive = 1;
        return 0;
    }
    live_remove(t, tm);
    tm->life.alive = 0;
    dead_append(t, tm);
    while (t->ndead > t->keep_dead)
        evict_oldest(t);
    return 0;
}

size_t jm_tmtab_live_count(const jm_tmtab_t *t) { return t->nlive; }
jm_tm_t *jm_tmtab_live_at(const jm_tmtab_t *t, size_t i) { return t->live[i]; }
size_t jm_tmtab_count(const jm_tmtab_t *t) { return t->n; }
size_t jm_tmtab_slots(const jm_tmtab_t *t) { return t->nslots; }
const jm_tm_totals_t *jm_tmtab_evicted(const jm_tmtab_t *t) { return &t->evicted; }

jm_tm_t *jm_tmtab_at(const jm_tmtab_t *t, size_t slot)
{
    return slot < t->nslots ? t->tms[slot] : NULL;
}

/* --- self-test --------------------------------------------------------- */
int jm_tm_cmp_done_desc(const void *a, const void *b)
{
    const jm_tm_t *x = *(jm_tm_t *const *)a, *y = *(jm_tm_t *const *)b;
    uint64_t xd = x->stats.done, yd = y->stats.done;
    return xd < yd ? 1 : xd > yd ? -1 : x->id.slot - y->id.slot;
}

int jm_tm_cmp_joined(const void *a, const void *b)
{
    const jm_tm_t *x = *(jm_tm_t *const *)a, *y = *(jm_tm_t *const *)b;
    double xj = x->id.joined, yj = y->id.joined;
    return xj < yj ? -1 : xj > yj ? 1 : x->id.slot - y->id.slot;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define T_KEEP 7
#define T_TMS 500

/* Every live TM is in the live set exactly once, and nothing else is. */
static int check_live(const jm_tmtab_t *t, const unsigned char *alive)
{
    size_t want = 0;
    for (int k = 0; k < T_TMS; k++)
        want += alive[k];
    if (t->nlive != want)
        return -1;
    for (size_t i = 0; i < t->nlive; i++) {
        jm_tm_t *tm = t->live[i];
        if (!tm->life.alive || tm->live_ix != i || !alive[tm->id.rid[0] | tm->id.rid[1] << 8])
            return -1;
    }
    return 0;
}

/* Churn of T_TMS TMs (two-byte routing ids) joining, dying (lost or
 * left) and coming back, at random: the dead kept never exceed T_KEEP,
 * the live set is exactly the live TMs, a dead TM still held is found,
 * an evicted lost one is recognised once, and the evicted totals add up. */
int jm_tmtab_selftest(void)
{
    jm_tmtab_t *t = jm_tmtab_new(T_KEEP);
    unsigned char alive[T_TMS] = {0}, lost[T_TMS] = {0}, seen[T_TMS] = {0};
    uint64_t sent = 0, back = 0;
    unsigned seed = 12345;
    int rc = t ? 0 : -1;
    /* Every TM that dies holds a reference to this as its relay's list:
     * the table frees it with the entry (evicted or destroyed). */
    json_t *behind = json_object();

    for (int step = 0; step < 20000 && rc == 0; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % T_TMS);
        unsigned char rid[2] = {(unsigned char)(k & 0xff), (unsigned char)(k >> 8)};
        jm_tm_t *tm = jm_tmtab_find(t, rid, 2);
        if (alive[k]) {
            lost[k] = (seed >> 20) & 1;
            tm->life.lost = lost[k];
            tm->stats.sent++;
            sent++;
            if (!tm->id.behind)
                tm->id.behind = json_incref(behind);
            jm_tmtab_set_alive(t, tm, 0);
            alive[k] = 0;
        } else {
            /* An evicted TM is recognised as lost exactly when it was. */
            int was_lost = !tm && jm_tmtab_take_lost(t, rid, 2);
            if (was_lost != (!tm && seen[k] && lost[k]))
                rc = -1;
            if (!tm && !(tm = jm_tmtab_add(t, rid, 2))) {
                rc = -1;
                break;
            }
            back += was_lost;
            seen[k] = 1;
            lost[k] = 0;
            tm->life.lost = 0;
            jm_tmtab_set_alive(t, tm, 1);
            alive[k] = 1;
        }
        if (rc == 0 && (t->ndead > T_KEEP || t->n != t->nlive + t->ndead ||
                        check_live(t, alive) != 0))
            rc = -1;
    }
    uint64_t held = 0;
    size_t holding = 0;
    for (size_t s = 0; rc == 0 && s < t->nslots; s++) {
        held += t->tms[s] ? t->tms[s]->stats.sent : 0;
        holding += t->tms[s] && t->tms[s]->id.behind;
    }
    if (rc == 0 && (held + t->evicted.sent != sent || back == 0 ||
                    t->evicted.tms == 0 || t->nslots > T_TMS + T_KEEP ||
                    !behind || behind->refcount != 1 + holding))
        rc = -1;
    jm_tmtab_destroy(&t);
    if (rc == 0 && behind->refcount != 1)
        rc = -1;
    json_decref(behind);
    if (rc)
        fprintf(stderr, "tmtable selftest failed\n");
    return rc;
}
#endif
