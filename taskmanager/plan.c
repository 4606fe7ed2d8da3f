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
 * CUDA_VISIBLE_DEVICES, or ROCR_VISIBLE_DEVICES and ZE_AFFINITY_MASK
 * (all three when the kind is unknown), and SPITS_GPUS. A --mem-per-task
 * limit holds a process (isolate.c measures each), so it makes workers
 * processes too. OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS
 * and SPITS_CPUS_PER_TASK (which tells the command module these are the
 * worker's: modules/cmdenv.h) go in a process worker's environment with
 * its GPUs' variables, made as the process starts; thread workers share
 * the TM's, where they are set once no worker thread runs and before the
 * module loads. HELLO and STATS say the new counts (link.c).
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

/* A worker's variables: the thread counts, then its GPUs' (CUDA's,
 * ROCm's, Level Zero's, SPITS_GPUS). */
#define PLAN_THREAD_VARS 4
#define PLAN_GPU_VARS 4
#define PLAN_VARS (PLAN_THREAD_VARS + PLAN_GPU_VARS)
#define PLAN_NAME_MAX 32          /* a name, '=' and a thread count */

static const char *const plan_thread_vars[PLAN_THREAD_VARS] = {
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "SPITS_CPUS_PER_TASK"};

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

/* Appends "NAME=VALUE" to env at *n, its text at *s (room left: *room). */
static void plan_put(char **env, int *n, char **s, size_t *room, const char *name,
                     const char *value)
{
    int k = snprintf(*s, *room, "%s=%s", name, value);
    env[(*n)++] = *s;
    *s += k + 1;
    *room -= (size_t)k + 1;
}

/* Worker i's variables, in one block with their strings (freed as
 * res[i].env): the thread counts (--cpus-per-task) and its GPUs' ids
 * (--gpus-per-task). A kind of GPU not known for sure gets each
 * variable that may apply: /dev/dri's render nodes are AMD's or
 * Intel's. 0, or -1 when out of memory. */
static int plan_env(tm_plan_t *p, const spits_res_have_t *h, int i)
{
    char ids[SPITS_RES_GPUS_MAX * SPITS_RES_GPU_ID_MAX] = "", count[16];
    if (p->req.gpus)
        spits_res_worker_gpus(&p->req, h, i, ids, sizeof ids);
    snprintf(count, sizeof count, "%d", p->req.cpus);
    size_t room = PLAN_VARS * (PLAN_NAME_MAX + strlen(ids) + 1);
    char **env = calloc(1, (PLAN_VARS + 1) * sizeof *env + room);
    if (!env)
        return -1;
    char *s = (char *)(env + PLAN_VARS + 1);
    int n = 0;
    for (int k = 0; p->req.cpus && k < PLAN_THREAD_VARS; k++)
        plan_put(env, &n, &s, &room, plan_thread_vars[k], count);
    if (p->req.gpus) {
        if (h->gpu_kind != SPITS_GPU_AMD)
            plan_put(env, &n, &s, &room, "CUDA_VISIBLE_DEVICES", ids);
        if (h->gpu_kind != SPITS_GPU_NVIDIA) {
            plan_put(env, &n, &s, &room, "ROCR_VISIBLE_DEVICES", ids);
            plan_put(env, &n, &s, &room, "ZE_AFFINITY_MASK", ids);
        }
        plan_put(env, &n, &s, &room, "SPITS_GPUS", ids);
    }
    env[n] = NULL;
    p->res[i].env = env;
    return 0;
}

/* Thread workers share the TM's environment: the thread counts go
 * there, for the module and its libraries, which read them once as they
 * load. Called with no worker thread running (tm_pool_reshape stopped
 * them; tm_pool_start starts them after the module loads): setenv races
 * with getenv in any other thread, and the TM's others (libzmq's, the
 * stdout forwarder) read no variable. */
static int plan_threads_env(int cpus)
{
    char v[16];
    snprintf(v, sizeof v, "%d", cpus);
    for (int k = 0; k < PLAN_THREAD_VARS; k++)
        if (setenv(plan_thread_vars[k], v, 1) != 0)
            return -1;
    return 0;
}

static int plan_build(tm_plan_t *p, const spits_res_have_t *h, int n)
{
    p->res = calloc((size_t)n, sizeof *p->res);
    if (!p->res)
        return -1;
    p->workers = n;   /* (what tm_plan_free frees, planned or not) */
    for (int i = 0; i < n; i++) {
        if (p->req.cpus && plan_cpus(&p->res[i], &p->req, h, i) != 0)
            return -1;
        if ((p->req.cpus || p->req.gpus) && plan_env(p, h, i) != 0)
            return -1;
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
    /* Processes for GPUs, as a GPU runtime reads its variables once per
     * process, and for --mem-per-task, a limit on a process */
    int procs = tm->opts.isolate || req->gpus > 0 || req->mem > 0;
    if (plan_build(p, h, n) != 0 ||
        tm_pool_reshape(&tm->pool, n, p->res, procs, req->mem) != 0 ||
        (!procs && req->cpus && plan_threads_env(req->cpus) != 0)) {
        spits_error("cannot plan %d worker(s): %s", n, strerror(errno ? errno : ENOMEM));
        free(h);
        return -1;
    }
    p->planned = 1;
    p->slots = n + (tm->opts.prefetch_given ? tm->opts.prefetch : n);
    spits_info("%s (%s)", why, asked);
    if (req->mem && !tm->opts.isolate && !req->gpus)
        spits_info("each worker is a process (--isolate), so that --mem-per-task "
                   "limits each task");
    free(h);
    return 0;
}

int tm_plan_same(const tm_t *tm, const char *job, const spits_res_req_t *req,
                 char *refusal, size_t len)
{
    const spits_res_req_t *had = &tm->plan.req;   /* (zero: none asked) */
    char asked[128], planned[128];
    if (req->cpus == had->cpus && req->gpus == had->gpus && req->mem == had->mem)
        return 0;
    spits_res_req_describe(req, asked, sizeof asked);
    spits_res_req_describe(had, planned, sizeof planned);
    snprintf(refusal, len, "job %s asks for %s per task, but this task manager's "
             "workers were planned for %s; start a new task manager for it", job,
             asked, planned);
    return -1;
}

void tm_plan_free(tm_plan_t *p)
{
    for (int i = 0; p->res && i < p->workers; i++) {
        CPU_FREE(p->res[i].cpus);
        free(p->res[i].env);
    }
    free(p->res);
    memset(p, 0, sizeof *p);
}
