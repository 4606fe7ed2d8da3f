/*
 * phase.c - run(): one phase of a job, as spits_main sees it.
 *
 * A phase is a complete parallel job with its own argv and jobinfo. run()
 * makes the phase's job manager and committer, starts the generator,
 * hands the phase to the dispatcher (which tells the TMs the phase's argv
 * for their workers), then commits on this thread until every task is
 * resolved. If any task failed, commit_job is not called: its result
 * would be silently incomplete.
 *
 * spitsrun_t carries no context pointer, so the job is reached through
 * one file-scope pointer set once before spits_main runs.
 */
#include <stdlib.h>
#include <string.h>

#include "jm.h"
#include "log.h"
#include "util.h"

static jm_t *phase_job;

void jm_phase_set_job(jm_t *jm)
{
    phase_job = jm;
}

static void push_final(const void *data, spitssize_t size, spitsctx_t ctx)
{
    spits_buf_t *b = (spits_buf_t *)ctx;
    b->len = 0;
    if (size <= 0)
        return;
    if (spits_buf_reserve(b, (size_t)size) != 0) {
        spits_error("out of memory keeping a %lld-byte final result",
                    (long long)size);
        return;
    }
    memcpy(b->data, data, (size_t)size);
    b->len = (size_t)size;
}

static char **copy_argv(int argc, const char **argv)
{
    char **v = calloc((size_t)argc + 1, sizeof *v);
    if (!v)
        return NULL;
    for (int i = 0; i < argc; i++)
        if (!(v[i] = strdup(argv[i] ? argv[i] : "")))
            return NULL;
    return v;
}

/* Keeps the phase's counters for the report; the rest goes. */
static void keep_stats(jm_t *jm, jm_phase_t *p)
{
    jm_phase_stats_t *all = realloc(jm->phases,
                                    (jm->nphases + 1) * sizeof *all);
    if (!all)
        return;
    jm->phases = all;
    all[jm->nphases++] = p->st;
    memset(&p->st, 0, sizeof p->st);
}

int jm_run_phase(int argc, const char **argv, const void *jobinfo,
                 spitssize_t jobinfosz, const void **final,
                 spitssize_t *finalsz)
{
    jm_t *jm = phase_job;
    jm_phase_t *p = calloc(1, sizeof *p);
    int rc;

    if (final)
        *final = NULL;
    if (finalsz)
        *finalsz = 0;
    if (!p || argc < 1 || !argv || jm_signal) {
        free(p);
        return JM_RUN_FAILED_TASKS;
    }
    p->st.id = jm->nphases + 1;
    p->st.argc = argc;
    p->st.argv = copy_argv(argc, argv);
    p->jobinfo = jobinfo;
    p->jobinfosz = jobinfo ? jobinfosz : 0;
    p->st.started = spits_wall_time();
    jm_genq_init(&p->genq, jm_disp_wake_fd(jm->disp));
    jm_commitq_init(&p->cq);

    if (spits_module_jm_new(jm->mod, &p->jmi, argc, argv, jobinfo,
                            p->jobinfosz) != 0) {
        spits_error("phase %u: spits_job_manager_new returned NULL", p->st.id);
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
        goto out;
    }
    if (spits_module_co_new(jm->mod, &p->coi, argc, argv, jobinfo,
                            p->jobinfosz) != 0) {
        spits_error("phase %u: spits_committer_new returned NULL", p->st.id);
        spits_module_jm_free(jm->mod, &p->jmi);
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
        goto out;
    }
    spits_debug("phase %u starts (%d arguments)", p->st.id, argc);
    jm_disp_phase_begin(jm->disp, p);
    if (jm_generator_start(jm, p) != 0) {
        spits_error("cannot start the generator thread");
        jm_commitq_gen_done(&p->cq, 0);
    } else {
        jm_committer_run(jm, p);
        jm_generator_join(p);
    }
    jm_disp_phase_end(jm->disp);
    spits_module_jm_free(jm->mod, &p->jmi);

    if (jm_signal) {
        jm->interrupted = (int)jm_signal;
        rc = JM_RUN_FAILED_TASKS;   /* stopped: commit_job must not run */
    } else if (p->gen_error[0]) {
        spits_error("phase %u: %s", p->st.id, p->gen_error);
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
    } else if (p->st.nfailed > 0) {
        spits_error("phase %u: %zu task(s) failed every attempt; commit_job "
                    "not called", p->st.id, p->st.nfailed);
        jm->failed_tasks = 1;
        rc = JM_RUN_FAILED_TASKS;
    } else {
        rc = spits_module_co_job(jm->mod, &p->coi, push_final, &jm->final);
        p->st.commit_job_called = 1;
        p->st.commit_job_rc = rc;
        if (final)
            *final = jm->final.len ? jm->final.data : NULL;
        if (finalsz)
            *finalsz = (spitssize_t)jm->final.len;
    }
    spits_module_co_free(jm->mod, &p->coi);
out:
    p->st.finished = spits_wall_time();
    keep_stats(jm, p);
    jm_genq_destroy(&p->genq);
    jm_commitq_destroy(&p->cq);
    free(p);
    return rc;
}
