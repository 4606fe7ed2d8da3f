/*
 * server_recv.c - what peers send a server (see server.h): each message
 * parsed, its frames read and routed by type (server_on_frames); HELLO's
 * joins, repeats and re-attaches; a RESULTS up to its records, which the
 * hop walks (server_recs_t); STATS, DRAIN and BYE. Bad input is counted
 * (server_bad) and its sender, if alive, lost as a bad peer. It calls
 * server.c (losses, due peers), joins.c and the scheduler, and its hop's
 * functions; its self-test is server.c's.
 */
#include <assert.h>
#include <stdio.h>

#include "constants.h"
#include "escape.h"
#include "joins.h"
#include "server_int.h"
#include "wire.h"
#include "zmqutil.h"

/* --- HELLO -------------------------------------------------------------- */

/* What a TM holds of ours (and its pending results) count only as of a
 * HELLO after which nothing was sent to it: with copies sent since, its
 * HELLO predates them. */
static void server_hello_take(server_t *s, server_peer_t *p, const spits_hello_t *h,
                              const char *job_id)
{
    sched_joined(s->cfg.sched, &p->sched, joins_held(h, job_id));
    joins_settle_begin(&p->settle, joins_pending(h, job_id), s->now,
                       s->cfg.rules.timeout_ms);
}

/* (server_int.h) */
server_hello_kind_t server_on_hello(server_t *s, server_peer_t *p, const void *rid,
                                    size_t ridlen, const spits_hello_t *h,
                                    const char *job_id, void *ctx)
{
    const server_hop_t *hop = &s->cfg.hop;
    /* (only it: the other gone peers' messages may still wait; the
     * newest dead entry is never evicted, so p stays good) */
    if (p && p->gone)
        server_lose(s, p, "disconnected", 0);
    joins_known_t known = {0};
    int renewed = 0;
    if (p) {
        known.pid = p->proc.pid;
        known.alive = p->peer.alive;
        known.attach = p->proc.attach;
        known.sent_since = p->sched.sent != p->proc.sent_at_hello;
        renewed = known.pid != h->pid;
    }
    joins_kind_t kind = joins_kind(&known, h);
    if (kind == JOINS_AGAIN) {
        if (p->sched.sent == p->proc.sent_at_hello)
            server_hello_take(s, p, h, job_id);
        if (h->attach > p->proc.attach)
            p->proc.attach = h->attach;
        server_send_job(s, p, SPITS_MSG_WELCOME);
        return SERVER_HELLO_AGAIN;
    }
    if (kind == JOINS_RECONNECT)
        server_lose(s, p, "reconnected", 0);
    int first = 0;
    if (!p && !(p = hop->add ? hop->add(hop->arg, rid, ridlen, &first)
                             : server_peer_add(s, rid, ridlen, &first)))
        return SERVER_HELLO_NO_ENTRY;
    assert(!p->peer.alive && p->sched.slot == p->peer.slot);
    if (peertab_set_alive(s->cfg.tab, p, 1) != 0)
        return SERVER_HELLO_NO_ROOM;
    if (renewed) {   /* (the old process's stay in the totals) */
        p->proc.runs = 0;
        p->proc.busy_s = 0;
    }
    long workers = h->workers, slots = h->slots;
    if (h->relay)   /* (as much as its TMs can have: wire.h) */
        spits_relay_cap(h->tms, &workers, &slots);
    credit_set(&p->sched.credit, workers, slots);
    server_hello_take(s, p, h, job_id);
    spits_escape(p->proc.host, sizeof p->proc.host, h->host);   /* (for the log) */
    p->proc.pid = h->pid;
    p->proc.attach = h->attach;
    p->proc.sent_at_hello = p->sched.sent;
    p->proc.relay = h->relay != NULL;
    p->proc.tms = h->tms;
    server_peer_join(s, p);
    if (first)
        s->st.joins++;
    else
        s->st.reattaches++;
    server_join_t j = {h, first, renewed, ctx};
    hop->joined(hop->arg, p, &j);
    assert(p->peer.alive);
    server_send_job(s, p, SPITS_MSG_WELCOME);
    return first ? SERVER_HELLO_JOINED : SERVER_HELLO_REATTACHED;
}

/* --- the other messages ------------------------------------------------ */

void server_on_message(server_t *s, server_peer_t *p, const spits_hdr_t *h)
{
    if (!p || !p->peer.alive)
        return;
    server_heard(s, p);
    if (h->type == SPITS_MSG_RESULTS)
        joins_settle_results(&p->settle, h->count);
}

void server_on_handled(server_t *s, server_peer_t *p, int fd, uint32_t gen)
{
    if (!p || !p->peer.alive)
        return;
    liveness_conn(&p->live, fd, gen);
    server_share(s, p);
    server_due(s, p);
}

/* p (alive) sent a malformed message: it is lost. */
static void server_bad_peer(server_t *s, server_peer_t *p, const char *why)
{
    char lost[160];
    if (!p || !p->peer.alive)
        return;
    snprintf(lost, sizeof lost, "a bad peer: %s", why);
    server_lose(s, p, lost, 0);
}

