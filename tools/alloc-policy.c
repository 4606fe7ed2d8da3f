/*
 * alloc-policy.c - spits-alloc's decision: how many Task Manager queue
 * jobs to submit or cancel now (see alloc-policy.h for the rule).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc-policy.h"

/* Workers one job brings: as given, else the TMs' mean, else 1. */
static double alloc_per_job(const alloc_in_t *in, const alloc_limits_t *lim)
{
    if (lim->workers_per_job > 0)
        return lim->workers_per_job;
    if (in->tms > 0 && in->workers > 0)
        return (double)in->workers / in->tms;
    return 1;
}

/* Of want more jobs, how many the limits let in now; *limit names the one
 * that held some back (NULL if none did). */
static int alloc_allowed(const alloc_in_t *in, const alloc_limits_t *lim, int want,
                         const char **limit)
{
    long n = want;
    long queued = lim->max_queued - in->queued;
    long inq = lim->max_running - in->queued - in->running;
    long total = lim->max_total - in->submitted;

    *limit = NULL;
    if (queued < n) {
        n = queued;
        *limit = "--max-queued";
    }
    if (inq < n) {
        n = inq;
        *limit = "--max-jobs";
    }
    if (total < n) {
        n = total;
        *limit = "--max-total";
    }
    return n > 0 ? (int)n : 0;
}

/* The jobs wanted once a task time is known: the workers that would end
 * the job within the target, capped where the JM's bandwidth binds,
 * less the workers from elsewhere, in jobs. */
static void alloc_want(const alloc_in_t *in, const alloc_limits_t *lim, double per_job,
                       alloc_plan_t *out)
{
    double t = in->task_s > 0 ? in->task_s : 1e-9;
    double need = ceil(in->remaining * t / lim->target_s);
    const char *bound = "the target";

    if (need < 1)
        need = 1;
    double w = need;
    if (in->workers > 0)
        out->estimate_s = in->remaining * t / in->workers;
    if (in->bw_bytes_s > 0 && in->bytes_per_task > 0) {
        out->max_workers = t * in->bw_bytes_s / in->bytes_per_task;
        double cap = floor(out->max_workers) < 1 ? 1 : floor(out->max_workers);
        if (cap < w) {
            w = cap;
            bound = "the JM's bandwidth (N*S/BW)";
        }
    }
    double other = in->workers - in->running * per_job;
    double jobs = ceil((w - (other > 0 ? other : 0)) / per_job);
    out->want_jobs = jobs < 0 ? 0 : jobs > 1e6 ? 1000000 : (int)jobs;
    out->kind = bound;
    char est[48] = "no worker yet";
    if (out->estimate_s >= 0)
        snprintf(est, sizeof est, "%.0f s", out->estimate_s);
    /* While the module still generates, only the tasks made so far are known. */
    snprintf(out->why, sizeof out->why, "%s%.0f task(s) of %.3g s left, %d worker(s): "
             "%s (target %.3g s); %.0f worker(s) wanted, bound by %s",
             in->gen_done ? "" : "at least ", in->remaining, in->task_s, in->workers,
             est, lim->target_s, w, bound);
}

void alloc_decide(const alloc_in_t *in, const alloc_limits_t *lim, alloc_plan_t *out)
{
    int have = in->queued + in->running;
    double per_job = alloc_per_job(in, lim);

    memset(out, 0, sizeof *out);
    out->estimate_s = out->max_workers = -1;
    out->time_min = lim->time_min;
    if (in->gen_done && in->remaining <= 0) {
        /* The phase's last results are in: the job ends (and its queued
         * jobs go then) or a next phase starts; hold until then. */
        out->want_jobs = have;
        out->kind = "no task left in this phase";
        snprintf(out->why, sizeof out->why, "%s", out->kind);
    } else if (in->task_s < 0) {
        /* One job measures the task time; then the model decides. */
        out->want_jobs = in->workers > 0 || have > 0 ? have : 1;
        out->kind = out->want_jobs > have
                 ? "no worker and no task time yet: one job to start with"
                 : "waiting for a first task time";
        snprintf(out->why, sizeof out->why, "%s", out->kind);
    } else {
        alloc_want(in, lim, per_job, out);
    }

    int delta = out->want_jobs - have;
    if (delta > 0) {
        const char *limit;
        size_t len = strlen(out->why);
        out->submit = alloc_allowed(in, lim, delta, &limit);
        out->limit = limit;
        if (limit)
            snprintf(out->why + len, sizeof out->why - len, "; %d held back by %s",
                     delta - out->submit, limit);
    } else if (delta < 0) {
        out->cancel = -delta < in->queued ? -delta : in->queued;
    }
    /* Near the end, short jobs: twice the time left with the new workers. */
    if (out->submit && in->task_s >= 0) {
        double w = in->workers + out->submit * per_job;
        double left = in->remaining * in->task_s / (w > 0 ? w : 1);
        double m = ceil(2 * left / 60);
        if (m < lim->min_time_min)
            m = lim->min_time_min;
        if (m < out->time_min)
            out->time_min = (int)m;
    }
}

