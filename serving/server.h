/*
 * server.h - the part of a hop that serves the TMs below it, written once
 * and instantiated twice: by the JM's dispatcher (jobmanager/dispatch.c)
 * and by a relay (taskmanager/relay.c).
 *
 * A server holds the peers' common state (server_peer_t, the first member
 * of each hop's table entry), and does for both hops:
 *   - sends to one peer (server_send): the time it was last sent to, a
 *     full pipe (EAGAIN) stalls it until it speaks, a gone connection
 *     (EHOSTUNREACH) marks it to be reaped;
 *   - the serve loop (server_serve): round robin over the peers heard
 *     from since the last serve (or all of them when anything may have
 *     given one room), first up to each one's idle workers, then its
 *     prefetch, in TASKS messages of at most SERVE_BATCH_TASKS copies
 *     and SERVE_BATCH_BYTES bytes, none to a peer draining, stalled,
 *     gone or settling; large tasks go as parts (taskbatch.h);
 *   - the tick (server_tick): each live peer judged by the liveness
 *     rules, a heartbeat to the quiet, the silent lost;
 *   - the reaping of peers whose connection is gone (server_reap), after
 *     the messages already waiting are read (a drained TM's last BYE);
 *   - a peer lost or gone: its copies back to the scheduler, out of the
 *     live set, counted (server_lose), then the hop's own (hop.lost);
 *   - the live peers' capacity, summed as each one's changes
 *     (server_capacity);
 *   - the CANCELs the scheduler noted (server_cancels), and of every
 *     copy held (server_cancel_held);
 *   - each message a peer sends (server_on_frames): parsed, its frames
 *     read, routed to the hop's handler by type, a malformed one's
 *     sender lost, WHO to a peer not alive after its RESULTS or
 *     HEARTBEAT, DRAIN answered;
 *   - a RESULTS up to its records (credit back, the scheduler's clock),
 *     which the hop walks inline (server_recs_t);
 *   - a HELLO: a join, a repeat, a re-attach that
 *     waits for its results, or a reconnect, by joins.h's rules;
 *   - a STATS (server_take_stats): a peer's runs, busy time and capacity;
 *   - the job's WELCOME to a peer that joins, and a new phase's PHASE
 *     to the live peers, from the body the hop gives (server_set_job);
 *   - at the job's end, which peers router_end waits for
 *     (server_end_peers).
 *
 * What differs between the hops is a source and sink (server_source_t):
 * where fresh tasks come from and results go (the JM's generator and
 * committer; a relay's upstream, copies.h), what holds a task's bytes
 * while a part carries them, and where they are (cfg.borrowed); and the
 * rest of its hop (server_hop_t): what losing a peer means, who a peer
 * that joins is (its table entry, identity, log line), and what the job
 * is (WELCOME's body). The server
 * never touches a socket itself: its sends to peers, its replies and
 * the rest of a message's frames go through cfg.io (the hop's ROUTER's,
 * router_io; a self-test's own). The hop reads a message's first frames,
 * and sends the job's END (router.h).
 *
 * Threads: a server and its peers are its hop's loop thread's (the
 * dispatcher thread; spits-tm's main thread). Its hop's functions are
 * called on that thread only, from inside the server's calls.
 */
#ifndef SPITS_SERVING_SERVER_H
#define SPITS_SERVING_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "joins.h"
#include "parts.h"
#include "liveness.h"
#include "peertab.h"
#include "router.h"
#include "scheduler.h"

/* What a peer's process said of itself (its HELLO, and its STATS). Over the process's life: a new
 * process on the same routing id starts them anew. */
typedef struct {
    char host[128];          /* its host, escaped (escape.h), and its */
    long pid;                /* ...process, as its last join said */
    long attach;             /* the outage number it last joined with, or
                                the highest of its repeats (-1: none) */
    uint64_t sent_at_hello;  /* sched.sent as of its last HELLO */
    uint64_t runs;           /* its task runs, as its last STATS said */
    double busy_s;           /* ...its workers' time on tasks */
    int relay;               /* a relay (its HELLO said so) */
    long tms;                /* ...the TMs behind it, as its HELLO or a
                                later STATS said (-1: not said) */
} server_proc_t;

