/*
 * relay.c - spits-tm --serve: a relay between the job and TMs that cannot
 * reach it, or that should not all land on one JM.
 *
 * Upstream, a relay is a TM: the same link (link.c), protocol handlers
 * (protocol.c), pool queue and outbox (workers.c, outbox.c) and results
 * path (results.c), so it joins, re-attaches, drains and leaves as a TM
 * does. What differs is who runs the tasks: the pool is remote
 * (pool.remote) and this file hands its tasks to the TMs behind the
 * relay, on a ROUTER socket of its own, speaking the JM's side of the
 * same protocol (wire.h):
 *
 *   HELLO      a TM joins (or re-attaches): it gets the job's WELCOME as
 *              the relay got it, with its own attach number
 *   TASKS      out of the pool to each TM with room (its slots minus the
 *              copies it holds), large payloads as parts without a copy
 *   RESULTS    each record of a copy the TM holds goes to the outbox, and
 *              so upstream; other results (a TM that joined holding work
 *              from elsewhere, or one we counted lost) go up flagged
 *              SPITS_REC_FOREIGN, which gives the JM no credit back, and
 *              a copy of that task still queued here goes back unrun; a
 *              result that came as a part goes up as one, the same frame
 *              shared (zmq_msg_copy), not copied
 *   CANCEL     upstream's cancels of copies a TM holds are passed on
 *   DRAIN, BYE, STATS, HEARTBEAT as a JM takes them
 * Who is behind the relay, and loops of relays: relay_peers.c.
 *
 * The rule upstream is the JM's own: every copy the relay took (from the
 * pool: tm_pool_take, which counts it running) goes back as exactly one
 * record, through rec_add with held set. The relay keeps, per copy, only
 * which TM holds it (copies, an idmap); a copy upstream sends again while
 * one is out behind us (it lost track of us across an outage) is not sent
 * down twice but noted in extra, and answered RETURNED with the first.
 * A TM gets back one slot per record of a copy it held, and per record of
 * what it said it held when it joined (unknown_credit); other records free
 * nothing, so no TM can talk itself into more tasks than its slots.
 *
 * Nothing here cannot be lost. A TM that goes silent for the job's
 * --tm-timeout, or whose connection is gone, is lost, by the JM's own
 * rules and code (serving/liveness.c: a connection still bringing bytes
 * is not silence, nor is a stall of this loop): its copies go back
 * upstream as RETURNED records at once, so the JM sends them again
 * without waiting for its own timeout. A relay that dies costs its
 * copies, which the JM re-sends after --tm-timeout; its TMs fall back to
 * their next hop (spits-tm --via) with their results.
 *
 * Threads: all of it runs on spits-tm's main thread (tm_private.h); the
 * pool is reached through its own functions (tm.h). libzmq's I/O thread
 * only calls relay_part_done, which drops a reference with an atomic.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "jobdir.h"
#include "keys.h"
#include "log.h"
#include "relay_int.h"
#include "router.h"
#include "taskbatch.h"
#include "util.h"
#include "zmqutil.h"

#define RELAY_RECV_BURST 1024      /* messages a turn, so tasks still go out */
#define RELAY_TICK_MS 100          /* heartbeats and silence, checked this often */
#define RELAY_MONITOR_EP "inproc://spits-relay-monitor"
#define RELAY_END_WAIT_MS 2000     /* the most it waits for BYEs after END */

/* --- logging ------------------------------------------------------------ */

/* A malformed message (bad), or records of copies a TM was never sent
 * (bogus): counted, and said at most every 10 s. */
static void relay_bad(tm_relay_t *r, const char *why)
{
    r->bad++;
    if (loglimit_every(&r->bad_logged_at, r->tm->now, 10000))
        spits_warn("relay: dropped a malformed message from a task manager "
                   "(%s); %llu so far", why, (unsigned long long)r->bad);
}

static void relay_bogus(tm_relay_t *r, const rl_tm_t *t)
{
    r->bogus++;
    if (loglimit_every(&r->bogus_logged_at, r->tm->now, 10000))
        spits_warn("relay: TM %s:%ld sent records of task copies this relay did "
                   "not send it; they free no slot (%llu so far)", t->host,
                   t->pid, (unsigned long long)r->bogus);
}

/* --- sending ------------------------------------------------------------ */

static int relay_send(tm_relay_t *r, rl_tm_t *t, const void *buf, size_t len,
                      int more)
{
    if (router_send(r->router, t->rid, t->ridlen, buf, len, more) != 0)
        return -1;
    t->live.last_sent = r->tm->now;
    return 0;
}

