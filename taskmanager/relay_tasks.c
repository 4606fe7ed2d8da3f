/*
 * relay_tasks.c - a relay's tasks down to the TMs behind it (see
 * relay_int.h): the source and sink of its server (serving/server.h),
 * which picks which TM gets which copies. The source is the pool of
 * copies upstream sent; the sink sends the copies picked for a TM as
 * one TASKS message per phase, large payloads as parts without a copy
 * (serving/taskbatch.h).
 *
 * Uses relay_copies.c; called by relay.c's turn and by
 * the server.
 * libzmq's I/O thread only calls relay_tasks_part_done, which drops a
 * reference with an atomic.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <string.h>

#include "log.h"
#include "relay_int.h"
#include "taskbatch.h"

/* libzmq is done with a part: its reference to the message goes. Runs
 * on libzmq's I/O thread (the count is atomic). */
static void relay_tasks_part_done(void *data, void *rx)
{
    (void)data;
    tm_rx_release(rx, 1);
}

/* The copies of a TASKS message, for serving/taskbatch.c: upstream's
 * ids, the bytes where they came; a part holds a reference of its own. */
static void relay_tasks_item(void *arg, size_t k, taskbatch_item_t *it)
{
    sched_task_t *task = ((sched_task_t *const *)arg)[k];
    *it = (taskbatch_item_t){task->hash, rl_copy(task)->bytes, task->len};
}

static void *relay_tasks_item_hold(void *arg, size_t k)
{
    tm_rx_t *rx = rl_copy(((sched_task_t *const *)arg)[k])->rx;
    tm_rx_hold(rx, 1);
    return rx;
}

/* Sends t the n copies picked of one phase as one TASKS message: 0, or
 * -1 when they did not go. */
static int relay_tasks_send_phase(tm_relay_t *r, rl_tm_t *t, sched_task_t *const *tasks,
                                  size_t n)
{
    const tm_phase_t *ph = rl_copy(tasks[0])->phase;
    taskbatch_src_t src = {relay_tasks_item, relay_tasks_item_hold,
                           relay_tasks_part_done, (void *)tasks};
    taskbatch_sent_t done;
    long parts = taskbatch_build(&r->down.out, ph->wire, r->down.part_min, n, &src);

    if (parts < 0) {
        spits_error("relay: out of memory sending %zu task(s)", n);
        return -1;
    }
    if (server_send(r->srv, &t->sv, r->down.out.buf.data, r->down.out.buf.len,
                    parts ? ZMQ_SNDMORE : 0) != 0)
        return -1;
    taskbatch_send_parts(r->sock.l.sock, r->down.part_min, n, parts, &src, &done);
    if (done.failed)
        spits_error("relay: out of memory sending %zu task(s) as parts; TM "
                    "%s:%ld drops that message", done.failed, t->sv.proc.host, t->sv.proc.pid);
    return 0;
}

/* One message per phase (a phase change leaves a few of the old); the
 * first that fails keeps the rest back (to run again). */
size_t relay_tasks_send(void *arg, server_peer_t *p, sched_task_t *const *tasks, size_t n)
{
    tm_relay_t *r = arg;
    size_t start = 0;
    for (size_t i = 1; i <= n; i++)
        if (i == n || rl_copy(tasks[i])->phase != rl_copy(tasks[start])->phase) {
            if (relay_tasks_send_phase(r, (rl_tm_t *)p, tasks + start, i - start) != 0)
                break;
            start = i;
        }
    return start;
}

/* Copies from the pool, up to want; the scheduler is told whether
 * upstream seems out of work: late copies may go then, as the JM's once
 * its generator has nothing. A pool dry until upstream's next copies
 * come is not that: upstream must have left the room unfilled a while
 * (serving/lateness.h late_starve). */
size_t relay_tasks_refill(void *arg, size_t want)
{
    tm_relay_t *r = arg;
    rl_copies_t *c = &r->copies;
    size_t n = relay_copies_take(r, want);
    late_starve_note(&c->starve, n < want, r->tm->now);
    sched_gen_state(c->sched, 0, !sched_has_fresh(c->sched) &&
                                     late_starve_out(&c->starve, r->tm->now));
    return n;
}

void relay_tasks_serve(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    if (!r->job.body || !tm->pool_started || tm->drain.active)
        return;
    relay_copies_orphans(r);
    server_serve(r->srv);
}
