/*
 * status.c - the live view of a running job: the document spits-status
 * gets back for a STATUS request, and the progress line on the JM's
 * stderr. Both are built from a jm_live_t snapshot that the dispatcher
 * takes on its own thread (dispatch.c), so nothing here locks anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "status.h"
#include "jm.h"
#include "log.h"
#include "mem.h"
#include "term.h"
#include "tmtable.h"
#include "util.h"

static double eta_seconds(const jm_live_t *l)
{
    uint64_t done = l->resolved + l->replayed;
    if (!l->gen_done || l->rate <= 0 || l->total < done)
        return -1;
    return (double)(l->total - done) / l->rate;
}

json_t *jm_usage_json(void)
{
    struct rusage ru;
    uint64_t rss, peak;
    getrusage(RUSAGE_SELF, &ru);
    spits_mem_usage(&rss, &peak);
    return json_pack("{s:I, s:I, s:f, s:f}", "rss_bytes", (json_int_t)rss,
                     "max_rss_bytes", (json_int_t)peak,
                     "cpu_user_s", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
                     "cpu_system_s", ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

void jm_status_relay_fields(json_t *row, const jm_tm_t *t)
{
    if (!row || !t->sv.proc.relay)
        return;
    json_t *behind = t->id.behind ? json_incref(t->id.behind)
        : json_pack("{s:i, s:i, s:i, s:i, s:[], s:b}", "alive", 0, "joins", 0,
                    "leaves", 0, "losses", 0, "tms", "truncated", 0);
    json_object_set_new(row, "relay", json_true());
    json_object_set_new(row, "endpoint", json_string(t->id.relay_ep));
    json_object_set_new(row, "behind", behind);
}

void jm_status_worker_fields(json_t *row, const jm_tm_t *t)
{
    if (row && t->stats.workers)
        json_object_set_new(row, "worker_res", json_deep_copy(t->stats.workers));
}

uint64_t jm_status_behind_relays(const peertab_t *tms)
{
    uint64_t n = 0;
    for (size_t i = 0; i < peertab_live_count(tms); i++) {
        const jm_tm_t *t = peertab_live_at(tms, i);
        n += t->sv.proc.relay ? (uint64_t)t->id.behind_alive : 0;
    }
    return n;
}

void jm_tm_split(const jm_tm_t *t, uint64_t *running, uint64_t *queued)
{
    long held = t->sv.sched.credit.outstanding > 0 ? t->sv.sched.credit.outstanding : 0;
    long run = t->stats.running >= 0 ? t->stats.running : t->sv.sched.credit.workers;
    /* (a STATS is up to a second old: what it says may have come back) */
    if (run > held)
        run = held;
    *running = (uint64_t)run;
    *queued = (uint64_t)(held - run);
}

typedef struct {
    jm_tm_t *t;
    int notable;
} status_pick_t;

/* Notable TMs first (see status.h), then the most done. */
static int status_cmp_notable(const void *a, const void *b)
{
    const status_pick_t *x = a, *y = b;
    if (x->notable != y->notable)
        return y->notable - x->notable;
    return jm_tm_cmp_done_desc(&x->t, &y->t);
}

/* The live TMs a STATUS document lists (status.h), in *v (to free), in
 * the order they joined; how many. With no memory, none. */
static size_t status_pick(const peertab_t *tms, int64_t now_ms, int64_t quiet_ms,
                          jm_tm_t ***v)
{
    size_t n = peertab_live_count(tms), listed = n < JM_STATUS_TMS ? n : JM_STATUS_TMS;
    status_pick_t *all = NULL;

    if (!(*v = malloc((n ? n : 1) * sizeof **v)))
        return 0;
    /* (with no memory to pick, the first ones) */
    if (n > listed && (all = malloc(n * sizeof *all))) {
        for (size_t i = 0; i < n; i++) {
            jm_tm_t *t = peertab_live_at(tms, i);
            all[i] = (status_pick_t){t, t->sv.proc.relay || t->sv.draining ||
                                        now_ms - t->sv.live.last_heard >= quiet_ms};
        }
        qsort(all, n, sizeof *all, status_cmp_notable);
    }
    for (size_t i = 0; i < listed; i++)
        (*v)[i] = all ? all[i].t : peertab_live_at(tms, i);
    qsort(*v, listed, sizeof **v, jm_tm_cmp_joined);
    free(all);
    return listed;
}

/* 1 if a went after b (a later last_heard first). */
static int status_cmp_gone(const void *a, const void *b)
{
    const jm_tm_t *x = *(jm_tm_t *const *)a, *y = *(jm_tm_t *const *)b;
    int64_t xh = x->sv.live.last_heard, yh = y->sv.live.last_heard;
    return xh < yh ? 1 : xh > yh ? -1 : 0;
}

