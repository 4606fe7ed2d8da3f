/*
 * members.c - the TMs of a job as the dispatcher sees them: joining and
 * re-attaching (HELLO, answered with WELCOME), reporting their workers'
 * busy time and, for a relay, its capacity now (STATS; the part both
 * hops share is serving/server.c's server_on_stats), and being lost
 * (silence, a failed send) or leaving (BYE). A lost or departed TM's
 * copies go back to the scheduler; a TM that says HELLO again after an
 * outage re-attaches as the same TM (its routing id, kept for the life
 * of its process). Each of these is counted once, as it happens (the
 * counts of report.json). A TM numbers its outages ("attach" in HELLO),
 * so the copies of one HELLO it queued to a stopped JM are told from a
 * new outage. Runs on the dispatcher thread.
 */
#include <limits.h>
#include <stdio.h>

#include "behind.h"
#include "crashes.h"
#include "dispatch_int.h"
#include "escape.h"
#include "joblog.h"
#include "joins.h"
#include "log.h"
#include "phase.h"
#include "util.h"
#include "wire.h"

/* What a TM gone means to the JM: its workers and the timeline. */
static void drop(jm_disp_t *d, jm_tm_t *t, jm_tl_kind_t why)
{
    d->fleet.alive_workers -= t->sv.sched.credit.workers;
    jm_timeline_event(&d->timeline, why, t);
    disp_check_sched(d);
}

/* (server_hop_t.lost without left) t was lost: the server took n copies
 * back. */
void members_lost(jm_disp_t *d, jm_tm_t *t, const char *why, size_t n)
{
    char crashed[320];
    /* A TM that died of a signal says so in its crash file. */
    if (jm_crashes_tm_lost(d->jm, t->sv.proc.host, t->sv.proc.pid, t->id.joined, crashed,
                           sizeof crashed))
        why = crashed;
    drop(d, t, JM_TL_LOST);
    t->life.lost = 1;
    d->st.tms_lost_now++;
    if (loglimit_allow(&d->logs.lost, d->clock.now))
        spits_info("%s %s:%ld lost (%s); %zu task(s) requeued",
                   t->sv.proc.relay ? "relay" : "TM", t->sv.proc.host, t->sv.proc.pid, why, n);
}

/* (server_hop_t.lost with left) t left on purpose (drained, done, or
 * refusing the job: refused, its BYE's reason), so it is not lost. */
void members_left(jm_disp_t *d, jm_tm_t *t, const char *refused, size_t n)
{
    char safe[512];
    drop(d, t, JM_TL_LEAVE);
    if (refused) {
        d->st.tm_refusals++;
        /* (escaped: cut between characters, valid UTF-8 for STATUS) */
        spits_escape(d->st.last_refusal, sizeof d->st.last_refusal, refused);
        spits_warn("%s %s:%ld refused the job: %s; %zu task(s) requeued",
                   t->sv.proc.relay ? "relay" : "TM", t->sv.proc.host, t->sv.proc.pid,
                   spits_escape(safe, sizeof safe, refused), n);
    } else if (loglimit_allow(&d->logs.left, d->clock.now)) {
        spits_info("%s %s:%ld left; %zu task(s) requeued",
                   t->sv.proc.relay ? "relay" : "TM", t->sv.proc.host, t->sv.proc.pid, n);
    }
}

/* HELLO said whether t is a relay (endpoint: where its TMs connect, or
 * NULL). A TM that is no relay (now) has no TMs behind it. */
static void set_relay(jm_tm_t *t, const char *endpoint)
{
    spits_escape(t->id.relay_ep, sizeof t->id.relay_ep, endpoint ? endpoint : "");
    if (!endpoint) {
        json_decref(t->id.behind);
        t->id.behind = NULL;
        t->id.behind_alive = 0;
    }
}

/* "TM h:p <verb> with N worker(s)", or for a relay, "relay h:p <verb>,
 * serving TMs at X". */
static void log_hello(const jm_tm_t *t, const char *verb)
{
    if (t->sv.proc.relay)
        spits_info("relay %s:%ld %s, serving TMs at %s", t->sv.proc.host, t->sv.proc.pid, verb,
                   t->id.relay_ep);
    else
        spits_info("TM %s:%ld %s with %d worker(s)", t->sv.proc.host, t->sv.proc.pid, verb,
                   t->sv.sched.credit.workers);
}

/* A join (its first HELLO) or a re-attach (a later one, or the first
 * since the table forgot it, lost), counted and logged as which it is. */
static void count_hello(jm_disp_t *d, jm_tm_t *t, int first)
{
    if (first) {
        if (loglimit_allow(&d->logs.joined, d->clock.now))
            log_hello(t, "joined");
        return;
    }
    if (t->life.lost) {
        t->life.lost = 0;
        d->st.tms_lost_now--;
    }
    t->id.reattaches++;
    if (loglimit_allow(&d->logs.reattached, d->clock.now))
        log_hello(t, "re-attached");
}

/* (server_hop_t.add) The entry of a TM saying HELLO unknown to the
 * table: new, or lost so long ago that its entry was evicted (then its
 * return is a re-attach, and *first is 0). */