static server_peer_t *server_find(server_t *s, const server_msg_t *m)
{
    return peertab_find(s->cfg.tab, m->rid, m->ridlen);
}

/* RESULTS: the scheduler's clock, a live sender's slots back (but for
 * foreign records), then its records to the hop (server_recs_t). */
static void server_on_results(server_t *s, server_peer_t *p, server_msg_t *m)
{
    server_recs_t it = {.m = m, .sched = s->cfg.sched, .sp = p ? &p->sched : NULL};
    sched_clock(it.sched, s->now);
    sched_credit(it.sched, p && p->peer.alive ? it.sp : NULL, m->h.count - m->h.foreign);
    spits_reader_init(&it.reader, zmq_msg_data(m->msg), zmq_msg_size(m->msg));
    spits_reader_parts(&it.reader, m->parts->view);
    s->walking = 1;   /* (it.sp may be a dead entry: no loss may evict it) */
    s->cfg.src.results(s->cfg.src.arg, p, &it);
    s->walking = 0;
}

void server_take_stats(server_t *s, server_peer_t *p, zmq_msg_t *body)
{
    const server_hop_t *hop = &s->cfg.hop;
    const char *why = NULL;
    spits_stats_t st;
    int before = p->sched.credit.workers, changed;
    json_t *parsed = NULL;   /* (the check's, for hop.stats: released here either way) */
    json_t *j = spits_wire_decode_json(zmq_msg_data(body), zmq_msg_size(body), &why);

    if (j && spits_stats_parse(j, &st, &why) == 0 &&
        (!hop->stats_check || hop->stats_check(hop->arg, p, j, &st, &parsed, &why) == 0) &&
        (changed = server_on_stats(s, p, &st, &why)) >= 0)
        hop->stats(hop->arg, p, j, &st, parsed, changed, before);
    else
        server_bad(s, why ? why : "a bad STATS");
    json_decref(parsed);
    json_decref(j);
}

/* HELLO: parsed, then by the hop's rules, a join (server_on_hello). */
static void server_on_hello_msg(server_t *s, server_peer_t *p, server_msg_t *m)
{
    const server_hop_t *hop = &s->cfg.hop;
    const char *why = NULL;
    spits_hello_t h;
    void *ctx = NULL;
    int ok = -1;
    json_t *j = spits_wire_decode_json(zmq_msg_data(m->msg), zmq_msg_size(m->msg), &why);

    if (j && spits_hello_parse(j, &h, &why) == 0)
        ok = hop->accept(hop->arg, p, &h, &ctx, &why);
    if (ok < 0) {
        server_bad(s, why ? why : "a bad HELLO");
    } else if (ok > 0) {
        const char *job = json_string_value(json_object_get(s->job, "job_id"));
        server_hello_kind_t k = server_on_hello(s, p, m->rid, m->ridlen, &h, job ? job : "", ctx);
        if (k == SERVER_HELLO_NO_ENTRY)
            server_bad(s, "HELLO from a routing id no entry can take");
        else if (k == SERVER_HELLO_NO_ROOM)
            server_bad(s, "out of memory adding a task manager");
    }
    json_decref(j);
}

/* The handlers, by m's type (server_on_frames). */
static void server_route(server_t *s, server_peer_t *p, server_msg_t *m)
{
    const server_hop_t *hop = &s->cfg.hop;
    switch (m->h.type) {
    case SPITS_MSG_HELLO:
        server_on_hello_msg(s, p, m);
        break;
    case SPITS_MSG_RESULTS:
        server_on_results(s, p, m);
        break;
    case SPITS_MSG_HEARTBEAT:
        break;
    case SPITS_MSG_STATUS:
        if (hop->status)
            hop->status(hop->arg, m);
        break;
    case SPITS_MSG_STATS:
        if (p)   /* (a peer that never said HELLO: not even parsed) */
            server_take_stats(s, p, m->msg);
        break;
    case SPITS_MSG_DRAIN:
        if (server_on_drain(p))
            hop->drain(hop->arg, p);
        server_reply(s, p, m->rid, m->ridlen, SPITS_MSG_DRAIN);
        break;
    case SPITS_MSG_BYE:
        if (p)
            server_on_bye(s, p, zmq_msg_data(m->msg), zmq_msg_size(m->msg));
        break;
    default:
        server_bad(s, "a message only a job manager or a relay sends");
    }
}

