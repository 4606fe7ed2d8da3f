/*
 * schedlate.c - the scheduler's third pick step: another copy of a late
 * task, for a TM with room once no fresh task is left to send (see
 * scheduler.h for the order of the steps, lateness.h for when a copy is
 * late). scheduler.c's sched_pick calls it after steps 1 and 2; it reads
 * and changes the scheduler's state (scheduler_int.h) and calls nothing
 * of scheduler.c. Its rules are tested through the scheduler's interface
 * by sched_selftest (scheduler.c): the directed speculation cases and the
 * random runs against a reference model.
 */
#include <stdint.h>

#include "lateness.h"
#include "ring.h"
#include "scheduler.h"
#include "scheduler_int.h"
#include "schedlate.h"

/* The lateness bound now; a new one may make tasks late for any TM. */
static int64_t late_bound(sched_t *s)
{
    int64_t after = sched_bound(s);
    if (after != s->late_after) {
        s->late_after = after;
        s->version++;
    }
    return after;
}

/* A task t could be sent another copy of, but for its age. */
static int copy_candidate(const sched_t *s, const sched_task_t *task, const sched_peer_t *t)
{
    return task->copies > 0 && task->copies < s->max_copies && !held_by(task, t->slot);
}

/* When the newest copy of a task is late: the bound after its clock
 * started. The clock starts when the copy left the hop: when libzmq let
 * go of its part (a large task, which may wait seconds in the hop's send
 * backlog: backlog.h), or when it was sent (a task sent inline). A part
 * still in the hop is not late while it waits its turn, only once it is
 * stuck (backlog.h; then from when it was sent); INT64_MAX until then.
 * (Any part of the task still in the hop counts: refs.) */
static int64_t copy_due(const sched_t *s, sched_task_t *task, int64_t after)
{
    if (atomic_load_explicit(&task->refs, memory_order_acquire) > 1)
        return s->released >= task->stuck_at || s->send_idle ? task->copy_ms + after
                                                             : INT64_MAX;
    return copy_start(s, task) + after;
}

/* 3. No fresh task: copies of late tasks (lateness.h), oldest first: out
 * longer than the bound since their newest copy left the hop. Tasks enter the
 * ring in id order, so the scan stops at the first one too young to be
 * late. A fruitless scan notes when the next task may become late. */
size_t schedlate_pick(sched_t *s, sched_peer_t *t, size_t n, size_t room, size_t *bytes,
                      size_t max_bytes)
{
    if (s->fresh || s->max_copies < 2 || !(s->gen_done || s->gen_waiting) ||
        n >= room || *bytes >= max_bytes)
        return n;
    int64_t after = late_bound(s);
    if (after == LATE_NEVER ||
        (t->scan_version == s->version && s->now < t->scan_until))
        return n;
    int64_t until = s->now + after;     /* no task put from now on is late sooner */
    size_t found = 0;
    for (uint64_t id = spits_ring_low(s->ring);
         id < spits_ring_next(s->ring) && n < room && *bytes < max_bytes; id++) {
        sched_task_t *task = spits_ring_get(s->ring, id);
        if (!task)
            continue;
        if (s->now - task->out_ms < after) {
            until = task->out_ms + after < until ? task->out_ms + after : until;
            break;
        }
        if (!copy_candidate(s, task, t))
            continue;
        int64_t due = copy_due(s, task, after);
        if (s->now < due) {
            /* (a part waiting in the hop may be stuck at any tick, which
             * moves no version: look again then) */
            if (due == INT64_MAX)
                due = s->now + SCHED_STUCK_LOOK_MS;
            until = due < until ? due : until;
            continue;
        }
        if (picked_add(s, n, task) != 0)
            break;
        n++;
        found++;
        *bytes += task->len;
    }
    if (!found) {                       /* nothing until something changes */
        t->scan_version = s->version;
        t->scan_until = until;
    }
    return n;
}