server_peer_t *members_hop_add(void *arg, const void *rid, size_t ridlen, int *first)
{
    jm_disp_t *d = arg;
    jm_tm_t *t = jm_tmtab_add(d->fleet.tab, rid, ridlen);
    if (!t)
        return NULL;   /* (its fingerprint, if any, is kept for its next HELLO) */
    int was_lost = peertab_take_lost(d->fleet.tab, rid, ridlen);
    t->life.lost = was_lost;
    *first = !was_lost;
    return &t->sv;
}

/* (server_hop_t.joined; ctx: its relay endpoint, or NULL) Who it is,
 * the fleet's counts, the timeline and the log line. */
void members_hop_joined(void *arg, server_peer_t *p, const server_join_t *j)
{
    jm_disp_t *d = arg;
    jm_tm_t *t = (jm_tm_t *)p;
    if (d->jm->joblog)
        t->id.log_host = jm_joblog_host(d->jm->joblog, t->sv.proc.host);
    set_relay(t, j->ctx);
    t->stats.running = t->stats.queued = -1;   /* (until its next STATS) */
    t->id.joined = spits_wall_time();
    d->fleet.alive_workers += t->sv.sched.credit.workers;
    if (d->fleet.alive_workers > d->st.peak_workers)
        d->st.peak_workers = d->fleet.alive_workers;
    jm_timeline_event(&d->timeline, JM_TL_JOIN, t);
    count_hello(d, t, j->first);
}

/* (server_hop_t.accept) HELLO (wire.h spits_hello_t; a relay, spits-tm
 * --serve, says "relay": {endpoint}, and its workers and slots may start
 * at 0 and change with its STATS): a relay says where its TMs connect. */
int members_hop_accept(void *arg, server_peer_t *p, const spits_hello_t *h, void **ctx,
                       const char **why)
{
    (void)arg, (void)p;
    const char *relay_ep = json_string_value(json_object_get(h->relay, "endpoint"));
    if (h->relay && !relay_ep) {
        *why = "HELLO with a relay without an endpoint";
        return -1;
    }
    *ctx = (void *)relay_ep;
    return 1;
}

/* A live TM's capacity as its STATS changed it (server_on_stats):
 * workers count in alive_workers as a HELLO's do. Its slots follow its
 * ask by credit_resize's rule (serving/credit.h), which keeps the
 * prefetch grown on top (serve.c grow_slots), since a relay says STATS
 * every few seconds. Copies it holds past its slots just get no company
 * until they come back. */
static void recount_workers(jm_disp_t *d, jm_tm_t *t, int before)
{
    d->fleet.alive_workers += t->sv.sched.credit.workers - before;
    if (d->fleet.alive_workers > d->st.peak_workers)
        d->st.peak_workers = d->fleet.alive_workers;
}

/* A planned TM's workers: what each owns, as it joins, and how busy
 * each was so far, from any STATS (checked by spits_stats_parse). */
static void set_workers(jm_tm_t *t, const spits_stats_t *st)
{
    if (st->worker_res) {
        json_decref(t->stats.workers);
        t->stats.workers = spits_worker_res_copy(st->worker_res);
    }
    for (size_t i = 0; i < json_array_size(st->worker_runs); i++) {
        json_t *w = json_array_get(t->stats.workers, i);
        if (!w)
            break;
        json_object_set(w, "runs", json_array_get(st->worker_runs, i));
        json_object_set(w, "busy_s", json_array_get(st->worker_busy, i));
    }
}

/* STATS: a TM's busy time, runs and capacity (server_on_stats: a
 * relay's capped by its "tms", or else by its behind's "alive"); the
 * TMs behind a relay ("behind"); a planned TM's worker_res and counts
 * (set_workers). Only from a TM in the table: spits_stats_t (wire.h),
 * and behind (behind.h). Anything out of range: the whole message is
 * dropped (server_take_stats). The check parses behind into *behind,
 * which the server hands to members_hop_stats and releases after. */
int members_hop_stats_check(void *arg, server_peer_t *p, json_t *body, spits_stats_t *st,
                            json_t **behind, const char **why)
{
    (void)arg, (void)p;
    const char *bad;
    if (spits_behind_parse(json_object_get(body, "behind"), behind, &bad) != 0) {
        *why = "STATS with a bad behind list";
        return -1;
    }
    if (st->tms < 0 && *behind)
        st->tms = (long)json_integer_value(json_object_get(*behind, "alive"));
    return 0;
}

void members_hop_stats(void *arg, server_peer_t *p, json_t *body, const spits_stats_t *st,
                       json_t *behind, int changed, int before)
{
    jm_disp_t *d = arg;
    jm_tm_t *t = (jm_tm_t *)p;
    /* (behind: members_hop_stats_check's of this body, or NULL) */
    (void)body;
    if (changed)
        recount_workers(d, t, before);
    t->stats.running = st->running;
    t->stats.queued = st->queued;
    if (!t->sv.proc.relay)
        set_workers(t, st);
    if (t->sv.proc.relay && behind) {
        json_decref(t->id.behind);
        t->id.behind = json_incref(behind);
        t->id.behind_alive = (long)json_integer_value(json_object_get(behind, "alive"));
    }
}

