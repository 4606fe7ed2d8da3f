/*
 * modcall.h - what one call of a module function did, judged by the SPITS
 * rules (spits.h): its pushes (push.h) and its return value.
 *
 * spits-jm (the generator's next_task, the phase's commit_job), spits-tm
 * (a worker's run) and spits-run --serial (all three, on one thread)
 * judge each call with these, so that a module misusing the interface
 * gets the same error or warning from each. Warnings that existing
 * modules may deserve on purpose are given once a process.
 */
#ifndef SPITS_MODCALL_H
#define SPITS_MODCALL_H

#include <stddef.h>
#include <stdint.h>
#include "push.h"
#include "spits.h"

/* The pushes of the current call; the push callback fills it. */
typedef struct {
    unsigned pushes;            /* pushes in this call */
    spits_push_fault_t fault;   /* the first push that could not be kept */
    spitssize_t bad_size;       /* ...and its size */
    uint64_t extra_pushes;      /* pushes replaced by a later one in their
                                   call, over every call judged */
} spits_modcall_t;

/* Before a call: no pushes yet. */
static inline void spits_modcall_begin(spits_modcall_t *c)
{
    c->pushes = 0;
    c->fault = SPITS_PUSH_OK;
    c->bad_size = 0;
}

/* A push of size bytes whose bytes were kept (fault SPITS_PUSH_OK) or
 * not, into the call's record. */
static inline void spits_modcall_pushed(spits_modcall_t *c,
                                        spits_push_fault_t fault,
                                        spitssize_t size)
{
    c->pushes++;
    if (fault != SPITS_PUSH_OK && c->fault == SPITS_PUSH_OK) {
        c->fault = fault;
        c->bad_size = size;
    }
}

/* The calls below judge every call inline and hand anything but the
 * common case to these (modcall.c). */
int spits_modcall_next_task_misuse(spits_modcall_t *c, int more,
                                   unsigned pushes, uint64_t id, uint64_t max,
                                   const char *limit, char *err, size_t errlen);
int spits_modcall_worker_misuse(spits_modcall_t *c, uint64_t id, uint64_t max,
                                const char *limit);

/* next_task returned more for task id (0 the first): 1 a task was pushed
 * (or made empty: returned 1 without a push), 0 no more tasks, -1 the
 * phase must stop, with the reason in err. max is the task size limit
 * and limit names it ("--max-task-bytes"). Resets c for the next call. */
static inline int spits_modcall_next_task(spits_modcall_t *c, int more,
                                          uint64_t id, uint64_t max,
                                          const char *limit, char *err,
                                          size_t errlen)
{
    unsigned pushes = c->pushes;

    c->pushes = 0;
    if (more == 1 && pushes == 1 && c->fault == SPITS_PUSH_OK)
        return 1;                /* (every task but a misused one) */
    if (more == 0 && pushes == 0)
        return 0;
    return spits_modcall_next_task_misuse(c, more, pushes, id, max, limit, err,
                                          errlen);
}

/* After worker_run for task id: 0, or -1 when a push could not be kept
 * and so the run fails (said on stderr, with max and limit as above). */
static inline int spits_modcall_worker_run(spits_modcall_t *c, uint64_t id,
                                           uint64_t max, const char *limit)
{
    if (c->fault == SPITS_PUSH_OK && c->pushes <= 1)
        return 0;
    return spits_modcall_worker_misuse(c, id, max, limit);
}

/* After commit_job of phase: 0, or -1 when its push could not be kept and
 * so the final result is lost (said on stderr; limit names max). */
int spits_modcall_commit_job(spits_modcall_t *c, uint32_t phase, uint64_t max,
                             const char *limit);

#endif
