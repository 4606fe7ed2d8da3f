/*
 * dispview.c - what the dispatcher shows of the job: the live snapshot it
 * takes each tick (jm_live_t, status.h), the document a STATUS request
 * gets back (both on the dispatcher's thread, dispatch.c), and the TMs,
 * their totals and the timeline for report.json (report.c, once the
 * dispatcher has stopped). It reads the dispatcher's state
 * (dispatch_int.h) and changes none of it but the snapshot; the JSON of
 * each part is built below it (status.c, timeline.c, model.c).
 */
#include <stdlib.h>

#include "dispview.h"
#include "dispatch_int.h"
#include "failure.h"
#include "log.h"
#include "model.h"
#include "status.h"
#include "util.h"

/* --- the live view ----------------------------------------------------- */

/* Takes the live snapshot: counters of the other threads are read under
 * the genq lock, once per tick. */
void dispview_live_update(jm_disp_t *d)
{
    jm_live_t *l = &d->live;
    jm_phase_t *p = d->phase;
    if (!p)
        return;
    jm_genq_t *q = &p->genq;
    pthread_mutex_lock(&q->lock);
    l->generated = q->made;
    l->gen_done = q->done;
    l->total = q->total + p->st.replayed;
    l->resolved = q->resolved;
    pthread_mutex_unlock(&q->lock);
    /* (read after resolved, so never below it: both only grow) */
    pthread_mutex_lock(&p->cq.lock);
    l->uncommitted = p->cq.pushed - l->resolved;
    pthread_mutex_unlock(&p->cq.lock);
    l->syncing = atomic_load_explicit(&p->cq.syncing, memory_order_relaxed);
    l->phase = p->st.id;
    l->replayed = p->st.replayed;
    l->failed = d->st.sched.poison;
    l->sent = d->st.sched.sent;
    l->resent = d->st.sched.resent;
    l->duplicates = d->st.sched.duplicates;
    l->requeued = d->st.sched.requeued;
    l->running = l->queued = 0;
    l->tms_alive = peertab_live_count(d->fleet.tab);
    const server_stats_t *ss = server_stats(d->srv);
    l->tm_joins = ss->joins;
    l->tm_reattaches = ss->reattaches;
    l->tm_losses = ss->losses;
    l->tm_leaves = ss->leaves;
    l->tms_lost_now = d->st.tms_lost_now;
    for (size_t i = 0; i < peertab_live_count(d->fleet.tab); i++) {
        uint64_t running, queued;
        jm_tm_split(peertab_live_at(d->fleet.tab, i), &running, &queued);
        l->running += running;
        l->queued += queued;
    }
    l->rate = jm_progress_rate(&d->progress, d->clock.now, l->resolved);
}

/* The STATUS document: the live snapshot (status.c), and what the
 * dashboard draws besides: the timeline so far, the first poison tasks
 * and the performance model of the tasks run so far. */
json_t *dispview_status_doc(jm_disp_t *d)
{
    json_t *doc = jm_status_json(d->jm, &d->live, d->fleet.tab, d->clock.now,
                                 2 * server_rules(d->srv)->hb_ms);
    if (!doc)
        return NULL;
    if (!d->phase)
        json_object_set_new(doc, "state", json_string("between phases"));
    uint64_t resolved = d->resolved_before + (d->phase ? d->live.resolved : 0);
    json_t *failed = json_array(), *totals = jm_dispview_tm_totals_json(d, 0);
    for (size_t i = 0; failed && i < d->poison.n; i++)
        json_array_append_new(failed, jm_failure_json(d->poison.list[i].phase,
                                                      &d->poison.list[i].f));
    json_object_set_new(doc, "timeline", jm_timeline_json(&d->timeline, resolved,
                                                          DISP_LIVE_EVENTS));
    json_object_set_new(doc, "failed_tasks", failed);
    /* Why TMs left without running the job (spits-status says it: a job
     * waiting for TMs that refuse it waits for a reason). */
    if (d->st.tm_refusals)
        json_object_set_new(doc, "refusals",
                            json_pack("{s:I, s:s}", "count", (json_int_t)d->st.tm_refusals,
                                      "last", d->st.last_refusal));
    json_object_set_new(doc, "model", jm_model_json(&d->st, server_stats(d->srv),
        totals, json_object_get(doc, "jm"), resolved,
        json_number_value(json_object_get(doc, "elapsed_s")), NULL, 0));
    json_decref(totals);
    return doc;
}