int alloc_log_due(alloc_log_t *log, const alloc_plan_t *p, long long now_ms)
{
    if (!p->submit && !p->cancel && log->any && log->kind == p->kind &&
        log->limit == p->limit && now_ms - log->at_ms < ALLOC_LOG_EVERY_MS)
        return 0;
    log->kind = p->kind;
    log->limit = p->limit;
    log->at_ms = now_ms;
    log->any = 1;
    return 1;
}

#ifdef SPITS_SELFTEST
/* The logging rule over a job's looks, every 5 s: holds whose figures
 * change are logged at the first, then once a minute; an act and a new
 * reason are logged at once. */
static int alloc_log_selftest(const alloc_limits_t *lim)
{
    alloc_log_t log = {0};
    alloc_plan_t p;
    alloc_in_t in = {1, 1000, 1.0, -1, 0, 17, 17, 0, 17, 17};
    int logged[40], want[40] = {0};
    for (int t = 0; t < 40; t++) {
        in.remaining = 1000 - 10 * t;        /* the figures change at each look */
        if (t == 20)
            in.gen_done = 0, in.task_s = -1; /* (a next phase) a new reason */
        if (t == 30)
            in.queued = in.running = 0, in.workers = in.tms = 0, in.task_s = 1;
        alloc_decide(&in, lim, &p);
        logged[t] = alloc_log_due(&log, &p, 5000LL * t);
    }
    /* 0: the first; 12: a minute on; 20: a new reason (and not again
     * within its minute); 30: it submits (3 jobs, --max-total) */
    want[0] = want[12] = want[20] = want[30] = 1;
    if (p.submit != 3 || strcmp(p.limit ? p.limit : "", "--max-total") != 0)
        return -1;
    for (int t = 0; t < 31; t++)
        if (logged[t] != want[t]) {
            fprintf(stderr, "alloc_log at look %d: logged %d, not %d\n", t,
                    logged[t], want[t]);
            return -1;
        }
    return 0;
}

/* Each case: the state, then the exact plan wanted. */
int alloc_policy_selftest(void)
{
    const alloc_limits_t lim = {60, 4, 8, 20, 0, 60, 5};
    static const struct {
        alloc_in_t in;
        int submit, cancel, time_min, want;
    } cases[] = {
        /* nothing yet: one job to measure with */
        {{0, 100, -1, -1, 0, 0, 0, 0, 0, 0}, 1, 0, 60, 1},
        /* that job is queued: wait for it */
        {{0, 100, -1, -1, 0, 0, 0, 1, 0, 1}, 0, 0, 60, 1},
        /* compute-bound: 1000 tasks of 1 s, 2 workers in 2 jobs, target 60 s:
         * 17 workers wanted, 15 jobs more, 4 let in by --max-queued; the
         * jobs are short (2 x 1000 / 6 s is under 60 min, over 5) */
        {{1, 1000, 1.0, -1, 0, 2, 2, 0, 2, 2}, 4, 0, 6, 17},
        /* bandwidth-bound: 8 MB tasks of 1 ms, BW 1 GB/s: 0.125 workers
         * is the bound: the one job running is enough, queued ones go */
        {{1, 100000, 0.001, 1e9, 8e6, 1, 1, 2, 1, 3}, 0, 2, 60, 1},
        /* the end: 10 tasks of 1 s on 4 workers: the 3 queued jobs go,
         * the 4 running ones stay */
        {{1, 10, 1.0, -1, 0, 4, 4, 3, 4, 7}, 0, 3, 60, 1},
        /* no task left in the phase: hold until the job ends or the
         * next phase starts */
        {{1, 0, 1.0, -1, 0, 4, 4, 2, 4, 6}, 0, 0, 60, 6},
        /* the total cap: nothing more */
        {{1, 1000, 1.0, -1, 0, 2, 2, 0, 2, 20}, 0, 0, 60, 17},
        /* workers from elsewhere (a TM started by hand) count */
        {{1, 120, 1.0, -1, 0, 2, 2, 0, 0, 0}, 0, 0, 60, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        alloc_plan_t p;
        alloc_decide(&cases[i].in, &lim, &p);
        if (p.submit != cases[i].submit || p.cancel != cases[i].cancel ||
            p.time_min != cases[i].time_min || p.want_jobs != cases[i].want) {
            fprintf(stderr, "alloc_policy case %zu: submit %d cancel %d time %d "
                    "want %d (%s)\n", i, p.submit, p.cancel, p.time_min,
                    p.want_jobs, p.why);
            return -1;
        }
    }
    alloc_plan_t p;
    alloc_decide(&cases[2].in, &lim, &p);
    if (!strstr(p.why, "held back by --max-queued"))
        return -1;
    alloc_decide(&cases[3].in, &lim, &p);
    if (!strstr(p.why, "bandwidth") || fabs(p.max_workers - 0.125) > 1e-9 ||
        strncmp(p.why, "100000 task(s) of", 17) != 0)
        return -1;
    /* generation goes on: the count is a floor */
    alloc_in_t gen = cases[2].in;
    gen.gen_done = 0;
    alloc_decide(&gen, &lim, &p);
    if (strncmp(p.why, "at least 1000 task(s) of", 24) != 0)
        return -1;
    return alloc_log_selftest(&lim);
}
#endif
