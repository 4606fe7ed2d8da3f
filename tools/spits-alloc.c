/*
 * spits-alloc.c - keeps the right number of Task Manager queue jobs
 * submitted for one spits job, on Slurm.
 *
 *   spits-alloc [OPTIONS] [--jobdir DIR] [-- SBATCH OPTIONS...]
 *
 * Every --interval it asks the job (spits-status --json: remaining tasks,
 * task time, workers, the JM's bandwidth) and the queue (squeue, its own
 * jobs by name), decides (alloc-policy.c) and submits TM jobs
 * (tools/slurm/spits-tm.sbatch) or cancels queued ones it no longer
 * needs. It stops when the job is over (or on SIGTERM/SIGINT), cancelling
 * its still-queued jobs; running TMs drain on their own.
 *
 * Its state is DIR/alloc.json (jobs submitted, by id; written after every
 * change), and its jobs carry one name derived from the job dir, so a
 * restarted spits-alloc finds every job of its own in the queue, even one
 * submitted just before a kill -9, and never submits twice. One
 * spits-alloc per job dir (a flock on DIR/alloc.lock). sbatch and squeue
 * failures that may pass are retried with a doubling backoff; a request
 * sbatch refuses (a bad partition, account or option), no sbatch or
 * squeue, and a squeue that never answered in ALLOC_QUEUE_TRIES tries are
 * one error line and exit 1, never a loop of submissions or retries.
 */
#define _GNU_SOURCE             /* getopt_long's permutation stops at "--" */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc-policy.h"
#include "alloc-request.h"
#include "alloc-slurm.h"
#include "jobdir.h"
#include "log.h"
#include "resources.h"
#include "selfexe.h"
#include "util.h"

#include "alloc.h"

static const char *const job_states[] = {"queued", "running", "ended", "cancelled"};

/* --- state ------------------------------------------------------------- */

static json_t *alloc_state_json(const alloc_t *a, int done)
{
    char host[256];
    json_t *jobs = json_array();
    for (size_t i = 0; i < a->njobs; i++)
        json_array_append_new(jobs, json_pack("{s:I, s:s, s:f, s:i}",
            "id", (json_int_t)a->jobs[i].id, "state", job_states[a->jobs[i].state],
            "submitted", a->jobs[i].submitted, "time_min", a->jobs[i].time_min));
    spits_hostname(host, sizeof host);
    return json_pack("{s:i, s:s, s:I, s:s, s:f, s:f, s:s, s:I, s:I, s:o, s:s, s:b}",
        "version", 1, "name", a->name, "pid", (json_int_t)getpid(), "host", host,
        "created", a->created, "updated", spits_wall_time(), "job_id", a->job_id,
        "submitted", (json_int_t)a->submitted, "cancelled", (json_int_t)a->cancelled,
        "jobs", jobs, "last_decision", a->last, "done", done);
}

static void alloc_save(const alloc_t *a, int done)
{
    char err[1024];
    json_t *doc = alloc_state_json(a, done);
    if (!doc || spits_json_write_atomic(a->state_path, doc, 0644, err, sizeof err) != 0)
        spits_warn("cannot write %s: %s", a->state_path, doc ? err : "out of memory");
    json_decref(doc);
}

static int alloc_add_job(alloc_t *a, long id, int state, double when, int time_min)
{
    for (size_t i = 0; i < a->njobs; i++)
        if (a->jobs[i].id == id)
            return 0;
    if (spits_grow((void **)&a->jobs, &a->capjobs, a->njobs + 1, sizeof *a->jobs, 16) != 0)
        return -1;
    a->jobs[a->njobs++] = (alloc_job_t){id, state, when, time_min};
    return 0;
}

/* Reads DIR/alloc.json of an earlier run. 0 (also when there is none),
 * or -1 with err set. */