/* The JM_STATUS_GONE TMs that left or were lost last, so the dashboard
 * keeps their lanes (a lost one ends with its mark, from tm_events). */
static json_t *status_gone(const peertab_t *tms)
{
    size_t slots = peertab_slots(tms), n = 0;
    jm_tm_t **v = malloc((slots ? slots : 1) * sizeof *v);
    json_t *rows = json_array();
    if (!v)
        return rows;
    for (size_t s = 0; s < slots; s++) {
        jm_tm_t *t = peertab_at(tms, s);
        if (t && !t->sv.peer.alive)
            v[n++] = t;
    }
    qsort(v, n, sizeof *v, status_cmp_gone);
    for (size_t i = 0; i < n && i < JM_STATUS_GONE; i++) {
        json_t *row = json_pack(
            "{s:s, s:I, s:i, s:I, s:I, s:f, s:s}", "host", v[i]->sv.proc.host,
            "pid", (json_int_t)v[i]->sv.proc.pid, "workers", v[i]->sv.sched.credit.workers,
            "done", (json_int_t)v[i]->sv.sched.done, "failed", (json_int_t)v[i]->sv.sched.failed,
            "busy_s", v[i]->sv.proc.busy_s, "gone", v[i]->life.lost ? "lost" : "left");
        jm_status_worker_fields(row, v[i]);
        json_array_append_new(rows, row);
    }
    free(v);
    return rows;
}

json_t *jm_status_json(const jm_t *jm, const jm_live_t *l,
                       const peertab_t *tms, int64_t now_ms, int64_t quiet_ms)
{
    char started[32];
    double eta = eta_seconds(l);
    json_t *rows = json_array();
    jm_tm_t **v;
    size_t listed = status_pick(tms, now_ms, quiet_ms, &v);

    for (size_t i = 0; i < listed; i++) {
        const jm_tm_t *t = v[i];
        uint64_t busy, queued;
        jm_tm_split(t, &busy, &queued);
        json_t *row = json_pack(
            "{s:s, s:I, s:i, s:I, s:I, s:i, s:I, s:I, s:f, s:b, s:f}",
            "host", t->sv.proc.host, "pid", (json_int_t)t->sv.proc.pid, "workers", t->sv.sched.credit.workers,
            "busy", (json_int_t)busy, "queued", (json_int_t)queued,
            "held", t->sv.sched.credit.outstanding, "done", (json_int_t)t->sv.sched.done,
            "failed", (json_int_t)t->sv.sched.failed,
            "last_heard_s", (now_ms - t->sv.live.last_heard) / 1000.0,
            "draining", t->sv.draining, "busy_s", t->sv.proc.busy_s);
        jm_status_relay_fields(row, t);
        jm_status_worker_fields(row, t);
        json_array_append_new(rows, row);
    }
    free(v);
    spits_iso_time(jm->started, started, sizeof started);
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:f, s:i,"
        " s:{s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I},"
        " s:f, s:o, s:{s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:I, s:I, s:I, s:o}",
        "version", 1, "state", "running", "job_id", jm->job_id,
        "module", jm->module_path, "started", started,
        "elapsed_s", spits_wall_time() - jm->started, "phase", (int)l->phase,
        "tasks",
        "generated", (json_int_t)l->generated, "generation_done", l->gen_done,
        "total", (json_int_t)(l->gen_done ? l->total : 0),
        "sent", (json_int_t)l->sent, "running", (json_int_t)l->running,
        "queued", (json_int_t)l->queued, "uncommitted", (json_int_t)l->uncommitted,
        "waiting_for_disk", l->uncommitted > 0 && l->syncing,
        "committed", (json_int_t)(l->resolved + l->replayed - l->failed),
        "failed", (json_int_t)l->failed, "resent", (json_int_t)l->resent,
        "duplicates", (json_int_t)l->duplicates,
        "requeued", (json_int_t)l->requeued, "replayed", (json_int_t)l->replayed,
        "rate_per_s", l->rate,
        "eta_s", eta >= 0 ? json_real(eta) : json_null(),
        "tm_counts", "joins", (json_int_t)l->tm_joins,
        "reattaches", (json_int_t)l->tm_reattaches,
        "losses", (json_int_t)l->tm_losses, "leaves", (json_int_t)l->tm_leaves,
        "lost_now", (json_int_t)l->tms_lost_now,
        "tms", rows, "tms_gone", status_gone(tms),
        "tms_alive", (json_int_t)peertab_live_count(tms),
        "tms_listed", (json_int_t)listed,
        "behind_relays", (json_int_t)jm_status_behind_relays(tms),
        "jm", jm_usage_json());
}

