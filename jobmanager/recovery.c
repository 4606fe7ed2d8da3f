/*
 * recovery.c - the journal's life in spits-jm: starting one with a new
 * job, loading one for --resume, and closing it when the job is over.
 *
 * A job dir holds at most one job's journal. A new job refuses a dir whose
 * journal belongs to a job that did not finish (that job can still be
 * resumed, and starting over would destroy it); the journal of a finished
 * job, or of one that never committed anything, is replaced. --resume takes everything that defines the job from the
 * journal - job id, module (whose BLAKE2b hash must still match, unless
 * --module-changed accepts a fixed one: jm.json and the report then name
 * both hashes), the module's arguments and its resource request per task
 * (options that repeat it may be given, others are refused) - so the same
 * phases and tasks are generated again
 * (phase.c and generator.c check that they are).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recovery.h"
#include "jm.h"
#include "jobdir.h"
#include "journal.h"
#include "log.h"
#include "phase.h"
#include "resources.h"
#include "stop.h"
#include "util.h"

/* 1 if the journal's job committed anything: a result, or a phase whose
 * commit_job ran. One that did not (its module exit()ed in a constructor,
 * say) leaves nothing a resume could keep. */
static int jr_committed(const spits_jr_t *jr)
{
    for (uint32_t i = 0; i < jr->nphases; i++)
        if (jr->phases[i].nresults || jr->phases[i].ended)
            return 1;
    return 0;
}

/* 0: no journal, or one of a finished job or of a job that committed
 * nothing (removed); -1: an unfinished job's. The caller holds the job
 * dir's lock, so the journal's JM is not running. */
static int check_old_journal(jm_t *jm, char *err, size_t errlen)
{
    spits_jr_t jr;
    char why[1024], path[PATH_MAX];
    int rc = spits_journal_load(jm->opt.jobdir, &jr, why, sizeof why);

    if (rc == 1)
        return 0;
    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_JOURNAL_FILE);
    if (rc < 0) {
        snprintf(err, errlen, "%s; remove %s to start a new job in %s", why,
                 path, jm->opt.jobdir);
        return -1;
    }
    const char *id = json_string_value(json_object_get(jr.job, "job_id"));
    int ended = jr.job_ended || !jr_committed(&jr);
    if (!jr.job_ended && ended)
        spits_info("replacing the journal of job %s, which committed nothing",
                   id ? id : "?");
    if (!ended)
        snprintf(err, errlen, "%s holds job %s, which did not finish: resume "
                 "it with spits-jm --resume --jobdir %s, or remove %s to start "
                 "a new job", jm->opt.jobdir, id ? id : "?", jm->opt.jobdir,
                 path);
    spits_journal_unload(&jr);
    if (!ended)
        return -1;
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int jm_recovery_start(jm_t *jm, int margc, const char **margv, char *err,
                      size_t errlen)
{
    if (check_old_journal(jm, err, errlen) != 0 ||
        spits_jobdir_clear_old(jm->opt.jobdir, err, errlen) != 0)
        return -1;
    if (!jm->opt.journal)
        return 0;
    jm->journal = spits_journal_create(jm->opt.jobdir, err, errlen);
    if (!jm->journal)
        return -1;
    json_t *argv = json_array();
    for (int i = 0; i < margc; i++)
        json_array_append_new(argv, json_string(margv[i]));
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:o}", "version", 1,
                            "job_id", jm->job_id, "module", jm->module_path,
                            "module_hash", jm->module_hash, "argv", argv);
    /* (the request is the job's: a resume keeps it) */
    json_t *res = spits_res_req_json(&jm->opt.res);
    if (doc && res)
        json_object_set_new(doc, "resources", res);
    else
        json_decref(res);
    int rc = doc ? spits_journal_add_json(jm->journal, SPITS_JR_JOB, 0, 0, doc) : -1;
    json_decref(doc);
    if (rc != 0) {
        snprintf(err, errlen, "cannot encode the journal's job record (module "
                 "arguments must be UTF-8)");
        return -1;
    }
    return spits_journal_sync(jm->journal, err, errlen);
}

/* The resumed job's request is the one in its journal: options that
 * repeat it are fine, one that differs is refused (as a module or
 * arguments that differ are). 0, or -1 with err set. */
static int resume_request(jm_t *jm, const json_t *saved, const char *id, char *err,
                          size_t errlen)
{
    spits_res_req_t was, *opt = &jm->opt.res;
    const char *why = NULL;
    char was_text[128], opt_text[128];
    if (spits_res_req_parse(saved, &was, &why) != 0) {
        snprintf(err, errlen, "%s/%s: the job record holds %s", jm->opt.jobdir,
                 SPITS_JOURNAL_FILE, why);
        return -1;
    }
    if ((opt->cpus && opt->cpus != was.cpus) || (opt->gpus && opt->gpus != was.gpus) ||
        (opt->mem && opt->mem != was.mem)) {
        spits_res_req_describe(&was, was_text, sizeof was_text);
        spits_res_req_describe(opt, opt_text, sizeof opt_text);
        snprintf(err, errlen, "job %s in %s asks %s per task (its journal), not %s: a "
                 "resumed job keeps its request; give none of --cpus-per-task, "
                 "--gpus-per-task, --mem-per-task, or the same", id, jm->opt.jobdir,
                 was_text, opt_text);
        return -1;
    }
    *opt = was;
    return 0;
}

