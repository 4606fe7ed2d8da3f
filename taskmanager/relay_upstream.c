/*
 * relay_upstream.c - what a relay's upstream tells it, passed on to the
 * TMs behind it (see relay_int.h): the job's WELCOME and PHASE (kept, for
 * the TMs that join later, and the loss rules, message bound and
 * max_copies taken from it; a new phase gives back every copy of the
 * old), upstream's CANCELs of copies held here, and a drain (the copies
 * queued behind us cancelled, so they come back at once).
 *
 * Called by protocol.c and loop.c (tm_relay_on_job, tm_relay_cancel,
 * tm_relay_drain); uses relay_copies.c.
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
    router_max_msg(r->sock.l.sock, r->sock.max_task);
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
    /* (a WELCOME: upstream took our capacity from our HELLO, which may
     * differ from our last STATS; the next turn tells it anew) */
    if (type == SPITS_MSG_WELCOME)
        r->peers.told_workers = r->peers.told_slots = -1;
    json_decref(r->job.body);
    r->job.body = copy;
    r->job.phase = phase;
    hopchain_job(&r->peers.chain);
    snprintf(r->job.id, sizeof r->job.id, "%s",
             json_string_value(json_object_get(copy, "job_id")));
    json_int_t hb = json_integer_value(json_object_get(copy, "heartbeat_ms"));
    json_int_t timeout = json_integer_value(json_object_get(copy, "timeout_ms"));
    liveness_hop_t *rules = server_rules(r->srv);
    rules->hb_ms = hb > 0 ? hb : 1000;
    rules->timeout_ms = timeout > 0 ? timeout : 10 * rules->hb_ms;
    server_phase(r->srv, phase);
    server_due_all(r->srv);   /* (a job, or a phase: every TM may be served) */
    relay_upstream_max_msg(r);
    json_t *mc = json_object_get(copy, "max_copies");
    if (json_is_integer(mc))
        relay_copies_set_max(r, (int)json_integer_value(mc));
    if (!phase_changed)
        return;
    relay_copies_reset(r);
    server_send_phase(r->srv);
}

void tm_relay_cancel(tm_t *tm, const tm_phase_t *ph, const uint64_t *ids, size_t n)
{
    relay_copies_drop(tm->relay, ph, ids, n);
}

void tm_relay_drain(tm_t *tm)
{
    /* What the TMs behind have queued comes back at once (RETURNED), and
     * what they run finishes: the drain then waits for no prefetch. What
     * comes back goes upstream (relay.c's turn gives back what nothing
     * runs while the relay drains). */
    relay_copies_cancel_queued(tm->relay);
}