/* The progress line's tail: where the tasks not done are. Results not
 * committed yet are named, and why when the committer is syncing the
 * journal: a rate of 0 then means a slow disk, not idle TMs. */
static void progress_where(const jm_live_t *l, char *out, size_t size)
{
    int n = snprintf(out, size, ", %llu running, %llu queued",
                     (unsigned long long)l->running, (unsigned long long)l->queued);
    if (l->uncommitted > 0 && n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, ", %llu to commit%s",
                 (unsigned long long)l->uncommitted,
                 l->syncing ? " (waiting for the disk)" : "");
}

/* The progress line's text for l, after the program's name. */
static void progress_text(const jm_live_t *l, char *line, size_t size)
{
    char bar[24], eta_s[32] = "?", where[128];
    uint64_t done = l->resolved + l->replayed;
    double eta = eta_seconds(l);
    double frac = l->gen_done && l->total ? (double)done / (double)l->total : -1;

    if (eta >= 0)
        snprintf(eta_s, sizeof eta_s, "%d:%02d", (int)(eta / 60), (int)eta % 60);
    progress_where(l, where, sizeof where);
    if (frac >= 0) {
        int filled = (int)(frac * 20 + 0.5);
        for (int i = 0; i < 20; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[20] = '\0';
        snprintf(line, size, "phase %u [%s] %llu/%llu %.1f%% %.0f tasks/s ETA %s, %zu TM(s)%s",
                 l->phase, bar, (unsigned long long)done, (unsigned long long)l->total,
                 frac * 100, l->rate, eta_s, l->tms_alive, where);
    } else {
        snprintf(line, size, "phase %u: %llu committed, %llu generated so far, "
                 "%.0f tasks/s, %zu TM(s)%s", l->phase, (unsigned long long)done,
                 (unsigned long long)l->generated, l->rate, l->tms_alive, where);
    }
}

void jm_progress_print(const jm_live_t *l, int tty)
{
    char text[384], line[448];
    progress_text(l, text, sizeof text);
    /* On a terminal the writer redraws it in place, cut to the width;
     * elsewhere it is one plain line among the log lines. */
    snprintf(line, sizeof line, "%s: %s%s", spits_log_progname(),
             tty ? "" : "progress: ", text);
    if (tty)
        spits_term_bar(line);
    else
        spits_term_line(line, strlen(line));
}

void jm_progress_init(jm_progress_t *p, double interval_s)
{
    memset(p, 0, sizeof *p);
    p->tty = spits_term_is_tty() && spits_log_level() >= SPITS_LOG_INFO;
    p->every_ms = (int64_t)(interval_s * 1000);
}

double jm_progress_rate(jm_progress_t *p, int64_t now, uint64_t resolved)
{
    size_t cap = sizeof p->samples / sizeof *p->samples;
    p->samples[p->at].t = now;
    p->samples[p->at].resolved = resolved;
    p->at = (p->at + 1) % cap;
    if (p->nsamples < cap)
        p->nsamples++;
    size_t oldest = p->nsamples < cap ? 0 : p->at;
    int64_t dt = now - p->samples[oldest].t;
    return dt > 0 ? (double)(resolved - p->samples[oldest].resolved) * 1000.0 / (double)dt
                  : 0;
}

void jm_progress_tick(jm_progress_t *p, const jm_live_t *l, int64_t now)
{
    if (spits_log_level() < SPITS_LOG_INFO || now < p->next ||
        (!p->tty && p->every_ms <= 0))
        return;
    if (!p->tty && !p->next) {
        /* Off a terminal the first line comes one interval into the
         * phase: at its start it could only say 0 tasks/s, ETA unknown. */
        p->next = now + p->every_ms;
        return;
    }
    jm_progress_print(l, p->tty);
    p->next = now + (p->tty ? 500 : p->every_ms);
}

void jm_progress_end(jm_progress_t *p, const jm_live_t *l)
{
    if (p->tty && p->next && !l) {
        spits_term_bar_end(NULL);
    } else if (p->tty && p->next) {
        /* The redrawn line stays as the phase's last state (100% when
         * every task was resolved). */
        char text[384], line[448];
        progress_text(l, text, sizeof text);
        snprintf(line, sizeof line, "%s: %s", spits_log_progname(), text);
        spits_term_bar_end(line);
    }
    p->next = 0;
    p->nsamples = p->at = 0;
}
