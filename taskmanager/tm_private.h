/*
 * tm_private.h - the state of spits-tm's main thread, each part under
 * the file that owns it, and the functions its files share.
 *
 * Every field of tm_t, and of its parts below, is the main thread's:
 * no worker and no signal handler reads or writes it. The one exception
 * is tm_t.pool (tm.h), which the main thread shares with the workers
 * under the pool's own rules (its mutex and atomics).
 *
 * The files, top to bottom. A file calls only files below it, never one
 * above (tools/layers derives these edges from the objects; tests/
 * layers.sh checks that no circle comes back):
 *
 *   tm.c        main: options, set-up, the loop, tear-down
 *   simulate.c  --simulate: many virtual TMs, each a tm_t of its own,
 *               turned by one loop
 *   loop.c      the poll loop, signals, draining, the walltime
 *   protocol.c  the handlers of the JM's messages
 *   results.c   records from the outbox (outbox.c, the one owner of what
 *               goes back to the JM), kept until sent
 *   relay.c     --serve: a relay; the TMs behind it run the pool's tasks
 *               (serving/copies.h: its source and sink; relay_int.h)
 *   link.c      the socket to the JM: finding it, connecting, security,
 *               sending, heartbeats, looking for a JM that went silent,
 *               moving between the relays of --via and the JM
 *   linksay.c   what goes over that socket: any message, HELLO, STATS
 *   relay_peers.c  who is behind a relay (relay_int.h), for relay.c and
 *               for HELLO and STATS (linksay.c)
 *   job.c       the job this TM runs: its module and its phases
 *   plan.c      its workers planned by the job's resource request: how
 *               many, and the cores and GPUs each owns
 *   planview.c  that plan and each worker's work, as STATS tells the JM
 *   options.c   the command line, --end-time and the Slurm end time
 *   crash.c     a fatal signal named, and a crash file for the JM
 *   workers.c, outbox.c, isolate.c: the pool the workers share (tm.h)
 *
 * Who owns what: each section below is one file's. Only that file writes
 * its part of tm_t; the others call its functions, or read the fields
 * its section says they may. Where a lower file needs something of a
 * higher one (HELLO's pending results, in link.c), the higher file hands
 * it a function at set-up rather than being called by name.
 */
#ifndef SPITS_TM_PRIVATE_H
#define SPITS_TM_PRIVATE_H

#include <limits.h>
#include <stdint.h>

#include "jobdir.h"
#include "keys.h"
#include "resources.h"
#include "tm.h"
#include "wake.h"
#include "zmqutil.h"

typedef struct tm_state tm_t;
typedef struct tm_relay tm_relay_t;

/* ==== options.c: the command line
 *
 * Set before the loop, read-only after; every file reads tm_opts_t.
 */

/* --via's most relays: a TM tries each in turn, 3 s apiece
 * (TM_HOP_TIMEOUT_MS), so more would only lengthen a search. */
#define TM_VIA_MAX 8
#define TM_VIA_MAX_STR "8"

typedef struct {
    const char *jobdir, *connect, *module_override, *key_file;
    const char *via[TM_VIA_MAX]; /* --via: relays, tried in this order
                                    before the JM itself */
    int n_via;
    int insecure;
    double wait, reconnect, task_timeout, drain_timeout, end_margin;
    const char *end_arg;         /* --end-time as given (NULL: ask Slurm) */
    double end_wall;             /* walltime end, wall clock (0: none) */
    int workers, prefetch, isolate;
    int workers_given;           /* --workers was given: it caps a plan */
    int prefetch_given;          /* --prefetch was given (else = workers) */
    const char *gpus;            /* --gpus LIST|auto|none (NULL: auto) */
    int verbosity;               /* -v and -q */
    int check_only;              /* --check-options: exit after checking */
    int simulate;                /* --simulate K: K virtual TMs (0: off) */
    double sim_task;             /* --sim-task-time: a virtual run, seconds */
    double sim_churn;            /* --sim-churn: mean life, seconds (0: none) */
    int sim_kill;                /* --sim-kill: percent killed (-1: unset) */
    const char *serve;           /* --serve ENDPOINT: be a relay (relay.c) */
} tm_opts_t;

/* --simulate's largest K: about five descriptors each (the socket, its
 * monitor's pair, the connection), under a 20,000 descriptor limit. */
#define TM_SIMULATE_MAX 3500
#define TM_SIMULATE_MAX_STR "3500"

