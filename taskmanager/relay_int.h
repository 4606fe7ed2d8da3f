/*
 * relay_int.h - a relay's state (spits-tm --serve), shared by its files,
 * each of which depends only on those listed below it:
 *
 *   relay.c           set-up, tear-down (sock), the server's hop (srv:
 *                     serving/server.h, which serves, ticks and loses
 *                     the TMs by the JM's rules), and the turn (live)
 *   relay_upstream.c  upstream's WELCOME, PHASE, CANCEL and drain, passed
 *                     on to the TMs behind (job, the server's timeouts,
 *                     sock.max_task)
 *   relay_recv.c      the TMs' messages: joins, results (foreign ones
 *                     too), STATS, DRAIN, BYE (log's counts)
 *   relay_tasks.c     the server's source (the pool) and sink (TASKS
 *                     down to a TM) (down)
 *   relay_copies.c    the copies upstream sent this relay: the
 *                     scheduler's tasks (serving/scheduler.h), made from
 *                     the pool's items, and their answers upstream when
 *                     they are resolved or given back (held; extra)
 *   relay_records.c   records upstream (rec)
 *   relay_peers.c     who is behind: the table of TMs (and relays) by
 *                     routing id (a serving/peertab.h), their STATS,
 *                     loops of relays, and what the relay tells
 *                     upstream about them (HELLO's "relay", STATS'
 *                     capacity and "behind")
 *
 * All of it is spits-tm's main thread's (tm_private.h). What every hop
 * does alike (the server: sends, serving, the tick, losses; the table of
 * TMs, credit, the scheduler, TASKS messages, event lines) is serving/'s,
 * which the JM uses too.
 */
#ifndef SPITS_TM_RELAY_INT_H
#define SPITS_TM_RELAY_INT_H

#include "conngen.h"
#include "constants.h"
#include "credit.h"
#include "hopchain.h"
#include "idmap.h"
#include "joins.h"
#include "lateness.h"
#include "liveness.h"
#include "loglimit.h"
#include "peertab.h"
#include "scheduler.h"
#include "server.h"
#include "tm_private.h"
#include "zap.h"

/* A TM behind this relay (or a relay behind it). An entry is kept once
 * it is gone (its return is then a re-attach) until SERVE_KEEP_DEAD newer
 * ones went (peertab.h). All of it is written as the TM joins
 * (relay_recv.c), then as each part says. */

/* From its join STATS (relay_peers.c), for the relay's own "behind";
 * its runs and busy time are its server_proc_t's (serving/server.h). */
typedef struct {
    json_t *worker_res;          /* a planned TM's, as its join STATS said
                                    (wire.h), passed up in behind; NULL:
                                    none. The entry's own (relay_peers.c;
                                    relay_recv.c drops it for a new
                                    process) */
    size_t worker_res_bytes;     /* ...its size as JSON text */
} rl_tm_stats_t;

typedef struct {
    server_peer_t sv;            /* the server's (serving/server.h): the
                                    table's part, its credit and the
                                    scheduler's counts (sv.sched),
                                    liveness, settling; first */
    hopchain_place_t place;      /* a relay's id and those behind it (id
                                    "": a TM), set as it joins */
    rl_tm_stats_t stats;
} rl_tm_t;

/* Who is behind the relay (relay_peers.c). */
typedef struct {
    peertab_t *tab;              /* of rl_tm_t; loops walk its live set */
    int told_workers, told_slots;    /* capacity as the last STATS said
                                        (-1: upstream's is unknown) */
    uint64_t runs_gone;          /* runs and busy time of entries evicted */
    double busy_gone;            /* ...(a new process's: server_stats) */
    hopchain_t chain;            /* relays heard, loops (hopchain.h) */
} rl_peers_t;

/* The socket the TMs behind us talk to: made by relay.c, which also reads
 * its monitor each turn; read from by relay_recv.c, sent on by the
 * server (its io) and relay_tasks.c (parts); its max_task follows the
 * job's (relay_upstream.c); endpoint is told upstream (relay_peers.c). */
typedef struct {
    router_listen_t l;           /* the TMs behind us (serving/router.h) */
    conngen_t *conngen;          /* ...which connection each fd is now */
    long long max_task;          /* the ROUTER's message bound follows it */
} rl_sock_t;

/* The job as upstream told it: written by relay_upstream.c; read by
 * relay_recv.c (WELCOME, PHASE), relay_tasks.c and relay_peers.c (is
 * there a job yet), relay.c (END's phase). */
