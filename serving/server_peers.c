/*
 * server_peers.c - a server's peers one by one (see server.h): a new or
 * joining entry, heard, due at the next serve, sent to (its marks: last
 * sent, stalled on a full pipe, gone with its connection; the job's
 * WELCOME and PHASE) and lost. The
 * serve loop (server.c) and the messages (server_recv.c) call these; its
 * self-test is server.c's.
 */
#include <assert.h>
#include <errno.h>

#include "log.h"
#include "loglimit.h"
#include "server_int.h"
#include "taskbatch.h"
#include "util.h"

/* --- peers ------------------------------------------------------------- */

void server_peer_init(server_peer_t *p)
{
    /* (the rest is zero: peertab_add's entries are) */
    p->sched.slot = p->peer.slot;
}

server_peer_t *server_peer_add(server_t *s, const void *rid, size_t ridlen, int *first)
{
    server_peer_t *p = peertab_add(s->cfg.tab, rid, ridlen);
    if (p)
        server_peer_init(p);
    *first = 1;
    return p;
}

void server_peer_join(server_t *s, server_peer_t *p)
{
    p->draining = p->stalled = p->gone = 0;
    p->live.last_heard = s->now;
}

void server_heard(server_t *s, server_peer_t *p)
{
    liveness_heard(&p->live, s->now);
    p->stalled = 0;
}

void server_due(server_t *s, server_peer_t *p)
{
    assert(!s->serving);
    if (p->due || s->all || !p->peer.alive)
        return;
    if (spits_grow((void **)&s->due, &s->capdue, s->ndue + 1, sizeof *s->due, 64) != 0) {
        s->all = 1;   /* (no memory for the list: walk them all) */
        return;
    }
    s->due[s->ndue++] = p->peer.slot;
    p->due = 1;
}

void server_due_all(server_t *s)
{
    s->all = 1;
}

int server_serve_due(const server_t *s)
{
    return s->all;
}

/* --- sending ------------------------------------------------------------ */

/* A send of len bytes to p ended with rc (io's): p's marks. */
static int server_sent(server_t *s, server_peer_t *p, int rc, size_t len)
{
    if (rc == 0) {
        p->live.last_sent = s->now;
        s->st.bytes_out += len;
        return 0;
    }
    if (errno == EHOSTUNREACH && !p->gone) {
        p->gone = 1;
        if (!s->gone)
            s->gone_at = s->now;
        s->gone = 1;
    } else if (errno == EAGAIN) {
        p->stalled = 1;
    }
    return -1;
}

int server_send(server_t *s, server_peer_t *p, const void *buf, size_t len, int more)
{
    return server_sent(s, p, s->cfg.io.send(s->cfg.io.arg, p->peer.rid, p->peer.ridlen, buf,
                                            len, more), len);
}

int server_send_buf(server_t *s, server_peer_t *p, spits_buf_t *b, int more)
{
    size_t len = b->len;
    return server_sent(s, p, s->cfg.io.send_buf(s->cfg.io.arg, p->peer.rid, p->peer.ridlen, b,
                                                more), len);
}

size_t server_send_tasks(server_t *s, server_peer_t *p, sched_task_t *const *tasks, size_t n)
{
    const server_cfg_t *c = &s->cfg;
    long parts = c->borrowed ? taskbatch_build(&s->tasks_out, s->wire, c->part_min, tasks, n, 1)
                             : taskbatch_build(&s->tasks_out, s->wire, c->part_min, tasks, n, 0);
    if (parts < 0) {
        if (loglimit_every(&s->oom_logged_at, s->now, 10000))
            spits_error("%sout of memory sending %zu task(s); they wait", c->rules.prefix, n);
        return 0;
    }
    if (server_send_buf(s, p, &s->tasks_out.buf, parts ? ZMQ_SNDMORE : 0) != 0)
        return 0;
    if (!parts)
        return n;
    taskbatch_parts_t how = {c->src.part_hold, c->src.part_free, c->src.arg, c->io.send_msg,
                             c->io.arg};
    taskbatch_sent_t sent;
    taskbatch_send_parts(&how, c->part_min, tasks, n, parts, c->borrowed, &sent);
    s->st.tasks_as_parts += sent.parts;
    s->st.part_bytes_out += sent.bytes;
    /* (its copies come back: a TM hands back each copy of a message whose
     * parts do not fit its records, RETURNED) */
    if (sent.failed)
        spits_error("%scould not send %zu task(s) as parts (out of memory); %s %s:%ld "
                    "hands that message's copies back, to run again", c->rules.prefix,
                    sent.failed, p->proc.relay ? "relay" : "TM", p->proc.host, p->proc.pid);
    return n;
}

