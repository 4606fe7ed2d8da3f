/*
 * scheduler_int.h - the scheduler's state (struct sched), shared by its
 * files, each of which depends only on those listed below it:
 *
 *   scheduler.c   the scheduler's interface (scheduler.h): tasks in,
 *                 picks steps 1 and 2 (retries, fresh tasks), records
 *                 back, TMs lost and joined, the window
 *   schedlate.c   pick step 3: copies of late tasks (schedlate.h)
 *
 * The helpers both use on every pick or record are static inline here:
 * they stay inlined into the per-task paths of each file.
 */
#ifndef SPITS_SERVING_SCHED_INT_H
#define SPITS_SERVING_SCHED_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "lateness.h"
#include "retryq.h"
#include "ring.h"
#include "scheduler.h"

/* The tasks TM slot holds a copy of, in no order. */
typedef struct {
    sched_task_t **tasks;
    size_t n, cap;
    int quiet;                       /* its TM is quiet (sched_quiet) */
} held_t;

struct sched {
    int max_copies, max_attempts;
    int64_t rec_start_ms;            /* the last record's task: its newest */
    uint32_t rec_len;                /* ...copy's start and its size */
    held_t *held;                    /* by TM slot */
    size_t nheld;
    sched_stats_t *st;
    spits_ring_t *ring;              /* sent, not resolved: by id */
    sched_task_t *fresh, *fresh_tail;   /* from the generator, not sent yet */
    uint64_t fresh_next;             /* one past the last task that left
                                        fresh, sent or resolved early */
    int gen_done, gen_waiting;
    retryq_t retry;
    uint64_t version;
    sched_task_t **picked;              /* the last pick */
    size_t npicked, cappicked;
    sched_cancel_t *cancels;      /* copies to cancel, not taken yet */
    size_t ncancel, capcancel;
    uint64_t freed_bytes;            /* of tasks resolved this phase */
    uint64_t taken_bytes;            /* of fresh tasks picked (or resolved
                                        early) this phase */
    uint64_t task_bytes_sent;        /* of every copy sent */
    int64_t now;                     /* the owner's clock, ms */
    uint64_t released;               /* bytes of parts libzmq let go of */
    int send_idle;                   /* ...none over the last tick while
                                        parts waited (sched_set_backlog) */
    late_t late;                  /* when a copy is late */
    uint64_t finished;               /* results committed this phase */
    uint64_t quiet;                  /* tasks out only on quiet TMs (sched_quiet) */
    int64_t late_after;              /* the bound last seen by a scan */
    sched_hooks_t hooks;             /* the owner's */
    int broken;
};

/* The lateness bound now (lateness.h): the tasks out count as running
 * but for those only quiet TMs hold (sched_quiet). */
static inline int64_t sched_bound(const sched_t *s)
{
    uint64_t out = spits_ring_count(s->ring);
    out -= s->quiet < out ? s->quiet : out;
    return late_after(&s->late, s->finished, out);
}

static inline int held_by(const sched_task_t *task, int slot)
{
    for (int i = 0; i < SCHED_MAX_COPIES; i++)
        if (task->holders[i] == slot)
            return 1;
    return 0;
}

static inline int picked_add(sched_t *s, size_t n, sched_task_t *task)
{
    if (n == s->cappicked) {
        size_t cap = s->cappicked ? s->cappicked * 2 : 256;
        sched_task_t **p = realloc(s->picked, cap * sizeof *p);
        if (!p)
            return -1;
        s->picked = p;
        s->cappicked = cap;
    }
    s->picked[n] = task;
    return 0;
}

/* When the newest copy of a task left the hop: when libzmq let go of its
 * part (the hop's part_free sets left_ms, then drops its reference: seen here once
 * refs is 1; on libzmq's clock, which may be ahead of ours), or when it
 * was sent (an inline task, or a part still in the hop). left_ms is the
 * task's, not the copy's: a part of an older copy let go of after the
 * newest was sent (its TM's connection dropped) restarts the newest's
 * clock, and a part of an older copy still in the hop holds the newest to
 * copy_due's rule for waiting parts. Both only delay a copy. */
static inline int64_t copy_start(const sched_t *s, sched_task_t *task)
{
    if (atomic_load_explicit(&task->refs, memory_order_acquire) > 1)
        return task->copy_ms;
    int64_t left = atomic_load_explicit(&task->left_ms, memory_order_relaxed);
    left = left < s->now ? left : s->now;
    return left > task->copy_ms ? left : task->copy_ms;
}

#endif