/* --- report.json ------------------------------------------------------- */

json_t *jm_dispview_timeline_json(const jm_disp_t *d)
{
    return jm_timeline_json(&d->timeline, d->resolved_before, JM_TIMELINE_EVENTS);
}

/* The most TMs report.json lists one by one: those with the most tasks
 * done, in the order they joined. */
#define DISP_REPORT_TMS 1000

json_t *jm_dispview_tms_json(const jm_disp_t *d)
{
    json_t *a = json_array();
    char when[32];
    size_t n = 0, slots = peertab_slots(d->fleet.tab);
    jm_tm_t **v = malloc((slots ? slots : 1) * sizeof *v);
    if (!v) {
        spits_warn("out of memory listing the TMs for the report; "
                   "tm_totals still counts them");
        return a;
    }
    for (size_t s = 0; s < slots; s++)
        if ((v[n] = peertab_at(d->fleet.tab, s)))
            n++;
    if (n > DISP_REPORT_TMS) {
        qsort(v, n, sizeof *v, jm_tm_cmp_done_desc);
        n = DISP_REPORT_TMS;
    }
    qsort(v, n, sizeof *v, jm_tm_cmp_joined);
    for (size_t i = 0; i < n; i++) {
        jm_tm_t *t = v[i];
        spits_iso_time(t->id.joined, when, sizeof when);
        json_t *row = json_pack("{s:s, s:I, s:i, s:s, s:I, s:I, s:I, s:I, s:f, s:I}",
            "host", t->sv.proc.host, "pid", (json_int_t)t->sv.proc.pid, "workers", t->sv.sched.credit.workers,
            "joined", when, "reattaches", (json_int_t)t->id.reattaches,
            "sent", (json_int_t)t->sv.sched.sent,
            "done", (json_int_t)t->sv.sched.done, "failed", (json_int_t)t->sv.sched.failed,
            "busy_s", t->sv.proc.busy_s, "runs", (json_int_t)t->sv.proc.runs);
        jm_status_relay_fields(row, t);
        jm_status_worker_fields(row, t);
        json_array_append_new(a, row);
    }
    free(v);
    return a;
}

json_t *jm_dispview_tm_totals_json(const jm_disp_t *d, size_t listed)
{
    jm_tm_totals_t sum = d->fleet.evicted;
    sum.done += d->st.sched.done_evicted;   /* from TMs evicted before they sent them */
    for (size_t s = 0; s < peertab_slots(d->fleet.tab); s++) {
        const jm_tm_t *t = peertab_at(d->fleet.tab, s);
        if (!t)
            continue;
        sum.reattaches += t->id.reattaches;
        sum.sent += t->sv.sched.sent;
        sum.done += t->sv.sched.done;
        sum.failed += t->sv.sched.failed;
    }
    const server_stats_t *ss = server_stats(d->srv);   /* (runs: every process's) */
    uint64_t distinct = ss->joins;
    return json_pack("{s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I}",
        "tms", (json_int_t)distinct, "listed", (json_int_t)listed,
        "left_out", (json_int_t)(distinct > listed ? distinct - listed : 0),
        "truncated", distinct > listed,
        "reattaches", (json_int_t)sum.reattaches, "sent", (json_int_t)sum.sent,
        "done", (json_int_t)sum.done, "failed", (json_int_t)sum.failed,
        "busy_s", ss->busy_s, "runs", (json_int_t)ss->runs,
        "lost_forgotten", (json_int_t)peertab_lost_forgotten(d->fleet.tab),
        "behind_relays", (json_int_t)jm_status_behind_relays(d->fleet.tab));
}