/* Parses the command line into opts. Returns -1 to go on, or the exit
 * status: 0 after --help or --version, 2 after a usage error (printed). */
int tm_opts_parse(tm_opts_t *opts, int argc, char **argv);
/* The defaults that depend on other options, and the Slurm job's end. */
void tm_opts_complete(tm_opts_t *opts);

/* ==== job.c: the job this TM runs, its module and phases
 *
 * Written by job.c only, but for shared, which simulate.c sets when it
 * makes a virtual TM. Read: the current phase (protocol.c, relay.c), the
 * job's id and join count (link.c, results.c).
 */

/* A phase's own fields are read by workers too, but never change after
 * it is made. */
typedef struct {
    char job_id[64];
    unsigned joined;             /* jobs joined: bumped when the JM runs
                                    another job (tm_phase_t.job) */
    char module_path[PATH_MAX];
    spits_module_t *mod;
    spits_module_t **shared;     /* --simulate: the process's one module
                                    (loaded by the first TM to join; the
                                    harness frees it), or NULL */
    tm_phase_t *phases;          /* every phase seen, newest first */
    tm_phase_t *current;
    char refused[512];           /* why this TM refused the JM's job (its
                                    BYE says so), or "" */
    /* What jm.json announces (tm_job_expect), for a TM that starts its
     * workers before it joins (tm.c): "" without a job dir. */
    char expect_module[PATH_MAX];
    char expect_hash[65];
    spits_res_req_t expect_req;
} tm_job_t;

/* Joins job_id (WELCOME): loads the module the JM names if its hash is
 * want_hash, the first time; a new job drops the old one's tasks. Returns
 * 0, or -1 (logged) when this TM cannot run it. */
int tm_job_join(tm_t *tm, const char *job_id, const char *module,
                const char *want_hash);
/* Makes phase wire (argv a JSON array) the current one. Returns 0, or
 * -1 (logged) when out of memory. */
int tm_job_enter_phase(tm_t *tm, uint32_t wire, json_t *argv);
/* The job jm.json announces (link.c): what HELLO says we expect, and
 * the module and request the workers may start with before it. */
void tm_job_expect(tm_job_t *job, const spits_announce_t *a);
/* Before HELLO: loads the module jm.json announces, if its hash is the
 * announced one. 0, or -1 (said at debug level only: WELCOME's
 * tm_job_join tries again and says why). */
