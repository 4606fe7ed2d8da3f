/*
 * relay_recv.c - what a relay does with its TMs' messages: the hop's
 * handlers (server_hop_t) that the server (serving/server.c,
 * server_on_frames) calls once it parsed a message and routed it:
 *
 *   HELLO      a TM joins (or re-attaches), unless it closes a loop of
 *              relays: it gets the job's WELCOME as the relay got it,
 *              with its own attach number
 *   RESULTS    (the relay's sink: upstream) each record of a copy
 *              this relay holds goes to the scheduler, as the JM's do: the
 *              first result of a task, or its failed run, goes upstream,
 *              its other copies are cancelled, a copy handed back runs
 *              again; other results (a TM that joined holding work from
 *              elsewhere, or a copy released here) go up flagged
 *              SPITS_REC_FOREIGN, which gives the JM no credit back, and a
 *              copy of that task still queued here goes back unrun; a
 *              result that came as a part goes up as one, the same frame
 *              shared (zmq_msg_copy), not copied
 *   DRAIN      a live TM's capacity leaves the relay's
 *
 * A TM gets back one slot per record but foreign ones, as at the JM
 * (serve.c). Malformed messages are counted and said at most every 10 s.
 *
 * Uses relay_copies.c, relay_records.c and relay_peers.c; relay.c's
 * turn reads the socket (relay_recv_burst).
 */
#define _DEFAULT_SOURCE
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "log.h"
#include "relay_int.h"

/* (server_hop_t.add) */
server_peer_t *relay_recv_hop_add(void *arg, const void *rid, size_t ridlen, int *first)
{
    rl_tm_t *t = relay_peers_add(&((tm_relay_t *)arg)->peers, rid, ridlen);
    *first = 1;
    return t ? &t->sv : NULL;
}

/* (server_hop_t.joined; ctx: the HELLO's hopchain_place_t) Who it is,
 * and the log line. */
void relay_recv_hop_joined(void *arg, server_peer_t *p, const server_join_t *j)
{
    tm_relay_t *r = arg;
    rl_tm_t *t = (rl_tm_t *)p;
    const spits_hello_t *h = j->h;
    assert(j->ctx == &r->hello);   /* (relay_recv_hop_accept's, this same message's) */
    if (j->renewed) {
        json_decref(t->stats.worker_res);   /* (its plan is said anew) */
        t->stats.worker_res = NULL;
    }
    t->place = r->hello;
    if (loglimit_allow(&r->log.events, r->tm->now))
        spits_info("relay: %s %s:%ld %s with %d worker(s)",
                   h->relay ? "relay" : "TM", t->sv.proc.host, h->pid,
                   j->first ? "joined" : "re-attached", t->sv.sched.credit.workers);
}

/* (server_hop_t.job) The job's WELCOME (with t's attach) or PHASE, as
 * upstream sent it. */
void relay_recv_hop_job(void *arg, server_peer_t *p, int type)
{
    tm_relay_t *r = arg;
    rl_tm_t *t = (rl_tm_t *)p;
    spits_buf_t buf = {0};
    json_t *body = json_copy(r->job.body);
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "attach", json_integer(t->sv.proc.attach));
    /* Who answers: a TM says "(relay)" by this, whatever option led it
     * here. */
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "relay", json_true());
    /* The relay takes its TMs' large results as parts (but under
     * ThreadSanitizer: spits_parts_min), whatever upstream takes (results.c sends them inline
     * to an upstream that takes none); said to each with its routing id
     * (wire.h). */
    if (body && type == SPITS_MSG_WELCOME && r->down.part_min != UINT64_MAX)
        json_object_set_new(body, "result_parts",
                            json_stringn((const char *)t->sv.peer.rid, t->sv.peer.ridlen));
    if (body && spits_wire_encode_json(&buf, type, r->job.phase, body) == 0)
        server_send(r->srv, p, buf.data, buf.len, 0);
    else
        spits_error("relay: out of memory encoding a %s message",
                    spits_wire_type_name(type));
    json_decref(body);
    spits_buf_free(&buf);
}

/* (server_hop_t.accept) A TM (or a relay) may join, re-attach, or
 * repeat itself, unless it closes a loop of relays (relay_peers.c) or
 * the relay has no job yet: then it says HELLO again each second. */
int relay_recv_hop_accept(void *arg, server_peer_t *p, const spits_hello_t *h, void **ctx,
                          const char **why)
{
    tm_relay_t *r = arg;
    int loop = 0;
    (void)p;
    r->hello.id[0] = 0;
    r->hello.nbelow = 0;
    if (h->relay && (loop = relay_peers_check_loop(r, h->relay, &r->hello)) < 0) {
        *why = "HELLO with a bad relay id";
        return -1;
    }
    if (loop || !r->job.body)
        return 0;
    *ctx = &r->hello;
    return 1;
}