void server_reply(server_t *s, server_peer_t *p, const void *rid, size_t ridlen, int type)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, s->wire);
    if (p && p->peer.alive)   /* (as any message to it: its marks) */
        server_send(s, p, hdr, sizeof hdr, 0);
    else if (s->cfg.io.send(s->cfg.io.arg, rid, ridlen, hdr, sizeof hdr, 0) == 0)
        s->st.bytes_out += sizeof hdr;
}

void server_bad(server_t *s, const char *why)
{
    s->st.bad++;
    if (loglimit_every(&s->bad_logged_at, s->now, 10000))
        spits_warn("%sdropped a malformed message (%s); %llu so far", s->cfg.rules.prefix,
                   why, (unsigned long long)s->st.bad);
    if (s->cfg.hop.bad)
        s->cfg.hop.bad(s->cfg.hop.arg, why);
}

/* --- the job: WELCOME and PHASE ---------------------------------------- */

void server_set_job(server_t *s, uint32_t wire, json_t *body)
{
    /* (those keys are each peer's: server_send_job) */
    assert(!json_object_get(body, "attach") && !json_object_get(body, "result_parts"));
    json_t *old = s->job;   /* (released after: body may be it) */
    s->job = json_incref(body);
    s->job_wire = wire;
    json_decref(old);
    json_int_t hb = json_integer_value(json_object_get(body, "heartbeat_ms"));
    json_int_t timeout = json_integer_value(json_object_get(body, "timeout_ms"));
    json_int_t copies = json_integer_value(json_object_get(body, "max_copies"));
    if (hb > 0)
        s->cfg.rules.hb_ms = hb;
    if (timeout > 0)
        s->cfg.rules.timeout_ms = timeout;
    if (copies >= 1 && copies <= SCHED_MAX_COPIES)
        sched_set_max_copies(s->cfg.sched, (int)copies);
}

const json_t *server_job(const server_t *s, uint32_t *wire)
{
    if (wire)
        *wire = s->job_wire;
    return s->job;
}

void server_send_job(server_t *s, server_peer_t *p, int type)
{
    spits_buf_t buf = {0};
    json_t *body = s->job ? json_copy(s->job) : NULL;
    int ok = body != NULL;
    if (ok && type == SPITS_MSG_WELCOME) {
        /* (the TM waits for the answer to its latest outage) */
        ok = json_object_set_new(body, "attach", json_integer(p->proc.attach)) == 0;
        /* (said with its own routing id: a hop of an earlier release that
         * passes this WELCOME on does not give it to its TMs; an id that
         * is not UTF-8 cannot be said, and its TM sends results inline) */
        if (ok && s->cfg.result_parts)
            json_object_set_new(body, "result_parts",
                                json_stringn((const char *)p->peer.rid, p->peer.ridlen));
    }
    if (ok && spits_wire_encode_json(&buf, type, s->job_wire, body) == 0)
        server_send(s, p, buf.data, buf.len, 0);
    else   /* (a TM without its WELCOME says HELLO again) */
        spits_error("%s%s for a %s message", s->cfg.rules.prefix,
                    s->job ? "out of memory" : "no job", spits_wire_type_name(type));
    json_decref(body);
    spits_buf_free(&buf);
}

/* --- losses ------------------------------------------------------------ */

void server_share(server_t *s, server_peer_t *p)
{
    int counts = p->peer.alive && !p->draining;
    server_share_t now = {0, 0, 0};
    if (counts)
        now = (server_share_t){p->sched.credit.workers, p->sched.credit.slots,
                               !p->proc.relay ? 1 : p->proc.tms > 0 ? p->proc.tms : 0};
    s->cap.workers += now.workers - p->share.workers;
    s->cap.slots += now.slots - p->share.slots;
    s->cap.tms += now.tms - p->share.tms;
    p->share = now;
}

const server_cap_t *server_capacity(const server_t *s)
{
    return &s->cap;
}

void server_leave(server_t *s, server_peer_t *p)
{
    peertab_set_alive(s->cfg.tab, p, 0);   /* (never fails going dead) */
    server_share(s, p);
}

void server_lose(server_t *s, server_peer_t *p, const char *why, int left)
{
    assert(!s->walking);
    p->gone = 0;
    if (!p->peer.alive)
        return;
    size_t n = sched_lost(s->cfg.sched, &p->sched);
    server_due_all(s);   /* (its copies run again on the others) */
    server_leave(s, p);
    if (left)
        s->st.leaves++;
    else
        s->st.losses++;
    s->cfg.hop.lost(s->cfg.hop.arg, p, why, left, n);
}
