/*
 * schedlate.h - the scheduler's third pick step (schedlate.c): copies of
 * late tasks. Only the scheduler's own files include it.
 */
#ifndef SPITS_SERVING_SCHEDLATE_H
#define SPITS_SERVING_SCHEDLATE_H

#include <stddef.h>

#include "scheduler.h"

/* Adds to the n copies picked for TM t (up to room, and *bytes up to
 * max_bytes: one task always fits) copies of late tasks, oldest first,
 * when no fresh task is left and max_copies allows; returns the new n.
 * A fruitless scan notes in t when to look again. */
size_t schedlate_pick(sched_t *s, sched_peer_t *t, size_t n, size_t room, size_t *bytes,
                      size_t max_bytes);

#endif