/* What a peer adds to its server's capacity now (server_capacity). */
typedef struct {
    int workers, slots;
    long tms;                /* the TMs it is: 1, a relay as it said */
} server_share_t;

/* What both hops keep of a peer to serve it: the first member of their
 * table entry, so the table's entries are server_peer_t too. */
typedef struct {
    peertab_entry_t peer;    /* the table's (rid, slot, alive): first */
    sched_peer_t sched;      /* its credit, the scheduler's counts
                                (sched.slot: peer.slot, server_peer_init) */
    liveness_t live;         /* heard (server_heard), sent (server_send) */
    joins_settle_t settle;   /* re-attached with results: not served until
                                they are in (server_on_hello; the hop's
                                RESULTS) */
    int draining;            /* said DRAIN: no more tasks (the hop) */
    int stalled;             /* its pipe was full: no tasks until it
                                speaks (server_send sets, server_heard
                                clears) */
    int gone;                /* its connection is gone: lost at the next
                                server_reap (server_send) */
    int due;                 /* in the due list (server_due) */
    int ended;               /* said BYE to the job's END
                                (server_end_peers) */
    server_proc_t proc;
    server_share_t share;    /* (server_capacity's) */
} server_peer_t;

_Static_assert(offsetof(server_peer_t, peer) == 0,
               "server_peer_t begins with its peertab_entry_t");

typedef struct server server_t;

/* A message from a peer, as the hop received its first frame
 * (server_on_frames reads the rest through cfg.io.rest). */
typedef struct {
    const void *rid;         /* its routing id */
    size_t ridlen;
    zmq_msg_t *msg;          /* its first frame */
    spits_parts_t *parts;    /* where a RESULTS' parts go: the hop's, empty;
                                the hop frees them after */
    void *hop;               /* the hop's, passed on (the JM's jm_rx_t) */
    spits_hdr_t h;           /* its header (server_on_frames parses it) */
    int unrun;               /* a RESULTS whose frames did not fit its
                                records: each record is a copy handed
                                back unrun, and its sender is lost */
} server_msg_t;

/* Where server_recv puts a message's body: the hop's (hop.rx_new), or
 * the server's. */
typedef struct {
    zmq_msg_t *msg;          /* its first frame: initialised, empty */
    spits_parts_t *parts;    /* where a RESULTS' parts go: empty */
    void *hop;               /* the hop's, as server_msg_t.hop */
} server_rx_t;

/* A join or re-attach, as server_on_hello tells its hop (hop.joined). */
typedef struct {
    const spits_hello_t *h;  /* its HELLO */
    int first;               /* its first join here (else a re-attach) */
    int renewed;             /* an entry of another process before */
    void *ctx;               /* the hop's, as its accept said */
} server_join_t;

/* A RESULTS' records, as the server hands them to its hop (src.results):
 * it has set the scheduler's clock and given a live sender a slot back
 * for each record but foreign ones (wire.h). The hop walks them
 * (server_recs_next) and gives the scheduler each that answers one of
 * its tasks (server_recs_record), acting on the verdict: the JM commits,
 * a relay sends the result up. Inline: this is the per-task path. */
typedef struct {
    spits_rec_t rec;         /* the record (its status RETURNED when unrun) */
    zmq_msg_t *frame;        /* the frame its payload came in, or NULL */
    server_msg_t *m;
    spits_reader_t reader;
    sched_t *sched;
    sched_peer_t *sp;        /* the sender's entry, alive or not, or NULL */
    size_t part;             /* the next part */
} server_recs_t;

/* The next record into it->rec and it->frame: 1, or 0 after the last. */
static inline int server_recs_next(server_recs_t *it)
{
    if (!spits_reader_next(&it->reader, &it->rec))
        return 0;
    it->frame = it->rec.part && !it->m->unrun ? &it->m->parts->msgs[it->part++] : NULL;
    if (it->m->unrun)
        it->rec.status = SPITS_ST_RETURNED;
    return 1;
}