static int alloc_load(alloc_t *a, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_load_file(a->state_path, 0, &je), *jobs, *j;
    size_t i;

    if (!doc) {
        if (access(a->state_path, F_OK) != 0 && errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s is damaged (%s, line %d): it is spits-alloc's "
                 "record of its queue jobs; fix it or move it aside", a->state_path,
                 je.text, je.line);
        return -1;
    }
    if (json_is_true(json_object_get(doc, "done"))) {
        /* an earlier run's, finished: this run starts its own record */
        json_decref(doc);
        return 0;
    }
    const char *job = json_string_value(json_object_get(doc, "job_id"));
    const char *last = json_string_value(json_object_get(doc, "last_decision"));
    a->created = json_number_value(json_object_get(doc, "created"));
    a->submitted = (long)json_integer_value(json_object_get(doc, "submitted"));
    a->cancelled = (long)json_integer_value(json_object_get(doc, "cancelled"));
    snprintf(a->job_id, sizeof a->job_id, "%s", job ? job : "");
    snprintf(a->last, sizeof a->last, "%s", last ? last : "");
    jobs = json_object_get(doc, "jobs");
    if (!json_is_array(jobs) || a->created <= 0) {
        snprintf(err, errlen, "%s is not spits-alloc's record (no jobs or created): "
                 "fix it or move it aside", a->state_path);
        json_decref(doc);
        return -1;
    }
    json_array_foreach(jobs, i, j) {
        const char *st = json_string_value(json_object_get(j, "state"));
        int state = JOB_ENDED;
        for (int s = 0; st && s < 4; s++)
            if (strcmp(st, job_states[s]) == 0)
                state = s;
        if (alloc_add_job(a, (long)json_integer_value(json_object_get(j, "id")), state,
                          json_number_value(json_object_get(j, "submitted")),
                          (int)json_integer_value(json_object_get(j, "time_min"))) != 0) {
            snprintf(err, errlen, "out of memory reading %s", a->state_path);
            json_decref(doc);
            return -1;
        }
    }
    json_decref(doc);
    return 0;
}

/* --- the queue --------------------------------------------------------- */

static void alloc_backoff(alloc_t *a)
{
    a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : 5000;
    if (a->backoff_ms > ALLOC_BACKOFF_MAX_MS)
        a->backoff_ms = ALLOC_BACKOFF_MAX_MS;
    a->retry_at = spits_now_ms() + a->backoff_ms;
}

/* Brings the jobs' states up to date from squeue: a job of our name not in
 * the record (submitted just before a crash) is adopted; a recorded job no
 * longer in the queue has ended. 0, or alloc_squeue's failure with err
 * set. */
static int alloc_refresh(alloc_t *a, int *queued, int *running, char *err, size_t errlen)
{
    static alloc_qjob_t q[ALLOC_QUEUE_MAX];
    int n = alloc_squeue(a->name, q, ALLOC_QUEUE_MAX, err, errlen);
    if (n < 0)
        return n;
    a->backoff_ms = 0;
    a->queue_answered = 1;
    for (int k = 0; k < n; k++) {
        size_t before = a->njobs;
        if (alloc_add_job(a, q[k].id, JOB_QUEUED, spits_wall_time(), 0) != 0) {
            snprintf(err, errlen, "out of memory adopting job %ld", q[k].id);
            return -1;
        }
        if (a->njobs > before) {
            a->submitted++;
            spits_info("found job %ld of ours in the queue, not in %s: adopted it",
                       q[k].id, a->state_path);
        }
    }
    *queued = *running = 0;
    for (size_t i = 0; i < a->njobs; i++) {
        alloc_job_t *j = &a->jobs[i];
        int k = 0;
        while (k < n && q[k].id != j->id)
            k++;
        if (k == n) {
            if (j->state == JOB_QUEUED || j->state == JOB_RUNNING)
                j->state = JOB_ENDED;
            continue;
        }
        if (j->state == JOB_CANCELLED)
            continue;            /* cancelled, on its way out */
        j->state = q[k].pending ? JOB_QUEUED : JOB_RUNNING;
        *queued += q[k].pending;
        *running += !q[k].pending;
    }
    return 0;
}

/* Cancels up to n of its queued jobs, the newest first (all: n < 0). */
static void alloc_cancel(alloc_t *a, int n, const char *why)
{
    long *ids = malloc((a->njobs ? a->njobs : 1) * sizeof *ids);
    size_t k = 0;
    char err[512];

    if (!ids)
        return;
    for (size_t i = a->njobs; i-- > 0 && (n < 0 || (int)k < n);)
        if (a->jobs[i].state == JOB_QUEUED)
            ids[k++] = a->jobs[i].id;
    if (k && !a->dry_run && alloc_scancel(ids, k, err, sizeof err) != 0) {
        spits_warn("%s (cancelling %zu queued job(s))", err, k);
    } else if (k) {
        for (size_t i = 0; i < a->njobs; i++)
            for (size_t c = 0; c < k; c++)
                if (a->jobs[i].id == ids[c] && !a->dry_run)
                    a->jobs[i].state = JOB_CANCELLED;
        a->cancelled += a->dry_run ? 0 : (long)k;
        spits_info("%s %zu queued job(s): %s", a->dry_run ? "(dry run) would cancel"
                                                         : "cancelled", k, why);
    }
    free(ids);
}