/* (server_hop_t.drain) */
void relay_recv_hop_drain(void *arg, server_peer_t *p)
{
    tm_relay_t *r = arg;
    rl_tm_t *t = (rl_tm_t *)p;
    if (loglimit_allow(&r->log.events, r->tm->now))
        spits_info("relay: TM %s:%ld is draining", t->sv.proc.host, t->sv.proc.pid);
}

#define RELAY_UNQUEUE_MAX 64   /* foreign results' ids unqueued at once */

/* Our own queued copies of tasks whose foreign results just went up:
 * after them (flushed first, so the JM reads the result before), each
 * goes back unrun instead of down to a TM, which would run the task
 * again; typically the JM re-sent it to us when the TM's old hop died.
 * A copy already down with a TM is the JM's to cancel. */
static void relay_recv_unqueue(tm_relay_t *r, uint64_t *ids, size_t *n)
{
    if (!*n)
        return;
    relay_records_flush(r);
    tm_pool_cancel(&r->tm->pool, r->tm->job.current, ids, *n);
    *n = 0;
}

/* Not a copy held here: work it did for another hop (or for us before
 * we counted it lost), or a copy told to cancel. */
static void relay_recv_other(tm_relay_t *r, const spits_hdr_t *h, const spits_rec_t *rec,
                             zmq_msg_t *part, uint64_t *done, size_t *ndone)
{
    const tm_phase_t *cur = r->tm->job.current;
    /* A copy told to cancel (its task resolved): nothing more. */
    if (!rec->foreign && relay_copies_swallow(r, rec->id))
        return;
    /* A result may still be the first; a copy handed back is nothing to
     * anyone. */
    if (rec->status == SPITS_ST_RETURNED || !cur || h->phase != cur->wire)
        return;
    relay_records_add(r, cur, rec->id, rec->status | SPITS_REC_FOREIGN, rec->data,
                      rec->len, part, 0);
    if (rec->status != SPITS_ST_OK)
        return;
    done[(*ndone)++] = rec->id;
    if (*ndone == RELAY_UNQUEUE_MAX)
        relay_recv_unqueue(r, done, ndone);
}

/* (server_hop_t.results) A record of a copy this relay holds goes to the
 * scheduler; its first result or failed run goes upstream. Any other
 * record is the relay's (relay_recv_other). */
void relay_recv_hop_results(void *arg, server_peer_t *p, server_recs_t *it)
{
    tm_relay_t *r = arg;
    uint64_t done[RELAY_UNQUEUE_MAX], hash;
    size_t ndone = 0;
    (void)p;
    while (server_recs_next(it)) {
        const spits_rec_t *rec = &it->rec;
        sched_task_t *task = rec->foreign ? NULL : relay_copies_find(r, rec->id, it->m->h.phase);
        if (!task) {
            relay_recv_other(r, &it->m->h, rec, it->frame, done, &ndone);
            continue;
        }
        sched_outcome_t o = server_recs_record(it, task->id, &hash);
        if (o == SCHED_REC_COMMIT || o == SCHED_REC_POISON) {
            /* (released, not yet freed: relay_copies_settle) */
            relay_records_add(r, rl_copy(task)->phase, rec->id, rec->status, rec->data,
                              rec->len, it->frame, 1);
            rl_copy(task)->answered = 1;
        }
    }
    relay_recv_unqueue(r, done, &ndone);
    relay_copies_cancels(r);
    relay_copies_settle(r);
}

void relay_recv_burst(tm_relay_t *r)
{
    for (int i = 0; i < SERVE_RECV_BURST && !r->tm->done; i++) {
        zmq_msg_t rid, body;
        spits_parts_t parts = {0};
        zmq_msg_init(&rid);
        if (zmq_msg_recv(&rid, r->sock.l.sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&rid);
            return;
        }
        zmq_msg_init(&body);
        if (!zmq_msg_more(&rid) ||
            zmq_msg_recv(&body, r->sock.l.sock, ZMQ_DONTWAIT) < 0) {
            server_bad(r->srv, "no body");
        } else {
            server_msg_t m = {.rid = zmq_msg_data(&rid), .ridlen = zmq_msg_size(&rid),
                              .msg = &body, .parts = &parts};
            server_on_frames(r->srv, &m);
            spits_parts_free(&parts);   /* (what is forwarded holds its own copy) */
        }
        zmq_msg_close(&body);
        zmq_msg_close(&rid);
    }
}