static int relay_send_empty(tm_relay_t *r, rl_tm_t *t, int type)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, r->up_phase);
    return relay_send(r, t, hdr, sizeof hdr, 0);
}

/* A peer we do not know (we lost it, or restarted): say HELLO. */
static void relay_send_who(tm_relay_t *r, const void *rid, size_t ridlen)
{
    unsigned char who[SPITS_HDR_SIZE];
    spits_wire_encode_empty(who, SPITS_MSG_WHO, r->up_phase);
    router_send(r->router, rid, ridlen, who, sizeof who, 0);
}

/* The job's WELCOME (with t's attach) or PHASE, as upstream sent it. */
static void relay_send_job(tm_relay_t *r, rl_tm_t *t, int type)
{
    spits_buf_t buf = {0};
    json_t *body = json_copy(r->up);
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "attach", json_integer(t->attach));
    /* Who answers: a TM says "(relay)" by this, whatever option led it
     * here. */
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "relay", json_true());
    /* The relay takes its TMs' large results as parts (but under
     * ThreadSanitizer: spits_parts_min), whatever upstream takes (results.c sends them inline
     * to an upstream that takes none); said to each with its routing id
     * (wire.h). */
    if (body && type == SPITS_MSG_WELCOME && r->part_min != UINT64_MAX)
        json_object_set_new(body, "result_parts",
                            json_stringn((const char *)t->rid, t->ridlen));
    if (body && spits_wire_encode_json(&buf, type, r->up_phase, body) == 0)
        relay_send(r, t, buf.data, buf.len, 0);
    else
        spits_error("relay: out of memory encoding a %s message",
                    spits_wire_type_name(type));
    json_decref(body);
    spits_buf_free(&buf);
}

/* --- records upstream --------------------------------------------------- */

/* Hands the records gathered so far to the outbox (results.c sends
 * them). */
static void relay_rec_flush(tm_relay_t *r)
{
    if (!r->rec_ph)
        return;
    tm_pool_remote_done(&r->tm->pool, r->rec_ph, r->recb.count ? &r->recb : NULL,
                        &r->recparts, r->rec_done);
    r->rec_ph = NULL;
    r->rec_done = 0;
}

/* A record's payload as a part upstream: the frame it came in, shared
 * (zmq_msg_copy counts a reference, no bytes are copied). 0, or -1 when
 * out of memory (nothing added). */
static int relay_rec_add_part(tm_relay_t *r, uint64_t id, uint32_t status,
                              zmq_msg_t *part)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    int rc = zmq_msg_copy(&m, part) == 0 && spits_parts_add(&r->recparts, &m) == 0 ? 0 : -1;
    zmq_msg_close(&m);
    if (rc == 0 && spits_batch_add_part(&r->recb, id, status,
                                        (uint32_t)zmq_msg_size(part)) != 0) {
        spits_parts_drop_last(&r->recparts);
        rc = -1;
    }
    return rc;
}

/* Adds a record of phase ph for upstream, its payload inline, or, given
 * part (the frame it came in), as a part; held: it answers a copy this
 * relay took from the pool (counted running there). */
static void relay_rec_add(tm_relay_t *r, const tm_phase_t *ph, uint64_t id,
                          uint32_t status, const void *data, uint32_t len,
                          zmq_msg_t *part, int held)
{
    if (ph != r->rec_ph) {
        relay_rec_flush(r);
        r->rec_ph = ph;
        spits_batch_begin(&r->recb, SPITS_MSG_RESULTS, ph->wire);
    }
    unsigned char *dst = NULL;
    if (part ? relay_rec_add_part(r, id, status, part) != 0
             : !(dst = spits_batch_add(&r->recb, id, status, len))) {
        /* Its copy then stays held upstream, and the pool must say so:
         * the relay stops and the JM sends its copies elsewhere. */
        tm_pool_fail(&r->tm->pool, "out of memory queueing results");
    } else if (dst && len) {
        memcpy(dst, data, len);
    }
    r->rec_done += held != 0;
}

/* The copy of id behind us is answered (its record went up): the copies
 * upstream sent again meanwhile go back unrun. */