typedef struct {
    json_t *body;                /* the job's WELCOME/PHASE body, as upstream
                                    sent it (no attach); NULL before any */
    uint32_t phase;
    char id[64];
} rl_job_t;

/* When the server's tick is due next (relay.c); its loss rules
 * (liveness.h) are the server's, their timeouts set by relay_upstream.c
 * from the job. */
typedef struct {
    int64_t next_tick;
} rl_live_t;

/* Tasks down (relay_tasks.c; part_min is set by relay.c, read by
 * relay_recv.c for WELCOME). */
typedef struct {
    uint64_t part_min;           /* tasks this large go down as parts */
    spits_batch_t out;           /* TASKS being built */
} rl_down_t;

/* A copy upstream sent this relay, as the scheduler holds it: a
 * sched_task_t (id: the relay's own number for it, in the order they
 * came; hash: upstream's id of the task) whose data bytes are this. */
typedef struct {
    const tm_phase_t *phase;
    tm_rx_t *rx;                 /* the message its bytes are in: one
                                    reference, the copy's */
    const unsigned char *bytes;  /* ...its bytes (the task's len of them) */
    int answered;                /* its record went upstream */
} rl_copy_t;

static inline rl_copy_t *rl_copy(sched_task_t *task)
{
    return (rl_copy_t *)(void *)task->data;
}

/* The copies this relay holds (relay_copies.c's): the scheduler
 * (serving/scheduler.h; its peers are the rl_tm_t's sched), and its
 * tasks by upstream id. */
typedef struct {
    sched_t *sched;
    sched_stats_t st;            /* the scheduler's counts */
    spits_idmap_t *byid;         /* upstream id -> (0, sched_task_t *), or
                                    (copies told to cancel, NULL) */
    spits_idmap_t *extra;        /* upstream id -> (more copies, phase):
                                    copies upstream sent again while one
                                    was here (it forgot we held it);
                                    answered with the first */
    uint64_t next_id;            /* the next task's own number */
    sched_task_t *released;      /* released by the scheduler, not yet
                                    settled (relay_copies_settle) */
    sched_task_t *spare;         /* settled ones, to be made again */
    size_t nspare;
    uint64_t cancelled;          /* copies the TMs behind were told to
                                    cancel */
    late_starve_t starve;        /* refills that left a TM's room unfilled
                                    (relay_tasks.c): copies of late tasks
                                    go only once upstream seems out of
                                    work (lateness.h) */
    int closing;                 /* the relay ends: nothing goes up */
} rl_copies_t;

/* Records up, being gathered for the outbox: relay_records.c's only. */
typedef struct {
    spits_batch_t batch;         /* records of phase ph */
    spits_parts_t parts;         /* ...and the parts they name, shared with
                                    the TMs' messages (zmq_msg_copy) */
    const tm_phase_t *ph;
    size_t done;                 /* ...of which copies this relay held */
} rl_rec_t;

/* The log lines of TM events (relay.c, relay_recv.c, relay_copies.c,
 * relay_peers.c), at a bounded rate. */
typedef struct {
    loglimit_t events;           /* TM joins, leaves, losses, loops */
} rl_log_t;

struct tm_relay {
    tm_t *tm;
    server_t *srv;               /* sends, serving, the tick, losses
                                    (serving/server.h; its hop: relay.c) */
    rl_sock_t sock;
    rl_peers_t peers;
    rl_copies_t copies;
    rl_job_t job;
    rl_live_t live;
    rl_down_t down;
    rl_rec_t rec;
    hopchain_place_t hello;      /* the place the HELLO being taken said
                                    (relay_recv_hop_accept's, for
                                    relay_recv_hop_joined) */
    rl_log_t log;
};

/* relay_records.c */
/* Hands the records gathered so far to the outbox. */
void relay_records_flush(tm_relay_t *r);
/* Adds a record of phase ph for upstream, its payload inline, or, given
 * part (the frame it came in), as a part; held: it answers a copy this
 * relay took from the pool (counted running there). */
void relay_records_add(tm_relay_t *r, const tm_phase_t *ph, uint64_t id,
                       uint32_t status, const void *data, uint32_t len,
                       zmq_msg_t *part, int held);

/* relay_copies.c */
/* The scheduler and its maps: 0, or -1 when out of memory. */
int relay_copies_init(tm_relay_t *r);
/* The relay ends: every copy is freed, and nothing goes upstream. */
void relay_copies_free(tm_relay_t *r);
/* The job's max_copies (WELCOME's "max_copies"; out of range: kept). */
void relay_copies_set_max(tm_relay_t *r, int max_copies);
/* Takes up to want copies from the pool into the scheduler (fresh); one
 * of a task held already goes to extra. Returns how many it took. */
