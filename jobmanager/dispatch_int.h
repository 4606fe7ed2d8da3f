/*
 * dispatch_int.h - the dispatcher's own state, shared by the files of the
 * dispatcher thread and by nothing else:
 *
 *   dispatch.c  the loop: sockets, receiving, timers, the main thread's
 *               requests (phase begin/end, finish), the dispatcher's life
 *   serve.c     tasks out and results in: what each TM with room is sent,
 *               results handed to the committer, cancels, window flow
 *   members.c   TMs joining (HELLO), reporting (STATS) and being lost
 *
 * Every field below the control block is the dispatcher thread's; the
 * main thread reaches the dispatcher only through the control block,
 * under ctl.lock (dispatch.c ctl_request), and the other threads through
 * the genq and the commitq (jm.h).
 */
#ifndef SPITS_JM_DISPATCH_INT_H
#define SPITS_JM_DISPATCH_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <zmq.h>

#include "adopt.h"
#include "conngen.h"
#include "backlog.h"
#include "committer.h"
#include "dispatch.h"
#include "jm.h"
#include "liveness.h"
#include "loglimit.h"
#include "phase.h"
#include "router.h"
#include "scheduler.h"
#include "server.h"
#include "status.h"
#include "stop.h"
#include "taskpool.h"
#include "timeline.h"
#include "tmtable.h"
#include "zap.h"

#define DISP_TRIM_MS 5000   /* free memory goes back at most this often */
#define DISP_LIVE_FAILED 100         /* poison tasks STATUS names */
#define DISP_LIVE_EVENTS 256         /* TM joins/leaves STATUS carries */
#define DISP_NO_TM_MS 10000          /* no TM yet: how to start one, said once */
#define MONITOR_EP "inproc://spits-jm-monitor"
#define SLOTS_MAX 65536                      /* adaptive prefetch's cap... */
#define SLOTS_BYTES (64u << 20)              /* ...and its cap in task bytes */
#define DISP_COMMIT_CHUNK 4096               /* resolutions per commitq push */

/* The sockets and what tells their connections apart: set by
 * jm_disp_new (dispatch.c), then only read (conngen's contents follow
 * the monitor's events, dispatch.c). */
typedef struct {
    void *zctx;
    router_listen_t l;               /* the TMs' socket (serving/router.h) */
    int wake_fd;
    conngen_t *conngen;              /* which connection each fd is now */
} disp_net_t;

/* Main thread <-> dispatcher requests, under lock (dispatch.c
 * ctl_request); the only part the main thread touches. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_int pending;
    jm_phase_t *begin;
    int end, stop, ack;
} disp_ctl_t;

/* The TMs as a whole: the table and what is counted over it
 * (members.c). */
typedef struct {
    peertab_t *tab;                  /* of jm_tm_t (tmtable.h) */
    jm_tm_totals_t evicted;          /* ...what its evicted entries did */
    int64_t alive_workers;           /* workers of the TMs alive now (64
                                        bits: 2,048 TMs may claim 2^31) */
    int no_tm_said;                  /* "start a TM with ..." was said */
} disp_fleet_t;

/* What serve.c keeps of the tasks it serves (which TMs are served next,
 * and the TASKS, are the server's: serving/server.h). */
typedef struct {
    uint64_t part_min;               /* tasks this large go as parts */
    jm_taskpool_batch_t pool_batch;  /* resolved tasks' cells, not yet
                                        handed back (the scheduler's
                                        release hook) */
} disp_serve_t;

/* Resolutions for the committer (serve.c): DISP_COMMIT_CHUNK at most,
 * of which n_rx point into one message. */
typedef struct {
    jm_commit_t *buf;
    size_t n, n_rx;
} disp_commit_t;

/* The window as last published to the generator (serve.c). */
typedef struct {
    uint64_t low, freed, taken, window;
} disp_pub_t;

/* The loop's clock and when each timer is due next (dispatch.c). */
typedef struct {
    int64_t now;
    int64_t trim_at;                 /* disp_trim: not before, */
    uint64_t gone_at_trim;           /* ...nor before TMs left since */
    int64_t started_ms;              /* when the loop started */
} disp_clock_t;

/* The last STATUS answer, encoded, and when it was built (dispatch.c). */
typedef struct {
    spits_buf_t buf;
    int64_t at;
} disp_status_t;

/* The first poison tasks, for STATUS: noted by serve.c, read by
 * dispatch.c; the committer's list (phase.h) is the committer thread's.
 * The list is made at the first (most jobs have none). */
typedef struct {
    struct disp_poison_entry {
        uint32_t phase;
        jm_failure_t f;
    } *list;                  /* DISP_LIVE_FAILED entries, or NULL */
    size_t n;
} disp_poison_t;

/* How often each kind of TM event is logged (members.c, dispatch.c). */
typedef struct {
    loglimit_t joined, reattached, lost, left, draining;
} disp_logs_t;

struct jm_disp {
    jm_t *jm;
    pthread_t thread;                /* the dispatcher's: the main thread */
    int started;                     /* ...starts and joins it */
    disp_net_t net;
    disp_ctl_t ctl;

