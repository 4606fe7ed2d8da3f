/*
 * tmtable.h - the JM's registry of Task Managers: a peertab (serving/
 * peertab.h, which the relay uses too) of jm_tm_t, keyed by routing id,
 * and what the JM adds to it.
 *
 * Its size follows the TMs alive, not the TMs ever seen (peertab.h): the
 * live TMs are a dense set, which the dispatcher's loops walk; a dead TM
 * (lost or left) keeps its entry, so a re-attach is known as one, until
 * keep_dead newer TMs died: then the oldest dead entry is evicted (its
 * slot number is reused), its counters are added to the evicted totals
 * here, and, if it was lost, a fingerprint of its routing id is kept (up
 * to JM_TMTAB_LOST_MAX of them) so that its return still counts as a
 * re-attach of a lost TM (peertab_take_lost).
 *
 * Table mechanics are peertab_*'s (find, set_alive, live_count, live_at,
 * slots, at, take_lost); this file adds the JM's entry, its creation and
 * what its eviction and destruction do. Owned by the dispatcher thread.
 */
#ifndef SPITS_TMTABLE_H
#define SPITS_TMTABLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "constants.h"
#include "joins.h"
#include "liveness.h"
#include "peertab.h"
#include "scheduler.h"
#include "server.h"

#define JM_TMTAB_KEEP_DEAD SERVE_KEEP_DEAD   /* the dispatcher's keep_dead */
#define JM_TMTAB_LOST_MAX (1u << 18) /* fingerprints of evicted lost TMs */

/* A TM's entry, in parts by concern; each part says who writes it. */

/* Who it is: members.c from its HELLO (a relay's STATS: behind); its
 * routing id and slot are the table's (jm_tm_t.sv.peer). */
typedef struct {
    uint32_t log_host;       /* sv.proc.host's number in --joblog (joblog.h) */
    double joined;           /* wall clock */
    uint32_t reattaches;     /* its HELLOs after its first */
    char relay_ep[256];      /* a relay's (sv.proc.relay) endpoint for
                                TMs, escaped, cut */
    json_t *behind;          /* ...its TMs as of its last STATS, checked
                                and rebuilt (spits_behind_parse,
                                behind.h); NULL: none said. The entry's
                                own: replaced by members.c, freed with
                                the entry (tmtable.c) */
    long behind_alive;       /* ...its "alive" (0 without behind) */
} jm_tm_id_t;

/* Whether it is lost: members.c sets it, and clears it on a HELLO.
 * Whether it may be served (alive, gone, stalled, draining, settling),
 * its liveness and whether it answered the job's END are its
 * server_peer_t's (serving/server.h; draining: dispatch.c sets it). */
typedef struct {
    int lost;                /* declared lost and not back (members.c) */
} jm_tm_life_t;

/* What it did, beyond the scheduler's counts (sched_peer_t: sent, done,
 * failed, turn_*) and its process's runs and busy time (server_proc_t):
 * members.c, from its STATS. */
typedef struct {
    long running;            /* its tasks running and queued as its last */
    long queued;             /* ...STATS said; -1: unknown (not said yet,
                                an older TM, a relay) */
    json_t *workers;         /* a planned TM's workers as its STATS said
                                (wire.h worker_res, with runs and busy_s
                                added from worker_runs, worker_busy_s):
                                [{cpus, gpus, mem, runs, busy_s}...], or
                                NULL; the entry's own, freed with it */
} jm_tm_stats_t;

typedef struct jm_tm jm_tm_t;
struct jm_tm {
    server_peer_t sv;        /* the server's (serving/server.h): the
                                table's part, its credit and the
                                scheduler's counts (sv.sched), liveness,
                                settling; first */
    jm_tm_id_t id;
    jm_tm_life_t life;
    jm_tm_stats_t stats;
};

/* What the evicted entries add up to (report.json's TM totals; their
 * runs and busy time are the server's: server_stats). */
typedef struct {
    uint64_t tms, reattaches, sent, done, failed;
} jm_tm_totals_t;

/* A table of jm_tm_t; keep_dead >= 1: the dead entries kept before the
 * oldest is evicted, its counters added to *evicted (which outlives the
 * table). Lost ones evicted past JM_TMTAB_LOST_MAX: peertab_lost_forgotten. */
peertab_t *jm_tmtab_new(size_t keep_dead, jm_tm_totals_t *evicted);
/* Adds a TM, dead until set alive (rid must not be present). NULL: no
 * memory or rid too long. */
jm_tm_t *jm_tmtab_add(peertab_t *tab, const void *rid, size_t len);
/* qsort orders of an array of jm_tm_t pointers: the most done first; the
 * first joined first (ties by slot). */
int jm_tm_cmp_done_desc(const void *a, const void *b);
int jm_tm_cmp_joined(const void *a, const void *b);

#ifdef SPITS_SELFTEST
int jm_tmtab_selftest(void);
#endif

#endif