size_t relay_copies_take(tm_relay_t *r, size_t want);
/* The copy held of upstream id, of phase wire, or NULL. */
sched_task_t *relay_copies_find(tm_relay_t *r, uint64_t id, uint32_t wire);
/* A record of a copy of id behind us told to cancel: 1 (counted; it is
 * to be dropped), else 0. */
int relay_copies_swallow(tm_relay_t *r, uint64_t id);
/* The copies the scheduler noted for cancelling go to the TMs holding
 * them. */
void relay_copies_cancels(tm_relay_t *r);
/* The copies the scheduler released are answered upstream (RETURNED,
 * unless marked answered) and freed; the records are flushed. Called
 * after every call into the scheduler that may resolve a task: relay.c
 * asserts at each turn's end that none is left. */
void relay_copies_settle(tm_relay_t *r);
/* Upstream resolved ids of phase ph (its CANCEL): the copies behind us
 * are cancelled, and ours answered. */
void relay_copies_drop(tm_relay_t *r, const tm_phase_t *ph, const uint64_t *ids, size_t n);
/* The copies nothing runs (fresh, or to run again) go back upstream: no
 * TM is left behind, or the relay drains. */
void relay_copies_give_back(tm_relay_t *r);
/* With no TM behind, the copies waiting in the pool go back upstream
 * too: upstream sent them before it heard that the last TM left, and
 * nothing here would ever take them. */
void relay_copies_orphans(tm_relay_t *r);
/* A new phase: every copy held goes back (the TMs drop their own). */
void relay_copies_reset(tm_relay_t *r);
/* A drain: every copy the TMs behind hold is cancelled (those queued
 * come back at once; those running finish). */
void relay_copies_cancel_queued(tm_relay_t *r);
/* t is gone (lost, or it left; why says how, for the log), n of its
 * copies to run again on the others (or to go back upstream, with none
 * left): the log line. */
void relay_copies_gone(tm_relay_t *r, rl_tm_t *t, const char *why, size_t n);

/* relay_tasks.c */
/* The server's source (server_hop_t.refill): copies from the pool. */
size_t relay_tasks_refill(void *r, size_t want);
/* The server's sink (server_hop_t.send_tasks): copies down to a TM, one
 * TASKS message per phase. */
size_t relay_tasks_send(void *r, server_peer_t *p, sched_task_t *const *tasks, size_t n);
/* The TMs with room get what the pool has (server_serve), while the
 * relay has a job and does not drain. */
void relay_tasks_serve(tm_relay_t *r);

/* relay_recv.c */
/* The messages waiting on the socket, up to a burst. */
void relay_recv_burst(tm_relay_t *r);
/* The server's hop (server_hop_t): what the relay does with its TMs'
 * messages (server_on_frames). */
server_peer_t *relay_recv_hop_add(void *r, const void *rid, size_t ridlen, int *first);
void relay_recv_hop_joined(void *r, server_peer_t *p, const server_join_t *j);
void relay_recv_hop_job(void *r, server_peer_t *p, int type);
int relay_recv_hop_accept(void *r, server_peer_t *p, const spits_hello_t *h, void **ctx,
                          const char **why);
void relay_recv_hop_results(void *r, server_peer_t *p, server_recs_t *it);
void relay_recv_hop_drain(void *r, server_peer_t *p);

/* relay_peers.c */
int relay_peers_init(rl_peers_t *p);
void relay_peers_free(rl_peers_t *p);
/* (An entry by routing id, alive or not: peertab_find(p->tab, ...).) */
/* A new entry for rid, not alive yet (peertab_add). NULL when out of
 * memory. */
rl_tm_t *relay_peers_add(rl_peers_t *p, const void *rid, size_t ridlen);
/* (server_hop_t.stats) A STATS the server took from a TM (alive or
 * not): a planned TM's worker_res, passed up in the relay's STATS. */
void relay_peers_hop_stats(void *r, server_peer_t *p, json_t *body, const spits_stats_t *st,
                           json_t *parsed, int changed, int before);
/* A relay's HELLO said "relay" (hopchain.h): 0 (its place in *place,
 * its ids heard), 1 when it is a loop (logged; the HELLO is refused;
 * tm->done -1 when the relay is its own upstream, or the loop lasts while
 * we have no job), or -1 when malformed. */
int relay_peers_check_loop(tm_relay_t *r, const json_t *relay, hopchain_place_t *place);

#endif
