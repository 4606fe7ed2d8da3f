/*
 * status.h - the live view of a running job (status.c): the snapshot the
 * dispatcher takes each tick, the STATUS answer, the progress line, the
 * JM's own cost.
 */
#ifndef SPITS_JM_STATUS_H
#define SPITS_JM_STATUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jm.h"

/* A snapshot the dispatcher takes of a running phase */
typedef struct {
    uint32_t phase;
    uint64_t generated;       /* task ids the generator has made */
    uint64_t total;           /* the phase's tasks, once gen_done */
    int gen_done;
    uint64_t resolved;        /* committed or failed since the JM started */
    uint64_t replayed;        /* committed from the journal (--resume) */
    uint64_t failed;          /* poison tasks */
    uint64_t sent, resent, duplicates, requeued;
    uint64_t running;         /* the TMs' tasks in their workers' hands... */
    uint64_t queued;          /* ...and the rest they hold (jm_tm_split) */
    uint64_t uncommitted;     /* resolutions received, not committed yet */
    int syncing;              /* ...the committer was syncing the journal */
    double rate;              /* resolutions per second, recent */
    size_t tms_alive;
    uint64_t tm_joins, tm_reattaches, tm_losses, tm_leaves, tms_lost_now;
} jm_live_t;
struct peertab;
/* The STATUS document. Its "tms" lists the live TMs, at most
 * JM_STATUS_TMS of them: past that, the notable ones first (relays,
 * draining ones, and those silent for quiet_ms or more), then the most
 * done, in the order they joined; "tms_alive" counts them all and
 * "tms_listed" those listed. So a document stays small, and quick to
 * build on the dispatcher, with 10,000 TMs. */
#define JM_STATUS_TMS 1000
/* And, in "tms_gone", the last TMs that left or were lost (each with
 * "gone": "left" or "lost"), for the dashboard's lanes. */
#define JM_STATUS_GONE 20
json_t *jm_status_json(const jm_t *jm, const jm_live_t *l,
                       const struct peertab *tms, int64_t now_ms, int64_t quiet_ms);
struct jm_tm;
/* A TM's held tasks (sent, no record back yet) split into those running
 * now and the rest (queued on it, in transit, results on their way): by
 * its last STATS, capped by what it holds; for a TM that does not say
 * (older, a relay, none yet), as many as it has workers run. */
void jm_tm_split(const struct jm_tm *t, uint64_t *running, uint64_t *queued);
/* A relay's row (STATUS's and report.json's TM lists) gets "relay": true,
 * its "endpoint" and "behind": {alive, joins, leaves, losses, truncated,
 * tms: [{host, pid, workers, runs, relay (only if true)}...]} (all 0 and
 * [] before its first STATS says); another TM's row is left as it is. */
void jm_status_relay_fields(json_t *row, const struct jm_tm *t);
/* A planned TM's row (the same lists, and STATUS's tms_gone) gets
 * "worker_res": [{cpus, gpus, mem, runs, busy_s}...], its workers in
 * order (tmtable.h stats.workers); another's is left as it is. */
void jm_status_worker_fields(json_t *row, const struct jm_tm *t);
/* The TMs behind the live relays, by their last STATS. */
uint64_t jm_status_behind_relays(const struct peertab *tms);
/* The progress line for l: on a terminal (tty) the bar redrawn in place
 * (term.h), elsewhere one plain "progress:" line. */
void jm_progress_print(const jm_live_t *l, int tty);
/* The progress line's timing and the recent rate; the dispatcher's. */
typedef struct {
    struct { int64_t t; uint64_t resolved; } samples[50];  /* 5 s of ticks */
    size_t nsamples, at;
    int64_t next;             /* when the next line is due; 0: none drawn */
    int tty;                  /* stderr is a terminal: one line, redrawn */
    int64_t every_ms;         /* otherwise a line this often (0: none) */
} jm_progress_t;
void jm_progress_init(jm_progress_t *p, double interval_s);
/* Notes resolved at monotonic time now; the rate over the last 5 s. */
double jm_progress_rate(jm_progress_t *p, int64_t now, uint64_t resolved);
/* Prints the line for l when one is due. */
void jm_progress_tick(jm_progress_t *p, const jm_live_t *l, int64_t now);
/* A phase ended: a redrawn line is drawn for l (the phase's last state)
 * and kept, or erased if l is NULL; the rate starts over. */
void jm_progress_end(jm_progress_t *p, const jm_live_t *l);
/* The JM's own cost now: rss_bytes, max_rss_bytes, cpu_user_s,
 * cpu_system_s (spits-status and report.json). */
json_t *jm_usage_json(void);

#endif
