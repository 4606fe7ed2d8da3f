/*
 * credit.h - how many tasks a TM below this hop may be sent: its credit,
 * the rules written once.
 *
 * Part of serving/: the JM (jm_tm_t; members.c at a HELLO or STATS,
 * scheduler.c as copies go and records come back, serve.c to decide and
 * to grow) and a relay (rl_tm_t; relay_peers.c, copies.c)
 * each embed a credit_t in their entry of
 * a TM, so a TM's room is the same arithmetic on every hop:
 * - a HELLO sets its workers and its slots (workers + prefetch: what it
 *   asks), and the results it says it holds from before (a re-attach)
 *   count as held, up to its slots: each frees a slot as its record comes;
 * - copies sent spend credit, records back return it, never below zero
 *   (a record of a copy this hop did not count: held from before, or its
 *   loss already forgotten); a TM gone holds nothing;
 * - its room is slots - held; to fill idle workers before queues, the
 *   room up to its workers first (credit_room_workers);
 * - a relay's STATS moves its workers and its ask as the TMs behind it
 *   come and go: slots follow the ask up at once, and down by as much as
 *   it fell, so prefetch grown on top of the ask is kept; never below it;
 * - growth (credit_grow, the JM's adaptive prefetch; a relay's TMs keep
 *   what they asked): a TM that ran dry may hold twice as much, and a far
 *   one enough copies in flight to keep every worker busy across the
 *   round trip.
 * Plain arithmetic: no sockets, no clock. Not thread-safe: the hop's
 * serving thread owns each credit_t.
 */
#ifndef SPITS_SERVING_CREDIT_H
#define SPITS_SERVING_CREDIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int workers;             /* its workers (a relay: those behind it now) */
    int slots;               /* tasks it may hold: its ask, grown (credit_grow) */
    int asked;               /* what its HELLO (a relay: its last STATS) asked */
    int outstanding;         /* copies sent to it, not yet answered */
} credit_t;

/* A HELLO: workers and slots as it asks (0..what the wire allows). */
static inline void credit_set(credit_t *c, long workers, long slots)
{
    c->workers = (int)workers;
    c->slots = c->asked = (int)slots;
}

/* ...and the results it holds from before (>= 0), up to its slots. */
static inline void credit_hold(credit_t *c, long held)
{
    c->outstanding = (int)(held < c->slots ? held : c->slots);
}

/* n copies sent to it. */
static inline void credit_spend(credit_t *c, size_t n)
{
    c->outstanding += (int)n;
}

/* n records back from it. */
static inline void credit_back(credit_t *c, uint64_t n)
{
    c->outstanding -= (int)(n < (uint64_t)c->outstanding ? n : (uint64_t)c->outstanding);
}

/* It is gone: what it held is no longer counted against it. */
static inline void credit_gone(credit_t *c)
{
    c->outstanding = 0;
}

/* How many copies it may be sent now (>= 0). */
static inline int credit_room(const credit_t *c)
{
    return c->outstanding < c->slots ? c->slots - c->outstanding : 0;
}

/* ...of them, those its idle workers would start at once: up to its
 * workers (all its room when it says none, or no prefetch). */
static inline int credit_room_workers(const credit_t *c)
{
    int cap = c->workers > 0 && c->workers < c->slots ? c->workers : c->slots;
    return c->outstanding < cap ? cap - c->outstanding : 0;
}

/* Copy i of a batch now being sent to it (i from 0) finds a worker idle
 * (the scheduler's "quick" copies: their lateness is judged). */
static inline int credit_quick(const credit_t *c, size_t i)
{
    return c->outstanding + (long)i < c->workers;
}

/* A STATS (server_on_stats): its workers and its ask now (each -1: not
 * said). */
void credit_resize(credit_t *c, long workers, long slots);

/* Adaptive prefetch, while there is work to give; cap: the most slots a
 * TM may have on this hop. Two ways: a TM that hands back all it held
 * ran dry before new tasks reached it (short tasks against the round
 * trip): it may hold twice as many, within the cap. And a TM far away
 * needs a copy in flight for each task time of the round trip to keep
 * each worker busy: workers * turn_ms / task_ms slots (turn_ms: round
 * trip + one run, measured by the caller; task_ms: busy_s / runs from its
 * STATS), a quarter more for jitter. Long tasks never empty a TM holding
 * more than its workers, and their run dwarfs the round trip, so they
 * never grow it. Slots never shrink here. Returns 1 if they grew. */
int credit_grow(credit_t *c, int cap, int64_t turn_ms, uint64_t runs, double busy_s);

#ifdef SPITS_SELFTEST
int credit_selftest(void);
#endif

#endif
