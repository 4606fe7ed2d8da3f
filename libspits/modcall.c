/*
 * modcall.c - judging one call of a module function (see modcall.h).
 *
 * The common case (a call that pushed once and returned what it should)
 * is judged inline, in modcall.h, on the per-task path; what is here runs
 * only for a call that did something else.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "log.h"
#include "modcall.h"

#define NEXT_TASK_FN "spits_job_manager_next_task"
#define WORKER_FN "spits_worker_run"
#define COMMIT_JOB_FN "spits_committer_commit_job"

/* Module misuse worth a warning, warned once a process (a JM or a TM
 * runs one job); the threads that judge calls share them. */
enum { WARN_TASK_EXTRA, WARN_TASK_EMPTY, WARN_TASK_RETURN, WARN_TASK_LAST,
       WARN_WORKER_EXTRA, WARN_FINAL_EXTRA, WARNS };
static atomic_int modcall_warned[WARNS];

int spits_modcall_next_task_misuse(spits_modcall_t *c, int more,
                                   unsigned pushes, uint64_t id, uint64_t max,
                                   const char *limit, char *err, size_t errlen)
{
    char what[48], why[200];

    snprintf(what, sizeof what, "task %llu", (unsigned long long)id);
    if (more < 0) {
        /* (a C module's error code: taken as "more", a generator that
         * keeps failing would be called again and again) */
        snprintf(err, errlen, NEXT_TASK_FN " returned %d (%s): only 1 (a "
                 "task pushed) and 0 (no more tasks) mean anything", more,
                 what);
        return -1;
    }
    if (c->fault == SPITS_PUSH_TOO_BIG || c->fault == SPITS_PUSH_NO_MEMORY) {
        snprintf(err, errlen, c->fault == SPITS_PUSH_TOO_BIG
                 ? NEXT_TASK_FN ": task %llu is %lld bytes, over %s (%llu)"
                 : "out of memory copying task %llu (%lld bytes; %s %llu)",
                 (unsigned long long)id, (long long)c->bad_size, limit,
                 (unsigned long long)max);
        return -1;
    }
    if (c->fault != SPITS_PUSH_OK) {
        spits_push_describe(why, sizeof why, c->fault, NEXT_TASK_FN,
                            c->bad_size, max, limit);
        snprintf(err, errlen, "%s (%s)", why, what);
        return -1;
    }
    if (pushes > 1) {
        c->extra_pushes += pushes - 1;
        spits_push_warn_extra(&modcall_warned[WARN_TASK_EXTRA], NEXT_TASK_FN,
                              pushes, what);
    }
    if (more == 0) {
        if (!atomic_exchange(&modcall_warned[WARN_TASK_LAST], 1))
            spits_warn(NEXT_TASK_FN " pushed a task and returned 0 (no more "
                       "tasks): that last push is dropped; return 1 for it "
                       "and 0 from the next call");
        return 0;
    }
    if (more > 1 && !atomic_exchange(&modcall_warned[WARN_TASK_RETURN], 1))
        spits_warn(NEXT_TASK_FN " returned %d (%s): taken as 1 (a task "
                   "pushed); only 1 and 0 mean anything; warned once", more,
                   what);
    if (pushes == 0 && !atomic_exchange(&modcall_warned[WARN_TASK_EMPTY], 1))
        spits_warn(NEXT_TASK_FN " returned 1 without pushing (%s): an empty "
                   "task is made; push(data, 0, ctx) makes one on purpose; "
                   "warned once", what);
    return 1;
}

int spits_modcall_worker_misuse(spits_modcall_t *c, uint64_t id, uint64_t max,
                                const char *limit)
{
    char what[48], why[200];

    snprintf(what, sizeof what, "task %llu", (unsigned long long)id);
    if (c->fault == SPITS_PUSH_OK) {
        c->extra_pushes += c->pushes - 1;
        spits_push_warn_extra(&modcall_warned[WARN_WORKER_EXTRA], WORKER_FN,
                              c->pushes, what);
        return 0;
    }
    spits_push_describe(why, sizeof why, c->fault, WORKER_FN, c->bad_size,
                        max, limit);
    spits_error("%s: %s; the run fails", what, why);
    return -1;
}

int spits_modcall_commit_job(spits_modcall_t *c, uint32_t phase, uint64_t max,
                             const char *limit)
{
    char why[200], what[32];

    if (c->pushes > 1) {
        c->extra_pushes += c->pushes - 1;
        snprintf(what, sizeof what, "phase %u", phase);
        spits_push_warn_extra(&modcall_warned[WARN_FINAL_EXTRA], COMMIT_JOB_FN,
                              c->pushes, what);
    }
    if (c->fault == SPITS_PUSH_OK)
        return 0;
    if (c->fault == SPITS_PUSH_NO_MEMORY)
        spits_error("out of memory keeping a %lld-byte final result",
                    (long long)c->bad_size);
    else {
        spits_push_describe(why, sizeof why, c->fault, COMMIT_JOB_FN,
                            c->bad_size, max, limit);
        spits_error("phase %u: %s; the final result is lost", phase, why);
    }
    return -1;
}
