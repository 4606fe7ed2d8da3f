/*
 * tm.c - spits-tm: the Task Manager program.
 *
 *   spits-tm [OPTIONS]  (--jobdir DIR or --connect ENDPOINT)
 *
 * Finds the JM (waiting for DIR/jm.json if need be), starts its worker
 * threads, says HELLO with the number of tasks it can hold (workers +
 * prefetch), and loads the module the JM announces, which the workers
 * then run. Worker processes start before HELLO when jm.json tells the
 * module (tm_setup_early). Then it queues the tasks the JM
 * sends, ships results back in batches, and exits 0 when the JM says the
 * job is over.
 *
 * A JM that goes silent is looked for again: the TM re-reads jm.json (a
 * restarted or resumed JM may listen elsewhere), reconnects and says HELLO
 * again, keeping its queued tasks and unsent results meanwhile.
 *
 * SIGTERM or SIGINT drains the TM (what Slurm sends at a time limit): it
 * tells the JM to send nothing more (DRAIN), hands back its queued tasks,
 * lets running ones finish within --drain-timeout, sends their results,
 * says BYE and exits 0. A second signal kills it (but a SIGTERM within
 * 2 s of the first, as Slurm and srun send at a time limit: loop.c).
 *
 * --simulate K runs K virtual task managers in this one process instead
 * (simulate.c), for scale tests.
 *
 * This file is only the top: options, set-up, the loop, tear-down. The
 * rest is split by concern (tm_private.h lists the files); the workers
 * and their pool are in workers.c and isolate.c (tm.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "crash.h"
#include "log.h"
#include "linefwd.h"
#include "tm_private.h"
#include "util.h"
#include "wake.h"

/* What the module's workers print on stdout is the TM's log, not the
 * job's result: spits-run's TMs share its stdout with the committer, and
 * "spits-run ... > result.txt" must hold the committer's output only. So
 * stdout becomes a pipe whose lines go to stderr, prefixed (linefwd.h);
 * --isolate's worker processes inherit it. Main thread only. */
#define TM_STDOUT_PREFIX "spits-tm: module stdout: "
static spits_linefwd_t *tm_stdout;

