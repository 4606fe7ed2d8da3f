/*
 * relay_upstream.c - what a relay's upstream tells it, passed on to the
 * TMs behind it (see relay_int.h): the job's WELCOME and PHASE (kept, for
 * the TMs that join later, and the loss rules and message bound taken
 * from it), upstream's CANCELs of copies a TM holds, and a drain (the
 * copies queued behind us cancelled, so they come back at once).
 *
 * Called by protocol.c and loop.c (tm_relay_on_job, tm_relay_cancel,
 * tm_relay_drain); uses relay_send.c.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "relay_int.h"
#include "router.h"

/* The largest message a TM may send us follows the job's largest task or
 * result (for connections made from now on, as libzmq applies it). */
static void relay_upstream_max_msg(tm_relay_t *r)
{
    if (r->sock.max_task == r->tm->link.max_task)
        return;
    r->sock.max_task = r->tm->link.max_task;
    router_max_msg(r->sock.router, r->sock.max_task);
}

void tm_relay_on_job(tm_t *tm, int type, uint32_t phase, json_t *body)
{
    tm_relay_t *r = tm->relay;
    json_t *copy = json_deep_copy(body);
    int phase_changed = r->job.body && phase != r->job.phase;

    if (!copy) {
        spits_error("relay: out of memory keeping the job's %s",
                    spits_wire_type_name(type));
        tm->done = -1;
        return;
    }
    json_object_del(copy, "attach");
    json_object_del(copy, "result_parts");   /* (upstream's, to this relay) */
    json_decref(r->job.body);
    r->job.body = copy;
    r->job.phase = phase;
    r->peers.loop_since = 0;
    snprintf(r->job.id, sizeof r->job.id, "%s",
             json_string_value(json_object_get(copy, "job_id")));
    json_int_t hb = json_integer_value(json_object_get(copy, "heartbeat_ms"));
    json_int_t timeout = json_integer_value(json_object_get(copy, "timeout_ms"));
    r->live.hop.hb_ms = hb > 0 ? hb : 1000;
    r->live.hop.timeout_ms = timeout > 0 ? timeout : 10 * r->live.hop.hb_ms;
    relay_upstream_max_msg(r);
    if (!phase_changed)
        return;
    for (size_t i = peertab_live_count(r->peers.tab); i-- > 0;)
        relay_send_job(r, peertab_live_at(r->peers.tab, i), SPITS_MSG_PHASE);
}

typedef struct {
    int owner;
    uint64_t id;
} rl_cancel_t;

static int relay_upstream_by_owner(const void *a, const void *b)
{
    const rl_cancel_t *x = a, *y = b;
    return x->owner < y->owner ? -1 : x->owner > y->owner;
}

/* Sends each TM one CANCEL for its copies among c[0..m-1] (of phase ph),
 * which it sorts. A copy left out (no memory) runs on: its result is a
 * duplicate. */
static void relay_upstream_cancels(tm_relay_t *r, const tm_phase_t *ph,
                                   rl_cancel_t *c, size_t m)
{
    qsort(c, m, sizeof *c, relay_upstream_by_owner);
    for (size_t i = 0; i < m;) {
        size_t j = i, n = 0;
        spits_batch_begin(&r->down.out, SPITS_MSG_CANCEL, ph->wire);
        for (; j < m && c[j].owner == c[i].owner; j++)
            n += spits_batch_add(&r->down.out, c[j].id, 0, 0) != NULL;
        spits_batch_seal(&r->down.out);
        rl_tm_t *t = peertab_at(r->peers.tab, (size_t)c[i].owner);
        if (t && t->peer.alive && n)
            relay_send_buf(r, t, r->down.out.buf.data, r->down.out.buf.len, 0);
        i = j;
    }
}

void tm_relay_cancel(tm_t *tm, const tm_phase_t *ph, const uint64_t *ids, size_t n)
{
    tm_relay_t *r = tm->relay;
    rl_cancel_t *c = malloc((n ? n : 1) * sizeof *c);
    size_t m = 0;

    if (!c)
        return;   /* the copies run on; their results are duplicates */
    for (size_t i = 0; i < n; i++) {
        int owner;
        void *val;
        if (spits_idmap_get(r->copies, ids[i], &owner, &val) && val == ph)
            c[m++] = (rl_cancel_t){owner, ids[i]};
    }
    relay_upstream_cancels(r, ph, c, m);
    free(c);
}

typedef struct {
    const tm_phase_t *ph;
    rl_cancel_t *c;
    size_t m;
} rl_gather_t;

static void relay_upstream_gather_phase(uint64_t id, int owner, void *val, void *arg)
{
    rl_gather_t *g = arg;
    if (val == g->ph)
        g->c[g->m++] = (rl_cancel_t){owner, id};
}

void tm_relay_drain(tm_t *tm)
{
    tm_relay_t *r = tm->relay;
    const tm_phase_t *ph = tm->job.current;
    rl_gather_t g = {ph, malloc((spits_idmap_count(r->copies) + 1) * sizeof *g.c), 0};

    /* What the TMs behind have queued comes back at once (RETURNED), and
     * what they run finishes: the drain then waits for no prefetch.
     * (Copies of an older phase finish, or were handed back already.) */
    if (g.c && ph) {
        spits_idmap_foreach(r->copies, relay_upstream_gather_phase, &g);
        relay_upstream_cancels(r, ph, g.c, g.m);
    }
    free(g.c);
}

