/*
 * server_int.h - the server's state and the calls between its files
 * (server.c: serving; server_peers.c: a peer's marks; server_recv.c:
 * what peers send), for them and the self-test only; hops use server.h.
 */
#ifndef SPITS_SERVING_SERVER_INT_H
#define SPITS_SERVING_SERVER_INT_H

#include "server.h"

struct server {
    server_cfg_t cfg;
    int64_t now;
    int64_t turn_at;             /* the hop's last turn (server_turn) */
    int64_t next_tick;           /* when server_tick is due */
    int64_t probe_until;
    uint32_t wire;               /* the phase heartbeats carry */
    json_t *job;                 /* WELCOME's and PHASE's body */
    uint32_t job_wire;           /* ...their phase */
    size_t rr;                   /* round-robin start of the next walk */
    int *due;                    /* slots of peers to look at next serve */
    size_t ndue, capdue;
    int all;                     /* the next serve walks every peer */
    int starved;                 /* a peer was left with room unfilled */
    int dry;                     /* this serve's refills found nothing */
    int serving;                 /* inside server_serve (asserts) */
    int walking;                 /* inside src.results: no peer may be
                                    lost (asserts: server_lose) */
    int gone;                    /* a peer is marked gone */
    int64_t gone_at;             /* ...the first, since the last reaping */
    int64_t bad_logged_at;       /* a malformed message last said */
    spits_batch_t out;           /* CANCELs being built */
    spits_batch_t tasks_out;     /* TASKS being built */
    int64_t oom_logged_at;       /* out of memory sending, last said */
    server_stats_t st;
    server_cap_t cap;            /* sums of the peers' shares */
};

/* An empty message of type (wire.h: WHO, DRAIN) to routing id rid,
 * whose entry is p (NULL: none): to a live p through server_send (its
 * marks), to anyone else without. */
void server_reply(server_t *s, server_peer_t *p, const void *rid, size_t ridlen, int type);
/* p gets the n picked copies as one TASKS message, large ones as parts
 * (taskbatch.h): n, or 0 when none went (out of memory, said: they wait
 * for the next serve; p's pipe full: p stalls). A part that could not go
 * (said) leaves p a message whose parts do not fit its records: p hands
 * back each of its copies, to run again. */
size_t server_send_tasks(server_t *s, server_peer_t *p, sched_task_t *const *tasks, size_t n);
/* The job's WELCOME (type) or PHASE to p (server_set_job). */
void server_send_job(server_t *s, server_peer_t *p, int type);
/* p's share of the capacity follows it (alive, draining, credit). */
void server_share(server_t *s, server_peer_t *p);

/* The pieces of server_on_frames (server_recv.c). What server_on_hello
 * did: */
typedef enum {
    SERVER_HELLO_NO_ROOM = -2,   /* no memory to make it live */
    SERVER_HELLO_NO_ENTRY = -1,  /* hop.add made no entry */
    SERVER_HELLO_AGAIN = 0,      /* a repeat: answered again */
    SERVER_HELLO_JOINED,         /* a first join */
    SERVER_HELLO_REATTACHED,     /* a join of a routing id known before */
} server_hello_kind_t;

/* HELLO h (parsed, and accepted by the hop) from routing id rid, whose
 * entry is p (NULL: none; alive or not), to a hop serving job job_id.
 * A p whose connection a send found gone is lost first (server_reap),
 * then it re-attaches. What it is follows joins.h's rules:
 *   - a repeat: with nothing sent since its last HELLO, what it holds
 *     and its pending results are taken as at a join; it gets WELCOME;
 *   - a reconnect: it is lost ("reconnected", hop.lost), then joins;
 *   - a join: an entry (hop.add when there is none) made alive, its
 *     credit (a relay's capped: spits_relay_cap), what it holds, its
 *     settle wait for its pending results, its proc (runs and busy_s
 *     moved to the stats when a new process took the entry); then
 *     hop.joined (ctx: the hop's, passed on), then WELCOME.
 * server_on_frames then makes it due. A negative result: no join,
 * nothing sent (server_on_frames counts it: server_bad). */
server_hello_kind_t server_on_hello(server_t *s, server_peer_t *p, const void *rid,
                                    size_t ridlen, const spits_hello_t *h,
                                    const char *job_id, void *ctx);

/* A message of header h from entry p (alive or not, or NULL), before
 * its handler: a live p is heard, and a RESULTS counts towards its
 * settle wait; after it, a live p (looked up again) spoke on connection
 * fd of generation gen, and is due. */
void server_on_message(server_t *s, server_peer_t *p, const spits_hdr_t *h);
void server_on_handled(server_t *s, server_peer_t *p, int fd, uint32_t gen);
/* STATS st (parsed: spits_stats_t) from p (alive or not): its runs and
 * busy time (and a relay's TMs, when said) are noted, and a live p's
 * credit follows the capacity it says (credit_resize): a relay's what
 * its TMs can have (spits_relay_cap), a TM's the counts of the plan it
 * made by the job's resources, when it says both. Returns 1 when p's
 * credit may have changed (the hop recounts its sums), 0 when not, or
 * -1 with *why when a TM says a capacity no HELLO may have
 * (spits_tm_capacity_ok): then nothing changed. The hop keeps what is
 * its own (a planned TM's workers, a relay's list of TMs). */
int server_on_stats(server_t *s, server_peer_t *p, const spits_stats_t *st, const char **why);
/* DRAIN from p (alive or not, or NULL): a live p gets no more tasks.
 * Returns 1 when it is its first (the hop logs it), else 0. */
int server_on_drain(server_peer_t *p);
/* BYE from p (alive or not; msg, len: the whole frame): a live p left
 * on purpose, not lost: hop.lost with left, and why the job it refused
 * (the body's "refused"), or NULL when the body says none or is no JSON
 * object (a BYE is a departure whatever its body). */
void server_on_bye(server_t *s, server_peer_t *p, const void *msg, size_t len);

#endif