static void tm_stdout_start(void)
{
    int p[2] = {-1, -1};
    char err[256] = "";

    fflush(stdout);
    if (pipe2(p, O_CLOEXEC) != 0)
        snprintf(err, sizeof err, "%s", strerror(errno));
    else if (!(tm_stdout = spits_linefwd_start(p[0], TM_STDOUT_PREFIX, err, sizeof err)))
        close(p[0]);
    /* (dup2 leaves fd 1 open across exec, for --isolate's workers) */
    if (!tm_stdout || dup2(p[1], STDOUT_FILENO) < 0) {
        /* Unprefixed, but still not on the result's stdout. */
        spits_warn("cannot forward the module's stdout (%s); it goes to stderr "
                   "as it is", err[0] ? err : strerror(errno));
        dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    if (p[1] >= 0)
        close(p[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a crash loses no finished line */
    if (tm_stdout)
        spits_crash_drain(p[0], TM_STDOUT_PREFIX);   /* (nor what is in the pipe) */
}

/* The last lines, then the pipe is gone. */
static void tm_stdout_stop(void)
{
    fflush(stdout);
    dup2(STDERR_FILENO, STDOUT_FILENO);   /* (the pipe's last writer here) */
    spits_crash_drain(-1, NULL);
    spits_linefwd_stop(&tm_stdout);
}

/* A worker's process start that takes longer than this is not waited
 * for before joining (its first task waits for it instead): --wait, up
 * to its default, so that a TM told to wait an hour for its JM (Slurm's
 * scripts) does not idle its other workers that long behind one that
 * hangs; --task-timeout, if shorter, as the first task would wait no
 * longer either. */
#define TM_START_WAIT_MAX_S 60.0

static int64_t tm_setup_start_wait_ms(const tm_opts_t *o)
{
    double s = o->wait < TM_START_WAIT_MAX_S ? o->wait : TM_START_WAIT_MAX_S;
    if (o->task_timeout > 0 && o->task_timeout < s)
        s = o->task_timeout;
    return (int64_t)(s * 1000);
}

/* With a job dir, a TM whose workers are processes (--isolate, a Python
 * job, a request for GPUs or memory per task) starts them before it
 * joins: jm.json names the module, its hash and the request, so the
 * workers are planned, the module is checked and loaded, and each worker
 * process starts (a Python job's interpreter with it) now; the loop says
 * HELLO once they are ready (loop.c), as the JM counts a TM's slots
 * from its join. Thread workers have nothing to start, and a relay runs
 * none: they join at once. Returns 1 when the pool started, 0 when it is
 * left for WELCOME (what went wrong is said then), -1 on an error
 * (said). */
static int tm_setup_early(tm_t *tm)
{
    const spits_res_req_t *req = &tm->job.expect_req;
    char refusal[sizeof tm->job.refused];

    if (!tm->job.expect_module[0] || tm->relay ||
        !(tm->opts.isolate || req->gpus || req->mem))
        return 0;
    if (tm_plan_apply(tm, tm->job.job_id, req, refusal, sizeof refusal) != 0 ||
        tm_job_preload(tm) != 0)
        return 0;
    tm->pool.opts.max_result = (uint64_t)tm->link.max_task;
    tm->pool.opts.part_min = spits_parts_min();
    if (tm_pool_start(&tm->pool, tm->job.mod) != 0) {
        spits_error("cannot start %d worker threads: %s", tm->pool.workers.n,
                    strerror(errno));
        return -1;
    }
    tm->pool_started = 1;
    tm->pool_early = 1;
    return 1;
}

/* Everything between the options and the loop. Returns -1 to run the
 * loop, or the exit status. */
static int tm_setup(tm_t *tm)
{
    int rc;

    tm_opts_complete(&tm->opts);
    if (sodium_init() < 0) {
        spits_error("cannot initialise libsodium");
        return 1;
    }
    tm_link_init(tm, tm_results_pending);
    rc = tm_link_find_jm(tm);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    tm->wake_fd = spits_wake_open();
    tm->link.context = zmq_ctx_new();
    if (tm->wake_fd < 0 || !tm->link.context ||
        tm_pool_init(&tm->pool, tm->opts.workers, tm->wake_fd) != 0) {
        spits_error("cannot set up: %s", strerror(errno));
        return 1;
    }
    tm->pool.opts.isolate = tm->opts.isolate;
    tm->pool.opts.task_timeout_ms = (int64_t)(tm->opts.task_timeout * 1000);
    tm->pool.opts.start_wait_ms = tm_setup_start_wait_ms(&tm->opts);

    /* A dead --isolate child must not kill us through its pipe. */
    signal(SIGPIPE, SIG_IGN);
    tm_crash_setup(tm);
    tm_loop_catch_signals(tm->wake_fd);
    if (tm->opts.serve && !(tm->relay = tm_relay_new(tm)))
        return 1;
    /* The workers exist before we say HELLO (tm.h tm_pool_spawn), and
     * their processes run, when they can start now. */
    if ((rc = tm_setup_early(tm)) < 0)
        return 1;
    if (rc == 0 && tm_pool_spawn(&tm->pool) != 0) {
        spits_error("cannot start %d worker threads: %s", tm->opts.workers,
                    strerror(errno));
        return 1;
    }
    return tm_link_connect(tm) != 0 ? 1 : -1;
}

/* Says goodbye and frees everything; returns rc. */
static int tm_teardown(tm_t *tm, int rc)
{
    /* BYE before the workers stop: the JM's end waits for it (no result
     * goes after the loop anyway), and 500 threads take 0.1-0.3 s to
     * leave on a busy machine. Busy workers run tasks nobody needs any
     * more: don't wait long. */
    tm_link_close(tm, rc == 0 || tm->drain.active || tm->job.refused[0]);
    int busy = tm_pool_stop(&tm->pool, tm->drain.active ? 100 : 2000);
    /* (what its last STATS said, or more: the count hops sum up) */
    if (!tm->relay)
        spits_debug("ran %lld task(s)",
                    (long long)atomic_load(&tm->pool.stats.runs));
    tm_relay_destroy(&tm->relay, tm->job_over);
    if (busy) {
        spits_debug("leaving %d busy worker(s) behind", busy);
        tm_stdout_stop();
        fflush(stderr);
        _exit(rc);
    }
    tm_free(tm);
    tm_stdout_stop();
    return rc;
}

int main(int argc, char **argv)
{
    tm_t tm;
    int rc;

    /* A worker process of --isolate: the same binary, another role. */
    if (argc >= 2 && strcmp(argv[1], "--worker-child") == 0)
        return tm_child_main(argc, argv);

    spits_malloc_tune(0);
    memset(&tm, 0, sizeof tm);
    tm.wake_fd = -1;
    spits_log_init("spits-tm", SPITS_LOG_INFO);
    rc = tm_opts_parse(&tm.opts, argc, argv);
    if (rc >= 0)
        return rc;
    spits_log_init("spits-tm", tm.opts.verbosity > SPITS_LOG_TRACE
                                   ? SPITS_LOG_TRACE : tm.opts.verbosity);
    if (tm.opts.simulate) {
        tm_opts_complete(&tm.opts);
        return tm_sim_main(&tm.opts);
    }
    tm_stdout_start();
    rc = tm_setup(&tm);
    if (rc >= 0) {
        /* (what the set-up made before it stopped: a socket whose connect
         * failed, closed at once so that the context can end; idle
         * workers, which tm_pool_destroy stops) */
        if (tm.link.context) {
            tm_link_abandon(&tm);
            tm_free(&tm);
        }
        tm_stdout_stop();
        return rc;
    }
    rc = tm_loop_run(&tm);
    return tm_teardown(&tm, rc);
}