int jm_recovery_resume(jm_t *jm, const char *modarg, char ***margv_out,
                       int *margc_out, char *err, size_t errlen)
{
    spits_jr_t *jr = &jm->replay;
    char path[PATH_MAX];
    int rc = spits_journal_load(jm->opt.jobdir, jr, err, errlen);

    if (rc == 1) {
        snprintf(err, errlen, "%s has no %s: there is no job to resume",
                 jm->opt.jobdir, SPITS_JOURNAL_FILE);
        return -1;
    }
    if (rc < 0)
        return -1;
    const char *id = json_string_value(json_object_get(jr->job, "job_id"));
    const char *mod = json_string_value(json_object_get(jr->job, "module"));
    const char *mhash = json_string_value(json_object_get(jr->job, "module_hash"));
    json_t *argv = json_object_get(jr->job, "argv");
    if (!id || strlen(id) >= sizeof jm->job_id || !mod || !mhash ||
        !json_is_array(argv) || json_array_size(argv) < 1) {
        snprintf(err, errlen, "%s/%s: the job record lacks job_id, module, "
                 "module_hash or argv", jm->opt.jobdir, SPITS_JOURNAL_FILE);
        return -1;
    }
    if (jr->job_ended) {
        snprintf(err, errlen, "job %s in %s already finished (exit status "
                 "%lld); there is nothing to resume", id, jm->opt.jobdir,
                 (long long)jr->exit_status);
        return 1;
    }
    if (modarg && (!realpath(modarg, path) || strcmp(path, mod) != 0)) {
        snprintf(err, errlen, "the job in %s runs module %s, not %s", jm->opt.jobdir,
                 mod, modarg);
        return -1;
    }
    if (resume_request(jm, json_object_get(jr->job, "resources"), id, err, errlen) != 0)
        return -1;
    /* The bytes hashed here are the ones loaded: a module changed after
     * this check cannot slip in. */
    if (!(jm->image = spits_image_read(mod, err, errlen)))
        return -1;
    const char *now = spits_image_hash(jm->image);
    if (strcmp(now, mhash) != 0 && !jm->opt.module_changed) {
        snprintf(err, errlen, "module %s changed since job %s started (its "
                 "BLAKE2b hash differs); a job resumes only with the same "
                 "module, unless --module-changed says that the change is "
                 "meant (a fix)", mod, id);
        spits_image_free(&jm->image);
        return -1;
    }
    if (strcmp(now, mhash) != 0) {
        /* The TMs load what is there now; the journal keeps the hash the
         * job started with, so each resume with it says so again. */
        snprintf(jm->module_hash_was, sizeof jm->module_hash_was, "%s", mhash);
        spits_warn("module %s changed since job %s started (BLAKE2b %.16s... "
                   "then, %.16s... now): resuming with it (--module-changed); "
                   "committed results are kept", mod, id, mhash, now);
        mhash = now;
    }
    size_t n = json_array_size(argv);
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        const char *s = json_string_value(json_array_get(argv, i));
        if (!s || !(v[i] = strdup(s))) {
            snprintf(err, errlen, "the journal's module arguments are not strings");
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return -1;
        }
    }
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *margv_out = v;
    *margc_out = (int)n;
    snprintf(jm->job_id, sizeof jm->job_id, "%s", id);
    snprintf(jm->module_path, sizeof jm->module_path, "%s", mod);
    snprintf(jm->module_hash, sizeof jm->module_hash, "%s", mhash);

    if (jr->torn_bytes)
        spits_warn("%s/%s: cut off a torn tail of %llu byte(s) at byte %llu "
                   "(a record the crash left half-written)", jm->opt.jobdir,
                   SPITS_JOURNAL_FILE, (unsigned long long)jr->torn_bytes,
                   (unsigned long long)jr->valid_len);
    if (jm->opt.journal) {
        jm->journal = spits_journal_append(jm->opt.jobdir, jr->valid_len, err,
                                           errlen);
        if (!jm->journal)
            return -1;
    }
    /* The interrupted run's jm.json and report are no longer true. */
    if (spits_jobdir_clear_old(jm->opt.jobdir, err, errlen) != 0)
        return -1;
    jm->resuming = 1;
    size_t results = 0;
    for (uint32_t i = 0; i < jr->nphases; i++)
        results += jr->phases[i].nresults;
    spits_info("resuming job %s: %u phase(s) and %zu result(s) in the journal",
               id, jr->nphases, results);
    return 0;
}

void jm_recovery_abandon(jm_t *jm)
{
    char path[PATH_MAX];
    if (!jm->journal)
        return;
    spits_journal_destroy(&jm->journal);
    if (jm->resuming)
        return;   /* the job's journal stays resumable */
    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_JOURNAL_FILE);
    unlink(path);
}

void jm_recovery_failed(jm_t *jm, const char *why)
{
    jm->runtime_error = 1;
    jm_fatal("%s; job stopped: once that is fixed, spits-jm --resume "
             "--jobdir %s continues it", why, jm->opt.jobdir);
}

void jm_recovery_end(jm_t *jm, int status, int finished)
{
    char err[512] = "out of memory";
    if (!jm->journal)
        return;
    /* A job that finished is not resumable; one that was interrupted,
     * failed tasks or hit a runtime error is. */
    if (finished &&
        (spits_journal_add(jm->journal, SPITS_JR_JOB_END, 0, 0,
                           (uint64_t)(int64_t)status, NULL, 0) != 0 ||
         spits_journal_sync(jm->journal, err, sizeof err) != 0))
        spits_warn("cannot journal the end of the job: %s", err);
    spits_journal_destroy(&jm->journal);
}
