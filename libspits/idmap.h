/*
 * idmap.h - a map from task ids to an owner and a pointer.
 *
 * A relay (spits-tm --serve) keeps its copies by upstream task id in one
 * (serving/copymap.h: the owner counts copies told to cancel, the
 * pointer is the copy held, or NULL). Per id, an owner (a small integer
 * >= 0) and a pointer the caller owns.
 *
 * A window of recent ids, an array indexed by id, and a spits_hashtab_t
 * (hashtab.h) for the older ones (idmap.c). Ids are hashed with the
 * table's mix, not SipHash: they are the JM's task ids, which it numbers
 * itself in order, and only upstream (the hop whose tasks the relay runs)
 * adds them; an id a TM sends back is only looked up. Nothing allocates
 * per put except growth. One thread: the caller's.
 */
#ifndef SPITS_IDMAP_H
#define SPITS_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"

typedef struct spits_idmap spits_idmap_t;

/* (here only for the inline lookups in the window, below: every other
 * access is idmap.c's) */
typedef struct {
    void *val;
    int owner;
    int used;                   /* (the window's; 1 in the table) */
} spits_idmap_ent_t;

struct spits_idmap {
    spits_hashtab_t t;          /* the ids below base */
    spits_idmap_ent_t *win;     /* the ids base..base+cap-1, at id & (cap - 1) */
    uint64_t base;
    size_t cap;                 /* a power of two, or 0 (none yet) */
    size_t nwin;                /* window entries in use */
};

/* An empty map; NULL when out of memory. */
spits_idmap_t *spits_idmap_new(void);
void spits_idmap_destroy(spits_idmap_t **m);
/* Maps id to (owner >= 0, val), replacing what id had. 0, or -1 when out
 * of memory (the map is then unchanged). */
int spits_idmap_put(spits_idmap_t *m, uint64_t id, int owner, void *val);
/* Maps id to (owner, val) unless it is mapped already: 0 when it was
 * added, 1 when it was there (unchanged), -1 when out of memory. One
 * lookup of id for what a get and a put would take two. */
static inline int spits_idmap_add(spits_idmap_t *m, uint64_t id, int owner, void *val);
/* Removes id if owner holds it: 1 with *val (may be NULL), else 0 (not
 * mapped, or mapped to another owner, which keeps it). One lookup. */
static inline int spits_idmap_take(spits_idmap_t *m, uint64_t id, int owner, void **val);
/* 1 with *owner and *val (either may be NULL) if id is mapped, else 0. */
static inline int spits_idmap_get(const spits_idmap_t *m, uint64_t id, int *owner, void **val);
/* Removes id; 1 if it was mapped, else 0. */
int spits_idmap_del(spits_idmap_t *m, uint64_t id);
static inline size_t spits_idmap_count(const spits_idmap_t *m);
#ifdef SPITS_SELFTEST
int spits_idmap_selftest(void);
#endif

/* The same, for an id outside the window (idmap.c). */
int spits_idmap_add_far(spits_idmap_t *m, uint64_t id, int owner, void *val);
int spits_idmap_take_far(spits_idmap_t *m, uint64_t id, int owner, void **val);
int spits_idmap_get_far(const spits_idmap_t *m, uint64_t id, int *owner, void **val);

/* id's place in the window, or NULL when it is outside (the window may
 * reach past UINT64_MAX: id - base alone would wrap round into it). */
static inline spits_idmap_ent_t *spits_idmap_win(const spits_idmap_t *m, uint64_t id)
{
    return id >= m->base && id - m->base < m->cap ? &m->win[id & (m->cap - 1)] : NULL;
}

static inline int spits_idmap_add(spits_idmap_t *m, uint64_t id, int owner, void *val)
{
    spits_idmap_ent_t *e = spits_idmap_win(m, id);
    if (!e || owner < 0)
        return spits_idmap_add_far(m, id, owner, val);
    if (e->used)
        return 1;
    *e = (spits_idmap_ent_t){val, owner, 1};
    m->nwin++;
    return 0;
}

static inline int spits_idmap_take(spits_idmap_t *m, uint64_t id, int owner, void **val)
{
    spits_idmap_ent_t *e = spits_idmap_win(m, id);
    if (!e)
        return spits_idmap_take_far(m, id, owner, val);
    if (!e->used || e->owner != owner)
        return 0;
    if (val)
        *val = e->val;
    *e = (spits_idmap_ent_t){0};
    m->nwin--;
    return 1;
}

static inline int spits_idmap_get(const spits_idmap_t *m, uint64_t id, int *owner, void **val)
{
    const spits_idmap_ent_t *e = spits_idmap_win(m, id);
    if (!e)
        return spits_idmap_get_far(m, id, owner, val);
    if (!e->used)
        return 0;
    if (owner)
        *owner = e->owner;
    if (val)
        *val = e->val;
    return 1;
}

static inline size_t spits_idmap_count(const spits_idmap_t *m)
{
    return spits_hashtab_count(&m->t) + m->nwin;
}

#endif
