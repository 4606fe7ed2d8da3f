/*
 * plan.c - the Task Manager's workers planned by the job's resource
 * request (--cpus-per-task, --gpus-per-task, --mem-per-task: WELCOME's
 * "resources", libspits/resources.h).
 *
 * As the TM first joins a job that asks for resources, it finds what it
 * has (its affinity mask's cores, --gpus, its memory), runs as many
 * workers as every resource allows (the least over them, and at most
 * --workers when given) and says why in its join line. The pool's
 * threads, started before HELLO, are stopped and started again in that
 * number (tm_pool_reshape: they hold nothing yet); worker i owns cores
 * i*N .. i*N+N-1 of the mask and GPUs i*G .. i*G+G-1 of the list. A
 * GPU runtime reads its variables once per process, so workers with
 * GPUs run in processes of their own (--isolate), each with its ids in
 * CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES (both when the kind is
 * unknown) and SPITS_GPUS. OMP_NUM_THREADS, MKL_NUM_THREADS,
 * OPENBLAS_NUM_THREADS and SPITS_CPUS_PER_TASK (which tells the command
 * module these are the worker's: modules/cmdenv.h) are the same for
 * every worker: set in the TM's
 * own environment, before the module is loaded and before any worker
 * thread runs again. HELLO and STATS say the new counts (link.c).
 *
 * The plan is made once: a later job of another request runs on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tm_private.h"

/* Variables a GPU worker's process gets: at most these, and SPITS_GPUS. */
#define PLAN_GPU_VARS 3
#define PLAN_VAR_MAX (32 + SPITS_RES_GPUS_MAX * SPITS_RES_GPU_ID_MAX)