/* The current record answers the scheduler's task id: its verdict
 * (sched_record; *hash: the task's, when it resolved it). A record of a
 * sender not alive still counts: work is never thrown away while its
 * task is unfinished. */
static inline sched_outcome_t server_recs_record(server_recs_t *it, uint64_t id,
                                                 uint64_t *hash)
{
    return sched_record(it->sched, it->sp, id, it->rec.status, it->rec.foreign, hash);
}

/* Where a hop's tasks come from and their records go (the JM: its
 * generator and committer, jobmanager/serve.c; a relay: its upstream,
 * copies.h). Every function gets arg; all are required. */
typedef struct {
    void *arg;
    /* Moves fresh tasks (up to about want; more is allowed) into the
     * scheduler, and says the source's state to it (sched_gen_state).
     * Returns 0 when it moved none, which ends the refills of this
     * serve. */
    size_t (*refill)(void *arg, size_t want);
    /* A picked task of cfg.part_min bytes or more goes as a part: a
     * reference to its bytes for libzmq (the hint part_free gets, on
     * libzmq's I/O thread, once it is done with them). */
    void *(*part_hold)(void *arg, sched_task_t *task);
    zmq_free_fn *part_free;
    /* RESULTS (p or NULL): its records (server_recs_t), to the sink. */
    void (*results)(void *arg, server_peer_t *p, server_recs_t *recs);
} server_source_t;

/* What else a hop plugs in. Every function gets arg; all are required
 * but where said. */
typedef struct {
    void *arg;
    /* p is lost (why: for the log), or it left (left: its BYE; why: the
     * job it refused, or NULL). The server took its copies back (n of
     * them to run again: sched_lost), made it dead and counted it; the
     * hop logs it and does its own. */
    void (*lost)(void *arg, server_peer_t *p, const char *why, int left, size_t n);
    /* Whether the hop stops (no more tasks go). */
    int (*stopping)(void *arg);
    /* HELLO. A new table entry for rid, dead, its
     * common part server_peer_init'ed; *first: 0 when the hop knew the
     * routing id once (its return is a re-attach). NULL: none (a bad
     * routing id, no memory). NULL function: server_peer_add. */
    server_peer_t *(*add)(void *arg, const void *rid, size_t len, int *first);
    /* p joined or re-attached: the server made it alive and set its
     * common part (credit, scheduler, settle, proc: its host and pid too);
     * the hop sets the rest of who it is, and counts and logs the join.
     * The server's WELCOME follows (server_set_job). */
    void (*joined)(void *arg, server_peer_t *p, const server_join_t *j);

    /* The messages (server_on_frames). p is the entry of the message's
     * routing id, alive or not, or NULL where said. */
    /* A malformed message (why), after server_bad counted it (NULL:
     * nothing more). */
    void (*bad)(void *arg, const char *why);
    /* HELLO h (parsed; its strings and JSON live until the join is
     * done) from p (or NULL): the hop's own rules. 1: it may join, with
     * *ctx (the hop's, for hop.joined: server_join_t.ctx); 0: not now
     * (dropped, not counted: it says HELLO again); -1: a bad HELLO (*why
     * says why). */
    int (*accept)(void *arg, server_peer_t *p, const spits_hello_t *h, void **ctx,
                  const char **why);
    /* STATS st (parsed; body: its JSON) from p (alive or not), before
     * the server takes it: the hop's own parts (the
     * JM: a relay's list of TMs behind it, which may also say st->tms).
     * 0, or -1 with *why: the whole message is dropped. What it parsed
     * of them may go in *parsed (a new reference; NULL before), for
     * stats: the server releases it once the message is taken or
     * dropped, so a refusal after the check leaks nothing. NULL: none. */
    int (*stats_check)(void *arg, server_peer_t *p, json_t *body, spits_stats_t *st,
                       json_t **parsed, const char **why);
    /* ...and after it: what the hop keeps of it (parsed: the check's,
     * borrowed, or NULL; changed: p's credit may have changed, from
     * before workers: the hop recounts its sums). */
    void (*stats)(void *arg, server_peer_t *p, json_t *body, const spits_stats_t *st,
                  json_t *parsed, int changed, int before);
    /* A live p's first DRAIN (it gets no more tasks): the hop logs and
     * recounts. */
    void (*drain)(void *arg, server_peer_t *p);
    /* A place for the next message server_recv reads: 0, or -1 when
     * out of memory (the hop says so; the message is dropped, and the
     * burst ends). Each is handed back to rx_done once handled. Both
     * NULL: the server's own place, freed once handled (a hop that
     * keeps nothing of a message's frames past its handlers). */
    int (*rx_new)(void *arg, server_rx_t *rx);
    void (*rx_done)(void *arg, server_rx_t *rx);
    /* STATUS: answered to m->rid (NULL: a hop that has none). */
    void (*status)(void *arg, server_msg_t *m);
} server_hop_t;

