/*
 * phase.c - run(): one phase of a job, as spits_main sees it.
 *
 * A phase is a complete parallel job with its own argv and jobinfo. run()
 * makes the phase's job manager and committer, starts the generator,
 * hands the phase to the dispatcher (which tells the TMs the phase's argv
 * for their workers), then commits on this thread until every task is
 * resolved. If any task failed, commit_job is not called: its result
 * would be silently incomplete; with --keep-going it is, and the job's
 * exit status and report say which tasks it lacks.
 *
 * With a journal, a phase's start (argv, jobinfo hash) and end (commit_job's
 * value and final result) are journaled. On --resume, phases are numbered
 * again in the same order: a phase the journal saw end is not run at all
 * (run() returns the journaled value and final result), and the phase
 * that was interrupted gets its journaled results committed again into a
 * fresh committer, then runs its remaining tasks (generator.c skips the
 * committed ones). Either needs the same argv and jobinfo as journaled.
 *
 * spitsrun_t carries no context pointer, so the job is reached through
 * one file-scope pointer set once before spits_main runs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phase.h"
#include "committer.h"
#include "crash.h"
#include "dispatch.h"
#include "generator.h"
#include "jm.h"
#include "log.h"
#include "modcall.h"
#include "push.h"
#include "recovery.h"
#include "stop.h"
#include "util.h"
#include "wire.h"

static jm_t *phase_job;

void jm_phase_set_job(jm_t *jm)
{
    phase_job = jm;
}

/* What commit_job's push is handed as its ctx: where the bytes go and
 * what the call pushed. Main thread. */
typedef struct {
    jm_t *jm;
    spits_modcall_t call;
} final_push_t;

/* commit_job's push: the job's final result, kept in jm->final; a
 * second push replaces the first (final_check warns). */
/* The journal keeps a final result's length in 32 bits (a record's), so
 * a larger one could not be resumed: it is refused like any bad push. */
#define FINAL_MAX SPITS_TASK_BYTES_MAX

static void push_final(const void *data, spitssize_t size, spitsctx_t ctx)
{
    final_push_t *fp = (final_push_t *)ctx;
    fp->call.pushes++;
    spits_push_keep(&fp->jm->final, data, size, FINAL_MAX, &fp->call.fault,
                    &fp->call.bad_size);
}

/* After commit_job: a push that could not be kept loses the result, so
 * the job must not report success (rc becomes a failure for spits_main
 * too); more than one push is counted and warned about once. */
static int final_check(jm_t *jm, jm_phase_t *p, final_push_t *fp, int rc)
{
    int kept = spits_modcall_commit_job(&fp->call, p->st.id, FINAL_MAX,
                                        "the journal's record size");
    p->st.final_extra_pushes += fp->call.extra_pushes;
    if (kept == 0)
        return rc;
    jm->final.len = 0;
    jm->runtime_error = 1;
    return JM_RUN_FAILED_TASKS;
}

/* A phase's arguments as a JSON array of strings (new reference), as the
 * journal keeps them and the TMs get them; NULL if one is not UTF-8. */