/* The job's resource request, from DIR/jm.json (none asked: zeros). 0;
 * 1 when there is no jm.json (no JM yet, or one resuming), -1 when it
 * cannot be read; err says why. */
static int alloc_request_read(const alloc_t *a, spits_res_req_t *req, char *err,
                              size_t errlen)
{
    char path[PATH_MAX];
    json_error_t je;
    const char *why = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", a->dir, SPITS_ANNOUNCE_FILE) >= sizeof path) {
        snprintf(err, errlen, "the job dir's path is too long");
        return -1;
    }
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc && access(path, F_OK) != 0) {
        snprintf(err, errlen, "no job in %s yet (no %s): its spits-jm says what its "
                 "tasks need, start it first", a->dir, SPITS_ANNOUNCE_FILE);
        return 1;
    }
    if (!doc) {
        snprintf(err, errlen, "cannot read the job's request from %s: %s", path, je.text);
        return -1;
    }
    int rc = spits_res_req_parse(json_object_get(doc, "resources"), req, &why);
    json_decref(doc);
    if (rc != 0)
        snprintf(err, errlen, "%s holds %s", path, why);
    return rc;
}

/* The sbatch options a TM job asks for (alloc-request.h), into opts,
 * pointed to by pre, and said (each followed by a blank). Their count;
 * -1 after saying why the request cannot be read (an error; a warning
 * only, with *missing set, when there is no jm.json). */
static int alloc_request_opts(const alloc_t *a, char opts[][ALLOC_REQ_LEN], char *pre[],
                              char *said, size_t saidlen, int *missing)
{
    char err[PATH_MAX + 512];
    spits_res_req_t req;
    int rc = alloc_request_read(a, &req, err, sizeof err);
    *missing = rc > 0;
    if (rc != 0) {
        if (rc > 0 && !a->print_options)
            spits_warn("%s: submitting nothing this time", err);
        else
            spits_error("%s", err);
        return -1;
    }
    int n = alloc_request_args(&req, a->lim.workers_per_job, a->gres, a->sbatch_args,
                               a->nsbatch, opts);
    said[0] = '\0';
    for (int i = 0; i < n; i++) {
        pre[i] = opts[i];
        snprintf(said + strlen(said), saidlen - strlen(said), "%s ", opts[i]);
    }
    return n;
}

/* Submits n jobs, each asking Slurm for what the job's request needs
 * (alloc-request.h). 0, or -1 when sbatch refused the request itself or
 * the request cannot be read. */
static int alloc_submit(alloc_t *a, int n, int time_min)
{
    char err[512], opts[ALLOC_REQ_MAX][ALLOC_REQ_LEN];
    char said[ALLOC_REQ_MAX * (ALLOC_REQ_LEN + 1)], *pre[ALLOC_REQ_MAX];

    int missing;
    int npre = alloc_request_opts(a, opts, pre, said, sizeof said, &missing);
    if (npre < 0 && missing)
        return 0;      /* (a JM resuming rewrites it) */
    if (npre < 0) {
        a->stop_why = "no request to read";
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (a->dry_run) {
            char bufs[2][256], line[4096] = "";
            char **argv = alloc_sbatch_argv(a->name, pre, npre, a->sbatch_args, a->nsbatch,
                                            time_min, a->script, a->real_dir, bufs);
            for (int k = 0; argv && argv[k]; k++)
                snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s",
                         k ? " " : "", argv[k]);
            free(argv);
            spits_info("(dry run) would submit: %s", line);
            continue;
        }
        long id = alloc_sbatch(a->name, pre, npre, a->sbatch_args, a->nsbatch, time_min,
                               a->script, a->real_dir, err, sizeof err);
        if (id == ALLOC_NOT_FOUND) {
            spits_error("%s: spits-alloc submits with Slurm's sbatch", err);
            a->stop_why = "no sbatch";
            return -1;
        }
        if (id < 0) {
            spits_error("sbatch refused the Task Manager job: %s; fix the sbatch "
                        "options after -- (or --script)", err);
            a->stop_why = "sbatch refused the job";
            return -1;
        }
        if (id == 0) {
            alloc_backoff(a);
            spits_warn("sbatch failed: %s; trying again in %lld s", err,
                       (long long)(a->backoff_ms / 1000));
            return 0;
        }
        a->backoff_ms = 0;
        if (alloc_add_job(a, id, JOB_QUEUED, spits_wall_time(), time_min) != 0)
            spits_warn("out of memory recording job %ld (it is in the queue under "
                       "%s, where a restart finds it)", id, a->name);
        a->submitted++;
        alloc_save(a, 0);
        spits_info("submitted job %ld (%s--time=%d)", id, said, time_min);
    }
    return 0;
}

