/*
 * copies.h - a relay's source and sink (taskmanager/relay.c): the task
 * copies its upstream sent, held by the scheduler every hop shares
 * (scheduler.h), sent down by its server (server.h) and each answered
 * upstream as exactly one record.
 *
 * In: a copy from upstream's TASKS (copies_take) becomes a scheduler task
 * numbered in arrival order, its upstream id as the task's hash, its
 * bytes left in the message they came in (spits_rx_t: one reference
 * each). The server sends it down as a borrowed task
 * (server_cfg_t.borrowed, with copies_source), a large one as a part
 * that holds a reference of its own; again when the TM holding it is
 * lost or hands it back; and a second copy once upstream seems out of
 * work (lateness.h: late_starve).
 *
 * Out: each copy goes back as exactly one record, the JM's rule: its
 * first result or failed run, or RETURNED when it is released unanswered
 * (upstream's CANCEL, given back, a new phase). Records go up as one
 * RESULTS batch per phase (copies_hop_t.up); a result that came as a
 * part goes up as that frame, shared.
 *
 * A record of no copy held here is work a TM did for another hop: it
 * goes up flagged SPITS_REC_FOREIGN, which gives upstream no credit back.
 * A copy upstream sends again while one is held is counted on it and
 * answered RETURNED with it. The copies behind told to cancel still send
 * a record each: the map counts them (copymap.h) and drops that many
 * records of the id rather than pass them up as foreign.
 *
 * The scheduler releases tasks inside its calls; they wait in a list
 * until they are answered and freed, before each function here returns
 * (asserted: copies_unsettled). Tasks are made in slabs and kept for
 * reuse until the end, so the per-task path does not allocate.
 *
 * A phase here is the relay's (an opaque pointer, handed back to up) with
 * its wire id. One thread, the relay's, calls all of it; a message's last
 * reference may go on libzmq's I/O thread (spits_rx_t's count is
 * atomic).
 */
#ifndef SPITS_SERVING_COPIES_H
#define SPITS_SERVING_COPIES_H

#include <stddef.h>
#include <stdint.h>

#include "parts.h"
#include "peertab.h"
#include "scheduler.h"
#include "server.h"
#include "wire.h"

typedef struct copies copies_t;

/* What the relay plugs in; all required. */
typedef struct {
    void *arg;
    /* Records of phase go up: b's (NULL: none) and the parts they name
     * (empty after); held of them answer copies copies_take took. */
    void (*up)(void *arg, const void *phase, spits_batch_t *b, spits_parts_t *parts,
               size_t held);
    /* A copy may go unanswered (out of memory: why): the relay stops. */
    void (*fail)(void *arg, const char *why);
} copies_hop_t;

/* The copies of the TMs in tab, and *sched, their scheduler (NULL: no
 * memory). */
copies_t *copies_new(const copies_hop_t *hop, peertab_t *tab, sched_t **sched);
/* Every copy is freed; nothing goes up. A summary line, if any went. */
void copies_destroy(copies_t **c);
/* The server's source and sink (server_cfg_t.src, with .borrowed). */
server_source_t copies_source(copies_t *c);
/* The server that sends its copies and their CANCELs (before the calls
 * below). */
void copies_set_server(copies_t *c, server_t *s);
/* The relay is now in phase (wire; NULL: none): the phase upstream's
 * CANCELs name, the one CANCELs go down as, and the one a record of no
 * copy held goes up as. */
void copies_phase(copies_t *c, const void *phase, uint32_t wire);

/* The n copies reader yields, of phase (wire), whose bytes are in rx:
 * held (a reference each, which moves in), or, unless the server serves
 * that phase, answered RETURNED. Returns how many it read. */
size_t copies_take(copies_t *c, const void *phase, uint32_t wire, spits_reader_t *reader,
                   spits_rx_t *rx);
/* Upstream resolved ids of the relay's phase (its CANCEL): the copies
 * behind are cancelled, and ours answered. */
void copies_drop(copies_t *c, const uint64_t *ids, size_t n);
/* The copies nothing runs go back upstream (a drain). */
void copies_give_back(copies_t *c);
/* A TM behind went (server_hop_t.lost): with none left, the same. */
void copies_peer_gone(copies_t *c);
/* A new phase: every copy held goes back (the TMs drop their own). */
void copies_reset(copies_t *c);
/* Whether a released copy is not answered yet (never, between calls). */
int copies_unsettled(const copies_t *c);

#ifdef SPITS_SELFTEST
int copies_selftest(void);
#endif

#endif
