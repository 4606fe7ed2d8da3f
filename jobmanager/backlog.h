/*
 * backlog.h - the JM's send backlog: task bytes handed to libzmq as parts
 * and not yet let go of, and when a part that waits there is stuck.
 *
 * Why: when the JM's own sending is the bound (large tasks to many TMs:
 * libzmq encrypts and writes one connection's message after another), a
 * copy handed to libzmq may wait in the JM for seconds before it leaves.
 * So the scheduler starts a copy's lateness clock when libzmq lets go of
 * its part (serving/scheduler.c copy_due), not when it was handed over: timed
 * from the hand-over, such copies looked late, and the copies of them
 * sent elsewhere waited in the same backlog and only added bytes
 * (docs/performance.md has the figures).
 *
 * A part can also wait because its own connection does not move (a TM
 * stopped, a link stalled): then the copy is late like any other. The
 * rule: a part is stuck once the JM has let go of JM_BACKLOG_SLACK times
 * the bytes that were ahead of it since it was handed over. libzmq
 * serves its connections in turn, not in the order the parts came, so
 * once is not enough (the slack of 4 is measured: docs/performance.md).
 * With nothing ahead, a part
 * that does not leave is stuck at once, and its copy is late after the
 * usual bound. And when the JM let go of no part for a whole tick (about
 * 100 ms) while parts wait, it is not busy sending: every part that
 * waits is stuck (a TM stopped near the end of a job, with little left
 * to go ahead of its part). Both rules only hold copies back; where they
 * are wrong, they err towards a copy: a single part that takes longer
 * than a tick to leave (a huge one, a slow link) makes the others that
 * wait count as stuck, as every waiting copy did before; parts held for
 * stopped TMs count as ahead of later ones, which then wait longer to be
 * stuck, never for good (idle comes once the rest has left).
 *
 * The bytes let go of are counted by libzmq's free callback of each part
 * (serve.c serve_part_done calls jm_backlog_left), on its I/O threads, whether
 * the part was written or dropped: one count for the process, as the
 * callback carries one pointer (the task's) and a process has one
 * dispatcher. Inline tasks (under SPITS_PART_MIN) are not counted: their
 * batches are copied by zmq_send, out of sight, and leave the JM as any
 * small message does.
 *
 * Threads: a jm_backlog_t belongs to the dispatcher thread; the count of
 * bytes let go of is an atomic, added to by libzmq's I/O threads
 * (jm_backlog_left) and read by the dispatcher (jm_backlog_released).
 */
#ifndef SPITS_JM_BACKLOG_H
#define SPITS_JM_BACKLOG_H

#include <stdint.h>

#include "scheduler.h"

#define JM_BACKLOG_SLACK 4      /* times the bytes ahead that must go */
/* The shortest tick that says idle: the scheduler looks again at a part
 * that may become stuck this much later (serving/scheduler.h). */
#define JM_BACKLOG_TICK_MS SCHED_STUCK_LOOK_MS

typedef struct {
    uint64_t queued;          /* bytes of parts handed to libzmq */
    uint64_t released;        /* ...and let go of, at the last tick */
    int64_t tick_ms;          /* the last tick */
    int idle;                 /* none let go of over the last tick, while
                                 parts waited */
} jm_backlog_t;

/* libzmq let go of a part of len bytes (any thread). */
void jm_backlog_left(uint64_t len);
/* The bytes of parts libzmq has let go of in this process so far. */
uint64_t jm_backlog_released(void);
/* Empty; released is jm_backlog_released() now. */
void jm_backlog_reset(jm_backlog_t *b, uint64_t released);
/* A part of len bytes is about to be handed to libzmq, with released
 * bytes let go of so far: the total of bytes let go of past which the
 * part is stuck, if it has not left by then. */
uint64_t jm_backlog_queue(jm_backlog_t *b, uint64_t len, uint64_t released);
/* Once a tick, with the bytes let go of so far: 1 when none were over the
 * tick while parts waited (every part that waits is stuck), else 0. A
 * call within JM_BACKLOG_TICK_MS of the last one changes nothing. */
int jm_backlog_tick(jm_backlog_t *b, int64_t now_ms, uint64_t released);

#ifdef SPITS_SELFTEST
int jm_backlog_selftest(void);
#endif

#endif
