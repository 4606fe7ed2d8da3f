/*
 * copymap.h - a relay's map from its upstream's task ids to the copy of
 * each it holds, and to the copies behind it told to cancel whose
 * records are still to come ("tombs"): those records are dropped, not
 * passed up as foreign work (copies.c).
 *
 * An id's entry is (tombs, task): task is the caller's pointer (NULL:
 * none held), tombs how many records of cancelled copies of the id are
 * still to come. Both live in one entry because upstream may send a task
 * again while cancelled copies of it still run; a count outlives its
 * task, until its records come or the map goes (the caller makes a new
 * one per phase: the ids are the phase's).
 *
 * Built on spits_idmap_t (libspits/idmap.h). In the usual case an entry
 * is (0, task): holding, finding and releasing a task are one probe each,
 * inline, on the relay's per-task path; entries with tombs take
 * copymap.c's paths. One thread: the caller's.
 */
#ifndef SPITS_SERVING_COPYMAP_H
#define SPITS_SERVING_COPYMAP_H

#include <assert.h>
#include <stdint.h>

#include "idmap.h"

/* Holds task for id (its tombs stay): 0; 1 when a task is held for id
 * already (*held: it; nothing changed); -1 when out of memory. */
static inline int copymap_hold(spits_idmap_t *m, uint64_t id, void *task, void **held);
/* The task held for id, or NULL. */
static inline void *copymap_task(const spits_idmap_t *m, uint64_t id);
/* task is held for id no longer (another task held in its place stays,
 * and so do id's tombs). */
static inline void copymap_release(spits_idmap_t *m, uint64_t id, void *task);
/* A copy of id behind us was told to cancel: its record is to come. 0,
 * or -1 when out of memory (the record may then pass up as foreign). */
int copymap_tomb(spits_idmap_t *m, uint64_t id);
/* A record of id that no task held here takes: 1 when a cancelled copy's
 * record is still to come (one is counted off: drop it), else 0. */
int copymap_swallow(spits_idmap_t *m, uint64_t id);

/* (copymap.c's paths: an id mapped already, and one with tombs) */
int copymap_hold_mapped(spits_idmap_t *m, uint64_t id, void *task, void **held);
void copymap_release_tombs(spits_idmap_t *m, uint64_t id, void *task);

#ifdef SPITS_SELFTEST
int copymap_selftest(void);
#endif

static inline int copymap_hold(spits_idmap_t *m, uint64_t id, void *task, void **held)
{
    int rc = spits_idmap_add(m, id, 0, task);
    return rc == 1 ? copymap_hold_mapped(m, id, task, held) : rc;
}

static inline void *copymap_task(const spits_idmap_t *m, uint64_t id)
{
    void *task;
    return spits_idmap_get(m, id, NULL, &task) ? task : NULL;
}

static inline void copymap_release(spits_idmap_t *m, uint64_t id, void *task)
{
    void *held;
    /* (one probe: an entry with no tombs has owner 0) */
    if (!spits_idmap_take(m, id, 0, &held)) {
        copymap_release_tombs(m, id, task);
        return;
    }
    assert(held);   /* (an entry is never (0, NULL): copymap_swallow) */
    if (held != task)
        spits_idmap_put(m, id, 0, held);   /* (another task's: it stays) */
}

#endif