static void relay_settle_extra(tm_relay_t *r, uint64_t id)
{
    int more;
    void *ph;
    if (!spits_idmap_get(r->extra, id, &more, &ph))
        return;
    spits_idmap_del(r->extra, id);
    for (int k = 0; k < more; k++)
        relay_rec_add(r, ph, id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
}

/* A copy t held goes back upstream unrun (idmap_take_owner's callback). */
static void relay_return_copy(uint64_t id, void *ph, void *arg)
{
    relay_rec_add(arg, ph, id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
    relay_settle_extra(arg, id);
}

/* t is gone (lost, or it left): what it held goes back upstream now. */
static void relay_drop(tm_relay_t *r, rl_tm_t *t, const char *why, int lost)
{
    rl_peers_t *p = &r->peers;
    if (!t->alive)
        return;
    size_t n = spits_idmap_take_owner(r->copies, (int)(t - p->tms),
                                      relay_return_copy, r);
    relay_rec_flush(r);
    rl_peers_gone(p, t);
    t->outstanding = 0;
    p->runs_gone += t->runs;
    p->busy_gone += t->busy_s;
    if (lost)
        p->losses++;
    else
        p->leaves++;
    if (loglimit_allow(&r->log_events, r->tm->now))
        spits_info("relay: %s %s:%ld %s; %zu task(s) handed back upstream",
                   t->relay_id[0] ? "relay" : "TM", t->host, t->pid, why, n);
}

/* --- messages from TMs -------------------------------------------------- */

/* HELLO: a TM (or a relay) joins, re-attaches, or repeats itself. */
static void relay_on_hello(tm_relay_t *r, rl_tm_t *t, const void *rid,
                           size_t ridlen, zmq_msg_t *msg)
{
    const char *why = NULL;
    spits_hello_t h;
    char below[RELAY_BELOW_MAX][RELAY_ID_MAX];
    int nbelow = 0, loop = 0;
    json_t *j = spits_wire_decode_json(zmq_msg_data(msg), zmq_msg_size(msg), &why);

    if (!j || spits_hello_parse(j, &h, &why) != 0 ||
        (h.relay && (loop = rl_peers_check_loop(r, h.relay, below, &nbelow)) < 0)) {
        relay_bad(r, why ? why : "HELLO with a bad relay id");
        json_decref(j);
        return;
    }
    if (loop || !r->up) {
        /* A loop is refused (relay_peers.c); with no job yet, it says
         * HELLO again each second. */
        json_decref(j);
        return;
    }
    if (t && t->alive && t->pid == h.pid && h.attach >= 0 && h.attach <= t->attach) {
        relay_send_job(r, t, SPITS_MSG_WELCOME);   /* a queued copy */
        json_decref(j);
        return;
    }
    int first = !t;
    if (t && t->alive)
        relay_drop(r, t, "reconnected", 1);
    if (!t && !(t = rl_peers_add(&r->peers, rid, ridlen))) {
        relay_bad(r, "no room to add a task manager");
        json_decref(j);
        return;
    }
    /* What a TM of another job holds is not this job's (as in the JM). */
    long held = h.job_id && strcmp(h.job_id, r->up_job) != 0 ? 0 : h.held;
    spits_escape(t->host, sizeof t->host, h.host);   /* (for our log) */
    t->pid = h.pid;
    t->workers = (int)h.workers;
    t->slots = (int)h.slots;
    t->outstanding = (int)(held < h.slots ? held : h.slots);
    t->unknown_credit = (int)held;
    t->attach = h.attach;
    t->alive = 1;
    t->draining = 0;
    liveness_heard(&t->live, r->tm->now);
    t->runs = 0;
    t->busy_s = 0;
    t->relay_id[0] = 0;
    t->nbelow = nbelow;
    memcpy(t->below, below, sizeof below);
    if (h.relay)
        snprintf(t->relay_id, sizeof t->relay_id, "%s",
                 json_string_value(json_object_get(h.relay, "id")));
    if (first)
        r->peers.joins++;
    else
        r->peers.reattaches++;
    rl_peers_capacity(&r->peers, t);
    if (loglimit_allow(&r->log_events, r->tm->now))
        spits_info("relay: %s %s:%ld %s with %ld worker(s)",
                   h.relay ? "relay" : "TM", t->host, h.pid,
                   first ? "joined" : "re-attached", h.workers);
    relay_send_job(r, t, SPITS_MSG_WELCOME);
    json_decref(j);
}

#define RELAY_UNQUEUE_MAX 64   /* foreign results' ids unqueued at once */

/* Our own queued copies of tasks whose foreign results just went up:
 * after them (flushed first, so the JM reads the result before), each
 * goes back unrun instead of down to a TM, which would run the task
 * again; typically the JM re-sent it to us when the TM's old hop died.
 * A copy already down with a TM is the JM's to cancel. */
static void relay_unqueue(tm_relay_t *r, const tm_phase_t *ph, uint64_t *ids,
                          size_t *n)
{
    if (!*n)
        return;
    relay_rec_flush(r);
    tm_pool_cancel(&r->tm->pool, ph, ids, *n);
    *n = 0;
}

/* The records of a RESULTS message from t (NULL: a TM we do not know):
 * each of a copy t holds goes upstream and frees its slot; any other
 * result goes up as foreign (see the header), and a copy of its task
 * still queued here goes back unrun (relay_unqueue). With no_payload (a
 * message whose frames did not fit its records), the copies t holds go
 * back unrun instead, and nothing else goes up. */
static void relay_on_results(tm_relay_t *r, rl_tm_t *t, const spits_hdr_t *h,
                             zmq_msg_t *msg, spits_parts_t *parts, int no_payload)
{
    spits_reader_t reader;
    spits_rec_t rec;
    uint64_t credit = 0, bogus = 0;
    uint64_t done[RELAY_UNQUEUE_MAX];
    size_t ndone = 0;
    int idx = t ? (int)(t - r->peers.tms) : -1;
    const tm_phase_t *cur = r->tm->job.current;
    size_t k = 0;   /* the next part */

    spits_reader_init(&reader, zmq_msg_data(msg), zmq_msg_size(msg));
    spits_reader_parts(&reader, parts->view);
    while (spits_reader_next(&reader, &rec)) {
        zmq_msg_t *part = rec.part && !no_payload ? &parts->msgs[k++] : NULL;
        void *ph;
        if (rec.foreign) {
            /* (a relay behind us passing one on: no slot of its own) */
        } else if (t && spits_idmap_take(r->copies, rec.id, idx, &ph)) {
            if (no_payload)
                relay_rec_add(r, ph, rec.id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
            else
                relay_rec_add(r, ph, rec.id, rec.status, rec.data, rec.len, part, 1);
            relay_settle_extra(r, rec.id);
            credit++;
            continue;
        } else if (t && t->unknown_credit > 0) {
            t->unknown_credit--;
            credit++;
        } else if (t) {
            bogus++;
        }
        /* Not a copy it holds from us: work it did for another hop, or
         * for us before we counted it lost. A result may still be the
         * first; a copy handed back is nothing to anyone. */
        if (no_payload || rec.status == SPITS_ST_RETURNED || !cur ||
            h->phase != cur->wire)
            continue;
        relay_rec_add(r, cur, rec.id, rec.status | SPITS_REC_FOREIGN, rec.data,
                      rec.len, part, 0);
        r->foreign++;
        if (rec.status != SPITS_ST_OK)
            continue;
        done[ndone++] = rec.id;
        if (ndone == RELAY_UNQUEUE_MAX)
            relay_unqueue(r, cur, done, &ndone);
    }
    relay_unqueue(r, cur, done, &ndone);
    relay_rec_flush(r);
    if (bogus)
        relay_bogus(r, t);
    if (t && t->alive)
        t->outstanding -= (int)(credit < (uint64_t)t->outstanding
                                    ? credit : (uint64_t)t->outstanding);
}

/* One message from rid: its first frame, msg, with its other frames
 * still to be read (parts of RESULTS; the rest is dropped). */
static void relay_on_message(tm_relay_t *r, zmq_msg_t *ridmsg, zmq_msg_t *msg)
{
    const void *rid = zmq_msg_data(ridmsg);
    size_t ridlen = zmq_msg_size(ridmsg);
    spits_hdr_t h;
    spits_parts_t parts;
    const char *why = NULL;

    if (ridlen == 0 || ridlen > RELAY_RID_MAX ||
        spits_wire_parse(zmq_msg_data(msg), zmq_msg_size(msg), &h, &why) != 0) {
        if (zmq_msg_more(msg))
            spits_zmq_drop_frames(r->router);
        relay_bad(r, why ? why : "a routing id of a bad size");
        return;
    }
    /* (a HELLO takes the entry of a TM gone too: it re-attaches) */
    rl_tm_t *entry = rl_peers_find(&r->peers, rid, ridlen);
    rl_tm_t *t = entry && entry->alive ? entry : NULL;
    if (t)
        liveness_heard(&t->live, r->tm->now);
    int fd = spits_zmq_msg_fd(msg);
    int rc = spits_parts_recv(&parts, r->router, &h, msg, SPITS_MSG_RESULTS, &why);
    if (rc != 0) {
        /* Its records still answer copies, unrun. */
        relay_bad(r, rc == -2 ? "out of memory receiving its parts" : why);
        if (h.type == SPITS_MSG_RESULTS)
            relay_on_results(r, t, &h, msg, &parts, 1);
        return;
    }
    switch (h.type) {
    case SPITS_MSG_HELLO:
        relay_on_hello(r, entry, rid, ridlen, msg);
        break;
    case SPITS_MSG_RESULTS:
        relay_on_results(r, t, &h, msg, &parts, 0);
        if (!t)
            relay_send_who(r, rid, ridlen);
        break;
    case SPITS_MSG_HEARTBEAT:
        if (!t)
            relay_send_who(r, rid, ridlen);
        break;
    case SPITS_MSG_STATS:
        if (rl_peers_stats(&r->peers, t, zmq_msg_data(msg), zmq_msg_size(msg),
                           &why) != 0)
            relay_bad(r, why);
        break;
    case SPITS_MSG_DRAIN:
        if (t && !t->draining) {
            t->draining = 1;
            rl_peers_capacity(&r->peers, t);
            if (loglimit_allow(&r->log_events, r->tm->now))
                spits_info("relay: TM %s:%ld is draining", t->host, t->pid);
        }
        break;
    case SPITS_MSG_BYE:
        if (t)
            relay_drop(r, t, "left", 0);
        break;
    case SPITS_MSG_STATUS:
        break;   /* (spits-status asks the JM) */
    default:
        relay_bad(r, "a JM-to-TM message sent to a relay");
    }
    /* (looked up again: a HELLO adds it) */
    if ((entry = rl_peers_find(&r->peers, rid, ridlen)) && entry->alive)
        liveness_conn(&entry->live, fd, conngen_of(r->conngen, fd));
    spits_parts_free(&parts);   /* (what is forwarded holds its own copy) */
}

static void relay_recv(tm_relay_t *r)
{
    for (int i = 0; i < RELAY_RECV_BURST && !r->tm->done; i++) {
        zmq_msg_t rid, body;
        zmq_msg_init(&rid);
        if (zmq_msg_recv(&rid, r->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&rid);
            return;
        }
        zmq_msg_init(&body);
        if (!zmq_msg_more(&rid) || zmq_msg_recv(&body, r->router, ZMQ_DONTWAIT) < 0) {
            relay_bad(r, "no body");
        } else {
            relay_on_message(r, &rid, &body);
        }
        zmq_msg_close(&body);
        zmq_msg_close(&rid);
    }
}

/* --- tasks to TMs ------------------------------------------------------- */

/* libzmq is done with a part: the copy's reference to its message goes.
 * Runs on libzmq's I/O thread (the count is atomic). */
static void relay_part_done(void *data, void *rx)
{
    (void)data;
    tm_rx_release(rx, 1);
}

/* Copies that did not go out go back upstream unrun (unmapped first by
 * the caller, if they were mapped). */
static void relay_unsent(tm_relay_t *r, const tm_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        relay_rec_add(r, items[i].phase, items[i].id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
        relay_settle_extra(r, items[i].id);
        tm_rx_release(items[i].rx, 1);
    }
    relay_rec_flush(r);
}

static void relay_unmap(tm_relay_t *r, const tm_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spits_idmap_del(r->copies, items[i].id);
}

/* Of the n copies taken for t, those whose task is already out behind us
 * go to extra instead (see the header); the rest are mapped to t and
 * moved to the front. Returns how many are to be sent, or -1 when out of
 * memory (nothing is mapped then). */
static long relay_map_copies(tm_relay_t *r, rl_tm_t *t, tm_item_t *items, size_t n)
{
    int idx = (int)(t - r->peers.tms);
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
    relay_unmap(r, items, keep);
    memmove(items + keep, items + i, (n - i) * sizeof *items);
    relay_unsent(r, items, keep + n - i);
    return -1;
}

/* The copies of a TASKS message, for serving/taskbatch.c: a part takes
 * its item's reference with it (relay_part_done drops it). */
static void relay_item(void *arg, size_t k, taskbatch_item_t *it)
{
    const tm_item_t *item = (const tm_item_t *)arg + k;
    *it = (taskbatch_item_t){item->id, item->data, item->len};
}

static void *relay_item_hold(void *arg, size_t k)
{
    return ((tm_item_t *)arg)[k].rx;
}

/* Sends t the copies of one phase it was given, as one TASKS message;
 * their references go with them (an inline copy's now, a part's when
 * libzmq is done with it). -1: they went back upstream instead (no
 * memory, or t is gone). */
static int relay_send_tasks(tm_relay_t *r, rl_tm_t *t, tm_item_t *items, size_t n)
{
    const tm_phase_t *ph = items[0].phase;
    long sent = relay_map_copies(r, t, items, n), parts;
    taskbatch_src_t src = {relay_item, relay_item_hold, relay_part_done, items};
    taskbatch_sent_t done;

    if (sent <= 0) {
        relay_rec_flush(r);   /* (records of copies answered at once) */
        return sent < 0 ? -1 : 0;
    }
    n = (size_t)sent;
    if ((parts = taskbatch_build(&r->out, ph->wire, r->part_min, n, &src)) < 0) {
        spits_error("relay: out of memory sending %zu task(s); handing them "
                    "back upstream", n);
        relay_unmap(r, items, n);
        relay_unsent(r, items, n);
        return -1;
    }
    if (relay_send(r, t, r->out.buf.data, r->out.buf.len, parts ? ZMQ_SNDMORE : 0) != 0) {
        int gone = errno == EHOSTUNREACH;
        relay_unmap(r, items, n);
        relay_unsent(r, items, n);
        if (gone)
            relay_drop(r, t, "disconnected", 1);
        return -1;
    }
    taskbatch_send_parts(r->router, r->part_min, n, parts, &src, &done);
    if (done.failed)
        spits_error("relay: out of memory sending %zu task(s) as parts; TM "
                    "%s:%ld drops that message", done.failed, t->host, t->pid);
    for (size_t k = 0; k < n; k++)   /* (an inline copy's reference goes now) */
        if (items[k].len < r->part_min)
            tm_rx_release(items[k].rx, 1);
    t->outstanding += (int)n;
    return 0;
}

/* t gets what the pool has, up to its room, in messages of at most
 * RELAY_BATCH_MAX copies (one a turn held the relay to RELAY_BATCH_MAX
 * tasks a turn a TM). -1: the pool ran out. */
static int relay_serve_tm(tm_relay_t *r, rl_tm_t *t)
{
    while (t->alive && !t->draining && t->outstanding < t->slots && !r->tm->done) {
        size_t want = (size_t)(t->slots - t->outstanding);
        size_t n = tm_pool_take(&r->tm->pool, r->items,
                                want < RELAY_BATCH_MAX ? want : RELAY_BATCH_MAX);
        if (!n)
            return -1;
        /* One message per phase (a phase change leaves a few of the old). */
        size_t start = 0;
        int failed = 0;
        for (size_t i = 1; i <= n; i++)
            if (i == n || r->items[i].phase != r->items[start].phase) {
                if (failed)
                    relay_unsent(r, r->items + start, i - start);
                else if (relay_send_tasks(r, t, r->items + start, i - start) != 0)
                    failed = 1;   /* (they went back upstream; so do the rest) */
                start = i;
            }
        if (failed)
            return 0;
    }
    return 0;
}

/* Each TM with room gets what the pool has, round robin. */
static void relay_serve(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    rl_peers_t *p = &r->peers;
    if (!r->up || !tm->pool_started || tm->drain.active || !p->ntms)
        return;
    for (size_t k = 0; k < p->ntms && !tm->done; k++) {
        rl_tm_t *t = &p->tms[(r->rr + k) % p->ntms];
        if (relay_serve_tm(r, t) < 0)
            break;   /* (the pool is empty) */
    }
    r->rr++;
}

/* --- timers ------------------------------------------------------------- */

static void relay_tick(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    if (tm->now < r->next_tick)
        return;
    r->next_tick = tm->now + RELAY_TICK_MS;
    loglimit_flush(&r->log_events, tm->now, 0);
    for (size_t i = 0; i < r->peers.ntms; i++) {
        rl_tm_t *t = &r->peers.tms[i];
        if (!t->alive)
            continue;
        int v = liveness_judge(&r->liveness, &t->live, tm->now,
                               tm->now < r->probe_until, router_probe,
                               r->conngen, t->host, t->pid);
        if (v == LIVENESS_LOST) {
            char why[64];
            snprintf(why, sizeof why, "lost (silent for %.0f s)",
                     (tm->now - t->live.last_heard) / 1000.0);
            relay_drop(r, t, why, 1);
        } else if (v == LIVENESS_HEARTBEAT &&
                   relay_send_empty(r, t, SPITS_MSG_HEARTBEAT) != 0 &&
                   errno == EHOSTUNREACH) {
            /* Its connection is gone (ROUTER_MANDATORY): a TM killed
             * with its copies gives them back within a heartbeat, not
             * after the job's --tm-timeout. */
            relay_drop(r, t, "disconnected", 1);
        }
    }
}

void tm_relay_turn(tm_t *tm)
{
    tm_relay_t *r = tm->relay;
    /* (a stall of spits-tm's loop is not its TMs' silence) */
    if (r->last_turn)
        liveness_stall(&r->liveness, r->last_turn, tm->now);
    r->last_turn = tm->now;
    if (r->zap)
        spits_zap_handle(r->zap, tm->now);
    if (router_monitor_read(r->mon, r->conngen, r->zap, tm->now))
        r->probe_until = tm->now + LIVENESS_PROBE_MS;
    relay_recv(r);
    relay_serve(r);
    relay_tick(r);
}

/* --- upstream ----------------------------------------------------------- */

/* The largest message a TM may send us follows the job's largest task or
 * result (for connections made from now on, as libzmq applies it). */
static void relay_max_msg(tm_relay_t *r)
{
    if (r->max_task == r->tm->link.max_task)
        return;
    r->max_task = r->tm->link.max_task;
    router_max_msg(r->router, r->max_task);
}

void tm_relay_on_job(tm_t *tm, int type, uint32_t phase, json_t *body)
{
    tm_relay_t *r = tm->relay;
    json_t *copy = json_deep_copy(body);
    int phase_changed = r->up && phase != r->up_phase;

    if (!copy) {
        spits_error("relay: out of memory keeping the job's %s",
                    spits_wire_type_name(type));
        tm->done = -1;
        return;
    }
    json_object_del(copy, "attach");
    json_object_del(copy, "result_parts");   /* (upstream's, to this relay) */
    json_decref(r->up);
    r->up = copy;
    r->up_phase = phase;
    r->peers.loop_since = 0;
    snprintf(r->up_job, sizeof r->up_job, "%s",
             json_string_value(json_object_get(copy, "job_id")));
    json_int_t hb = json_integer_value(json_object_get(copy, "heartbeat_ms"));
    json_int_t timeout = json_integer_value(json_object_get(copy, "timeout_ms"));
    r->liveness.hb_ms = hb > 0 ? hb : 1000;
    r->liveness.timeout_ms = timeout > 0 ? timeout : 10 * r->liveness.hb_ms;
    relay_max_msg(r);
    if (!phase_changed)
        return;
    for (size_t i = 0; i < r->peers.ntms; i++)
        if (r->peers.tms[i].alive)
            relay_send_job(r, &r->peers.tms[i], SPITS_MSG_PHASE);
}

typedef struct {
    int owner;
    uint64_t id;
} rl_cancel_t;

static int relay_by_owner(const void *a, const void *b)
{
    const rl_cancel_t *x = a, *y = b;
    return x->owner < y->owner ? -1 : x->owner > y->owner;
}

/* Sends each TM one CANCEL for its copies among c[0..m-1] (of phase ph),
 * which it sorts. A copy left out (no memory) runs on: its result is a
 * duplicate. */
static void relay_send_cancels(tm_relay_t *r, const tm_phase_t *ph,
                               rl_cancel_t *c, size_t m)
{
    qsort(c, m, sizeof *c, relay_by_owner);
    for (size_t i = 0; i < m;) {
        size_t j = i, n = 0;
        spits_batch_begin(&r->out, SPITS_MSG_CANCEL, ph->wire);
        for (; j < m && c[j].owner == c[i].owner; j++)
            n += spits_batch_add(&r->out, c[j].id, 0, 0) != NULL;
        spits_batch_seal(&r->out);
        rl_tm_t *t = &r->peers.tms[c[i].owner];
        if (t->alive && n)
            relay_send(r, t, r->out.buf.data, r->out.buf.len, 0);
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
    relay_send_cancels(r, ph, c, m);
    free(c);
}

typedef struct {
    const tm_phase_t *ph;
    rl_cancel_t *c;
    size_t m;
} rl_gather_t;

static void relay_gather_phase(uint64_t id, int owner, void *val, void *arg)
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
        spits_idmap_foreach(r->copies, relay_gather_phase, &g);
        relay_send_cancels(r, ph, g.c, g.m);
    }
    free(g.c);
}

/* --- set-up and tear-down ----------------------------------------------- */

/* CURVE server with the job's server key, and the ZAP handler that admits
 * only the job's client key: what the JM does, so a TM's key file works
 * for both. */
static int relay_security(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    char path[PATH_MAX], err[1024];
    spits_keys_t keys;

    if (tm->opts.insecure)
        return 0;
    if (tm->opts.key_file)
        snprintf(path, sizeof path, "%s", tm->opts.key_file);
    else
        snprintf(path, sizeof path, "%s/%s", tm->opts.jobdir, SPITS_JM_KEY_FILE);
    if (spits_keys_read(path, &keys, 1, err, sizeof err) != 0) {
        spits_error("%s (a relay serves with the job's server key: give it "
                    "the job dir's %s, or a copy with --key-file)", err,
                    SPITS_JM_KEY_FILE);
        return -1;
    }
    if (tm->link.keys.server_public[0] &&
        strcmp(keys.server_public, tm->link.keys.server_public) != 0) {
        spits_error("%s is not the key of the job this relay joins (a stale "
                    "copy?)", path);
        return -1;
    }
    if (router_curve(tm->link.context, r->router, keys.client_public,
                     keys.server_secret, &r->zap, err, sizeof err) != 0) {
        spits_error("relay: %s", err);
        return -1;
    }
    return 0;
}

tm_relay_t *tm_relay_new(tm_t *tm)
{
    tm_relay_t *r = calloc(1, sizeof *r);
    char bound[512], err[256];
    size_t blen = sizeof bound;

    if (!r || rl_peers_init(&r->peers) != 0 || !(r->copies = spits_idmap_new()) ||
        !(r->extra = spits_idmap_new()) || !(r->conngen = conngen_new())) {
        spits_error("relay: out of memory");
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    r->tm = tm;
    r->liveness = (liveness_hop_t){.prefix = "relay: ", .loop = "the relay",
                                   .timeout_ms = 10000, .hb_ms = 1000,
                                   .tick_ms = RELAY_TICK_MS};
    r->log_events.what = "TM events";
    r->part_min = spits_parts_min();
    /* (the job's max_task as the link knows it so far: relay_max_msg
     * follows it) */
    r->max_task = tm->link.max_task;
    if (!(r->router = router_new(tm->link.context, r->max_task, err, sizeof err))) {
        spits_error("relay: %s", err);
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    if (router_monitor_open(tm->link.context, r->router, RELAY_MONITOR_EP,
                            &r->mon) != 0) {
        spits_error("relay: cannot monitor its socket: %s", zmq_strerror(errno));
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    if (relay_security(r) != 0) {
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    if (zmq_bind(r->router, tm->opts.serve) != 0 ||
        zmq_getsockopt(r->router, ZMQ_LAST_ENDPOINT, bound, &blen) != 0) {
        spits_error("relay: cannot bind %s: %s", tm->opts.serve, zmq_strerror(errno));
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    spits_zmq_reachable(bound, r->endpoint, sizeof r->endpoint);
    spits_info("relay: serving task managers at %s", r->endpoint);
    tm->pool.remote = 1;
    return r;
}

void *tm_relay_socket(const tm_relay_t *r)
{
    return r->router;
}

void *tm_relay_zap_socket(const tm_relay_t *r)
{
    return r->zap ? spits_zap_socket(r->zap) : NULL;
}

/* The TMs behind us, for router_end (relay_end). */
static const void *relay_end_rid(void *arg, size_t k, size_t *ridlen)
{
    const rl_tm_t *t = &((rl_peers_t *)arg)->tms[k];
    *ridlen = t->ridlen;
    return t->alive ? t->rid : NULL;
}

static int relay_end_bye(void *arg, const void *rid, size_t ridlen)
{
    rl_tm_t *t = rl_peers_find(arg, rid, ridlen);
    if (!t || !t->alive)
        return 0;
    t->alive = 0;   /* (the relay is closing: its END is answered) */
    return 1;
}

void tm_relay_destroy(tm_relay_t **rp, int job_over)
{
    tm_relay_t *r = *rp;
    if (!r)
        return;
    /* The job is over: the TMs behind us are told so, as the JM does. */
    router_peers_t peers = {r->peers.ntms, relay_end_rid, relay_end_bye, &r->peers};
    if (job_over && r->router)
        router_end(r->router, r->up_phase, &peers, RELAY_END_WAIT_MS);
    loglimit_flush(&r->log_events, spits_now_ms(), 1);
    router_monitor_close(r->router, &r->mon);
    if (r->router)
        zmq_close(r->router);
    spits_zap_destroy(&r->zap);
    conngen_destroy(&r->conngen);
    spits_idmap_destroy(&r->copies);
    spits_idmap_destroy(&r->extra);
    rl_peers_free(&r->peers);
    json_decref(r->up);
    spits_batch_free(&r->out);
    spits_batch_free(&r->recb);
    spits_parts_free(&r->recparts);
    free(r);
    *rp = NULL;
}
