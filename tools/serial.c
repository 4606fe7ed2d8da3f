/*
 * serial.c - spits-run --serial: a module run in this process, on one
 * thread, in a fixed order, so that it can be run under gdb or valgrind
 * and its output compared with a distributed run's.
 *
 * The module is loaded as spits-jm loads it (module.c: the same checks and
 * refusals), and spits_main, when it exports one, is given a runner as
 * spits-jm's. Each phase (the one job of a module without spits_main, or
 * each run() call) makes its job manager, committer and worker with the
 * phase's argv and jobinfo, then task by task calls next_task, worker_run
 * on the task and commit_pit on its result, in the order the tasks were
 * generated, and at the end commit_job. Each call is judged by modcall.c,
 * as spits-jm and spits-tm judge it, and the exit status is what spits-jm's
 * would be. No job manager, task manager, socket or job dir is involved.
 *
 * There are no retries: a failed run ends the phase as a task that failed
 * every attempt does in spits-jm (commit_job is not called, exit status
 * 3), since a task that fails here is the one to debug; with --keep-going
 * the phase goes on without it and commit_job runs, as in spits-jm.
 *
 * What the worker prints on stdout is a log, not the job's result, as a
 * task manager's is (taskmanager/tm.c): stdout is a memory file during
 * worker calls, whose lines then go to stderr, each after a prefix, so
 * that the two runs' stdouts are the same bytes. A crash copies what the
 * file holds first (crash.h, spits_crash_drain).
 *
 * --joblog FILE gets spits-jm's lines (jobmanager/joblog.c, linked in):
 * Host is this host, Starttime when the worker began the task, JobRuntime
 * the worker's run, written after each task (a run here is for
 * debugging: the line of the task before a crash is in the file).
 *
 * spitsrun_t carries no context pointer, so the run is reached through one
 * file-scope pointer, set while serial_run runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../jobmanager/joblog.h"
#include "crash.h"
#include "escape.h"
#include "log.h"
#include "modcall.h"
#include "module.h"
#include "push.h"
#include "serial.h"
#include "util.h"
#include "wire.h"

/* spits-jm's --max-task-bytes default: tasks and results over it fail
 * there, so they fail here too. */
#define SERIAL_MAX_BYTES (1ULL << 30)
#define SERIAL_LIMIT "spits-jm's --max-task-bytes default"
/* The journal keeps a final result's length in 32 bits. */
#define SERIAL_MAX_FINAL ((uint64_t)SPITS_TASK_BYTES_MAX)
#define SERIAL_FINAL_LIMIT "the journal's record size"

/* commit_pit failures named one by one; later ones only counted. */
#define SERIAL_COMMIT_NAMED 10

/* Where one kind of push goes: its last bytes, and the call's record. */
typedef struct {
    spits_buf_t buf;
    spits_modcall_t call;
    uint64_t max;
} serial_sink_t;

typedef struct {
    spits_module_t *mod;
    uint32_t phases;
    serial_sink_t task, result, final;
    uint64_t commit_errors;         /* commit_pit failures, all phases */
    uint64_t phase_commit_errors;   /* ...and the current phase's */
    int runtime_error;      /* exit status 1 */
    int failed_tasks;       /* exit status 3 */
    jm_joblog_t *joblog;    /* --joblog, or NULL */
    uint32_t log_host;      /* this host, in the joblog */
    int keep_going;         /* --keep-going: a failed task ends no phase */
    int out_w, out_r;       /* the worker's stdout: a memory file, written
                               and read through two offsets (-1: none) */
    int out_saved;          /* the real stdout while a worker call runs */
} serial_t;

static serial_t *serial_job;

#define SERIAL_OUT_PREFIX "spits-run: module stdout: "

/* The worker's stdout: a memory file, read through a second open of it
 * (its own offset), so that the crash handler reads what is unread. */