    /* everything below: the dispatcher thread's own */
    jm_phase_t *phase;
    sched_t *sched;               /* the tasks from genq to resolution */
    jm_backlog_t backlog;            /* parts handed to libzmq (backlog.h) */
    int gen_done;                    /* the genq said done */
    jm_adopt_t *adopt;               /* a resumed phase's early results */
    uint64_t adopt_below;            /* only those of ids below it may be
                                        adopted (genq.verified) */
    uint64_t adopt_dropped;          /* this phase's that were not */
    uint64_t resolved_before;        /* resolutions of finished phases */
    int stopping;                    /* a signal stopped the job */

    disp_fleet_t fleet;
    server_t *srv;                   /* sends, serving, the tick, losses
                                        (serving/server.h; its hop:
                                        dispatch.c disp_hop) */
    disp_serve_t serve;
    disp_commit_t commit;
    disp_pub_t pub;
    disp_clock_t clock;

    /* what STATUS and report.json show (dispview.c reads them) */
    jm_live_t live;                  /* the phase as of the last tick */
    jm_progress_t progress;          /* the progress line, the rate */
    jm_timeline_t timeline;          /* for report.json */
    disp_status_t status;
    disp_poison_t poison;
    jm_disp_stats_t st;
    disp_logs_t logs;
};

/* The files of the dispatcher, top to bottom (each calls only those
 * below it; tools/layers checks):
 *   dispatch.c  the loop
 *   serve.c, members.c, dispview.c (the live snapshot, STATUS)
 *   tmio.c      sending, and the count of malformed messages */

/* Stops the job if the scheduler lost a task to a failed allocation. */
static inline void disp_check_sched(jm_disp_t *d)
{
    if (sched_broken(d->sched) && !atomic_load(&jm_abort))
        jm_fatal("out of memory in the scheduler (a task could not be "
                 "requeued); stopping the job");
}

/* tmio.c: a message to routing id rid (more: ZMQ_SNDMORE) not through
 * the server (a STATUS answer), its bytes counted; 0 or -1 with errno. */
int tmio_send_to(jm_disp_t *d, const void *rid, size_t ridlen,
                 const void *buf, size_t len, int more);
/* The job and its current phase (none: d->phase NULL), as the server's
 * WELCOME and PHASE say it (server_set_job): 0, or -1 when out of memory
 * (said; the server keeps the body it had). */
int tmio_set_job(jm_disp_t *d);

/* dispatch.c */
/* One message from a peer (rx: its body, whose reference this takes) */
void disp_on_message(jm_disp_t *d, zmq_msg_t *ridmsg, jm_rx_t *rx);
/* A phase starts or ends on the dispatcher thread (the main thread asks
 * through jm_disp_phase_begin/_end; tests/fuzz/fuzz_jm.c calls these) */
void disp_phase_begin(jm_disp_t *d, jm_phase_t *p);
void disp_phase_end(jm_disp_t *d);

/* serve.c */
/* The server's serve, after the backlog is told to the scheduler. */
void serve_tms(jm_disp_t *d);
/* The server's source and sink of tasks (server_hop_t): the generator's
 * queue, and TASKS messages built from the task pool's tasks. */
size_t serve_refill(void *d, size_t want);
void *serve_part_hold(void *d, sched_task_t *task);
void serve_part_done(void *data, void *task);
void serve_publish_window(jm_disp_t *d);
/* The server's RESULTS (server_hop_t.results; it->m->hop: the message's
 * jm_rx_t): results to the committer */
void serve_hop_results(void *d, server_peer_t *p, server_recs_t *it);
/* The scheduler's hooks (serving/scheduler.h): resolved tasks back to the
 * task pool, and, with d->adopt (a resumed phase), fresh tasks resolved
 * from the early results kept there. Set again as d->adopt changes. */
void serve_set_hooks(jm_disp_t *d);

/* dispview.c */
/* Takes the live snapshot (d->live): the other threads' counters under
 * their locks, once per tick */
void dispview_live_update(jm_disp_t *d);
/* The STATUS document (new reference; NULL: no memory) */
json_t *dispview_status_doc(jm_disp_t *d);

/* members.c */
int members_hop_accept(void *d, server_peer_t *p, const spits_hello_t *h, void **ctx,
                       const char **why);
int members_hop_stats_check(void *d, server_peer_t *p, json_t *body, spits_stats_t *st,
                            json_t **behind, const char **why);
void members_hop_stats(void *d, server_peer_t *p, json_t *body, const spits_stats_t *st,
                       json_t *behind, int changed, int before);
server_peer_t *members_hop_add(void *d, const void *rid, size_t ridlen, int *first);
void members_hop_joined(void *d, server_peer_t *p, const server_join_t *j);
void members_lost(jm_disp_t *d, jm_tm_t *t, const char *why, size_t n);
void members_left(jm_disp_t *d, jm_tm_t *t, const char *refused, size_t n);

#endif