/* --- the job ----------------------------------------------------------- */

enum { JOB_UNKNOWN, JOB_LIVE, JOB_HOLD, JOB_OVER };

/* The job now (spits-status --json), as the policy's input: JOB_LIVE;
 * JOB_OVER; JOB_HOLD between phases or while a stopped job waits for
 * spits-jm --resume (its queue is kept as it is); JOB_UNKNOWN while no JM
 * answers. */
static int alloc_job_state(alloc_t *a, alloc_in_t *in)
{
    char *argv[] = {a->status_exe, "--jobdir", (char *)a->dir, "--json", "--timeout",
                    "5", NULL};
    int rc = alloc_run(argv, 0, a->status_buf, ALLOC_STATUS_MAX, NULL, 30);
    json_t *doc = rc == 0 ? json_loads(a->status_buf, 0, NULL) : NULL;
    const char *job = json_string_value(json_object_get(doc, "job_id"));
    struct stat st;
    int state = JOB_UNKNOWN;

    if (json_object_get(doc, "finished")) {
        /* A report: of the job we served, or of one that ended after we
         * started; an older one is of an earlier job in this dir. One that
         * can be resumed is not over: spits-jm --resume may come. */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/report.json", a->dir);
        if ((job && a->job_id[0] && strcmp(job, a->job_id) == 0) ||
            (stat(path, &st) == 0 && (double)st.st_mtime >= a->created - 1))
            state = json_is_true(json_object_get(doc, "resumable")) ? JOB_HOLD : JOB_OVER;
    } else if (job && json_is_string(json_object_get(doc, "state")) &&
               strcmp(json_string_value(json_object_get(doc, "state")), "running") != 0) {
        state = JOB_HOLD;           /* between phases */
    } else if (json_object_get(doc, "state") && job) {
        const json_t *k = json_object_get(doc, "tasks"), *m = json_object_get(doc, "model");
        const json_t *tms = json_object_get(doc, "tms"), *t;
        size_t i;
        snprintf(a->job_id, sizeof a->job_id, "%s", job);
        memset(in, 0, sizeof *in);
        in->gen_done = json_is_true(json_object_get(k, "generation_done"));
        double made = (double)json_integer_value(json_object_get(k, in->gen_done ? "total"
                                                                              : "generated"));
        in->remaining = made - (double)json_integer_value(json_object_get(k, "committed")) -
                        (double)json_integer_value(json_object_get(k, "failed"));
        in->task_s = json_is_number(json_object_get(m, "task_s"))
                         ? json_number_value(json_object_get(m, "task_s")) : -1;
        in->bw_bytes_s = json_is_number(json_object_get(m, "bandwidth_mb_s"))
                             ? json_number_value(json_object_get(m, "bandwidth_mb_s")) * 1e6
                             : -1;
        in->bytes_per_task = json_number_value(json_object_get(m, "bytes_per_task"));
        json_array_foreach(tms, i, t) {
            in->workers += (int)json_integer_value(json_object_get(t, "workers"));
            in->tms++;
        }
        state = JOB_LIVE;
    }
    json_decref(doc);
    return state;
}

/* --- the loop ---------------------------------------------------------- */

/* Logs the decision when it acts, when its reason changes, or once a
 * minute (alloc_log_due); alloc.json keeps the last one for
 * spits-status. */