typedef struct {
    peertab_t *tab;          /* of entries starting with server_peer_t;
                                the hop's */
    sched_t *sched;          /* the hop's */
    server_source_t src;
    server_hop_t hop;
    router_io_t io;          /* its socket (router_io), or a self-test's:
                                sends, replies, the rest of messages */
    liveness_hop_t rules;    /* the loss rules (timeouts set later:
                                server_rules) */
    liveness_probe_fn *probe;    /* how long a peer's connection has been */
    void *probe_arg;             /* ...quiet (serving/router.h) */
    const conngen_t *conngen;    /* its connections' generations (NULL:
                                    0 for all) */
    int result_parts;            /* large results may come as parts: each
                                    WELCOME says so (wire.h) */
    uint64_t part_min;           /* tasks this large go as parts
                                    (spits_parts_min) */
    int borrowed;                /* the tasks are a relay's: each goes by
                                    its hash, its data begins with a
                                    pointer to its bytes (taskbatch.h) */
} server_cfg_t;

/* What the server counts; the hop reads them. */
typedef struct {
    uint64_t heartbeats;
    uint64_t joins;          /* first joins: distinct peers */
    uint64_t leaves, losses; /* peers that left (BYE), and were lost */
    uint64_t reattaches;     /* joins of a routing id known before */
    uint64_t runs;           /* the runs and busy time of every process */
    double busy_s;           /* ...that said any (STATS), as it last said:
                                those evicted or renewed too */
    uint64_t bytes_in;       /* of every message received, parts too */
    uint64_t bytes_out;      /* of every message sent but tasks' parts */
    uint64_t bad;            /* malformed messages dropped (server_bad) */
    uint64_t results_as_parts;   /* results whose bytes came as a part */
    uint64_t tasks_as_parts;     /* task copies sent as a part */
    uint64_t part_bytes_out;     /* ...their bytes */
} server_stats_t;

/* The live peers' capacity, but of those draining: what the TMs below
 * this hop can take. Sums of each one's share, which follows it after
 * each message it sends, and when it leaves the live set. */
typedef struct {
    long long workers, slots, tms;
} server_cap_t;

/* A server (NULL: no memory). cfg's pointers must outlive it. */
server_t *server_new(const server_cfg_t *cfg);
void server_destroy(server_t **s);

/* The loss rules, as the hop's loop runs them. */
liveness_hop_t *server_rules(server_t *s);
const server_stats_t *server_stats(const server_t *s);
const server_cap_t *server_capacity(const server_t *s);
/* The hop's clock (monotonic ms), as set and as read. */
void server_clock(server_t *s, int64_t now);
int64_t server_now(const server_t *s);
/* The hop's loop turned, at now: the clock, and a turn that came late
 * is the hop's own stall, not its peers' silence (liveness_stall, from
 * the last turn). */
