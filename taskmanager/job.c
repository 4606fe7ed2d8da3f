/*
 * job.c - the job a spits-tm runs: its module and its phases.
 *
 * WELCOME names the job, its module and, with PHASE, each phase's argv
 * (protocol.c hands them here). The module is loaded once, from the path
 * the JM announces (or --module's copy), and only if its BLAKE2b hash is
 * the JM's. A TM stays with its module: a JM that now runs another module,
 * or a module rebuilt at the same path, needs new TMs (the refusal's
 * reason goes to the JM in BYE). It may run another job of the same
 * module, though: then the old job's queued tasks and unsent results are
 * dropped (job.joined tells them apart).
 *
 * Under --simulate the TMs of one process share one loaded module
 * (job.shared), which the harness owns.
 *
 * Phases are kept, newest first, until exit: a worker may still run a
 * task of an old phase (tm.h). job.current is the one tasks arrive for;
 * entering a phase hands back the queued tasks of the others.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pyjob.h"
#include "tm_private.h"
#include "util.h"

static void phase_free(tm_phase_t *phase)
{
    for (int i = 0; i < phase->argc; i++)
        free(phase->argv[i]);
    free(phase->argv);
    free(phase);
}

/* A new phase, first in the list; NULL when out of memory. */
static tm_phase_t *phase_new(tm_t *tm, uint32_t wire, json_t *argv)
{
    tm_phase_t *phase = calloc(1, sizeof *phase);
    size_t n = json_array_size(argv);
    if (!phase || !(phase->argv = calloc(n + 1, sizeof *phase->argv))) {
        free(phase);
        return NULL;
    }
    phase->wire = wire;
    phase->job = tm->job.joined;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(argv, i));
        if (!(phase->argv[i] = strdup(s ? s : ""))) {
            phase_free(phase);
            return NULL;
        }
        phase->argc++;
    }
    phase->next = tm->job.phases;
    tm->job.phases = phase;
    return phase;
}

int tm_job_enter_phase(tm_t *tm, uint32_t wire, json_t *argv)
{
    tm_phase_t *phase = phase_new(tm, wire, argv);

    if (!phase) {
        spits_error("out of memory entering phase %u; stopping", wire);
        return -1;
    }
    tm->job.current = phase;
    if (tm->pool_started) {
        size_t n = tm_pool_drop_others(&tm->pool, phase, 1);
        if (n)
            spits_debug("phase %u: handed back %zu queued task(s) of an "
                        "earlier phase", phase->wire, n);
    }
    return 0;
}

int tm_job_refuse(tm_t *tm, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tm->job.refused, sizeof tm->job.refused, fmt, ap);
    va_end(ap);
    spits_error("%s", tm->job.refused);
    return -1;
}

/* Loads the module the JM names (or --module's copy), refusing a file
 * whose hash differs from the JM's: a stale copy on a node-local disk must
 * not run the job. Early (before HELLO, from jm.json), what goes wrong is
 * left for WELCOME's load to say: the JM then hears the refusal. */
