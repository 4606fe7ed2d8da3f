/*
 * hashtab.h - the open-addressing hash table under libspits' maps.
 *
 * One table of fixed-size slots with linear probing and backward-shift
 * deletion (no tombstones, so lookups stay short under churn), that the
 * maps keyed by an id or a routing id instantiate: idmap.c (a relay's
 * copies by upstream task id), jobmanager/adopt.c (results by task id)
 * and serving/peertab.c (peers by routing id, and the fingerprints of
 * evicted ones). The table is embedded in its user's struct
 * (spits_hashtab_init / spits_hashtab_free).
 *
 * A slot is the user's struct, whose FIRST member is a uint64_t holding
 * the hash of the key it stores (0: the slot is free); the rest (the key
 * and value) is the user's. Its size is a power of two (a struct is
 * padded to one), so a slot's place is a shift, never a division on the
 * hot path. The table moves slots whole (memcpy) and
 * finds them by hash alone: a user walks the slots of a hash with
 * spits_hashtab_probe and compares its own keys, so equal hashes of
 * different keys are handled. Hashes are kept, so growth and deletion
 * never hash a key again.
 *
 * Hashes come from the table's own function, chosen at init:
 *   SPITS_HASHTAB_SIPHASH  SipHash-2-4 (libsodium's crypto_shorthash)
 *       under a key drawn for this table: for keys a peer chooses (routing
 *       ids, task ids in a TM's results), so no peer can make ids that
 *       pile into one probe run;
 *   SPITS_HASHTAB_MIX      splitmix64's finaliser of a 64-bit id: for ids
 *       the runtime numbers itself, at a few instructions a lookup.
 * Either sets the top bit, so a hash is never 0.
 *
 * The table doubles when an insert would make it more than half full, so
 * a probe run stays short; it never shrinks. Nothing allocates but that
 * growth. One thread's: its user's.
 */
#ifndef SPITS_HASHTAB_H
#define SPITS_HASHTAB_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

enum { SPITS_HASHTAB_MIX, SPITS_HASHTAB_SIPHASH };

/* The most slots the table holds per entry once it has grown: it doubles
 * as it passes half full. (For users that bound their memory.) */
#define SPITS_HASHTAB_SLOTS_PER_ENTRY 4

#define SPITS_HASHTAB_KEYBYTES 16      /* crypto_shorthash_KEYBYTES */

typedef struct {
    unsigned char *slots;           /* cap slots of size bytes */
    size_t size;                    /* bytes a slot: 1 << shift, >= 8 */
    unsigned shift;
    size_t cap;                     /* a power of two */
    size_t n;                       /* slots in use */
    int fn;                         /* SPITS_HASHTAB_MIX or _SIPHASH */
    unsigned char key[SPITS_HASHTAB_KEYBYTES];
} spits_hashtab_t;

/* An empty table of slots of slot_size bytes (a struct whose first member
 * is its uint64_t hash; a power of two), hashing with fn. 0, or -1 when
 * out of memory, or slot_size is no power of two of 8 bytes or more, or
 * fn is neither of the two. */
int spits_hashtab_init(spits_hashtab_t *t, size_t slot_size, int fn);
/* Frees the slots (not what they point to) and forgets the key. */
void spits_hashtab_free(spits_hashtab_t *t);

/* The keyed hash of len bytes; the table's fn is SPITS_HASHTAB_SIPHASH. */
uint64_t spits_hashtab_hash(const spits_hashtab_t *t, const void *key, size_t len);

/* The hash of an id, by the table's fn. */
static inline uint64_t spits_hashtab_hash_id(const spits_hashtab_t *t, uint64_t id)
{
    if (t->fn == SPITS_HASHTAB_SIPHASH)
        return spits_hashtab_hash(t, &id, sizeof id);
    id += 0x9e3779b97f4a7c15ULL;
    id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ULL;
    id = (id ^ (id >> 27)) * 0x94d049bb133111ebULL;
    return (id ^ (id >> 31)) | (1ULL << 63);
}

/* Where the probe run of hash h starts: the first *i of
 * spits_hashtab_probe. */
static inline size_t spits_hashtab_home(const spits_hashtab_t *t, uint64_t h)
{
    return (size_t)h & (t->cap - 1);
}

/* Slot i (below cap), in use or free; its hash is where it points. */
static inline uint64_t *spits_hashtab_at(const spits_hashtab_t *t, size_t i)
{
    return (uint64_t *)(void *)(t->slots + (i << t->shift));
}

/* The next slot from *i on whose hash is h, or NULL at the end of the
 * run (a free slot); *i moves past it. The caller compares its key:
 *     size_t i = spits_hashtab_home(t, h);
 *     while ((s = spits_hashtab_probe(t, h, &i)) && s->id != id)
 *         ;                                                          */
static inline void *spits_hashtab_probe(const spits_hashtab_t *t, uint64_t h, size_t *i)
{
    size_t mask = t->cap - 1;
    for (;;) {
        uint64_t *s = spits_hashtab_at(t, *i);
        *i = (*i + 1) & mask;
        if (*s == h)
            return s;
        if (*s == 0)
            return NULL;
    }
}

/* Doubles the table (pointers to slots become invalid): 0, or -1 when
 * out of memory (the table is unchanged). spits_hashtab_insert calls it
 * as the table passes half full. */
int spits_hashtab_grow(spits_hashtab_t *t);

/* A free slot in the probe run of h (a hash of the table's fn, or one the
 * user keeps: never 0), its hash set; the caller fills the rest. The
 * table may grow first (pointers to slots become invalid). NULL when out
 * of memory (the table is unchanged). Inline, as the hot path inserts. */
static inline void *spits_hashtab_insert(spits_hashtab_t *t, uint64_t h)
{
    assert(h != 0);
    if (2 * (t->n + 1) > t->cap && spits_hashtab_grow(t) != 0)
        return NULL;
    size_t mask = t->cap - 1, i = h & mask;
    while (*spits_hashtab_at(t, i))
        i = (i + 1) & mask;
    uint64_t *s = spits_hashtab_at(t, i);
    *s = h;
    t->n++;
    return s;
}

/* Empties slot s (from probe or insert): the later slots of its run move
 * back, so pointers to them become invalid. */
void spits_hashtab_remove(spits_hashtab_t *t, void *s);
/* The first slot in use from *i on (start at 0), or NULL past the last;
 * *i moves past it. For walking every entry. */
void *spits_hashtab_next(const spits_hashtab_t *t, size_t *i);

static inline size_t spits_hashtab_count(const spits_hashtab_t *t)
{
    return t->n;
}

#ifdef SPITS_SELFTEST
int spits_hashtab_selftest(void);
#endif

#endif
