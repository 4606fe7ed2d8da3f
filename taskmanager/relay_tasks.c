/*
 * relay_tasks.c - a relay's tasks down to the TMs behind it (see
 * relay_int.h): out of the pool to each TM with room (its slots minus
 * the copies it holds), round robin, one TASKS message per phase of at
 * most RELAY_BATCH_MAX copies, large payloads as parts without a copy
 * (serving/taskbatch.h).
 *
 * The relay keeps, per copy, only which TM holds it (copies, an idmap);
 * a copy upstream sends again while one is out behind us (it lost track
 * of us across an outage) is not sent down twice but noted in extra, and
 * answered with the first (relay_records.c). Copies that cannot go out
 * go back upstream unrun.
 *
 * Uses relay_records.c, relay_send.c and the pool (tm.h); called by
 * relay.c's turn. libzmq's I/O thread only calls relay_tasks_part_done,
 * which drops a reference with an atomic.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <string.h>

#include "log.h"
#include "relay_int.h"
#include "taskbatch.h"

/* libzmq is done with a part: the copy's reference to its message goes.
 * Runs on libzmq's I/O thread (the count is atomic). */
static void relay_tasks_part_done(void *data, void *rx)
{
    (void)data;
    tm_rx_release(rx, 1);
}

/* Copies that did not go out go back upstream unrun (unmapped first by
 * the caller, if they were mapped). */
static void relay_tasks_unsent(tm_relay_t *r, const tm_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        relay_records_add(r, items[i].phase, items[i].id, SPITS_ST_RETURNED,
                          NULL, 0, NULL, 1);
        relay_records_settle_extra(r, items[i].id);
        tm_rx_release(items[i].rx, 1);
    }
    relay_records_flush(r);
}

static void relay_tasks_unmap(tm_relay_t *r, const tm_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spits_idmap_del(r->copies, items[i].id);
}

/* Of the n copies taken for t, those whose task is already out behind us
 * go to extra instead (see the header); the rest are mapped to t and
 * moved to the front. Returns how many are to be sent, or -1 when out of
 * memory (nothing is mapped then). */
static long relay_tasks_map_copies(tm_relay_t *r, rl_tm_t *t, tm_item_t *items, size_t n)
{
    int idx = t->peer.slot;
    size_t keep = 0, i;

    for (i = 0; i < n; i++) {
        int more, rc = spits_idmap_add(r->copies, items[i].id, idx,
                                       (void *)items[i].phase);
        if (rc < 0)
            break;
        if (rc == 0) {
            items[keep++] = items[i];
            continue;
        }
        void *ph;
        if (!spits_idmap_get(r->extra, items[i].id, &more, &ph))
            more = 0;
        if (spits_idmap_put(r->extra, items[i].id, more + 1,
                            (void *)items[i].phase) != 0)
            break;
        tm_rx_release(items[i].rx, 1);
    }
    if (i == n)
        return (long)keep;
    /* Out of memory: the mapped ones are unmapped; every copy not yet in
     * extra goes back upstream. */
    relay_tasks_unmap(r, items, keep);
    memmove(items + keep, items + i, (n - i) * sizeof *items);
    relay_tasks_unsent(r, items, keep + n - i);
    return -1;
}

/* The copies of a TASKS message, for serving/taskbatch.c: a part takes
 * its item's reference with it (relay_tasks_part_done drops it). */
static void relay_tasks_item(void *arg, size_t k, taskbatch_item_t *it)
{
    const tm_item_t *item = (const tm_item_t *)arg + k;
    *it = (taskbatch_item_t){item->id, item->data, item->len};
}

static void *relay_tasks_item_hold(void *arg, size_t k)
{
    return ((tm_item_t *)arg)[k].rx;
}

/* Sends t the copies of one phase it was given, as one TASKS message;
 * their references go with them (an inline copy's now, a part's when
 * libzmq is done with it). -1: they went back upstream instead (no
 * memory, or t is gone). */
