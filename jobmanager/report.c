/*
 * report.c - what a finished job tells its user: DIR/report.json, the same
 * as a page (DIR/report.html, libspits' reporthtml.c) and the one-line
 * summary on stderr.
 */
#include <limits.h>
#include <stdio.h>

#include "report.h"
#include "dispatch.h"
#include "dispview.h"
#include "jm.h"
#include "jobdir.h"
#include "log.h"
#include "model.h"
#include "phase.h"
#include "reporthtml.h"
#include "status.h"
#include "stop.h"
#include "util.h"

uint64_t jm_commit_errors(const jm_t *jm)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < jm->nphases; i++)
        n += jm->phases[i].commit_errors;
    return n;
}

static const char *status_word(int exit_code, const jm_t *jm)
{
    if (jm->interrupted)
        return "interrupted";
    if (jm->runtime_error || jm_fatal_message())
        return "error";
    if (jm->failed_tasks)
        return "failed";
    if (exit_code == JM_EXIT_COMMIT_ERRORS && jm_commit_errors(jm) &&
        !jm->opt.commit_errors_ignore)
        return "commit-errors";
    return exit_code == 0 ? "ok" : "module-error";
}

int jm_report_write(jm_t *jm, int exit_code, double finished)
{
    /* (after jm_disp_stop has joined the dispatcher's thread: jm.c end_with) */
    const jm_disp_stats_t *ds = jm_disp_stats(jm->disp);
    const server_stats_t *ss = jm_disp_server_stats(jm->disp);
    uint64_t bytes_out = ds->bytes_out + ss->bytes_out + ss->part_bytes_out;
    json_t *phases = json_array(), *failed = json_array();
    uint64_t generated = 0, committed = 0, nfailed = 0, commit_errors = 0;
    uint64_t replayed = 0, extra_pushes = 0;
    double makespan = 0;
    char started_s[32], finished_s[32], path[PATH_MAX], err[512], model[256];

    for (uint32_t i = 0; i < jm->nphases; i++) {
        jm_phase_stats_t *p = &jm->phases[i];
        json_t *argv = json_array();
        for (int a = 0; a < p->argc && p->argv; a++)
            json_array_append_new(argv, json_string(p->argv[a]));
        /* (pushes a later one replaced in the same call: README, "Writing
         * a module") */
        json_t *extra = json_pack("{s:I, s:I}",
            "spits_job_manager_next_task", (json_int_t)p->extra_pushes,
            "spits_committer_commit_job", (json_int_t)p->final_extra_pushes);
        json_array_append_new(phases, json_pack(
            "{s:i, s:o, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:o, s:O, s:o}",
            "phase", (int)p->id, "argv", argv,
            "tasks", (json_int_t)p->generated,
            "committed", (json_int_t)p->committed,
            "failed", (json_int_t)p->nfailed,
            "replayed", (json_int_t)p->replayed,
            "commit_errors", (json_int_t)p->commit_errors,
            "seconds", p->finished - p->started,
            "start_s", p->started - jm->started, "end_s", p->finished - jm->started,
            "commit_job", p->commit_job_called ? json_integer(p->commit_job_rc)
                                               : json_null(),
            "metrics", p->metrics ? p->metrics : json_null(),
            "extra_pushes", extra));
        for (size_t f = 0; f < p->nfailed && f < p->capfailed; f++)
            json_array_append_new(failed, jm_failure_json(p->id, &p->failed[f]));
        generated += p->generated;
        committed += p->committed;
        nfailed += p->nfailed;
        replayed += p->replayed;
        commit_errors += p->commit_errors;
        extra_pushes += p->extra_pushes + p->final_extra_pushes;
        makespan += p->finished - p->started;
    }
    json_t *tms = jm_dispview_tms_json(jm->disp), *usage = jm_usage_json();
    if (usage)
        json_object_set_new(usage, "memory_limit_bytes",
                            json_integer((json_int_t)jm->opt.memory_limit));
    json_t *totals = jm_dispview_tm_totals_json(jm->disp, json_array_size(tms));
    spits_iso_time(jm->started, started_s, sizeof started_s);
    spits_iso_time(finished, finished_s, sizeof finished_s);
    json_t *doc = json_pack(
        "{s:i, s:s, s:s, s:s, s:i, s:s, s:s, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
        " s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
        "version", 1, "job_id", jm->job_id, "module", jm->module_path,
        "status", status_word(exit_code, jm), "exit_code", exit_code,
        "started", started_s, "finished", finished_s,
        "seconds", finished - jm->started,
        "resumed", json_boolean(jm->resuming),
        "resumable", json_boolean(jm->resumable),
        "jm", usage,
        "timeline", jm_dispview_timeline_json(jm->disp),
        "bandwidth", json_pack("{s:f, s:f}",
            "in_mb_s", finished > jm->started ? ss->bytes_in / 1e6 / (finished - jm->started) : 0.0,
            "out_mb_s", finished > jm->started ? bytes_out / 1e6 / (finished - jm->started) : 0.0),
        "phases", phases, "failed_tasks", failed,
        "tms", tms, "tm_totals", totals,
        "model", jm_model_json(ds, ss, totals, usage, committed - replayed + nfailed,
                               makespan, model, sizeof model),
        "counters",
        "generated", (json_int_t)generated, "committed", (json_int_t)committed,
        "failed", (json_int_t)nfailed, "commit_errors", (json_int_t)commit_errors,
        "sent", (json_int_t)ds->sched.sent, "sent_as_parts", (json_int_t)ss->tasks_as_parts,
        "results_as_parts", (json_int_t)ss->results_as_parts,
        "resent", (json_int_t)ds->sched.resent,
        "duplicates", (json_int_t)ds->sched.duplicates,
        "requeued", (json_int_t)ds->sched.requeued, "retried", (json_int_t)ds->sched.retried,
        "returned", (json_int_t)ds->sched.returned,
        "crashed", (json_int_t)ds->sched.crashed, "timed_out", (json_int_t)ds->sched.timed_out,
        "cancelled", (json_int_t)ds->cancelled,
        "adopted", (json_int_t)ds->adopted, "replayed", (json_int_t)replayed,
        "journal_bytes", (json_int_t)(jm->journal ? spits_journal_bytes(jm->journal) : 0),
        "journal_syncs", (json_int_t)(jm->journal ? spits_journal_syncs(jm->journal) : 0),
        "stale", (json_int_t)ds->stale, "bogus", (json_int_t)ds->bogus,
        "foreign_results", (json_int_t)ds->foreign_results,
        "bad_messages", (json_int_t)ss->bad,
        "bytes_in", (json_int_t)ss->bytes_in, "bytes_out", (json_int_t)bytes_out,
        /* A TM joins once: tms (distinct TMs) and tm_joins are one count,
         * under both names (README: "Counting Task Managers"). */
        "tms", (json_int_t)ss->joins, "tm_joins", (json_int_t)ss->joins,
        "tm_reattaches", (json_int_t)ss->reattaches,
        "tm_losses", (json_int_t)ss->losses, "tm_leaves", (json_int_t)ss->leaves,
        "tm_refusals", (json_int_t)ds->tm_refusals,
        "tms_lost_for_good", (json_int_t)ds->tms_lost_now);
    if (!doc) {
        spits_error("cannot encode the report");
        return -1;
    }
    json_object_set_new(json_object_get(doc, "counters"), "extra_pushes",
                        json_integer((json_int_t)extra_pushes));
    json_object_set_new(json_object_get(doc, "counters"), "adopt_dropped",
                        json_integer((json_int_t)ds->adopt_dropped));
    /* What stopped the job, when a thread found it could not go on. */
    if (jm_fatal_message())
        json_object_set_new(doc, "error", json_string(jm_fatal_message()));
    /* The job ended in the module's exit() (modexit.c), exit_code its
     * argument. */
    if (jm->module_exit)
        json_object_set_new(doc, "module_exit", json_true());
    /* A resume ran a module other than the one the job started with. */
    if (jm->module_hash_was[0])
        json_object_set_new(doc, "module_changed",
                            spits_module_changed_json(jm->module_hash_was,
                                                      jm->module_hash));
    /* What each task asked for (--cpus/--gpus/--mem-per-task). */
    json_t *res = spits_res_req_json(&jm->opt.res);
    if (res)
        json_object_set_new(doc, "resources", res);
    /* commit_job ran without the failed tasks' results. */
    if (jm->opt.keep_going)
        json_object_set_new(doc, "keep_going", json_true());
    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_REPORT_FILE);
    int rc = spits_json_write_atomic(path, doc, 0644, err, sizeof err);
    if (rc != 0)
        spits_error("%s", err);
    /* The page is for a person; report.json is the job's record, so a
     * page that cannot be written costs a warning, not the job. */
    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_REPORT_HTML_FILE);
    if (spits_report_html_write(path, doc, err, sizeof err) != 0)
        spits_warn("%s (report.json has the same)", err);
    json_decref(doc);

    double secs = finished - jm->started;
    spits_info("job %s %s: %u phase(s), %llu task(s) committed, %llu commit "
               "error(s), %llu failed, %llu re-sent (%llu handed back), %llu duplicate(s), %llu TM(s) "
               "(%llu re-attach(es), %llu loss(es), %llu lost for good), "
               "%.2f s (%.0f tasks/s)",
               jm->job_id, status_word(exit_code, jm), jm->nphases,
               (unsigned long long)committed, (unsigned long long)commit_errors,
               (unsigned long long)nfailed,
               (unsigned long long)ds->sched.resent, (unsigned long long)ds->sched.returned,
               (unsigned long long)ds->sched.duplicates,
               (unsigned long long)ss->joins,
               (unsigned long long)ss->reattaches,
               (unsigned long long)ss->losses,
               (unsigned long long)ds->tms_lost_now, secs,
               secs > 0 ? committed / secs : 0.0);
    if (model[0])
        spits_info("%s", model);
    return rc;
}