static json_t *phase_argv_json(const jm_phase_t *p)
{
    json_t *a = json_array();
    for (int i = 0; i < p->st.argc && a; i++)
        if (json_array_append_new(a, json_string(p->st.argv[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

static int cmp_skip(const void *a, const void *b)
{
    const struct jm_skip *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_check(const void *a, const void *b)
{
    const spits_jr_check_t *x = a, *y = b;
    return x->count < y->count ? -1 : x->count > y->count;
}

/* Checks a phase against its journal record. NULL if it matches. */
static const char *phase_matches(const spits_jr_phase_t *rp, const json_t *argv,
                                 uint64_t jobinfo_hash)
{
    if (!json_equal(argv, json_object_get(rp->doc, "argv")))
        return "its arguments";
    if (rp->jobinfo_hash != jobinfo_hash)
        return "its jobinfo";
    return NULL;
}

/* A resumed phase's generation checkpoints, for the generator. */
static int resume_checks(jm_phase_t *p, const spits_jr_phase_t *rp)
{
    if (!rp->nchecks) {
        spits_info("phase %u: the journal holds no generation checkpoint "
                   "for it (an older spits-jm wrote it, or the job manager "
                   "stopped first): no result the task managers kept is "
                   "adopted; their tasks run again", p->st.id);
        return 0;
    }
    p->checks = malloc(rp->nchecks * sizeof *p->checks);
    if (!p->checks)
        return -1;
    memcpy(p->checks, rp->checks, rp->nchecks * sizeof *p->checks);
    qsort(p->checks, rp->nchecks, sizeof *p->checks, cmp_check);
    p->nchecks = rp->nchecks;
    return 0;
}

/* Sets up a resumed phase: the skip list and checkpoints for the
 * generator. */
static int resume_setup(jm_phase_t *p, const spits_jr_phase_t *rp)
{
    if (resume_checks(p, rp) != 0)
        return -1;
    if (!rp->nresults)
        return 0;
    p->skip = malloc(rp->nresults * sizeof *p->skip);
    if (!p->skip)
        return -1;
    for (size_t i = 0; i < rp->nresults; i++) {
        p->skip[i].id = rp->results[i].id;
        p->skip[i].hash = rp->results[i].hash;
    }
    qsort(p->skip, rp->nresults, sizeof *p->skip, cmp_skip);
    p->nskip = rp->nresults;
    for (size_t i = 1; i < p->nskip; i++)
        if (p->skip[i].id == p->skip[i - 1].id) {
            spits_error("phase %u: the journal holds task %llu twice",
                        p->st.id, (unsigned long long)p->skip[i].id);
            return -1;
        }
    return 0;
}

/* Journals a record and syncs; on failure the job stops (runtime error). */
static int journal_now(jm_t *jm, int type, uint32_t phase, uint64_t aux,
                       const json_t *doc, const void *data, uint32_t len)
{
    char err[PATH_MAX + 256];
    int rc = doc ? spits_journal_add_json(jm->journal, type, phase, aux, doc)
                 : spits_journal_add(jm->journal, type, phase, 0, aux, data, len);
    if (rc == 0 && spits_journal_sync(jm->journal, err, sizeof err) == 0)
        return 0;
    if (rc != 0)
        snprintf(err, sizeof err, "out of memory buffering the journal");
    jm_recovery_failed(jm, err);
    return -1;
}

static void free_argv(char **v, int argc)
{
    for (int i = 0; v && i < argc; i++)
        free(v[i]);
    free(v);
}

/* A phase's own copy of run()'s argv (the caller's may go away); NULL,
 * with nothing leaked, when memory runs out. */
static char **copy_argv(int argc, const char **argv)
{
    char **v = calloc((size_t)argc + 1, sizeof *v);
    for (int i = 0; v && i < argc; i++)
        if (!(v[i] = strdup(argv[i] ? argv[i] : ""))) {
            free_argv(v, i);
            v = NULL;
        }
    return v;
}

/* A 2.0 module's metrics of one instance, kept for report.json before
 * the instance goes. */
static void phase_metrics(jm_t *jm, jm_phase_t *p, const char *role,
                          const spits_inst_t *in)
{
    json_t *m = in->obj ? spits_module_metrics_json(jm->mod, in) : NULL;
    if (!m)
        return;
    if (json_is_null(m))
        spits_warn("the %s's metrics list does not parse (in either byte "
                   "order, inside its buffer); report.json has null for "
                   "it: check the module's spits_get_metrics_list", role);
    if (!p->st.metrics)
        p->st.metrics = json_object();
    json_object_set_new(p->st.metrics, role, m);
}

/* Keeps the phase's counters for the report; the rest goes. */
static void keep_stats(jm_t *jm, jm_phase_t *p)
{
    jm_phase_stats_t *all = realloc(jm->phases,
                                    (jm->nphases + 1) * sizeof *all);
    if (!all) {
        json_decref(p->st.metrics);
        return;
    }
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
    /* From spits_main into the runtime: a crash here is not the module's. */
    const char *caller = spits_crash_enter(NULL);

    if (final)
        *final = NULL;
    if (finalsz)
        *finalsz = 0;
    if (!p || argc < 1 || !argv || jm_signal || atomic_load(&jm_abort)) {
        free(p);
        spits_crash_leave(caller);
        return JM_RUN_FAILED_TASKS;
    }
    p->st.id = jm->nphases + 1;
    p->st.argv = copy_argv(argc, argv);
    p->st.argc = p->st.argv ? argc : 0;
    p->jobinfo = jobinfo;
    p->jobinfosz = jobinfo ? jobinfosz : 0;
    p->st.started = spits_wall_time();
    jm_genq_init(&p->genq, jm_disp_wake_fd(jm->disp));
    jm_commitq_init(&p->cq);

    /* The TMs get the arguments as JSON, so each must be UTF-8. */
    json_t *argvj = p->st.argv ? phase_argv_json(p) : NULL;
    if (!argvj) {
        spits_error("phase %u: %s", p->st.id, p->st.argv
                    ? "an argument is not valid UTF-8, so it cannot be sent "
                      "to the task managers"
                    : "out of memory copying its arguments");
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
        goto out;
    }
    uint64_t jobinfo_hash = spits_task_hash(p->jobinfo, (size_t)p->jobinfosz);
    const spits_jr_phase_t *rp = NULL;
    if (jm->resuming && p->st.id <= jm->replay.nphases) {
        rp = &jm->replay.phases[p->st.id - 1];
        const char *diff = phase_matches(rp, argvj, jobinfo_hash);
        if (diff) {
            spits_error("phase %u: %s differ from the journal's: spits_main "
                        "does not run deterministically, so the job cannot "
                        "be resumed", p->st.id, diff);
            jm->runtime_error = 1;
            rc = JM_RUN_FAILED_TASKS;
            goto out;
        }
    }
    if (rp && rp->ended) {
        /* Done before the crash: its commit_job ran then, not again. */
        final_push_t fp = {jm, {0, SPITS_PUSH_OK, 0, 0}};
        push_final(rp->final, rp->finalsz, &fp);
        final_check(jm, p, &fp, 0);
        if (final)
            *final = jm->final.len ? jm->final.data : NULL;
        if (finalsz)
            *finalsz = (spitssize_t)jm->final.len;
        p->st.resumed = 2;
        /* It ended with commit_job, so every task it made was committed. */
        p->st.generated = p->st.committed = p->st.replayed = rp->nresults;
        p->st.commit_job_called = 1;
        p->st.commit_job_rc = (int)rp->commit_job_rc;
        spits_info("phase %u: replayed from the journal (%zu result(s), "
                   "commit_job returned %d)", p->st.id, rp->nresults,
                   p->st.commit_job_rc);
        rc = p->st.commit_job_rc;
        goto out;
    }
    if (!rp && jm->journal) {
        json_t *doc = json_pack("{s:O}", "argv", argvj);
        int jrc = journal_now(jm, SPITS_JR_PHASE, p->st.id, jobinfo_hash, doc,
                              NULL, 0);
        json_decref(doc);
        if (jrc != 0) {
            rc = JM_RUN_FAILED_TASKS;
            goto out;
        }
    }

    if (spits_module_manager_new(jm->mod, &p->manager, argc, argv, jobinfo,
                            p->jobinfosz) != 0) {
        spits_error("phase %u: spits_job_manager_new returned NULL", p->st.id);
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
        goto out;
    }
    if (spits_module_committer_new(jm->mod, &p->committer, argc, argv, jobinfo,
                            p->jobinfosz) != 0) {
        spits_error("phase %u: spits_committer_new returned NULL", p->st.id);
        spits_module_manager_free(jm->mod, &p->manager);
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
        goto out;
    }
    if (rp) {
        p->st.resumed = 1;
        if (resume_setup(p, rp) != 0) {
            spits_error("phase %u: cannot set up the resume", p->st.id);
            jm->runtime_error = 1;
            rc = JM_RUN_FAILED_TASKS;
            spits_module_manager_free(jm->mod, &p->manager);
            goto free_instances;
        }
        jm_committer_replay(jm, p, rp);
        spits_info("phase %u: resumed; %zu result(s) replayed from the "
                   "journal", p->st.id, rp->nresults);
        /* The skip list is all the phase needs from now on. */
        spits_jr_phase_t *mine = &jm->replay.phases[p->st.id - 1];
        free(mine->results);
        mine->results = NULL;
        mine->capresults = 0;
    }
    spits_debug("phase %u starts (%d arguments)", p->st.id, argc);
    p->argv_json = argvj;
    jm_disp_phase_begin(jm->disp, p);
    if (jm_generator_start(jm, p) != 0) {
        /* (reported below: no task was made, so commit_job must not run) */
        snprintf(p->gen_error, sizeof p->gen_error,
                 "cannot start the generator thread: %s", strerror(errno));
        jm_commitq_gen_done(&p->cq, 0);
    } else {
        jm_committer_run(jm, p);
        jm_generator_join(p);
    }
    jm_disp_phase_end(jm->disp);
    /* (the generator has ended: its instance is ours to read and free) */
    phase_metrics(jm, p, "job_manager", &p->manager);
    spits_module_manager_free(jm->mod, &p->manager);

    if (jm_signal) {
        jm->interrupted = (int)jm_signal;
        rc = JM_RUN_FAILED_TASKS;   /* stopped: commit_job must not run */
    } else if (atomic_load(&jm_abort)) {
        rc = JM_RUN_FAILED_TASKS;   /* already reported */
    } else if (p->gen_error[0]) {
        spits_error("phase %u: %s", p->st.id, p->gen_error);
        jm->runtime_error = 1;
        rc = JM_RUN_FAILED_TASKS;
    } else if (p->st.nfailed > 0 && !jm->opt.keep_going) {
        spits_error("phase %u: %zu task(s) failed every attempt; commit_job "
                    "not called", p->st.id, p->st.nfailed);
        jm->failed_tasks = 1;
        rc = JM_RUN_FAILED_TASKS;
    } else {
        if (p->st.nfailed > 0) {
            spits_error("phase %u: %zu task(s) failed every attempt; "
                        "commit_job runs without them (--keep-going)",
                        p->st.id, p->st.nfailed);
            jm->failed_tasks = 1;
        }
        jm->final.len = 0;   /* this phase's, not an earlier one's */
        final_push_t fp = {jm, {0, SPITS_PUSH_OK, 0, 0}};
        rc = spits_module_commit_job(jm->mod, &p->committer, push_final, &fp);
        p->st.commit_job_called = 1;
        p->st.commit_job_rc = rc;
        rc = final_check(jm, p, &fp, rc);
        /* (a phase short of tasks is not journaled as ended: --resume
         * runs its failed tasks again, then commit_job) */
        if (jm->journal && p->st.nfailed == 0 &&
            journal_now(jm, SPITS_JR_PHASE_END, p->st.id,
                        (uint64_t)(int64_t)p->st.commit_job_rc, NULL,
                        jm->final.data, (uint32_t)jm->final.len) != 0)
            rc = JM_RUN_FAILED_TASKS;
        if (final)
            *final = jm->final.len ? jm->final.data : NULL;
        if (finalsz)
            *finalsz = (spitssize_t)jm->final.len;
    }
free_instances:
    phase_metrics(jm, p, "committer", &p->committer);
    spits_module_committer_free(jm->mod, &p->committer);
out:
    json_decref(argvj);
    free(p->skip);
    free(p->checks);
    p->st.finished = spits_wall_time();
    keep_stats(jm, p);
    jm_genq_destroy(&p->genq);
    jm_commitq_destroy(&p->cq);
    free(p);
    spits_crash_leave(caller);
    return rc;
}
