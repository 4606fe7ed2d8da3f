/*
 * dispatch.h - the dispatcher as the main thread sees it (dispatch.c): its life,
 * the phase requests, and what it counted. Its own state is in
 * dispatch_int.h.
 */
#ifndef SPITS_JM_DISPATCH_H
#define SPITS_JM_DISPATCH_H

#include <jansson.h>
#include <stdint.h>

#include "jm.h"
#include "server.h"

typedef struct {
    sched_stats_t sched;      /* the scheduler's (sent, resent, duplicates,
                                 requeued, retried, crashed, timed_out,
                                 poison, done_evicted: serving/scheduler.h) */
    uint64_t cancelled;       /* copies cancelled after another committed */
    uint64_t adopted;         /* results a re-attached TM computed for tasks
                                 this JM had not sent yet (after --resume) */
    uint64_t adopt_dropped;   /* such results not adopted, their tasks run:
                                 no journaled checkpoint vouched for them */
    uint64_t stale;           /* results of an earlier phase */
    uint64_t bogus;           /* results for tasks never sent */
    uint64_t foreign_results; /* records relays forwarded for copies they
                                 were not sent (wire.h SPITS_REC_FOREIGN);
                                 no credit back for them */
    uint64_t bytes_out;       /* STATUS answers (the rest, bytes_in,
                                 tasks_as_parts and results_as_parts:
                                 the server's, jm_disp_server_stats) */
    /* TMs, counted per event; a TM is one spits-tm process, known by the
     * routing id it keeps for life (README: "Counting Task Managers").
     * Its joins, re-attaches, losses and leaves are the server's
     * (server_stats_t: jm_disp_server_stats). */
    uint64_t tm_refusals;     /* of which, refusing the job (a changed
                                 module, resources it cannot meet), with
                                 the reason */
    char last_refusal[512];   /* the latest refusal's reason ("": none) */
    uint64_t tms_lost_now;    /* TMs lost and not back (yet) */
    int64_t peak_workers;     /* most workers alive at once (each TM may
                                 claim up to SPITS_WORKERS_MAX) */
} jm_disp_stats_t;

jm_disp_t *jm_disp_new(jm_t *jm, char *err, size_t errlen);
const char *jm_disp_endpoint(const jm_disp_t *d);
/* Starts the dispatcher thread: 0, or -1 with errno set. */
int jm_disp_start(jm_disp_t *d);
int jm_disp_wake_fd(const jm_disp_t *d);
void jm_disp_phase_begin(jm_disp_t *d, jm_phase_t *p);
void jm_disp_phase_end(jm_disp_t *d);
void jm_disp_stop(jm_disp_t *d);
void jm_disp_destroy(jm_disp_t **d);
const jm_disp_stats_t *jm_disp_stats(const jm_disp_t *d);
/* What the dispatcher's server counted (bytes_in, bytes_out,
 * tasks_as_parts, part_bytes_out, results_as_parts; the TMs' joins, reattaches, losses, leaves). The dispatcher's thread writes them as messages
 * come: read them on that thread, or once jm_disp_stop has joined it. */
const server_stats_t *jm_disp_server_stats(const jm_disp_t *d);
#endif
