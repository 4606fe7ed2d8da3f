/*
 * hopchain.h - loops of relays: which relays are behind a relay, as
 * their HELLOs say, and whether a HELLO closes a loop.
 *
 * Each relay's HELLO names it ("relay": {"id": its routing id, "below":
 * [...]}), with the relays it knows to be behind it: the live relays
 * among its own peers, with what they said was behind them, and those
 * heard from in the last HOPCHAIN_HEARD_MS. A relay that finds its own
 * id there is upstream of itself:
 *   - its own id as the sender's: its upstream is its own endpoint, an
 *     error at once (HOPCHAIN_SELF);
 *   - its id among those below: the HELLO is refused, so that the relay
 *     sending it moves on to its next hop (spits-tm --via) (HOPCHAIN_LOOP);
 *     only a loop that lasts HOPCHAIN_FATAL_MS while this relay has no
 *     job (nothing above it: a ring of relays, which nothing would ever
 *     break) is an error (HOPCHAIN_FATAL).
 * A relay not yet welcomed learns of a ring through the heard list:
 * nothing above a ring ever answers, so the ids go round it.
 *
 * Part of serving/: the relay (taskmanager/relay_peers.c) asks it of
 * each HELLO that says "relay", and builds its own HELLO's "below" with
 * it. Pure: no sockets, no log; the caller's clock. Not thread-safe: one
 * per relay, on its loop's thread.
 */
#ifndef SPITS_SERVING_HOPCHAIN_H
#define SPITS_SERVING_HOPCHAIN_H

#include <jansson.h>
#include <stdint.h>

#define HOPCHAIN_ID_MAX 40          /* a relay's id: its routing id, as text */
#define HOPCHAIN_BELOW_MAX 32       /* ids in a "below" list, and heard */
#define HOPCHAIN_HEARD_MS 10000     /* a relay's HELLO counts this long */
#define HOPCHAIN_FATAL_MS 10000     /* a loop with no job above, this long */

/* A relay's place, as its HELLO said: its id and those behind it. */
typedef struct {
    char id[HOPCHAIN_ID_MAX];
    char below[HOPCHAIN_BELOW_MAX][HOPCHAIN_ID_MAX];
    int nbelow;
} hopchain_place_t;

typedef struct {
    char id[HOPCHAIN_ID_MAX];
    int64_t at;                     /* (0: an empty note) */
} hopchain_heard_t;

/* What one relay has heard (all zero: nothing yet). */
typedef struct {
    hopchain_heard_t heard[HOPCHAIN_BELOW_MAX];
    int64_t loop_since;             /* refusing a loop since (0: none) */
} hopchain_t;

typedef enum {
    HOPCHAIN_BAD = -1,   /* a malformed "relay" object */
    HOPCHAIN_OK,         /* no loop: its place is noted, its ids heard */
    HOPCHAIN_SELF,       /* this relay's own HELLO came back */
    HOPCHAIN_LOOP,       /* this relay is below the sender: refuse it */
    HOPCHAIN_FATAL,      /* ...and the loop lasted with no job above */
} hopchain_verdict_t;

/* The "relay" object of a HELLO to relay me (its id), now; has_job:
 * whether me has a job (something above it). *place: the sender's id
 * and the ids it says are below it (malformed ones skipped, at most
 * HOPCHAIN_BELOW_MAX). */
hopchain_verdict_t hopchain_check(hopchain_t *c, const char *me, const json_t *relay,
                                  int has_job, int64_t now, hopchain_place_t *place);
/* A job came from above: a loop refused so far starts its wait anew. */
void hopchain_job(hopchain_t *c);
/* Appends p's id and those below it to list, which holds at most
 * HOPCHAIN_BELOW_MAX; returns whether it is full. */
int hopchain_list_place(json_t *list, const hopchain_place_t *p);
/* Appends the ids heard in the last HOPCHAIN_HEARD_MS, as room allows. */
void hopchain_list_heard(const hopchain_t *c, json_t *list, int64_t now);

#ifdef SPITS_SELFTEST
int hopchain_selftest(void);
#endif

#endif
