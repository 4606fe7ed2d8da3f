/*
 * joins.h - what a HELLO from a TM below this hop is: a join, a repeat,
 * or a reconnect after an outage; the rules, written once.
 *
 * Part of serving/: the server (server.c server_on_hello), which both
 * the JM and a relay run, asks joins_kind of every HELLO from a routing
 * id they know, and counts what a TM says it holds by joins_held, so a
 * TM joins, repeats itself and is lost on reconnecting by the same rules
 * on every hop:
 * - no live entry: a join (a re-attach, if the hop knew it once);
 * - a live entry of the same process whose HELLO starts no new outage
 *   (its attach number, counted up by the TM at each outage, is not past
 *   the one the hop last took), or that was sent nothing since its last
 *   HELLO: a copy it queued before the hop's WELCOME reached it (a TM
 *   says HELLO each second until then, and a stopped hop gets them all at
 *   once), or an outage in which nothing of it was lost. It is answered
 *   again; nothing is lost. An older TM says no attach (-1): each of its
 *   HELLOs to a live entry with copies sent since is a reconnect;
 * - any other HELLO to a live entry (a new outage with copies sent since,
 *   or a new process with the same routing id): the TM is lost
 *   ("reconnected", its copies go back) and joins anew.
 * Pure decisions: no sockets, no clock. Not thread-safe: each hop's
 * serving thread asks for its own TMs.
 */
#ifndef SPITS_SERVING_JOINS_H
#define SPITS_SERVING_JOINS_H

#include <stdint.h>

#include "wire.h"

typedef enum {
    JOINS_NEW,               /* no live entry: it joins */
    JOINS_AGAIN,             /* live, and no new outage: answer it again */
    JOINS_RECONNECT,         /* live, a new outage: lose it, then it joins */
} joins_kind_t;

/* What the hop knows of the routing id's entry (alive 0: none, or dead). */
typedef struct {
    int alive;
    long pid;                /* its process, as its last HELLO said */
    long attach;             /* the outage number it last said (-1: none) */
    int sent_since;          /* copies were sent to it since that HELLO */
} joins_known_t;

/* What HELLO h is to an entry known as k. */
joins_kind_t joins_kind(const joins_known_t *k, const spits_hello_t *h);

/* The results h says it holds that count on this job (job_id: the job's
 * id): none from a TM of another job (a JM killed and replaced in the same
 * job dir), which drops them all on our WELCOME, so none ever comes back
 * to free a slot. An older TM sends no job id: all of them. The same for
 * its pending results. */
long joins_held(const spits_hello_t *h, const char *job_id);
long joins_pending(const spits_hello_t *h, const char *job_id);

/* A TM back from an outage sends the results it holds right after the
 * WELCOME. The hop sends it tasks only once they are in, or it would send
 * (and run again) the very tasks it holds results for; a loaded or slowed
 * TM can take seconds to send them, so the wait ends a quarter of
 * --tm-timeout after the HELLO (2 s at least), results or not. */
typedef struct {
    int64_t until;           /* 0: open */
    int64_t records;         /* results it said it holds, not yet in */
} joins_settle_t;

/* At its HELLO: pending results are to come (joins_pending). */
void joins_settle_begin(joins_settle_t *s, long pending, int64_t now, int64_t timeout_ms);
/* A RESULTS message of count records came from it. */
static inline void joins_settle_results(joins_settle_t *s, uint32_t count)
{
    if (s->until && (s->records -= (int64_t)count) <= 0)
        s->until = 0;
}
/* Whether it may be sent tasks now. */
static inline int joins_settle_open(const joins_settle_t *s, int64_t now)
{
    return s->until <= now;
}

#ifdef SPITS_SELFTEST
int joins_selftest(void);
#endif

#endif
