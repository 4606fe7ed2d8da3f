/*
 * planview.c - what a Task Manager tells of its plan (plan.c): each
 * worker's resources, once as it joins, and how busy each worker was, in
 * every STATS (wire.h's worker_res, worker_runs and worker_busy_s), so
 * that report.json, report.html and the live page show them.
 *
 * Only the first SPITS_WORKERS_LISTED workers are listed, and no more
 * than keep their cores and GPUs within PLANVIEW_TEXT_MAX bytes (and each
 * one's cores within SPITS_CPULIST_MAX), so a STATS stays far below
 * SPITS_CONTROL_MAX whatever the machine. Runs on
 * the main thread; the counts are the workers' (tm.h tm_pool_stats_t),
 * read relaxed.
 */
#include <string.h>

#include "tm_private.h"

#define PLANVIEW_TEXT_MAX (24u << 10)

/* How many workers are listed. */
static int planview_listed(const tm_plan_t *p)
{
    return p->workers < SPITS_WORKERS_LISTED ? p->workers : SPITS_WORKERS_LISTED;
}

json_t *tm_planview_res(const tm_plan_t *p)
{
    static char cpus[SPITS_CPULIST_MAX + 1];   /* (main thread only) */
    size_t text = 0;
    json_t *a = json_array();
    for (int i = 0; a && i < planview_listed(p); i++) {
        const tm_worker_res_t *r = &p->res[i];
        json_t *o = json_object();
        size_t n = r->cpus ? spits_res_cpulist(r->cpus, r->cpus_size, cpus, sizeof cpus) : 0;
        if (r->cpus && n == 0) {
            json_decref(o);   /* (too many runs to list: it and the rest go unlisted) */
            break;
        }
        if (n)
            json_object_set_new(o, "cpus", json_string(cpus));
        for (char **e = r->env; e && *e; e++)
            if (strncmp(*e, "SPITS_GPUS=", 11) == 0) {
                json_object_set_new(o, "gpus", json_string(*e + 11));
                n += strlen(*e);
            }
        if (p->req.mem)
            json_object_set_new(o, "mem", json_integer((json_int_t)p->req.mem));
        text += n + 48;
        if (text > PLANVIEW_TEXT_MAX) {
            json_decref(o);   /* (it and the workers after it go unlisted) */
            break;
        }
        if (json_array_append_new(a, o) != 0)
            break;
    }
    return a;
}

void tm_planview_counts(const tm_t *tm, json_t *stats)
{
    const tm_worker_count_t *c = tm->pool.stats.worker;
    if (!tm->plan.planned || !c)
        return;
    json_t *runs = json_array(), *busy = json_array();
    for (int i = 0; i < planview_listed(&tm->plan) && i < tm->pool.workers.n; i++) {
        json_array_append_new(runs, json_integer(
            atomic_load_explicit(&c[i].runs, memory_order_relaxed)));
        json_array_append_new(busy, json_real(
            atomic_load_explicit(&c[i].busy_ns, memory_order_relaxed) / 1e9));
    }
    json_object_set_new(stats, "worker_runs", runs);
    json_object_set_new(stats, "worker_busy_s", busy);
}
