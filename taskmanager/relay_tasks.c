/*
 * relay_tasks.c - a relay's tasks down to the TMs behind it (see
 * relay_int.h): each TM with room is sent the copies the scheduler picks
 * for it (serving/scheduler.h: copies to run again, fresh ones out of the
 * pool, copies of late ones), round robin, as one TASKS message per
 * phase of at most RELAY_BATCH_MAX copies, large payloads as parts
 * without a copy (serving/taskbatch.h).
 *
 * Uses relay_copies.c and relay_send.c; called by relay.c's turn.
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
 * -1 when they did not go (they are then to run again, and t is dropped
 * if its connection is gone). */
static int relay_tasks_send(tm_relay_t *r, rl_tm_t *t, sched_task_t *const *tasks, size_t n)
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
    if (relay_send_buf(r, t, r->down.out.buf.data, r->down.out.buf.len,
                       parts ? ZMQ_SNDMORE : 0) != 0)
        return -1;
    taskbatch_send_parts(r->sock.router, r->down.part_min, n, parts, &src, &done);
    if (done.failed)
        spits_error("relay: out of memory sending %zu task(s) as parts; TM "
                    "%s:%ld drops that message", done.failed, t->id.host, t->id.pid);
    return 0;
}

/* t gets what the scheduler picks, up to its room (workers_first: the
 * room its idle workers would start at once; serving/credit.h), in
 * messages of at most RELAY_BATCH_MAX copies. *dry: the pool had nothing
 * this round (it is not asked again). */
static void relay_tasks_serve_tm(tm_relay_t *r, rl_tm_t *t, int workers_first, int others,
                                 int *dry)
{
    sched_t *s = r->copies.sched;
    int room;
    while (t->peer.alive && !t->status.draining && !t->status.stalled &&
           joins_settle_open(&t->status.settle, r->tm->now) && !r->tm->done &&
           (room = workers_first ? credit_room_workers(&t->sched.credit)
                                 : credit_room(&t->sched.credit)) > 0) {
        size_t want = (size_t)room < RELAY_BATCH_MAX ? (size_t)room : RELAY_BATCH_MAX;
        if (!*dry && !sched_has_fresh(s) && !sched_has_retries(s) &&
            relay_copies_take(r, want) < want)
            *dry = 1;
        /* (the pool has nothing now: late copies may go, as the JM's
         * generator waiting for room allows them) */
        sched_gen_state(s, 0, !sched_has_fresh(s));
        sched_clock(s, r->tm->now);
        size_t n = sched_pick(s, &t->sched, want, SERVE_BATCH_BYTES, others);
        if (!n)
            return;
        sched_task_t *const *p = sched_picked(s);
        /* One message per phase (a phase change leaves a few of the old);
         * the first that fails keeps the rest back (to run again). */
        size_t start = 0;
        int failed = 0;
        for (size_t i = 1; i <= n && !failed; i++)
            if (i == n || rl_copy(p[i])->phase != rl_copy(p[start])->phase) {
                if (relay_tasks_send(r, t, p + start, i - start) != 0)
                    failed = 1;
                else
                    start = i;
            }
        int gone = failed && errno == EHOSTUNREACH;
        sched_sent_part(s, &t->sched, start);
        if (failed) {
            if (gone)
                relay_copies_gone(r, t, "disconnected", 1);
            return;
        }
        if (n < want)
            return;
    }
}

/* Each TM with room gets what the scheduler picks, round robin: first up
 * to its workers, then its prefetch too. Filling one TM's prefetch while
 * another's workers wait would queue tasks there that the idle TM could
 * run (the job's tail, which copies of late tasks only partly mend). */
void relay_tasks_serve(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    rl_peers_t *p = &r->peers;
    size_t n = peertab_live_count(p->tab);
    int dry = 0;
    if (!r->job.body || !tm->pool_started || tm->drain.active || !n)
        return;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < n && !tm->done; k++) {
            /* A TM dropped on a failed send leaves the live set, which
             * then skips or repeats one TM in this round: either is
             * harmless. */
            size_t now_live = peertab_live_count(p->tab);
            if (!now_live)
                return;
            rl_tm_t *t = peertab_live_at(p->tab, (r->down.rr + k) % now_live);
            relay_tasks_serve_tm(r, t, pass == 0, now_live > 1, &dry);
        }
    }
    r->down.rr++;
}