static void serial_out_open(serial_t *s)
{
    char path[64];
    s->out_w = s->out_r = s->out_saved = -1;
    s->out_w = memfd_create("spits-run-worker-stdout", MFD_CLOEXEC);
    snprintf(path, sizeof path, "/proc/self/fd/%d", s->out_w);
    if (s->out_w < 0 || (s->out_r = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        spits_warn("cannot keep the workers' stdout apart (%s); it is mixed "
                   "with the job's result", strerror(errno));
        if (s->out_w >= 0)
            close(s->out_w);
        s->out_w = -1;
        return;
    }
    spits_crash_drain(s->out_r, SERIAL_OUT_PREFIX);
}

static void serial_out_close(serial_t *s)
{
    spits_crash_drain(-1, NULL);
    if (s->out_w >= 0)
        close(s->out_w);
    if (s->out_r >= 0)
        close(s->out_r);
    s->out_w = s->out_r = -1;
}

/* A worker call begins: stdout goes into the memory file. */
static void serial_out_begin(serial_t *s)
{
    if (s->out_w < 0)
        return;
    fflush(stdout);
    if ((s->out_saved = dup(STDOUT_FILENO)) >= 0)
        dup2(s->out_w, STDOUT_FILENO);
}

/* It ended: stdout is the real one again, and what the call printed goes
 * to stderr line by line, each after the prefix. */
static void serial_out_end(serial_t *s)
{
    char buf[4096];
    ssize_t n;
    int at_start = 1;

    if (s->out_w < 0 || s->out_saved < 0)
        return;
    fflush(stdout);
    dup2(s->out_saved, STDOUT_FILENO);
    close(s->out_saved);
    s->out_saved = -1;
    while ((n = read(s->out_r, buf, sizeof buf)) > 0) {
        for (char *p = buf, *end = buf + n; p < end;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
            if (at_start)
                fputs(SERIAL_OUT_PREFIX, stderr);
            fwrite(p, 1, len, stderr);
            at_start = nl != NULL;
            p += len;
        }
    }
    if (!at_start)
        fputc('\n', stderr);
    fflush(stderr);
    /* (empty again: the file's size is one call's output at most) */
    if (ftruncate(s->out_w, 0) == 0) {
        lseek(s->out_w, 0, SEEK_SET);
        lseek(s->out_r, 0, SEEK_SET);
    }
}

/* The push callback of all three: ctx is the sink. */
static void serial_push(const void *data, spitssize_t size, spitsctx_t ctx)
{
    serial_sink_t *k = (serial_sink_t *)ctx;
    k->call.pushes++;
    spits_push_keep(&k->buf, data, size, k->max, &k->call.fault,
                    &k->call.bad_size);
}

/* Task id's joblog line, as spits-jm writes it (joblog.h), if one is
 * kept: the worker started at start (spits_now_ms) and ran ran ms; out
 * result bytes; exitval commit_pit's value, or the failed worker's, and
 * why its words on that failure (escaped), or NULL. */
static void serial_log(serial_t *s, uint32_t phase, uint64_t id, int64_t start,
                       int64_t ran, size_t out, int exitval, const char *why)
{
    if (!s->joblog)
        return;
    int64_t at = start - jm_joblog_epoch_ms(s->joblog);
    jm_joblog_add(s->joblog, phase, id, s->log_host,
                  (uint32_t)(at < 0 ? 0 : at > UINT32_MAX ? UINT32_MAX : at),
                  (uint32_t)(ran < 0 ? 0 : ran > UINT32_MAX ? UINT32_MAX : ran),
                  (uint32_t)(s->task.buf.len > UINT32_MAX ? UINT32_MAX : s->task.buf.len),
                  (uint32_t)(out > UINT32_MAX ? UINT32_MAX : out), exitval, why);
    jm_joblog_flush(s->joblog);
}

/* Runs task id of the phase through the worker (made at the first task,
 * as a task manager makes it) and commits its result. 0, or -1 when the
 * task failed (said why). */
static int serial_task(serial_t *s, uint32_t phase, uint64_t id, int argc,
                       const char **argv, spits_inst_t *worker, int *have_worker,
                       spits_inst_t *committer)
{
    const char *then = s->keep_going ? "; commit_job runs without it "
                       "(--keep-going)" : "; commit_job not called";
    if (!*have_worker) {
        serial_out_begin(s);
        int made = spits_module_worker_new(s->mod, worker, argc, argv) == 0;
        serial_out_end(s);
        if (!made) {
            spits_error("phase %u: spits_worker_new returned NULL, so task "
                        "%llu fails%s", phase, (unsigned long long)id, then);
            return -1;
        }
        *have_worker = 1;
    }
    s->result.buf.len = 0;
    spits_modcall_begin(&s->result.call);
    spits_crash_task(id);
    int64_t start = spits_now_ms();
    serial_out_begin(s);
    int rc = spits_module_worker_run(s->mod, worker, s->task.buf.data,
                                     (spitssize_t)s->task.buf.len,
                                     serial_push, &s->result);
    serial_out_end(s);
    int64_t ran = spits_now_ms() - start;
    if (spits_modcall_worker_run(&s->result.call, id, SERIAL_MAX_BYTES,
                                 SERIAL_LIMIT) != 0) {
        serial_log(s, phase, id, start, ran, 0, rc ? rc : -1, NULL);
        spits_error("phase %u: task %llu failed%s", phase,
                    (unsigned long long)id, then);
        return -1;
    }
    if (rc != 0) {
        /* (escaped as the JM escapes a TM's: failure.h) */
        char why[512];
        const char *said = spits_module_worker_error(s->mod, worker);
        spits_escape(why, sizeof why, said ? said : "");
        serial_log(s, phase, id, start, ran, 0, rc, why[0] ? why : NULL);
        spits_error("phase %u: task %llu failed: spits_worker_run returned "
                    "%d%s%s%s", phase, (unsigned long long)id, rc,
                    why[0] ? ": " : "", why, then);
        return -1;
    }
    rc = spits_module_commit_pit(s->mod, committer, s->result.buf.data,
                                 (spitssize_t)s->result.buf.len);
    serial_log(s, phase, id, start, ran, s->result.buf.len, rc, NULL);
    if (rc != 0)
        s->commit_errors++;
    if (rc != 0 && ++s->phase_commit_errors <= SERIAL_COMMIT_NAMED)
        spits_warn("commit_pit returned %d for task %llu of phase %u", rc,
                   (unsigned long long)id, phase);
    return 0;
}

/* The runner: one phase, start to end, on this thread (spits.h run()). */
static int serial_phase(int argc, const char **argv, const void *jobinfo,
                        spitssize_t jobinfosz, const void **final,
                        spitssize_t *finalsz)
{
    serial_t *s = serial_job;
    spits_inst_t manager, committer, worker;
    int have_worker = 0, rc = SPITS_RUN_FAILED;
    uint32_t phase = s->phases + 1;
    char err[256];

    if (final)
        *final = NULL;
    if (finalsz)
        *finalsz = 0;
    /* After a failure spits_main should return: nothing more runs. */
    if (s->runtime_error || (s->failed_tasks && !s->keep_going))
        return SPITS_RUN_FAILED;
    s->phases = phase;
    if (argc < 1 || !argv) {
        spits_error("phase %u: run() was given no arguments (argv[0] is "
                    "the module's path)", phase);
        s->runtime_error = 1;
        return SPITS_RUN_FAILED;
    }
    if (!jobinfo)
        jobinfosz = 0;
    memset(&s->task.call, 0, sizeof s->task.call);
    memset(&s->final.call, 0, sizeof s->final.call);
    if (spits_module_manager_new(s->mod, &manager, argc, argv, jobinfo,
                                 jobinfosz) != 0) {
        spits_error("phase %u: spits_job_manager_new returned NULL", phase);
        s->runtime_error = 1;
        return SPITS_RUN_FAILED;
    }
    if (spits_module_committer_new(s->mod, &committer, argc, argv, jobinfo,
                                   jobinfosz) != 0) {
        spits_error("phase %u: spits_committer_new returned NULL", phase);
        spits_module_manager_free(s->mod, &manager);
        s->runtime_error = 1;
        return SPITS_RUN_FAILED;
    }
    s->phase_commit_errors = 0;
    for (uint64_t id = 0;; id++) {
        s->task.buf.len = 0;   /* (1 without a push: an empty task) */
        spits_crash_task(id);
        int more = spits_module_next_task(s->mod, &manager, serial_push,
                                          &s->task);
        more = spits_modcall_next_task(&s->task.call, more, id, SERIAL_MAX_BYTES,
                                       SERIAL_LIMIT, err, sizeof err);
        if (more < 0) {
            spits_error("phase %u: %s", phase, err);
            s->runtime_error = 1;
            break;
        }
        if (more == 0)
            break;
        if (serial_task(s, phase, id, argc, argv, &worker, &have_worker,
                        &committer) != 0) {
            s->failed_tasks = 1;
            if (!s->keep_going || !have_worker)
                break;
        }
    }
    spits_module_manager_free(s->mod, &manager);
    if (have_worker) {
        serial_out_begin(s);
        spits_module_worker_free(s->mod, &worker);
        serial_out_end(s);
    }
    if (s->phase_commit_errors > SERIAL_COMMIT_NAMED)
        spits_warn("commit_pit failed for %llu result(s) of phase %u in all "
                   "(only the first %d are named)",
                   (unsigned long long)s->phase_commit_errors, phase,
                   SERIAL_COMMIT_NAMED);
    if (!s->runtime_error && (!s->failed_tasks || s->keep_going)) {
        s->final.buf.len = 0;   /* this phase's, not an earlier one's */
        rc = spits_module_commit_job(s->mod, &committer, serial_push, &s->final);
        if (spits_modcall_commit_job(&s->final.call, phase, SERIAL_MAX_FINAL,
                                     SERIAL_FINAL_LIMIT) != 0) {
            s->final.buf.len = 0;
            s->runtime_error = 1;
            rc = SPITS_RUN_FAILED;
        }
        if (final)
            *final = s->final.buf.len ? s->final.buf.data : NULL;
        if (finalsz)
            *finalsz = (spitssize_t)s->final.buf.len;
    }
    spits_module_committer_free(s->mod, &committer);
    return rc;
}

int serial_run(int argc, const char **argv, int commit_errors_ignore,
               int keep_going, const char *joblog)
{
    serial_t s;
    char err[1024], host[256];
    int rc;

    memset(&s, 0, sizeof s);
    s.keep_going = keep_going;
    if (joblog && !(s.joblog = jm_joblog_new(joblog, err, sizeof err))) {
        spits_error("%s", err);
        return 1;
    }
    spits_hostname(host, sizeof host);
    if (s.joblog)
        s.log_host = jm_joblog_host(s.joblog, host);
    s.task.max = s.result.max = SERIAL_MAX_BYTES;
    s.final.max = SERIAL_MAX_FINAL;
    /* A crash names the module function and task it was in. */
    if (spits_crash_init("spits-run", err, sizeof err) != 0)
        spits_warn("%s", err);
    if (!(s.mod = spits_module_open(argv[0], err, sizeof err))) {
        spits_error("%s", err);
        jm_joblog_destroy(&s.joblog);
        return 1;
    }
    serial_job = &s;
    serial_out_open(&s);
    if (spits_module_has_main(s.mod)) {
        rc = spits_module_main(s.mod, argc, argv, serial_phase);
    } else {
        const void *final;
        spitssize_t finalsz;
        rc = serial_phase(argc, argv, NULL, 0, &final, &finalsz);
    }
    fflush(stdout);
    serial_out_close(&s);
    serial_job = NULL;
    spits_buf_free(&s.task.buf);
    spits_buf_free(&s.result.buf);
    spits_buf_free(&s.final.buf);
    spits_module_close(&s.mod);
    jm_joblog_destroy(&s.joblog);
    /* spits-jm's exit status (jobmanager/jm.c exit_status). */
    if (s.runtime_error)
        return 1;
    if (s.failed_tasks)
        return 3;
    if (rc == 0)
        return s.commit_errors && !commit_errors_ignore ? 4 : 0;
    return rc > 0 && rc < 256 ? rc : 1;
}
