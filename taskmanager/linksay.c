/*
 * linksay.c - what spits-tm sends over the link to its hop (link.c keeps
 * the connection): any message, noting when (a heartbeat is due only
 * after a quiet spell: link.c's timers), and what the TM says of itself: HELLO (who it is, what
 * it can run, what it still holds) and STATS (its workers' busy time and
 * runs, and as it joins, what each worker owns: planview.c). The hop
 * reads them in serving/joins.c and its STATS handler; wire.h has the
 * fields.
 *
 * Main thread only, as all of link.c; the workers' counts are read from
 * the pool's atomics.
 */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <unistd.h>

#include "tm_private.h"

int tm_link_send(tm_t *tm, const void *buf, size_t len)
{
    if (zmq_send(tm->link.socket, buf, len, ZMQ_DONTWAIT) < 0)
        return -1;
    tm->link.live.last_sent = tm->now;
    return 0;
}

int tm_link_send_parts(tm_t *tm, spits_buf_t *first, spits_parts_t *parts)
{
    int rc = spits_parts_send_buf(tm->link.socket, first, parts, ZMQ_DONTWAIT);
    if (rc != -1)
        tm->link.live.last_sent = tm->now;
    return rc;
}

void tm_link_send_hello(tm_t *tm)
{
    spits_buf_t buf = {0};
    size_t held = tm->pool_started ? tm_pool_held(&tm->pool) : 0;
    uint64_t pending = tm->link.pending ? tm->link.pending(tm) : 0;
    int workers = tm->opts.workers, slots = tm->opts.workers + tm->opts.prefetch;
    if (tm->plan.planned) {
        workers = tm->plan.workers;
        slots = tm->plan.slots;
    }
    if (tm->relay)
        tm_relay_capacity(tm->relay, &workers, &slots);
    json_t *hello = json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:s, s:I}",
                          "host", tm->link.host, "pid", (json_int_t)getpid(),
                          "workers", workers, "slots", slots,
                          "held", (json_int_t)held, "pending", (json_int_t)pending,
                          "job_id", tm->job.job_id,
                          "attach", (json_int_t)tm->link.status.attach);
    if (hello && tm->relay)
        json_object_set_new(hello, "relay", tm_relay_hello_json(tm->relay));
    if (hello && spits_wire_encode_json(&buf, SPITS_MSG_HELLO, 0, hello) == 0 &&
        tm_link_send(tm, buf.data, buf.len) == 0) {
        tm->link.live.last_hello = tm->now;
        tm->link.status.hello_waits = 0;
    } else {
        /* Not connected yet: again when the handshake succeeds
         * (tm_link_on_monitor), or in 100 ms. */
        tm->link.live.last_hello = tm->now - 900;
        tm->link.status.hello_waits = 1;
    }
    json_decref(hello);
    spits_buf_free(&buf);
}

/* STATS: the workers' busy time and runs so far (this process's life),
 * and the tasks running and queued now, once a second when idle, ahead of
 * results (at most 10 a second) and before BYE: the JM's per-TM busy time,
 * its performance model's task time and its running/queued split come
 * from these. A relay has no workers of its own: it says neither count
 * (the JM then estimates them). A planned TM adds its workers' counts,
 * and as it joins, what each owns (planview.c). */
static void link_stats(tm_t *tm, int joined)
{
    spits_buf_t buf = {0};
    long long busy = atomic_load_explicit(&tm->pool.stats.busy_ns, memory_order_relaxed);
    long long runs = atomic_load_explicit(&tm->pool.stats.runs, memory_order_relaxed);
    json_t *stats = json_pack("{s:f, s:I}", "busy_s", busy / 1e9,
                              "runs", (json_int_t)runs);
    tm->link.live.last_stats = tm->now;
    if (stats && !tm->relay) {
        size_t running, queued;
        tm_pool_counts(&tm->pool, &running, &queued);
        json_object_set_new(stats, "running", json_integer((json_int_t)running));
        json_object_set_new(stats, "queued", json_integer((json_int_t)queued));
    }
    /* A planned TM's counts are not its HELLO's (plan.c). */
    if (stats && tm->plan.planned) {
        json_object_set_new(stats, "workers", json_integer(tm->plan.workers));
        json_object_set_new(stats, "slots", json_integer(tm->plan.slots));
        tm_planview_counts(tm, stats);
        /* (what each worker owns: once a join, wire.h) */
        if (joined)
            json_object_set_new(stats, "worker_res", tm_planview_res(&tm->plan));
    }
    if (stats && tm->relay)
        tm_relay_stats(tm->relay, stats);   /* (its TMs' runs, who is behind) */
    if (stats && spits_wire_encode_json(&buf, SPITS_MSG_STATS,
                                        tm_job_wire(&tm->job), stats) == 0)
        tm_link_send(tm, buf.data, buf.len);
    json_decref(stats);
    spits_buf_free(&buf);
}

void tm_link_send_stats(tm_t *tm)
{
    link_stats(tm, 0);
}

void tm_link_send_join_stats(tm_t *tm)
{
    link_stats(tm, 1);
}
