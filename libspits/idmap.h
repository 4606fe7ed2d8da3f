/*
 * idmap.h - a hash map from task ids to an owner and a pointer.
 *
 * A relay (spits-tm --serve) keeps its copies by upstream task id in one
 * (taskmanager/relay_copies.c: owner 0 and the copy, or a count of
 * copies told to cancel and no pointer), and the copies upstream sent
 * again in another (owner: how many; the pointer: their phase). Per id,
 * an owner (a small integer >= 0) and a pointer the caller owns.
 *
 * A spits_hashtab_t (hashtab.h) of (id, owner, pointer) slots. Ids are
 * hashed with its mix, not SipHash: they are the JM's task ids, which it
 * numbers itself in order, and only upstream (the hop whose tasks the
 * relay runs) adds them; an id a TM sends back is only looked up.
 * Nothing allocates per put except the table's growth. One thread: the
 * caller's.
 */
#ifndef SPITS_IDMAP_H
#define SPITS_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct spits_idmap spits_idmap_t;

/* An empty map; NULL when out of memory. */
spits_idmap_t *spits_idmap_new(void);
void spits_idmap_destroy(spits_idmap_t **m);
/* Maps id to (owner >= 0, val), replacing what id had. 0, or -1 when out
 * of memory (the map is then unchanged). */
int spits_idmap_put(spits_idmap_t *m, uint64_t id, int owner, void *val);
/* Maps id to (owner, val) unless it is mapped already: 0 when it was
 * added, 1 when it was there (unchanged), -1 when out of memory. One
 * hash of id for what a get and a put would take two. */
int spits_idmap_add(spits_idmap_t *m, uint64_t id, int owner, void *val);
/* Removes id if owner holds it: 1 with *val (may be NULL), else 0 (not
 * mapped, or mapped to another owner, which keeps it). One lookup. */
int spits_idmap_take(spits_idmap_t *m, uint64_t id, int owner, void **val);
/* 1 with *owner and *val (either may be NULL) if id is mapped, else 0. */
int spits_idmap_get(const spits_idmap_t *m, uint64_t id, int *owner, void **val);
/* Removes id; 1 if it was mapped, else 0. */
int spits_idmap_del(spits_idmap_t *m, uint64_t id);
size_t spits_idmap_count(const spits_idmap_t *m);
#ifdef SPITS_SELFTEST
int spits_idmap_selftest(void);
#endif

#endif