static int plan_have(const tm_opts_t *o, const spits_res_req_t *req,
                     spits_res_have_t *h)
{
    char err[512];
    if (spits_res_have_host(h, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    if (!req->gpus)
        return 0;
    if (o->gpus && strcmp(o->gpus, "auto") != 0)
        return spits_res_gpus_list(o->gpus, h, err, sizeof err);   /* (checked) */
    spits_res_have_gpus_auto(h);
    return 0;
}

/* Worker i's cores, as a cpu_set_t. */
static int plan_cpus(tm_worker_res_t *r, const spits_res_req_t *req,
                     const spits_res_have_t *h, int i)
{
    r->cpus_size = CPU_ALLOC_SIZE(SPITS_RES_CPUS_MAX);
    cpu_set_t *set = CPU_ALLOC(SPITS_RES_CPUS_MAX);
    if (!set)
        return -1;
    CPU_ZERO_S(r->cpus_size, set);
    int first = spits_res_worker_first_cpu(req, i);
    for (int k = 0; k < req->cpus; k++)
        CPU_SET_S((size_t)h->cpus[first + k], r->cpus_size, set);
    r->cpus = set;
    return 0;
}

/* Worker i's variables, in its slice of p->gpu_env. */
static void plan_gpus(tm_plan_t *p, const spits_res_have_t *h, int i)
{
    char ids[SPITS_RES_GPUS_MAX * SPITS_RES_GPU_ID_MAX];
    char **env = p->res[i].env;
    char *s = p->gpu_env + (size_t)i * (PLAN_GPU_VARS + 1) * PLAN_VAR_MAX;
    int n = 0;
    spits_res_worker_gpus(&p->req, h, i, ids, sizeof ids);
    if (h->gpu_kind != SPITS_GPU_AMD) {
        env[n] = s + (size_t)n * PLAN_VAR_MAX;
        snprintf(env[n++], PLAN_VAR_MAX, "CUDA_VISIBLE_DEVICES=%s", ids);
    }
    if (h->gpu_kind != SPITS_GPU_NVIDIA) {
        env[n] = s + (size_t)n * PLAN_VAR_MAX;
        snprintf(env[n++], PLAN_VAR_MAX, "ROCR_VISIBLE_DEVICES=%s", ids);
    }
    env[n] = s + (size_t)n * PLAN_VAR_MAX;
    snprintf(env[n++], PLAN_VAR_MAX, "SPITS_GPUS=%s", ids);
    env[n] = NULL;
}

/* The worker-wide thread counts, before the module and its libraries
 * load (they read them once). */
static int plan_threads_env(int cpus)
{
    static const char *const vars[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                       "OPENBLAS_NUM_THREADS", "SPITS_CPUS_PER_TASK"};
    char v[16];
    snprintf(v, sizeof v, "%d", cpus);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (setenv(vars[i], v, 1) != 0)
            return -1;
    return 0;
}

static int plan_build(tm_plan_t *p, const spits_res_have_t *h, int n)
{
    p->res = calloc((size_t)n, sizeof *p->res);
    if (!p->res)
        return -1;
    p->workers = n;   /* (what tm_plan_free frees, planned or not) */
    if (p->req.gpus) {
        p->gpu_env = malloc((size_t)n * (PLAN_GPU_VARS + 1) * PLAN_VAR_MAX);
        if (!p->gpu_env)
            return -1;
    }
    for (int i = 0; i < n; i++) {
        if (p->req.cpus && plan_cpus(&p->res[i], &p->req, h, i) != 0)
            return -1;
        if (p->req.gpus) {
            if (!(p->res[i].env = calloc(PLAN_GPU_VARS + 1, sizeof *p->res[i].env)))
                return -1;
            plan_gpus(p, h, i);
        }
    }
    return 0;
}

int tm_plan_apply(tm_t *tm, const char *job, const spits_res_req_t *req,
                  char *refusal, size_t len)
{
    tm_plan_t *p = &tm->plan;
    char why[512], asked[128];
    refusal[0] = '\0';
    if (!spits_res_req_any(req) || p->planned)
        return 0;
    spits_res_have_t *h = calloc(1, sizeof *h);
    if (!h || plan_have(&tm->opts, req, h) != 0) {
        if (!h)
            spits_error("out of memory planning the workers");
        free(h);
        return -1;
    }
    /* --workers caps the plan; so does the default of a worker per core
     * when neither cores nor GPUs are asked (memory alone would allow
     * thousands) */
    char cap_what[64];
    int cap = 0;
    if (tm->opts.workers_given) {
        cap = tm->opts.workers;
        snprintf(cap_what, sizeof cap_what, "--workers %d", cap);
    } else if (!req->cpus && !req->gpus) {
        cap = tm->opts.workers;
        snprintf(cap_what, sizeof cap_what, "%d online core%s at 1 worker each", cap,
                 cap == 1 ? "" : "s");
    }
    int n = spits_res_plan(req, h, cap, cap_what, why, sizeof why);
    spits_res_req_describe(req, asked, sizeof asked);
    if (n == 0) {
        snprintf(refusal, len, "cannot run a task of job %s (%s): %s%s%s", job, asked,
                 why, req->gpus ? "; GPUs from " : "", req->gpus ? h->gpu_from : "");
        free(h);
        return -1;
    }
    p->req = *req;
    if (plan_build(p, h, n) != 0 || (req->cpus && plan_threads_env(req->cpus) != 0) ||
        tm_pool_reshape(&tm->pool, n, p->res, tm->opts.isolate || req->gpus > 0) != 0) {
        spits_error("cannot plan %d worker(s): %s", n, strerror(errno ? errno : ENOMEM));
        free(h);
        return -1;
    }
    p->planned = 1;
    p->slots = n + (tm->opts.prefetch_given ? tm->opts.prefetch : n);
    spits_info("%s (%s)", why, asked);
    free(h);
    return 0;
}

void tm_plan_free(tm_plan_t *p)
{
    for (int i = 0; p->res && i < p->workers; i++) {
        CPU_FREE(p->res[i].cpus);
        free(p->res[i].env);
    }
    free(p->res);
    free(p->gpu_env);
    memset(p, 0, sizeof *p);
}