static int relay_tasks_send(tm_relay_t *r, rl_tm_t *t, tm_item_t *items, size_t n)
{
    const tm_phase_t *ph = items[0].phase;
    long sent = relay_tasks_map_copies(r, t, items, n), parts;
    taskbatch_src_t src = {relay_tasks_item, relay_tasks_item_hold,
                           relay_tasks_part_done, items};
    taskbatch_sent_t done;

    if (sent <= 0) {
        relay_records_flush(r);   /* (records of copies answered at once) */
        return sent < 0 ? -1 : 0;
    }
    n = (size_t)sent;
    parts = taskbatch_build(&r->down.out, ph->wire, r->down.part_min, n, &src);
    if (parts < 0) {
        spits_error("relay: out of memory sending %zu task(s); handing them "
                    "back upstream", n);
        relay_tasks_unmap(r, items, n);
        relay_tasks_unsent(r, items, n);
        return -1;
    }
    if (relay_send_buf(r, t, r->down.out.buf.data, r->down.out.buf.len,
                       parts ? ZMQ_SNDMORE : 0) != 0) {
        int gone = errno == EHOSTUNREACH;
        relay_tasks_unmap(r, items, n);
        relay_tasks_unsent(r, items, n);
        if (gone)
            relay_records_drop(r, t, "disconnected", 1);
        return -1;
    }
    taskbatch_send_parts(r->sock.router, r->down.part_min, n, parts, &src, &done);
    if (done.failed)
        spits_error("relay: out of memory sending %zu task(s) as parts; TM "
                    "%s:%ld drops that message", done.failed, t->id.host, t->id.pid);
    for (size_t k = 0; k < n; k++)   /* (an inline copy's reference goes now) */
        if (items[k].len < r->down.part_min)
            tm_rx_release(items[k].rx, 1);
    credit_spend(&t->credit, n);
    t->stats.sent += n;
    return 0;
}

/* t gets what the pool has, up to its room (workers_first: the room its
 * idle workers would start at once; serving/credit.h), in messages of at
 * most RELAY_BATCH_MAX copies (one a turn held the relay to
 * RELAY_BATCH_MAX tasks a turn a TM). -1: the pool ran out. */
static int relay_tasks_serve_tm(tm_relay_t *r, rl_tm_t *t, int workers_first)
{
    int room;
    while (t->peer.alive && !t->status.draining && !r->tm->done &&
           (room = workers_first ? credit_room_workers(&t->credit)
                                 : credit_room(&t->credit)) > 0) {
        size_t want = (size_t)room;
        size_t n = tm_pool_take(&r->tm->pool, r->down.items,
                                want < RELAY_BATCH_MAX ? want : RELAY_BATCH_MAX);
        if (!n)
            return -1;
        /* One message per phase (a phase change leaves a few of the old). */
        size_t start = 0;
        int failed = 0;
        for (size_t i = 1; i <= n; i++)
            if (i == n || r->down.items[i].phase != r->down.items[start].phase) {
                if (failed)
                    relay_tasks_unsent(r, r->down.items + start, i - start);
                else if (relay_tasks_send(r, t, r->down.items + start, i - start) != 0)
                    failed = 1;   /* (they went back upstream; so do the rest) */
                start = i;
            }
        if (failed)
            return 0;
    }
    return 0;
}

/* Each TM with room gets what the pool has, round robin: first up to
 * its workers, then, with what is left, its prefetch too. Filling one
 * TM's prefetch while another's workers wait would queue tasks there that
 * the idle TM could run: as a job's tasks run out, that TM's queue is the
 * job's tail (a relay has no copies to even it out; the JM's serve.c
 * grows a TM's slots as it runs dry for the same reason). */
void relay_tasks_serve(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    rl_peers_t *p = &r->peers;
    size_t n = peertab_live_count(p->tab);
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
            if (relay_tasks_serve_tm(r, t, pass == 0) < 0) {
                r->down.rr++;
                return;   /* (the pool is empty) */
            }
        }
    }
    r->down.rr++;
}