void server_on_frames(server_t *s, server_msg_t *m)
{
    const router_io_t *io = &s->cfg.io;
    const char *why = "a malformed message";
    size_t len = zmq_msg_size(m->msg);
    int fd = spits_zmq_msg_fd(m->msg);

    assert(m->parts && m->parts->n == 0);
    m->unrun = 0;
    s->st.bytes_in += len;
    if (m->ridlen == 0 || m->ridlen > PEERTAB_RID_MAX) {
        io->rest(io->arg, NULL, m->msg, NULL, NULL);
        server_bad(s, "a routing id of a bad size");
        return;
    }
    /* (a dead entry too: a HELLO re-attaches it, its RESULTS still
     * count, its STATS say its last runs) */
    server_peer_t *p = server_find(s, m);
    if (spits_wire_parse(zmq_msg_data(m->msg), len, &m->h, &why) != 0) {
        io->rest(io->arg, NULL, m->msg, NULL, NULL);
        server_bad(s, why);
        server_bad_peer(s, p, why);
        return;
    }
    /* Only RESULTS may have parts. Nothing a peer sends stops the hop: a
     * message whose frames do not fit, or not in memory, is dropped and
     * its sender with it. */
    int rc = io->rest(io->arg, &m->h, m->msg, m->parts, &why);
    if (rc != 0) {
        why = rc == -2 ? "no memory for its parts" : why;
        server_bad(s, why);
        if (m->h.type != SPITS_MSG_RESULTS) {
            server_bad_peer(s, p, why);
            return;
        }
        m->unrun = 1;
    }
    s->st.bytes_in += spits_parts_bytes(m->parts);
    s->st.results_as_parts += m->parts->n;
    server_on_message(s, p, &m->h);
    server_route(s, p, m);
    /* (looked up again: a HELLO adds an entry; a loss in a handler may
     * evict one) */
    p = server_find(s, m);
    if (m->unrun)
        server_bad_peer(s, p, why);
    /* (a peer not alive says HELLO again) */
    if ((m->h.type == SPITS_MSG_RESULTS || m->h.type == SPITS_MSG_HEARTBEAT) &&
        (!p || !p->peer.alive))
        server_reply(s, p, m->rid, m->ridlen, SPITS_MSG_WHO);
    server_on_handled(s, p, fd, s->cfg.conngen ? conngen_of(s->cfg.conngen, fd) : 0);
}

void server_recv(server_t *s)
{
    const router_io_t *io = &s->cfg.io;
    const server_hop_t *hop = &s->cfg.hop;
    for (int i = 0; i < SERVE_RECV_BURST; i++) {
        zmq_msg_t rid, body;
        spits_parts_t parts = {0};
        server_rx_t rx = {&body, &parts, NULL};   /* (the server's, with no rx_new) */
        int more;
        zmq_msg_init(&rid);
        if (io->recv(io->arg, &rid, &more) != 0) {
            zmq_msg_close(&rid);
            return;
        }
        if (!more) {
            server_bad(s, "no body");
        } else if (hop->rx_new ? hop->rx_new(hop->arg, &rx) != 0 : (zmq_msg_init(&body), 0)) {
            io->rest(io->arg, NULL, &rid, NULL, NULL);   /* (its frames dropped) */
            zmq_msg_close(&rid);
            return;
        } else {
            if (io->recv(io->arg, rx.msg, &more) != 0) {
                server_bad(s, "no body");
            } else {
                server_msg_t m = {.rid = zmq_msg_data(&rid), .ridlen = zmq_msg_size(&rid),
                                  .msg = rx.msg, .parts = rx.parts, .hop = rx.hop};
                server_on_frames(s, &m);
            }
            if (hop->rx_done) {
                hop->rx_done(hop->arg, &rx);
            } else {
                spits_parts_free(rx.parts);
                zmq_msg_close(rx.msg);
            }
        }
        zmq_msg_close(&rid);
    }
}

int server_on_drain(server_peer_t *p)
{
    if (!p || !p->peer.alive || p->draining)
        return 0;
    p->draining = 1;
    return 1;
}

int server_on_stats(server_t *s, server_peer_t *p, const spits_stats_t *st, const char **why)
{
    long workers = st->workers, slots = st->slots;
    int planned = !p->proc.relay && workers >= 0 && slots >= 0;
    if (planned && !spits_tm_capacity_ok(workers, slots)) {
        *why = "STATS of a TM with no worker or slot, or over 4096 workers";
        return -1;
    }
    /* (the totals follow each process's last word: O(1), and what an
     * entry evicted or renewed said stays counted) */
    s->st.runs += (uint64_t)st->runs - p->proc.runs;
    s->st.busy_s += st->busy_s - p->proc.busy_s;
    p->proc.runs = (uint64_t)st->runs;
    p->proc.busy_s = st->busy_s;
    if (p->proc.relay && st->tms >= 0)
        p->proc.tms = st->tms;
    if (!p->peer.alive || !(planned || p->proc.relay))
        return 0;   /* (a dead one's capacity is its next HELLO's) */
    if (p->proc.relay)   /* (as much as its TMs can have: wire.h) */
        spits_relay_cap(p->proc.tms, &workers, &slots);
    credit_resize(&p->sched.credit, workers, slots);
    return 1;
}

void server_on_bye(server_t *s, server_peer_t *p, const void *msg, size_t len)
{
    const char *bad = NULL;
    json_t *body = NULL;
    if (!p->peer.alive)
        return;
    body = spits_wire_decode_json(msg, len, &bad);   /* (a bare header: NULL) */
    server_lose(s, p, json_string_value(json_object_get(body, "refused")), 1);
    json_decref(body);
}
