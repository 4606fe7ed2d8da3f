/*
 * peertab.h - the table of the TMs below a hop, by routing id.
 *
 * Part of serving/: the JM's dispatcher (jobmanager/tmtable.c makes its
 * table of jm_tm_t; dispatch.c, members.c, serve.c, status.c and
 * dispview.c use it) and a relay (taskmanager/relay_peers.c makes its
 * table of rl_tm_t; relay.c and copies.c use it) keep the peers on
 * their ROUTER socket here.
 *
 * Each entry is the caller's own struct, of a size given at peertab_new,
 * whose FIRST member is a peertab_entry_t (the table's part of it).
 * Entries are allocated one by one, so a pointer to one stays good until
 * it is evicted. Its size follows the TMs alive, not the TMs ever seen:
 *   - the live entries are a dense set (live_count, live_at), for loops;
 *   - a dead entry (its TM lost or left) is kept, so a return is known
 *     as a re-attach, until keep_dead newer entries died: then the oldest
 *     dead one is evicted: on_evict is called, its slot number is reused
 *     by a later entry, and, if on_evict says so, an 8-byte fingerprint
 *     of its routing id is kept (up to lost_max of them) so that its
 *     return is still known (peertab_take_lost).
 * Routing ids are hashed with SipHash (libsodium's crypto_shorthash) under
 * a key drawn at peertab_new, so no TM can choose ids that collide and
 * flood one bucket. sodium_init must have run.
 *
 * One thread's: the JM's dispatcher, or spits-tm's main thread.
 */
#ifndef SPITS_PEERTAB_H
#define SPITS_PEERTAB_H

#include <stddef.h>
#include <stdint.h>

#define PEERTAB_RID_MAX 64   /* longer routing ids are refused */

typedef struct peertab_entry peertab_entry_t;
/* The table's part of an entry: callers read it, never write it (but in
 * an entry of their own outside any table, as a test's). */
struct peertab_entry {
    unsigned char rid[PEERTAB_RID_MAX];
    size_t ridlen;
    uint64_t hash;           /* keyed hash of rid */
    int slot;                /* below peertab_slots; reused once evicted */
    int alive;               /* set by peertab_set_alive only */
    size_t live_ix;          /* index in the live set, while alive */
    peertab_entry_t *dead_prev, *dead_next;   /* the dead, oldest first */
};

typedef struct peertab peertab_t;

/* Called as e is evicted, before it is freed (what it owns is the
 * caller's to free); 1: keep its fingerprint, to be found by
 * peertab_take_lost, 0: forget it. */
typedef int (*peertab_evict_fn)(peertab_entry_t *e, void *arg);

/* Called as e goes, evicted (after on_evict) or with the table: frees
 * what e owns. */
typedef void (*peertab_free_fn)(peertab_entry_t *e);

/* A table of entries of entry_size bytes (at least a peertab_entry_t);
 * keep_dead >= 1 (0 is taken as 1); on_evict and on_free may be NULL
 * (nothing kept, nothing owned). NULL when out of memory. */
peertab_t *peertab_new(size_t entry_size, size_t keep_dead, size_t lost_max,
                       peertab_evict_fn on_evict, peertab_free_fn on_free, void *arg);
/* Frees the table and its entries (on_free, not on_evict, for each). */
void peertab_destroy(peertab_t **tab);
/* The entry of rid, alive or dead, or NULL. */
void *peertab_find(const peertab_t *tab, const void *rid, size_t len);
/* Adds rid (not present), zeroed but for its header, dead until set
 * alive. NULL: no memory, or rid empty or too long. */
void *peertab_add(peertab_t *tab, const void *rid, size_t len);
/* Moves entry into the live set or out of it (then into the dead, which
 * may evict the oldest dead entry: pointers to it become invalid). -1
 * only when out of memory growing the live set (it stays dead). */
int peertab_set_alive(peertab_t *tab, void *entry, int alive);
/* The live entries, in no set order: i < peertab_live_count. Setting one
 * dead moves the last to its index, so a loop that may do so walks from
 * the end. */
size_t peertab_live_count(const peertab_t *tab);
void *peertab_live_at(const peertab_t *tab, size_t i);
/* Entries held (live and dead), and one by slot (NULL: a free slot or
 * out of range); slots are below peertab_slots. */
size_t peertab_count(const peertab_t *tab);
size_t peertab_slots(const peertab_t *tab);
void *peertab_at(const peertab_t *tab, size_t slot);
/* 1 if rid is an evicted entry whose fingerprint was kept: it is
 * forgotten now (a second call says 0). */
int peertab_take_lost(peertab_t *tab, const void *rid, size_t len);
/* Evicted entries whose fingerprint was to be kept but was not: past
 * lost_max, or out of memory (their return then looks new). */
uint64_t peertab_lost_forgotten(const peertab_t *tab);

#ifdef SPITS_SELFTEST
int peertab_selftest(void);
#endif

#endif