static int load_module(tm_t *tm, const char *announced, const char *want_hash,
                       int early)
{
    char err[1024];
    const char *path = tm->opts.module_override ? tm->opts.module_override
                                                : announced;
    spits_image_t *img;

    if (!realpath(path, tm->job.module_path)) {
        if (early)
            return -1;
        spits_error("cannot load module %s: %s", path, strerror(errno));
        return -1;
    }
    if (tm->job.shared && *tm->job.shared) {
        /* --simulate: the process's one copy, whose hash was checked
         * when it was loaded; it must be the one this JM runs too. */
        if (strcmp(spits_module_hash(*tm->job.shared), want_hash) != 0) {
            spits_error("module %s differs from the job manager's %s: "
                        "refusing to run it", tm->job.module_path, announced);
            return -1;
        }
        tm->job.mod = *tm->job.shared;
        return 0;
    }
    /* The copy whose hash is checked is the one loaded (and the one
     * --isolate's children load): the file may change in between. */
    if (!(img = spits_image_read(tm->job.module_path, err, sizeof err))) {
        if (!early)
            spits_error("%s", err);
        return -1;
    }
    if (early && strcmp(spits_image_hash(img), want_hash) != 0) {
        spits_image_free(&img);
        return -1;
    }
    if (strcmp(spits_image_hash(img), want_hash) != 0) {
        tm_job_refuse(tm, "module %s differs from the job manager's %s (BLAKE2b "
               "%.16s... here, %.16s... there): refusing to run it",
               tm->job.module_path, announced, spits_image_hash(img), want_hash);
        spits_image_free(&img);
        return -1;
    }
    tm->job.mod = spits_module_load(&img, err, sizeof err);
    if (!tm->job.mod) {
        if (!early)
            spits_error("%s", err);
        return -1;
    }
    if (spits_pyjob_is(path) && !tm->pool.opts.isolate && !tm->job.shared &&
        tm->pool.workers.n > 1)
        spits_warn("%s is a Python job: its %d worker threads take turns on "
                   "one interpreter; start spits-tm with --isolate (or "
                   "--module %s) for a process each", path, tm->pool.workers.n,
                   path);
    if (tm->job.shared)
        *tm->job.shared = tm->job.mod;    /* the caller's from now on */
    return 0;
}

int tm_job_join(tm_t *tm, const char *job_id, const char *module,
                const char *want_hash)
{
    if (tm->relay && tm->job.job_id[0] && strcmp(tm->job.job_id, job_id) != 0) {
        /* Its TMs' keys and module are the old job's. */
        spits_error("the job manager now runs job %s (was %s): a relay serves "
                    "one job; start a new relay for it", job_id, tm->job.job_id);
        return -1;
    }
    if (tm->job.job_id[0] && strcmp(tm->job.job_id, job_id) != 0) {
        spits_info("the job manager now runs job %s (was %s)", job_id,
                   tm->job.job_id);
        tm->job.joined++;    /* results of the old job are dropped, never sent */
        if (tm->pool_started) {
            tm_pool_drop_others(&tm->pool, NULL, 0);
            tm_pool_set_job(&tm->pool, tm->job.joined);
        }
        tm->job.current = NULL;
    }
    snprintf(tm->job.job_id, sizeof tm->job.job_id, "%s", job_id);
    if (tm->relay)
        return 0;    /* it runs no task: the TMs behind it check the module */
    if (!tm->job.mod)
        return load_module(tm, module, want_hash, 0);
    if (!tm->opts.module_override && strcmp(module, tm->job.module_path) != 0)
        return tm_job_refuse(tm, "the job manager now runs module %s, not %s; start "
                      "a new task manager for it", module, tm->job.module_path);
    /* The same path may hold a rebuilt module: the old code must not run
     * with the new job's arguments. */
    if (strcmp(spits_module_hash(tm->job.mod), want_hash) != 0)
        return tm_job_refuse(tm, "the job manager's module %s changed (BLAKE2b "
                      "%.16s... now, %.16s... loaded here); start a new task "
                      "manager for job %s", module, want_hash,
                      spits_module_hash(tm->job.mod), job_id);
    return 0;
}

void tm_job_expect(tm_job_t *job, const spits_announce_t *a)
{
    snprintf(job->job_id, sizeof job->job_id, "%s", a->job_id);
    snprintf(job->expect_module, sizeof job->expect_module, "%s", a->module);
    snprintf(job->expect_hash, sizeof job->expect_hash, "%s", a->module_hash);
    job->expect_req = a->req;
}

int tm_job_preload(tm_t *tm)
{
    if (tm->job.mod)
        return 0;
    if (!tm->job.expect_module[0] ||
        load_module(tm, tm->job.expect_module, tm->job.expect_hash, 1) != 0) {
        spits_debug("module %s not loaded before joining: loaded as the job "
                    "manager welcomes us", tm->job.expect_module);
        return -1;
    }
    return 0;
}

void tm_job_free(tm_job_t *job)
{
    while (job->phases) {
        tm_phase_t *next = job->phases->next;
        phase_free(job->phases);
        job->phases = next;
    }
    if (!job->shared)
        spits_module_close(&job->mod);
    job->mod = NULL;
}