static void alloc_note(alloc_t *a, const alloc_in_t *in, const alloc_plan_t *p)
{
    char line[512];
    int64_t now = spits_now_ms();
    snprintf(line, sizeof line, "%s; jobs: %d queued, %d running, %ld submitted of "
             "%ld: %s", p->why, in->queued, in->running, in->submitted,
             a->lim.max_total, p->submit ? "submit" : p->cancel ? "cancel" : "hold");
    if (p->submit)
        snprintf(line + strlen(line), sizeof line - strlen(line), " %d (--time=%d)",
                 p->submit, p->time_min);
    else if (p->cancel)
        snprintf(line + strlen(line), sizeof line - strlen(line), " %d", p->cancel);
    if (alloc_log_due(&a->log, p, now))
        spits_info("%s", line);
    snprintf(a->last, sizeof a->last, "%s", line);
}

/* squeue failed (rc, err). No squeue, or one that never answered in
 * ALLOC_QUEUE_TRIES tries (no controller to be found from here), is an
 * error: -1. Once it has answered, an outage may pass: 0, and it is
 * asked again after a backoff. */
static int alloc_queue_failed(alloc_t *a, int rc, const char *err)
{
    if (rc == ALLOC_NOT_FOUND) {
        spits_error("%s: spits-alloc watches the queue with Slurm's squeue", err);
        a->stop_why = "no squeue";
        return -1;
    }
    if (!a->queue_answered && ++a->queue_fails >= ALLOC_QUEUE_TRIES) {
        spits_error("%s (%d tries, no answer yet): no Slurm controller can be reached "
                    "from here", err, a->queue_fails);
        a->stop_why = "no Slurm controller";
        return -1;
    }
    alloc_backoff(a);
    spits_warn("%s; trying again in %lld s", err, (long long)(a->backoff_ms / 1000));
    return 0;
}

/* One look at the job and the queue, and what follows. 1 when the job is
 * over, -1 on an error (logged; a->stop_why says it), 0 otherwise. */
static int alloc_round(alloc_t *a)
{
    alloc_in_t in;
    alloc_plan_t p;
    char err[512];
    int state = alloc_job_state(a, &in);

    if (state == JOB_OVER)
        return 1;
    if (state == JOB_UNKNOWN || state == JOB_HOLD) {
        if (!a->jm_silent_logged++)
            spits_info(state == JOB_HOLD
                       ? "the job is between phases, or stopped and resumable: "
                         "holding its queue jobs as they are"
                       : "no job manager answers for %s yet; waiting for one", a->dir);
        return 0;
    }
    a->jm_silent_logged = 0;
    if (spits_now_ms() < a->retry_at)
        return 0;
    int rc = alloc_refresh(a, &in.queued, &in.running, err, sizeof err);
    if (rc != 0 && !a->dry_run)
        return alloc_queue_failed(a, rc, err);
    if (rc != 0) {
        /* A dry run shows its decision without a queue too. */
        if (!a->dry_noted++)
            spits_info("(dry run) %s: deciding as if no job of ours were queued", err);
        in.queued = in.running = 0;
    }
    in.submitted = a->submitted;
    alloc_decide(&in, &a->lim, &p);
    alloc_note(a, &in, &p);
    if (p.cancel)
        alloc_cancel(a, p.cancel, "more than the job needs now");
    rc = p.submit ? alloc_submit(a, p.submit, p.time_min) : 0;
    alloc_save(a, 0);
    return rc;
}

/* The job is over, or we were told to stop: its queued jobs go. */
static void alloc_finish(alloc_t *a, const char *why)
{
    int queued = 0, running = 0;
    char err[512];
    if (alloc_refresh(a, &queued, &running, err, sizeof err) == 0 || a->njobs)
        alloc_cancel(a, -1, why);
    alloc_save(a, 1);
    spits_info("%s: %ld job(s) submitted in all, %ld cancelled while queued; running "
               "ones drain on their own", why, a->submitted, a->cancelled);
}

/* 1 when the job in the dir is over by its report.json, and not one that
 * spits-jm --resume may go on with (job gets its id). It must be the job
 * of jm.json: a JM started anew in the dir announces another. */
static int alloc_job_over(const alloc_t *a, char *job, size_t len)
{
    spits_announce_t an;
    char err[512];
    if (spits_announce_read(a->dir, &an, err, sizeof err) != 0 ||
        !spits_jobdir_finished(a->dir, an.job_id, 0))
        return 0;
    snprintf(job, len, "%s", an.job_id);
    return 1;
}