void server_turn(server_t *s, int64_t now);
/* The wire phase its heartbeats and replies carry. */
void server_phase(server_t *s, uint32_t wire);
/* The job as WELCOME and PHASE say it, of wire phase wire (a reference
 * to body is taken; NULL: none, and no WELCOME goes). body holds every
 * key but those the server adds to each peer's WELCOME: "attach", its
 * outage number, and "result_parts", its routing id, when
 * cfg.result_parts (wire.h). What it says, the server follows: its
 * "job_id" is the job a HELLO joins; "heartbeat_ms" and "timeout_ms",
 * when above 0, the loss rules; "max_copies", when in range, the
 * scheduler's (the JM's are its options; a relay's, upstream's). */
void server_set_job(server_t *s, uint32_t wire, json_t *body);
/* The body server_set_job gave (NULL: none), and its wire phase in *wire
 * (NULL: not wanted). */
const json_t *server_job(const server_t *s, uint32_t *wire);
/* A connection closed: every peer gets a heartbeat each tick until then,
 * so the one whose connection it was fails its send at once. */
void server_probe_until(server_t *s, int64_t until);
int server_probing(const server_t *s);
/* Whether server_tick is due: rules.tick_ms after the last one (the
 * first turn starts the count), or at once while probing. */
int server_tick_due(const server_t *s);
/* How long the hop's poll may sleep: until the tick is due, at most
 * SERVE_PROBE_POLL_MS while probing, 0 when a serve is due. */
long server_sleep_ms(const server_t *s);

/* A new entry's common part: nothing held, its scheduler slot its table
 * slot. */
void server_peer_init(server_peer_t *p);
/* hop.add for a hop that keeps nothing of a routing id once its entry
 * is evicted: a new entry (server_peer_init), *first 1. */
server_peer_t *server_peer_add(server_t *s, const void *rid, size_t ridlen, int *first);
/* p joined or re-attached (alive): heard now, no marks left from
 * before (the hop then calls server_due). */
void server_peer_join(server_t *s, server_peer_t *p);
/* A live p is lost (why), or left (left): its copies go back to the
 * scheduler for the others, it leaves the live set and is counted, then
 * hop.lost. Not from inside src.results: the records' walk holds p's
 * scheduler entry (asserted). */
void server_lose(server_t *s, server_peer_t *p, const char *why, int left);
/* p (alive) leaves the live set, not lost: the job ended, and its BYE
 * came (server_end_t.bye); its copies go with the hop's. */
void server_leave(server_t *s, server_peer_t *p);
/* p spoke: heard now, and no longer stalled (the hop then calls
 * server_due once it handled the message). */
void server_heard(server_t *s, server_peer_t *p);
/* The next serve looks at p (its room may have changed). */
void server_due(server_t *s, server_peer_t *p);
/* The next serve looks at every peer (work appeared, or time passed). */
void server_due_all(server_t *s);
/* Whether a serve is due (the hop's poll then does not sleep). */
int server_serve_due(const server_t *s);

/* A message m from a peer, whose first frame the hop received (m->h is
 * the server's to fill). It is parsed, the rest of its frames read
 * (cfg.io.rest), and handed to the hop by type:
 *   - a bad routing id or header, or frames that do not fit (server_bad):
 *     dropped, and its sender, if alive, is lost as a bad peer; but a
 *     RESULTS whose parts do not fit still answers its copies, unrun
 *     (m->unrun), before its sender is lost;
 *   - RESULTS: its records (server_recs_t), to src.results;
 *   - HELLO: parsed, the hop's rules (hop.accept), then for the job
 *     the job's id (server_set_job) a repeat, a reconnect, a join or a
 *     re-attach (joins.h);
 *   - STATS (a known entry only): server_take_stats;
 *   - STATUS: the hop's;
 *   - a RESULTS or HEARTBEAT from a peer not alive (after it) gets WHO,
 *     so that it says HELLO again;
 *   - DRAIN: a live sender gets no more tasks (its first: hop.drain),
 *     and the answer goes to anyone, after every task sent to it (one
 *     connection keeps their order), so that once it has it none is on
 *     its way;
 *   - BYE: a live sender left (hop.lost with left); a message only a hop
 *     sends: bad.
 * A live sender is heard before its message is handled (server_heard; a
 * RESULTS counts towards its settle wait) and made due after it, with
 * its connection noted (liveness_conn). */
