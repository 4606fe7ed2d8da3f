/*
 * modexit.c - exit() from spits_main (see modexit.h).
 *
 * Published two-phase modules (PY-PITS, the SPITS 2.0 examples) call
 * exit() from spits_main when run() returns SPITS_RUN_FAILED: a phase
 * failed or was interrupted. main() then never gets to write report.json,
 * so an on_exit(3) handler does, with the code exit() was given, which is
 * the process's exit status.
 *
 * It does so only when exit() was called on the main thread from
 * spits_main itself, i.e. between phases: then no phase runs, the
 * generator has ended, and the dispatcher thread, still running, is
 * stopped (and joined) as at a normal end, so that the TMs are told and
 * its counters are final. An exit() from a module callback while a phase
 * runs (next_task on the generator thread, commit_pit on the main thread
 * with the generator and the dispatcher busy) or from a thread of the
 * module's own would race with those threads over the job's state: then
 * one line names the exit (its code, the function and the task) and says
 * that no report is written, and the JM ends with the code, or with
 * JM_EXIT_ERROR for an exit(0): a job that did not end is never a
 * success. Modules without spits_main are armed too, for the whole run.
 * _exit(), quick_exit() and signals skip on_exit handlers; crash.c names
 * a fatal signal.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "modexit.h"
#include "crash.h"
#include "log.h"

#include <stdio.h>
#include <unistd.h>

static jm_t *modexit_job;
static jm_modexit_end_fn modexit_end;
static pthread_t modexit_main;
static atomic_int modexit_armed;
static int modexit_registered;

static void modexit_on_exit(int code, void *arg)
{
    (void)arg;
    if (!atomic_exchange(&modexit_armed, 0))
        return;   /* the JM's own exit */
    const char *fn = spits_crash_current();
    if (!pthread_equal(pthread_self(), modexit_main) || !fn ||
        strcmp(fn, "spits_main") != 0) {
        char task[48] = "";
        if (fn && (strcmp(fn, "spits_job_manager_next_task") == 0 ||
                   strcmp(fn, "spits_committer_commit_pit") == 0))
            snprintf(task, sizeof task, ", task %llu", (unsigned long long)
                     atomic_load(&spits_crash_slot_now()->task));
        spits_error("the module called exit(%d) in %s%s while a phase was "
                    "running: the job ends there with no report.json (only "
                    "an exit() from spits_main itself, between phases, gets "
                    "one)", code, fn ? fn : "a thread of its own", task);
        fflush(NULL);
        /* (the other threads are still running: no more exit handlers
         * or destructors under them) */
        _exit(code != 0 ? code : JM_EXIT_ERROR);
    }
    spits_info("the module called exit(%d) in spits_main; the job ends "
               "there", code);
    modexit_end(modexit_job, code);
}

void jm_modexit_arm(jm_t *jm, jm_modexit_end_fn end)
{
    modexit_job = jm;
    modexit_end = end;
    modexit_main = pthread_self();
    if (!modexit_registered && on_exit(modexit_on_exit, NULL) != 0) {
        spits_warn("cannot register an exit handler: a module that calls "
                   "exit() will leave no report.json");
        return;
    }
    modexit_registered = 1;
    atomic_store(&modexit_armed, 1);
}

void jm_modexit_disarm(void)
{
    atomic_store(&modexit_armed, 0);
}