/* Waits the interval; the signal that came (SIGINT, SIGTERM) or 0. */
static int alloc_sleep(const sigset_t *stop, double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    int sig = sigtimedwait(stop, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* --- main -------------------------------------------------------------- */

/* The queue name of this job dir's TM jobs: "spits-tm-" and 8 bytes of
 * the BLAKE2b of its real path. */
static int alloc_name(alloc_t *a, char *err, size_t errlen)
{
    char *real = a->real_dir;
    unsigned char h[8];
    if (!realpath(a->dir, real)) {
        snprintf(err, errlen, "%s: %s", a->dir, strerror(errno));
        return -1;
    }
    crypto_generichash(h, sizeof h, (const unsigned char *)real, strlen(real), NULL, 0);
    int n = snprintf(a->name, sizeof a->name, "spits-tm-");
    sodium_bin2hex(a->name + n, sizeof a->name - (size_t)n, h, sizeof h);
    return 0;
}

/* One spits-alloc per job dir: 0 (the lock is kept for the process's
 * life), or -1 with err saying who holds it. */
static int alloc_lock(alloc_t *a, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", a->dir, ALLOC_LOCK_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        json_t *st = json_load_file(a->state_path, 0, NULL);
        snprintf(err, errlen, "a spits-alloc is already running for %s (pid %lld on "
                 "%s): stop it first (kill -TERM), or let it be", a->dir,
                 (long long)json_integer_value(json_object_get(st, "pid")),
                 json_string_value(json_object_get(st, "host"))
                     ? json_string_value(json_object_get(st, "host")) : "?");
        json_decref(st);
        close(fd);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static alloc_t a;
    char err[2 * PATH_MAX];
    sigset_t stop;
    int rc;

    spits_log_init("spits-alloc", SPITS_LOG_INFO);
    if ((rc = alloc_options(&a, argc, argv)) != 0)
        return rc;
    if (a.print_options) {
        char opts[ALLOC_REQ_MAX][ALLOC_REQ_LEN], said[ALLOC_REQ_MAX * (ALLOC_REQ_LEN + 1)];
        char *pre[ALLOC_REQ_MAX];
        int missing;
        int n = alloc_request_opts(&a, opts, pre, said, sizeof said, &missing);
        if (n < 0)
            return 1;
        printf("%.*s\n", (int)(strlen(said) ? strlen(said) - 1 : 0), said);
        return 0;
    }
    if (sodium_init() < 0)
        return 1;
    if (spits_jobdir_prepare(a.dir, err, sizeof err) != 0 ||
        alloc_name(&a, err, sizeof err) != 0) {
        spits_error("%s", err);
        return 1;
    }
    snprintf(a.state_path, sizeof a.state_path, "%s/%s", a.dir, ALLOC_STATE_FILE);
    if (alloc_lock(&a, err, sizeof err) != 0 || alloc_load(&a, err, sizeof err) != 0) {
        spits_error("%s", err);
        return 1;
    }
    char job[64];
    if (alloc_job_over(&a, job, sizeof job)) {
        spits_info("job %s in %s is over (report.json): nothing to submit; for a new "
                   "job in this directory, start spits-alloc after its spits-jm", job,
                   a.dir);
        if (a.created > 0)         /* an earlier run's record: its queued jobs go */
            alloc_finish(&a, "the job is over");
        return 0;
    }
    if (a.created <= 0)
        a.created = spits_wall_time();
    if (!(a.status_buf = malloc(ALLOC_STATUS_MAX))) {
        spits_error("out of memory");
        return 1;
    }
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    spits_info("keeping Task Manager jobs (%s, script %s) for %s: target %.3g s, at most "
               "%d queued, %d in the queue, %ld in all%s", a.name, a.script, a.dir,
               a.lim.target_s, a.lim.max_queued, a.lim.max_running, a.lim.max_total,
               a.dry_run ? " (dry run)" : "");
    alloc_save(&a, 0);
    for (;;) {
        int r = alloc_round(&a);
        if (r > 0) {
            alloc_finish(&a, "the job is over");
            break;
        }
        if (r < 0) {
            alloc_finish(&a, a.stop_why);
            free(a.status_buf);
            return 1;
        }
        int sig = alloc_sleep(&stop, a.interval);
        if (sig) {
            alloc_finish(&a, sig == SIGTERM ? "stopped by SIGTERM" : "stopped by SIGINT");
            break;
        }
    }
    free(a.status_buf);
    free(a.jobs);
    return 0;
}
