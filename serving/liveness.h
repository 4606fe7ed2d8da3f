/*
 * liveness.h - is a TM below this hop alive: the rules, written once.
 *
 * Part of serving/: the JM's dispatcher (dispatch.c) and a relay
 * (taskmanager/relay.c) each embed a liveness_t in their entry of a TM
 * and a liveness_hop_t in themselves, and run liveness_judge over their
 * live TMs once a tick, so a TM is lost on every hop by the same rules:
 * - silence: counted from the TM's last message, or from the end of the
 *   hop's own last stall if that is later (liveness_stall: a loop that
 *   did not run for max(timeout/2, 4 ticks) had the TMs' messages queued,
 *   unread; they get a full timeout from then, and one warning says so);
 * - a busy connection: a TM silent past the timeout may be sending one
 *   large message (ZeroMQ delivers a connection's messages whole and in
 *   order, so its heartbeats wait behind it). It is alive while its
 *   connection still brings bytes: the caller's probe (router.c
 *   router_probe: the kernel's count on the fd the TM's last message came
 *   over, while conngen says that fd is still its connection) says how
 *   long it has been quiet. A stopped or hung TM brings none; a closed
 *   connection fails the heartbeat send (ROUTER_MANDATORY). ZMTP
 *   heartbeats would not do: libzmq 4.3 cancels a PING's timeout only
 *   when a whole message has arrived;
 * - a heartbeat is due when nothing was sent to it for hb_ms (or each
 *   tick while the hop probes for connections just closed:
 *   LIVENESS_PROBE_MS).
 * Pure decisions: no sockets, no clock (now is passed in); the probe is
 * the caller's. Not thread-safe: each hop's serving thread owns its own.
 */
#ifndef SPITS_SERVING_LIVENESS_H
#define SPITS_SERVING_LIVENESS_H

#include <stdint.h>

#define LIVENESS_BUSY_LOG_MS 60000   /* "busy, not lost" said at most this often */
/* After a connection closed (router.c's monitor), the hop probes for this
 * long: a heartbeat to every TM each tick, so that the one whose
 * connection it was fails its send (ROUTER_MANDATORY) at once. */
#define LIVENESS_PROBE_MS 1500
/* A TM silent for this many heartbeat periods, its connection bringing
 * no bytes either, is quiet (liveness_quiet): not lost yet, but what it
 * holds is taken for stalled, not running. A TM speaks at least once a
 * period (its STATS or heartbeat). */
#define LIVENESS_QUIET_HBS 3

/* One TM, as its hop sees it. */
typedef struct {
    int64_t last_heard, last_sent;   /* monotonic ms */
    int fd;                  /* the connection its last message came over */
    uint32_t fd_gen;         /* fd's generation then (conngen.h): a closed
                                and reused number is not probed */
} liveness_t;

/* The hop's rules and its own state. */
typedef struct {
    const char *prefix;      /* its log lines start so ("relay: ", or "") */
    const char *loop;        /* what stalls: "the dispatcher", "the relay" */
    int64_t timeout_ms;      /* the job's --tm-timeout */
    int64_t hb_ms;           /* its heartbeat period */
    int64_t tick_ms;         /* how often it judges its TMs */
    int64_t heard_floor;     /* end of its loop's last stall */
    int64_t busy_logged_at;  /* "silent, but its connection is busy" */
} liveness_hop_t;

/* What liveness_judge says of a TM. */
enum { LIVENESS_FINE, LIVENESS_HEARTBEAT, LIVENESS_LOST };

/* How long (ms) l's connection has brought no bytes, or -1 when that
 * cannot be known (no TCP connection, or not the one l recorded). */
typedef int64_t liveness_probe_fn(const liveness_t *l, void *arg);

/* A message from the TM arrived at now, over fd at generation gen. */
static inline void liveness_heard(liveness_t *l, int64_t now)
{
    l->last_heard = now;
}

static inline void liveness_conn(liveness_t *l, int fd, uint32_t gen)
{
    l->fd = fd;
    l->fd_gen = gen;
}

/* The hop's loop ran at before and now again: 1 if that was a stall
 * (then heard_floor = now, and one warning is logged). */
int liveness_stall(liveness_hop_t *h, int64_t before, int64_t now);
/* The TM of l (host:pid, for the log) at now: LIVENESS_LOST when silent
 * past the timeout (from max(last_heard, heard_floor)) and its connection
 * is not busy (probe, asked only then), LIVENESS_HEARTBEAT when one is due
 * (probing: at once), else LIVENESS_FINE. */
int liveness_judge(liveness_hop_t *h, const liveness_t *l, int64_t now,
                   int probing, liveness_probe_fn *probe, void *arg,
                   const char *host, long pid);
/* Whether the TM of l is quiet at now: silent (as for liveness_judge)
 * for more than LIVENESS_QUIET_HBS heartbeat periods, and its connection
 * too, as far as probe can tell (asked only then). A stopped or cut-off
 * TM is quiet long before it is lost; one that is merely busy is not. */
int liveness_quiet(const liveness_hop_t *h, const liveness_t *l, int64_t now,
                   liveness_probe_fn *probe, void *arg);

#ifdef SPITS_SELFTEST
int liveness_selftest(void);
#endif

#endif