void server_on_frames(server_t *s, server_msg_t *m);
/* The messages waiting on the hop's socket (cfg.io.recv), up to
 * SERVE_RECV_BURST: each a routing id frame, then its body, into the
 * hop's place (hop.rx_new), through server_on_frames. One with no body
 * is malformed (server_bad). */
void server_recv(server_t *s);
/* A STATS frame from p (alive or not): parsed, the hop's checks
 * (hop.stats_check), then its runs and busy time (and a relay's TMs) are
 * noted, and a live p's credit follows the capacity it says: a relay's
 * what its TMs can have (spits_relay_cap), a TM's the counts of the plan
 * it made by the job's resources, when it says both; then the hop's
 * (hop.stats, with what the check parsed; released after, taken or
 * not). A bad one, or a TM's capacity no HELLO may have, is
 * counted (server_bad) and changes nothing. Also for a STATS that comes
 * while the job ends (server_end_t.stats). */
void server_take_stats(server_t *s, server_peer_t *p, zmq_msg_t *body);

/* A new phase began (server_set_job said it; the scheduler holds none
 * of the last one's copies): every live peer whose connection is not
 * gone gets PHASE, the last joined first. */
void server_send_phase(server_t *s);

/* The job is over: what router_end (serving/router.h) needs of the
 * live peers, from server_end_peers. Each live peer's first BYE marks it
 * ended and goes to bye (NULL: nothing more; it may make p leave the live
 * set); a STATS of a live peer not ended yet goes to stats (NULL:
 * dropped). It must outlive the router_end call. */
typedef struct {
    server_t *s;
    void (*bye)(void *arg, server_peer_t *p);
    void (*stats)(void *arg, server_peer_t *p, zmq_msg_t *body);
    void *arg;
} server_end_t;

router_peers_t server_end_peers(const server_end_t *e);

/* A malformed message (why) was dropped: counted, and said at most
 * every 10 s (a hostile peer must not flood the log), then hop.bad. */
void server_bad(server_t *s, const char *why);
/* buf to p (more: frames follow): 0, or -1 with errno, p marked. */
int server_send(server_t *s, server_peer_t *p, const void *buf, size_t len, int more);
/* As server_send, b's bytes, which may move into libzmq without a copy
 * (router_send_buf): once it returns 0, b holds nothing to read (its
 * capacity stays, for the next message). */
int server_send_buf(server_t *s, server_peer_t *p, spits_buf_t *b, int more);
/* The serve loop (above). The hop calls it only while it may serve. */
void server_serve(server_t *s);
/* Judges every live peer; a heartbeat goes to the quiet ones (its
 * header: hb, SPITS_HDR_SIZE bytes), the silent ones are lost. The next
 * is due rules.tick_ms from now (server_tick_due). */
void server_tick(server_t *s);
/* Peers whose connection is gone are lost, once no message waits to be
 * read or SERVE_REAP_WAIT_MS passed since the first was marked (force:
 * now). */
void server_reap(server_t *s, int force);
/* The n CANCELs c (the scheduler's: sched_take_cancels) of wire phase
 * wire go to the peers holding the copies (cancels.h; by_hash: the peers
 * know a task by its hash). Returns the copies named in the messages
 * that went. */
size_t server_cancels(server_t *s, uint32_t wire, sched_cancel_t *c, size_t n, int by_hash);
/* Every copy the live peers hold is cancelled, as server_cancels (a
 * hop's drain: a TM hands its queued copies back, a relay all). The
 * copies named; a peer's that no memory could list run on. */
size_t server_cancel_held(server_t *s, uint32_t wire, int by_hash);

#ifdef SPITS_SELFTEST
int server_selftest(void);
#endif

#endif