int tm_job_preload(tm_t *tm);
/* Refuses the JM's job: says why, and keeps it for BYE. Returns -1. */
int tm_job_refuse(tm_t *tm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tm_job_free(tm_job_t *job);
/* The current phase's id on the wire (0: none yet). */
static inline uint32_t tm_job_wire(const tm_job_t *job)
{
    return job->current ? job->current->wire : 0;
}

/* ==== link.c: the connection to the JM
 *
 * Written by link.c only; protocol.c tells it what the JM said through
 * its functions. The exceptions are context, the ZeroMQ context, which
 * the file that makes the tm_t (tm.c, simulate.c) owns and sets before
 * tm_link_init, and live.last_look (loop.c, as the loop begins). Read:
 * the socket (loop.c, protocol.c, simulate.c), the endpoints and names
 * for log lines, max_task, live.last_stats and status.result_parts
 * (results.c), keys and context (relay.c); tm_link_ready and
 * tm_link_relayed (below, after tm_t) say what state it is in. Each part
 * of tm_link_t says who reads it.
 */

/* How long a hop (a --via relay, or the JM) has to say WELCOME, from
 * connecting to it or losing it, before the TM moves on to the next; and
 * how long one that completed the handshake on this connection but has
 * not answered yet (a relay of a busy machine, or one still waiting for
 * its own upstream) has, before its first WELCOME on it. */
#define TM_HOP_TIMEOUT_MS 3000
#define TM_HOP_PATIENCE_MS 15000
/* Each round of hops that all failed doubles both, up to this many
 * times (3 s, 6 s, 12 s, 24 s): a machine slow enough that no handshake
 * completes in 3 s still gets one in, and a TM whose hops are all down
 * asks less often. A WELCOME starts them over. */
#define TM_HOP_DOUBLINGS_MAX 3

/* Where the connection to the JM is. */
enum { TM_CONNECTING, TM_READY, TM_LOST };

typedef uint64_t (*tm_link_pending_fn)(const tm_t *tm);

/* The hops (opts.via's relays in order, then the JM): hop is the current
 * one's index (opts.n_via: the JM). With relays, a hop that has not said
 * WELCOME within TM_HOP_TIMEOUT_MS of since (when it was connected to, or
 * lost) is left for the next, round and round. Written by link.c; the
 * endpoints read for log lines (loop.c, protocol.c, relay_peers.c), hop
 * by tm_link_relayed. */
typedef struct {
    char endpoint[512];          /* the current hop's: a relay's or jm_endpoint */
    char jm_endpoint[512];       /* the JM's own (jm.json's, or --connect) */
    int hop;
    int rounds;                  /* full rounds without a WELCOME (each
                                    doubles the wait: TM_HOP_DOUBLINGS_MAX) */
    int64_t since;
    int up;                      /* this socket's handshake succeeded... */
    int welcomed;                /* ...and a WELCOME came over it */
} tm_link_hops_t;

/* Where the connection is, and what the JM said of it. Written by link.c;
 * state read by any file through tm_link_ready, welcomed by loop.c,
 * protocol.c and simulate.c, attach by protocol.c, result_parts by
 * results.c. */
typedef struct {
    int state;                   /* TM_CONNECTING, TM_READY or TM_LOST */
    int welcomed;                /* a JM has ever said WELCOME */
    int result_parts;            /* this hop's WELCOME said it takes
                                    results as parts (wire.h) */
    long attach;                 /* outages so far, said in each HELLO: the
                                    JM tells a new one from a queued copy */
    int hello_waits;             /* the last HELLO found no connection
                                    (ZMQ_IMMEDIATE): it goes as soon as
                                    the handshake succeeds */
} tm_link_status_t;

/* Timers and liveness: when (tm->now) the JM was last heard from; we last
 * sent anything, HELLO, STATS; we last read jm.json. Written by link.c
 * (last_heard and fd by tm_link_heard, inline), and last_look by loop.c
 * as the loop begins; last_stats read by results.c. */
typedef struct {
    int64_t last_heard, last_sent, last_hello, last_stats, last_look;
    int64_t heartbeat_ms;        /* send something at least this often */
    int64_t lost_ms;             /* a JM silent this long is looked for */
    int fd;                      /* the connection its last message came
                                    over (spits_tcp_quiet_ms), or -1 */
    int64_t busy_logged_at;      /* "silent, but its connection is busy" */
} tm_link_live_t;

/* Refused handshakes (security, a stale key). Written and read by link.c
 * only. */
typedef struct {
    uint64_t count;              /* handshakes refused since joining */
    int64_t logged_at;           /* when the last was logged */
    int64_t mismatch_since;      /* tm.key and jm.json disagree since */
    int64_t since;               /* a first handshake was refused (with a
                                    job dir: the error waits for the job's
                                    end to be ruled out) */
    uint16_t event;              /* ...the monitor's event */
} tm_link_refused_t;

typedef struct {
    tm_link_pending_fn pending;  /* results not sent yet, for HELLO */
    void *context, *socket;      /* ZeroMQ: the DEALER socket to the JM */
    void *monitor;               /* the socket's monitor: failed handshakes
                                    and dropped connections */
    unsigned monitor_gen;        /* makes each monitor's endpoint unique */
    spits_keys_t keys;           /* CURVE: the job's server key, client pair */
    long long max_task;          /* the JM's largest task or result */
    char routing_id[32];         /* how the JM knows us after a reconnect */
    char host[256];
    tm_link_hops_t hops;
    tm_link_status_t status;
    tm_link_live_t live;
    tm_link_refused_t refused;
} tm_link_t;

/* Our name (host, routing id) and the link's first timings; pending is
 * how HELLO learns the results not sent yet (results.c's, given by the
 * file that sets the TM up: link.c is below results.c). */
void tm_link_init(tm_t *tm, tm_link_pending_fn pending);
/* Waits for DIR/jm.json; returns 0, -1 when the job is already over, or
 * an exit status. */
int tm_link_find_jm(tm_t *tm);
/* (Re)makes the socket and connects it to link.hops.endpoint. */
int tm_link_connect(tm_t *tm);
int tm_link_send(tm_t *tm, const void *buf, size_t len);
/* A first frame then its parts (spits_parts_send_buf: 0, -1 not taken,
 * -2 cut; once taken, first holds nothing to read). */
int tm_link_send_parts(tm_t *tm, spits_buf_t *first, spits_parts_t *parts);
void tm_link_send_hello(tm_t *tm);
/* A lost JM answers again (tm_link_heard, below). */
void tm_link_found(tm_t *tm);
/* WELCOME's max_task_bytes: above our socket's limit, the limit is
 * raised and the socket remade (1, or -1 when it cannot be); else 0. */
int tm_link_raise_max(tm_t *tm, long long max_task);
/* WELCOME was taken: the JM's heartbeat, whether it takes our results as
 * parts (parts_to names our routing id), and the link is ready. */
void tm_link_welcomed(tm_t *tm, long long heartbeat_ms, const char *parts_to);
/* WHO: the hop does not know us (it restarted): HELLO again, and wait
 * for its WELCOME as after a loss. */
void tm_link_asked_who(tm_t *tm);
void tm_link_send_stats(tm_t *tm);
/* The STATS of a planned TM as it joins: with what each worker owns. */
void tm_link_send_join_stats(tm_t *tm);
/* Acts on the monitor's events: a dropped connection or a bad handshake. */
void tm_link_on_monitor(tm_t *tm);
/* Heartbeats, a silent JM, looking for it again, HELLO retries. */
void tm_link_timers(tm_t *tm);
/* What to add to "no job manager answered" (jobdir.h
 * spits_jobdir_gone_hint, by DIR/jm.json as it is now); "" with --connect. */
const char *tm_link_gone_hint(tm_t *tm, char *buf, size_t len);
/* A first handshake was refused (and not yet called an error): says why,
 * as an error, and returns 1; else 0. */
int tm_link_refusal(tm_t *tm);
/* Says BYE (with the last STATS) if say_bye, and closes the socket. */
void tm_link_close(tm_t *tm, int say_bye);
/* Closes the socket at once, dropping what it has not sent: the JM sees
 * what a TM killed with SIGKILL leaves (simulate.c). */
void tm_link_abandon(tm_t *tm);
/* Closes the monitor (the context is the caller's). */
void tm_link_destroy(tm_t *tm);

/* ==== results.c: records taken from the outbox, not sent yet
 *
 * Written by results.c only. Read: how many wait (loop.c, simulate.c).
 */

typedef struct {
    tm_seg_t *segs;
    size_t n, cap;
} tm_results_t;

/* Takes the outbox's records into tm->results; stops the TM (done -1,
 * logged) if the pool failed or out of memory. */
void tm_results_collect(tm_t *tm);
/* Sends what the link takes now; the rest waits. */
void tm_results_send(tm_t *tm);
/* Records of the current job taken but not sent yet (HELLO's pending;
 * given to tm_link_init). */
uint64_t tm_results_pending(const tm_t *tm);
void tm_results_free(tm_results_t *results);

/* ==== plan.c: the workers planned by the job's resource request
 *
 * Written by plan.c as the TM first joins a job; link.c reads workers
 * and slots (HELLO, STATS) once planned is set.
 */

typedef struct {
    int planned;                 /* a request came, and the pool follows it */
    spits_res_req_t req;         /* the request planned by */
    int workers, slots;          /* what the plan allows, and with prefetch */
    tm_worker_res_t *res;        /* worker i's cores, GPUs and variables */
} tm_plan_t;

/* WELCOME's request as the TM first joins job: finds what
 * this TM has, reshapes the pool (tm.h) to as many workers as every
 * resource allows and says why. Returns 0; -1 when it cannot run a
 * worker (refusal gets why, in one line, unlogged: the caller refuses
 * the job with it) or on an error (logged; refusal is "").
 */
int tm_plan_apply(tm_t *tm, const char *job, const spits_res_req_t *req,
                  char *refusal, size_t len);
/* A later WELCOME's request (of a job joined again, or of the next job
 * in the job dir): the workers stay as planned, so a request that is not
 * the one they were planned by (none, if the first job asked nothing) is
 * refused. 0, or -1 with refusal set. */
int tm_plan_same(const tm_t *tm, const char *job, const spits_res_req_t *req,
                 char *refusal, size_t len);
void tm_plan_free(tm_plan_t *plan);

/* ==== planview.c: the plan as STATS tells it (wire.h worker_res)
 *
 * Main thread; reads the plan and the pool's per-worker counts.
 */

/* Each listed worker's cores, GPUs and memory: STATS's worker_res (a new
 * reference; NULL without memory). Of a planned TM only. */
json_t *tm_planview_res(const tm_plan_t *p);
/* Adds worker_runs and worker_busy_s to stats, if tm planned its workers. */
void tm_planview_counts(const tm_t *tm, json_t *stats);

/* ==== protocol.c: the JM's messages
 *
 * Written and read by protocol.c only.
 */

/* Tasks of a TASKS message are queued this many at a time. */
#define TM_TASKS_CHUNK 256

typedef struct {
    tm_item_t items[TM_TASKS_CHUNK];   /* scratch for a TASKS message */
    uint64_t *cancel_ids;        /* scratch for one CANCEL message */
    size_t cap_cancel;
    uint64_t bad;                /* malformed messages dropped */
    int64_t bad_logged_at;
    int64_t oom_logged_at;       /* when tasks last went back for memory */
} tm_proto_t;

void tm_proto_on_message(tm_t *tm, zmq_msg_t *msg);
void tm_proto_free(tm_proto_t *proto);

/* ==== loop.c: the poll loop, signals and leaving early
 *
 * tm_drain_t is written by loop.c (tm_loop_drain, the walltime), all on
 * the main thread.
 * Read: drain.active, a flag, by the files that act on a drain: those
 * above (tm.c, simulate.c) and, as a read only, protocol.c (no more
 * tasks), link.c (a longer linger for the last results) and relay.c.
 * protocol.c also sets drain.acked, when the JM's answer to DRAIN comes.
 */

/* (The signal handler only sets loop.c's tm_signal.) */
typedef struct {
    int active;                  /* a drain began: take no more tasks */
    int64_t deadline;            /* the drain ends by then, done or not */
    int64_t end_ms;              /* walltime end, monotonic ms (0: none) */
    int acked;                   /* the JM answered our DRAIN: every task
                                    it sent us has arrived (set by
                                    protocol.c), or none was sent */
    int64_t ack_by;              /* ...we leave without it by then */
} tm_drain_t;

/* SIGTERM and SIGINT start a drain (woken through wake_fd). */
void tm_loop_catch_signals(int wake_fd);
/* Before wake_fd is closed: signals wake nothing from now on. */
void tm_loop_release_signals(void);
/* Runs until the job is over or a drain ends; returns the exit status.
 * It is tm_loop_begin, then tm_loop_turn after each poll. */
int tm_loop_run(tm_t *tm);
/* The first HELLO; --wait's clock for the JM's first answer starts, and
 * the walltime end (--end-time) is set on the loop's clock. */
void tm_loop_begin(tm_t *tm);
/* One turn, once the socket may have messages: the monitor's events (if
 * monitor), the JM's messages, a signal, the walltime, results out, the
 * end of a drain, the link's timers. Returns 1 when the TM is to leave
 * (tm->done says how), else 0. */
int tm_loop_turn(tm_t *tm, int monitor);
/* Starts a drain (if none is under way), as SIGTERM does. */
void tm_loop_drain(tm_t *tm, const char *why);
/* 1 once SIGTERM or SIGINT came. */
int tm_loop_signalled(void);

/* ==== relay.c: --serve (each function takes the tm_t whose relay it is)
 *
 * Its state is its own (relay_int.h); tm_t holds only the pointer. What
 * it tells upstream is relay_peers.c's.
 */

/* Binds --serve's endpoint with the job's server key (after the link's
 * keys are read) and makes the pool remote. NULL after saying why. */
tm_relay_t *tm_relay_new(tm_t *tm);
/* Closes the socket; with job_over, the TMs behind are told (END) first. */
void tm_relay_destroy(tm_relay_t **r, int job_over);
/* The socket TMs talk to, and its ZAP handler's (NULL: --insecure), for
 * the loop's poll. */
void *tm_relay_socket(const tm_relay_t *r);
void *tm_relay_zap_socket(const tm_relay_t *r);
/* One turn: their messages, tasks out to those with room, heartbeats and
 * losses. Records go to the outbox (results.c sends them). */
void tm_relay_turn(tm_t *tm);
/* Upstream's TASKS hdr, its records from reader, of the current phase
 * (each holds a reference to rx): held and sent down, or handed back at
 * once when no TM is behind or the relay serves another phase. Returns
 * how many: all. */
size_t tm_relay_take(tm_t *tm, const spits_hdr_t *hdr, spits_reader_t *reader, spits_rx_t *rx);
/* Upstream said WELCOME or PHASE (body: its JSON): kept for the TMs
 * behind, who get PHASE too when the phase changed. */
void tm_relay_on_job(tm_t *tm, int type, uint32_t phase, json_t *body);
/* Upstream cancels copies of the current phase: those a TM behind holds
 * are cancelled there (it answers each with a record). */
void tm_relay_cancel(tm_t *tm, const uint64_t *ids, size_t n);
/* The relay drains: the TMs behind hand back what they have queued. */
void tm_relay_drain(tm_t *tm);
/* For HELLO and STATS upstream (link.c): the workers and slots behind us;
 * the "relay" object of HELLO (new reference); whether capacity changed
 * (since_last: ms since the last STATS); and STATS' fields (runs, busy_s,
 * workers, slots, behind), set into stats. */
void tm_relay_capacity(const tm_relay_t *r, int *workers, int *slots);
json_t *tm_relay_hello_json(const tm_relay_t *r);
int tm_relay_stats_due(const tm_relay_t *r, int64_t since_last);
void tm_relay_stats(tm_relay_t *r, json_t *stats);

/* ==== crash.c, simulate.c
 *
 */

/* Installs the fatal-signal handler (libspits/crash.h); with --jobdir, it
 * writes DIR/crashes/HOST-PID too, for the JM. */
void tm_crash_setup(tm_t *tm);

/* spits-tm --simulate K: runs K virtual TMs (opts completed); returns the
 * exit status. */
int tm_sim_main(const tm_opts_t *opts);

/* ==== tm.c: the main thread's state
 *
 * The parts above are their files'; tm.c and simulate.c, which make a
 * tm_t, set the rest up (the context, the pool, wake_fd).
 */

/* One, in main's frame (or one per virtual TM: simulate.c). done may
 * be set by any file to stop the TM (1: exit 0, -1: exit 1); the loop
 * acts on it. The parts above are their files'. */
struct tm_state {
    tm_opts_t opts;
    tm_link_t link;
    tm_job_t job;
    tm_results_t results;
    tm_proto_t proto;
    tm_drain_t drain;
    tm_plan_t plan;
    int64_t now;                 /* the loop's clock, ms, read once a turn */
    int64_t first_deadline;      /* the JM must have answered by then */
    int done;                    /* 1: leave, exit 0; -1: leave, exit 1 */
    int job_over;                /* ...because the job is over (END, or
                                    report.json) */
    tm_relay_t *relay;           /* --serve: the TMs behind us (relay.c) */
    tm_pool_t pool;              /* shared with the workers (tm.h) */
    int pool_started;            /* workers run (from the first WELCOME,
                                    or before HELLO: pool_early) */
    int pool_early;              /* they started before HELLO, from jm.json
                                    (tm.c), and no WELCOME came yet */
    int wake_fd;                 /* the eventfd workers and signals write */
};

/* link.c's, inline: every message the JM sends passes here. A message
 * came (over connection fd, or -1): the JM is heard, and a lost one
 * answers again. */
static inline void tm_link_heard(tm_t *tm, int fd)
{
    tm->link.live.last_heard = tm->now;
    tm->link.live.fd = fd;
    if (tm->link.status.state == TM_LOST)
        tm_link_found(tm);
}

/* Read by any file: the link's state (link.c's). */
static inline int tm_link_ready(const tm_t *tm)
{
    return tm->link.status.state == TM_READY;
}
/* 1 when the link is on a --via relay, 0 when on the JM itself; which
 * one is link.hops.hop, at link.hops.endpoint. (A relay's own upstream, made of
 * this same code, moves between its hops alike.) */
static inline int tm_link_relayed(const tm_t *tm)
{
    return tm->link.hops.hop < tm->opts.n_via;
}

/* Frees what the set-up and the loop made, once no worker runs and the
 * socket is closed (tm_link_close): main's tear-down, and the fuzz
 * target's (tests/fuzz/fuzz_tm.c). */
static inline void tm_free(tm_t *tm)
{
    tm_link_destroy(tm);
    spits_zmq_ctx_term(tm->link.context);
    tm_pool_destroy(&tm->pool);
    tm_plan_free(&tm->plan);   /* (after the workers: they borrow it) */
    tm_results_free(&tm->results);
    tm_proto_free(&tm->proto);
    tm_job_free(&tm->job);
    spits_wake_close(&tm->wake_fd);
}

#endif
