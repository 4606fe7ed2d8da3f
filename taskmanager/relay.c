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
 *              so upstream; other records (a TM that joined holding work
 *              from elsewhere) go up flagged SPITS_REC_FOREIGN, which
 *              gives the JM no credit back
 *   CANCEL     upstream's cancels of copies a TM holds are passed on
 *   DRAIN, BYE, STATS, HEARTBEAT as a JM takes them
 *
 * Nothing here cannot be lost: the relay keeps, per copy, only which TM
 * holds it (copies, an idmap). A TM that goes silent for the job's
 * --tm-timeout, or whose connection is gone, is lost: its copies go back
 * upstream as RETURNED records at once, so the JM sends them again without
 * waiting for its own timeout; a result that TM sends later goes up as a
 * foreign record. A relay that dies costs its copies, which the JM re-sends
 * after --tm-timeout; its TMs fall back to their next hop (spits-tm --via)
 * with their results.
 *
 * The relay's capacity upstream is the sum of its TMs' workers and slots;
 * it changes as they come and go, and goes up in STATS (link.c asks
 * tm_relay_stats_due). STATS also carry who is behind the relay (a bounded
 * list and totals) for report.json and spits-status.
 *
 * Loops are refused: a relay's HELLO names it and the relays behind it
 * ("relay": {"id", "below"}); a relay that hears its own id from a TM
 * behind it is pointing at itself or at a relay behind it, and stops with
 * an error.
 *
 * Threads: all of it runs on spits-tm's main thread (tm_private.h); the
 * pool is reached through its own functions (tm.h). libzmq's I/O thread
 * only calls part_done, which drops a reference with an atomic.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "jobdir.h"
#include "keys.h"
#include "log.h"
#include "tm_private.h"
#include "util.h"
#include "zap.h"
#include "zmqutil.h"

#define RELAY_RID_MAX 64           /* routing ids longer than this are refused */
#define RELAY_RECV_BURST 1024      /* messages a turn, so tasks still go out */
#define RELAY_BATCH_MAX 1024       /* tasks in one TASKS message */
#define RELAY_TICK_MS 100          /* heartbeats and silence, checked this often */
#define RELAY_BEHIND_LISTED 64     /* TMs listed in STATS (the rest: counts) */
#define RELAY_BELOW_MAX 32         /* relay ids in a HELLO's "below" */
#define RELAY_HEARD_MS 10000       /* a relay's HELLO counts this long for loops */
#define RELAY_LOG_BURST 20         /* TM events logged per RELAY_LOG_MS, */
#define RELAY_LOG_MS 10000         /* ...then counted */

/* A TM behind this relay (or a relay behind it). */
typedef struct {
    unsigned char rid[RELAY_RID_MAX];
    size_t ridlen;
    char host[64];
    long pid;
    int workers, slots;
    int outstanding;             /* copies sent to it, not yet answered */
    long attach;                 /* the outage number it last said */
    int64_t last_heard, last_sent;
    int alive, draining;
    uint64_t runs;               /* from its STATS */
    double busy_s;
    char relay_id[40];           /* a relay: its id ("" for a TM) */
    char below[RELAY_BELOW_MAX][40];   /* ...and the relays behind it */
    int nbelow;
} rl_tm_t;

/* A relay's id heard in a HELLO, for loops (see note_heard). */
typedef struct {
    char id[40];
    int64_t at;
} rl_heard_t;

struct tm_relay {
    tm_t *tm;
    void *router;                /* the TMs behind us */
    spits_zap_t *zap;            /* NULL with --insecure */
    char endpoint[512];          /* where they reach us */
    rl_tm_t *tms;                /* a dead TM's entry is reused */
    size_t ntms, cap;
    spits_idmap_t *copies;       /* task id -> (TM index, tm_phase_t *) */
    json_t *up;                  /* the job's WELCOME/PHASE body, as upstream
                                    sent it (no attach); NULL before any */
    uint32_t up_phase;
    char up_job[64];
    int64_t hb_ms, timeout_ms;
    size_t rr;                   /* round-robin start of the next serve */
    int workers, slots;          /* sums over live TMs not draining */
    int cap_dirty;               /* ...changed since the last STATS */
    int64_t next_tick;
    uint64_t joins, reattaches, leaves, losses, foreign, bad;
    uint64_t runs_gone;          /* runs and busy time of TMs gone, so */
    double busy_gone;            /* ...the totals upstream never shrink */
    rl_heard_t heard[RELAY_BELOW_MAX];
    spits_batch_t out;           /* TASKS, CANCEL being built */
    spits_batch_t recb;          /* records for the outbox, of phase rec_ph */
    const tm_phase_t *rec_ph;
    size_t rec_done;             /* ...of which copies this relay held */
    tm_item_t items[RELAY_BATCH_MAX];
    int64_t log_window, bad_logged_at;
    unsigned log_n, log_dropped;
};

/* --- logging ------------------------------------------------------------ */

/* TM events: RELAY_LOG_BURST lines per window, then a count. */
static int relay_log_ok(tm_relay_t *r)
{
    int64_t now = r->tm->now;
    if (now - r->log_window >= RELAY_LOG_MS) {
        if (r->log_dropped)
            spits_info("relay: %u more TM event(s) not logged (joins %llu, "
                       "leaves %llu, losses %llu so far)", r->log_dropped,
                       (unsigned long long)r->joins, (unsigned long long)r->leaves,
                       (unsigned long long)r->losses);
        r->log_window = now;
        r->log_n = r->log_dropped = 0;
    }
    if (r->log_n < RELAY_LOG_BURST) {
        r->log_n++;
        return 1;
    }
    r->log_dropped++;
    return 0;
}

static void relay_bad(tm_relay_t *r, const char *why)
{
    r->bad++;
    if (!r->bad_logged_at || r->tm->now - r->bad_logged_at >= 10000) {
        spits_warn("relay: dropped a malformed message from a task manager "
                   "(%s); %llu so far", why, (unsigned long long)r->bad);
        r->bad_logged_at = r->tm->now;
    }
}

/* --- sending ------------------------------------------------------------ */

/* Sends one message (its first frame; more: parts follow) to t. 0, or -1
 * with errno (EHOSTUNREACH: its connection is gone). */
static int relay_send(tm_relay_t *r, rl_tm_t *t, const void *buf, size_t len,
                      int more)
{
    if (zmq_send(r->router, t->rid, t->ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    /* ROUTER takes every frame after the first it took; only a signal can
     * fail one, and it must then go, or the next message is glued to it. */
    int rc;
    while ((rc = zmq_send(r->router, buf, len, ZMQ_DONTWAIT | more)) < 0 &&
           errno == EINTR)
        ;
    if (rc >= 0)
        t->last_sent = r->tm->now;
    return rc < 0 ? -1 : 0;
}

static void relay_send_empty(tm_relay_t *r, rl_tm_t *t, int type)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, r->up_phase);
    relay_send(r, t, hdr, sizeof hdr, 0);
}

/* The job's WELCOME (with t's attach) or PHASE, as upstream sent it. */
static void relay_send_job(tm_relay_t *r, rl_tm_t *t, int type)
{
    spits_buf_t buf = {0};
    json_t *body = json_copy(r->up);
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "attach", json_integer(t->attach));
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
static void rec_flush(tm_relay_t *r)
{
    if (!r->rec_ph)
        return;
    tm_pool_remote_done(&r->tm->pool, r->rec_ph, r->recb.count ? &r->recb : NULL,
                        r->rec_done);
    spits_batch_free(&r->recb);
    r->rec_ph = NULL;
    r->rec_done = 0;
}

/* Adds a record of phase ph for upstream; held: it answers a copy this
 * relay took from the pool (counted running there). */
static void rec_add(tm_relay_t *r, const tm_phase_t *ph, uint64_t id,
                    uint32_t status, const void *data, uint32_t len, int held)
{
    if (ph != r->rec_ph) {
        rec_flush(r);
        r->rec_ph = ph;
        spits_batch_begin(&r->recb, SPITS_MSG_RESULTS, ph->wire);
    }
    unsigned char *dst = spits_batch_add(&r->recb, id, status, len);
    if (!dst) {
        /* Its copy then stays held upstream, and the pool must say so:
         * the TM stops and the JM sends its copies elsewhere. */
        tm_pool_fail(&r->tm->pool, "out of memory queueing results");
    } else if (len) {
        memcpy(dst, data, len);
    }
    r->rec_done += held != 0;
}

/* A copy t held goes back upstream unrun (idmap_take_owner's callback). */
static void return_copy(uint64_t id, void *val, void *arg)
{
    rec_add(arg, val, id, SPITS_ST_RETURNED, NULL, 0, 1);
}

/* --- the TM table ------------------------------------------------------- */

static rl_tm_t *relay_find(tm_relay_t *r, const void *rid, size_t ridlen)
{
    for (size_t i = 0; i < r->ntms; i++)
        if (r->tms[i].ridlen == ridlen && memcmp(r->tms[i].rid, rid, ridlen) == 0)
            return &r->tms[i];
    return NULL;
}

/* A new entry for rid: a dead one reused, or one more. NULL when out of
 * memory. */
static rl_tm_t *relay_add(tm_relay_t *r, const void *rid, size_t ridlen)
{
    rl_tm_t *t = NULL;
    for (size_t i = 0; i < r->ntms && !t; i++)
        if (!r->tms[i].alive)
            t = &r->tms[i];
    if (!t) {
        if (r->ntms == r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 16;
            rl_tm_t *grown = realloc(r->tms, cap * sizeof *grown);
            if (!grown)
                return NULL;
            r->tms = grown;
            r->cap = cap;
        }
        t = &r->tms[r->ntms++];
    }
    memset(t, 0, sizeof *t);
    memcpy(t->rid, rid, ridlen);
    t->ridlen = ridlen;
    t->attach = -1;
    return t;
}

/* The live TMs' workers and slots (a draining one takes nothing more). */
static void relay_capacity_update(tm_relay_t *r)
{
    int workers = 0, slots = 0;
    for (size_t i = 0; i < r->ntms; i++)
        if (r->tms[i].alive && !r->tms[i].draining) {
            workers += r->tms[i].workers;
            slots += r->tms[i].slots;
        }
    if (workers != r->workers || slots != r->slots)
        r->cap_dirty = 1;
    r->workers = workers;
    r->slots = slots;
}

/* t is gone (lost, or it left): what it held goes back upstream now. */
static void relay_drop(tm_relay_t *r, rl_tm_t *t, const char *why, int lost)
{
    if (!t->alive)
        return;
    size_t n = spits_idmap_take_owner(r->copies, (int)(t - r->tms), return_copy, r);
    rec_flush(r);
    t->alive = 0;
    t->outstanding = 0;
    r->runs_gone += t->runs;
    r->busy_gone += t->busy_s;
    if (lost)
        r->losses++;
    else
        r->leaves++;
    relay_capacity_update(r);
    if (relay_log_ok(r))
        spits_info("relay: TM %s:%ld %s; %zu task(s) handed back upstream",
                   t->host, t->pid, why, n);
}

/* --- loops -------------------------------------------------------------- */

static int relay_id_known(const tm_relay_t *r, const char *id)
{
    return strcmp(id, r->tm->link.routing_id) == 0;
}

/* A relay's HELLO: its id and the ids of the relays behind it. Ours among
 * them is a loop: the relay stops (tm->done -1), with the reason. */
static int relay_check_loop(tm_relay_t *r, json_t *relay, char below[][40],
                            int *nbelow)
{
    const char *id = json_string_value(json_object_get(relay, "id"));
    json_t *list = json_object_get(relay, "below");
    const char *ep = json_string_value(json_object_get(relay, "endpoint"));
    size_t i;
    json_t *v;

    *nbelow = 0;
    if (!id || strlen(id) >= 40)
        return -1;
    int loop = relay_id_known(r, id);
    json_array_foreach(list, i, v) {
        const char *b = json_string_value(v);
        if (!b || strlen(b) >= 40)
            continue;
        loop |= relay_id_known(r, b);
        if (*nbelow < RELAY_BELOW_MAX)
            snprintf(below[(*nbelow)++], 40, "%s", b);
    }
    if (loop) {
        if (strcmp(id, r->tm->link.routing_id) == 0)
            spits_error("relay loop: this relay's upstream (%s) is itself; "
                        "point it at the job manager or at another relay",
                        r->tm->link.endpoint);
        else
            spits_error("relay loop: the relay at %s (%s), behind this one, is "
                        "also upstream of it; a relay must not point at a "
                        "relay behind it", ep ? ep : "?", id);
        r->tm->done = -1;
        return 1;
    }
    /* Heard, for our own HELLOs (a loop of relays not yet welcomed is
     * found through these: nothing above them ever answers). */
    rl_heard_t *slot = &r->heard[0];
    for (int k = 0; k < RELAY_BELOW_MAX; k++) {
        if (strcmp(r->heard[k].id, id) == 0) {
            slot = &r->heard[k];
            break;
        }
        if (r->heard[k].at < slot->at)
            slot = &r->heard[k];
    }
    snprintf(slot->id, sizeof slot->id, "%s", id);
    slot->at = r->tm->now;
    return 0;
}

/* --- messages from TMs -------------------------------------------------- */

static int json_long(json_t *j, const char *key, long min, long max, long *out)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return -1;
    *out = (long)json_integer_value(v);
    return 0;
}

static void on_hello(tm_relay_t *r, rl_tm_t *t, const void *rid, size_t ridlen,
                     zmq_msg_t *msg)
{
    const char *why = NULL;
    long pid, workers, slots, held, pending = 0, attach = -1;
    char below[RELAY_BELOW_MAX][40];
    int nbelow = 0;
    json_t *j = spits_wire_decode_json(zmq_msg_data(msg), zmq_msg_size(msg), &why);
    const char *host = json_string_value(json_object_get(j, "host"));
    json_t *relay = json_object_get(j, "relay");

    if (!j || !host || json_long(j, "pid", 1, 1L << 40, &pid) ||
        json_long(j, "workers", 0, 1 << 20, &workers) ||
        json_long(j, "slots", 0, 1 << 24, &slots) ||
        json_long(j, "held", 0, 1 << 24, &held) ||
        (json_object_get(j, "pending") && json_long(j, "pending", 0, 1L << 40, &pending)) ||
        (json_object_get(j, "attach") && json_long(j, "attach", 0, LONG_MAX, &attach)) ||
        (relay && !json_is_object(relay))) {
        relay_bad(r, why ? why : "HELLO without host/pid/workers/slots/held");
        json_decref(j);
        return;
    }
    if (relay && relay_check_loop(r, relay, below, &nbelow) != 0) {
        if (!r->tm->done)
            relay_bad(r, "HELLO with a bad relay id");
        json_decref(j);
        return;
    }
    if (!r->up) {
        json_decref(j);   /* no job yet: it says HELLO again each second */
        return;
    }
    if (t && t->alive && t->pid == pid && attach >= 0 && attach <= t->attach) {
        relay_send_job(r, t, SPITS_MSG_WELCOME);   /* a queued copy */
        json_decref(j);
        return;
    }
    int first = !t;
    if (t && t->alive)
        relay_drop(r, t, "reconnected", 1);
    if (!t && !(t = relay_add(r, rid, ridlen))) {
        relay_bad(r, "out of memory adding a task manager");
        json_decref(j);
        return;
    }
    /* What a TM of another job holds is not this job's (as in the JM). */
    const char *its_job = json_string_value(json_object_get(j, "job_id"));
    if (its_job && strcmp(its_job, r->up_job) != 0)
        held = 0;
    snprintf(t->host, sizeof t->host, "%s", host);
    t->pid = pid;
    t->workers = (int)workers;
    t->slots = (int)slots;
    t->outstanding = (int)(held < slots ? held : slots);
    t->attach = attach;
    t->alive = 1;
    t->draining = 0;
    t->last_heard = r->tm->now;
    t->runs = 0;
    t->busy_s = 0;
    t->relay_id[0] = 0;
    t->nbelow = nbelow;
    memcpy(t->below, below, sizeof below);
    if (relay)
        snprintf(t->relay_id, sizeof t->relay_id, "%s",
                 json_string_value(json_object_get(relay, "id")));
    if (first)
        r->joins++;
    else
        r->reattaches++;
    relay_capacity_update(r);
    if (relay_log_ok(r))
        spits_info("relay: %s %s:%ld %s with %ld worker(s)",
                   relay ? "relay" : "TM", host, pid,
                   first ? "joined" : "re-attached", workers);
    relay_send_job(r, t, SPITS_MSG_WELCOME);
    json_decref(j);
}

/* The records of a RESULTS message: each of a copy t holds goes upstream
 * and frees its slot; any other goes up as foreign (see the header). */
static void on_results(tm_relay_t *r, rl_tm_t *t, const spits_hdr_t *h,
                       zmq_msg_t *msg)
{
    spits_reader_t reader;
    spits_rec_t rec;
    uint64_t credit = 0;
    int idx = t ? (int)(t - r->tms) : -1;
    const tm_phase_t *cur = r->tm->job.current;

    spits_reader_init(&reader, zmq_msg_data(msg), zmq_msg_size(msg));
    while (spits_reader_next(&reader, &rec)) {
        int owner;
        void *ph;
        credit += !rec.foreign;
        if (!rec.foreign && t && spits_idmap_get(r->copies, rec.id, &owner, &ph) &&
            owner == idx) {
            spits_idmap_del(r->copies, rec.id);
            rec_add(r, ph, rec.id, rec.status, rec.data, rec.len, 1);
            continue;
        }
        /* Not a copy it holds from us: work it did for another hop (or
         * for us before we counted it lost). A result may still be the
         * first; a copy handed back is nothing to anyone. */
        if (rec.status == SPITS_ST_RETURNED || !cur || h->phase != cur->wire)
            continue;
        rec_add(r, cur, rec.id, rec.status | SPITS_REC_FOREIGN, rec.data, rec.len, 0);
        r->foreign++;
    }
    rec_flush(r);
    if (t && t->alive)
        t->outstanding -= (int)(credit < (uint64_t)t->outstanding
                                    ? credit : (uint64_t)t->outstanding);
}

static void on_stats(tm_relay_t *r, rl_tm_t *t, zmq_msg_t *msg)
{
    const char *why = NULL;
    json_t *j = spits_wire_decode_json(zmq_msg_data(msg), zmq_msg_size(msg), &why);
    json_t *busy = json_object_get(j, "busy_s");
    long runs, workers, slots;

    if (!json_is_number(busy) || json_number_value(busy) < 0 ||
        json_number_value(busy) > 1e12 || json_long(j, "runs", 0, LONG_MAX, &runs)) {
        relay_bad(r, why ? why : "STATS without busy_s/runs");
    } else if (t && t->alive) {
        t->busy_s = json_number_value(busy);
        t->runs = (uint64_t)runs;
        /* A relay behind us: its capacity follows its TMs. */
        if (json_long(j, "workers", 0, 1 << 20, &workers) == 0 &&
            json_long(j, "slots", 0, 1 << 24, &slots) == 0) {
            t->workers = (int)workers;
            t->slots = (int)slots;
            relay_capacity_update(r);
        }
    }
    json_decref(j);
}

/* A peer we do not know (we lost it, or restarted): say HELLO. */
static void relay_send_who(tm_relay_t *r, const void *rid, size_t ridlen)
{
    unsigned char who[SPITS_HDR_SIZE];
    spits_wire_encode_empty(who, SPITS_MSG_WHO, r->up_phase);
    if (zmq_send(r->router, rid, ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) == 0)
        zmq_send(r->router, who, sizeof who, 0);
}

static void relay_on_message(tm_relay_t *r, zmq_msg_t *ridmsg, zmq_msg_t *msg)
{
    const void *rid = zmq_msg_data(ridmsg);
    size_t ridlen = zmq_msg_size(ridmsg);
    spits_hdr_t h;
    const char *why = NULL;

    if (ridlen == 0 || ridlen > RELAY_RID_MAX) {
        relay_bad(r, "a routing id of a bad size");
        return;
    }
    if (spits_wire_parse(zmq_msg_data(msg), zmq_msg_size(msg), &h, &why) != 0) {
        relay_bad(r, why);
        return;
    }
    if (h.parts) {
        relay_bad(r, "records of parts in a one-frame message");
        return;
    }
    rl_tm_t *t = relay_find(r, rid, ridlen);
    if (t && t->alive)
        t->last_heard = r->tm->now;
    switch (h.type) {
    case SPITS_MSG_HELLO:
        on_hello(r, t, rid, ridlen, msg);
        break;
    case SPITS_MSG_RESULTS:
        on_results(r, t && t->alive ? t : NULL, &h, msg);
        if (!t || !t->alive)
            relay_send_who(r, rid, ridlen);
        break;
    case SPITS_MSG_HEARTBEAT:
        if (!t || !t->alive)
            relay_send_who(r, rid, ridlen);
        break;
    case SPITS_MSG_STATS:
        on_stats(r, t, msg);
        break;
    case SPITS_MSG_DRAIN:
        if (t && t->alive && !t->draining) {
            t->draining = 1;
            relay_capacity_update(r);
            if (relay_log_ok(r))
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
        } else if (zmq_msg_more(&body)) {
            spits_zmq_drop_frames(r->router);   /* TMs send one frame */
            relay_bad(r, "a multipart message");
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
static void part_done(void *data, void *rx)
{
    (void)data;
    tm_rx_release(rx, 1);
}

/* Copies that did not go out go back upstream unrun. */
static void relay_unsent(tm_relay_t *r, const tm_item_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        spits_idmap_del(r->copies, items[i].id);
        rec_add(r, items[i].phase, items[i].id, SPITS_ST_RETURNED, NULL, 0, 1);
        tm_rx_release(items[i].rx, 1);
    }
    rec_flush(r);
}

/* Sends t n copies of one phase, as one TASKS message; their references
 * go with them (an inline copy's now, a part's when libzmq is done). */
static void relay_send_tasks(tm_relay_t *r, rl_tm_t *t, const tm_item_t *items,
                             size_t n)
{
    const tm_phase_t *ph = items[0].phase;
    int idx = (int)(t - r->tms);
    size_t parts = 0;

    int oom = 0;
    for (size_t k = 0; k < n && !oom; k++)
        oom = spits_idmap_put(r->copies, items[k].id, idx, (void *)ph) != 0;
    spits_batch_begin(&r->out, SPITS_MSG_TASKS, ph->wire);
    for (size_t k = 0; k < n && !oom; k++) {
        if (items[k].len >= SPITS_PART_MIN) {
            oom = spits_batch_add_part(&r->out, items[k].id, 0, items[k].len) != 0;
            parts += !oom;
            continue;
        }
        unsigned char *dst = spits_batch_add(&r->out, items[k].id, 0, items[k].len);
        if (dst && items[k].len)
            memcpy(dst, items[k].data, items[k].len);
        oom = !dst;
    }
    if (oom) {
        spits_error("relay: out of memory sending %zu task(s); handing them "
                    "back upstream", n);
        relay_unsent(r, items, n);
        return;
    }
    spits_batch_seal(&r->out);
    if (relay_send(r, t, r->out.buf.data, r->out.buf.len, parts ? ZMQ_SNDMORE : 0) != 0) {
        int gone = errno == EHOSTUNREACH;
        relay_unsent(r, items, n);
        if (gone)
            relay_drop(r, t, "disconnected", 1);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        if (items[k].len < SPITS_PART_MIN) {
            tm_rx_release(items[k].rx, 1);
            continue;
        }
        zmq_msg_t m;
        int flags = ZMQ_DONTWAIT | (--parts ? ZMQ_SNDMORE : 0), rc;
        /* (the part takes the item's reference with it) */
        if (zmq_msg_init_data(&m, (void *)items[k].data, items[k].len, part_done,
                              items[k].rx) != 0) {
            tm_rx_release(items[k].rx, 1);
            zmq_msg_init(&m);   /* an empty part: the TM drops the message */
        }
        while ((rc = zmq_msg_send(&m, r->router, flags)) < 0 && errno == EINTR)
            ;
        if (rc < 0)
            zmq_msg_close(&m);
    }
    t->outstanding += (int)n;
}

/* Each TM with room gets what the pool has, round robin. */
static void relay_serve(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    if (!r->up || !tm->pool_started || tm->drain.active || !r->ntms)
        return;
    for (size_t k = 0; k < r->ntms && !tm->done; k++) {
        rl_tm_t *t = &r->tms[(r->rr + k) % r->ntms];
        if (!t->alive || t->draining || t->outstanding >= t->slots)
            continue;
        size_t want = (size_t)(t->slots - t->outstanding);
        size_t n = tm_pool_take(&tm->pool, r->items,
                                want < RELAY_BATCH_MAX ? want : RELAY_BATCH_MAX);
        if (!n)
            break;
        /* One message per phase (a phase change leaves a few of the old). */
        size_t start = 0;
        for (size_t i = 1; i <= n; i++)
            if (i == n || r->items[i].phase != r->items[start].phase) {
                if (t->alive)
                    relay_send_tasks(r, t, r->items + start, i - start);
                else
                    relay_unsent(r, r->items + start, i - start);
                start = i;
            }
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
    for (size_t i = 0; i < r->ntms; i++) {
        rl_tm_t *t = &r->tms[i];
        if (!t->alive)
            continue;
        if (tm->now - t->last_heard > r->timeout_ms) {
            char why[64];
            snprintf(why, sizeof why, "lost (silent for %.0f s)",
                     (tm->now - t->last_heard) / 1000.0);
            relay_drop(r, t, why, 1);
        } else if (tm->now - t->last_sent >= r->hb_ms) {
            relay_send_empty(r, t, SPITS_MSG_HEARTBEAT);
        }
    }
}

void tm_relay_turn(tm_t *tm)
{
    tm_relay_t *r = tm->relay;
    if (r->zap)
        spits_zap_handle(r->zap, tm->now);
    relay_recv(r);
    relay_serve(r);
    relay_tick(r);
}

/* --- upstream ----------------------------------------------------------- */

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
    json_decref(r->up);
    r->up = copy;
    r->up_phase = phase;
    snprintf(r->up_job, sizeof r->up_job, "%s",
             json_string_value(json_object_get(copy, "job_id")));
    json_int_t hb = json_integer_value(json_object_get(copy, "heartbeat_ms"));
    json_int_t timeout = json_integer_value(json_object_get(copy, "timeout_ms"));
    r->hb_ms = hb > 0 ? hb : 1000;
    r->timeout_ms = timeout > 0 ? timeout : 10 * r->hb_ms;
    if (!phase_changed)
        return;
    for (size_t i = 0; i < r->ntms; i++)
        if (r->tms[i].alive)
            relay_send_job(r, &r->tms[i], SPITS_MSG_PHASE);
}

typedef struct {
    int owner;
    uint64_t id;
} rl_cancel_t;

static int by_owner(const void *a, const void *b)
{
    const rl_cancel_t *x = a, *y = b;
    return x->owner < y->owner ? -1 : x->owner > y->owner;
}

/* Sends each TM one CANCEL for its copies among c[0..m-1] (of phase ph),
 * which it sorts. */
static void relay_send_cancels(tm_relay_t *r, const tm_phase_t *ph,
                               rl_cancel_t *c, size_t m)
{
    qsort(c, m, sizeof *c, by_owner);
    for (size_t i = 0; i < m;) {
        size_t j = i;
        spits_batch_begin(&r->out, SPITS_MSG_CANCEL, ph->wire);
        for (; j < m && c[j].owner == c[i].owner; j++)
            spits_batch_add(&r->out, c[j].id, 0, 0);
        spits_batch_seal(&r->out);
        rl_tm_t *t = &r->tms[c[i].owner];
        if (t->alive && r->out.count)
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

static void gather_phase(uint64_t id, int owner, void *val, void *arg)
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
        spits_idmap_foreach(r->copies, gather_phase, &g);
        relay_send_cancels(r, ph, g.c, g.m);
    }
    free(g.c);
}

void tm_relay_capacity(const tm_relay_t *r, int *workers, int *slots)
{
    *workers = r->workers;
    *slots = r->slots;
}

json_t *tm_relay_hello_json(const tm_relay_t *r)
{
    json_t *below = json_array();
    size_t listed = 0;
    for (size_t i = 0; i < r->ntms && listed < RELAY_BELOW_MAX; i++) {
        const rl_tm_t *t = &r->tms[i];
        if (!t->alive || !t->relay_id[0])
            continue;
        json_array_append_new(below, json_string(t->relay_id));
        listed++;
        for (int k = 0; k < t->nbelow && listed < RELAY_BELOW_MAX; k++, listed++)
            json_array_append_new(below, json_string(t->below[k]));
    }
    for (int k = 0; k < RELAY_BELOW_MAX && listed < RELAY_BELOW_MAX; k++)
        if (r->heard[k].id[0] && r->tm->now - r->heard[k].at < RELAY_HEARD_MS) {
            json_array_append_new(below, json_string(r->heard[k].id));
            listed++;
        }
    return json_pack("{s:s, s:s, s:o}", "id", r->tm->link.routing_id,
                     "endpoint", r->endpoint, "below", below);
}

int tm_relay_stats_due(const tm_relay_t *r, int64_t since_last)
{
    return r->cap_dirty && since_last >= 50;
}

void tm_relay_stats(tm_relay_t *r, json_t *stats)
{
    uint64_t runs = r->runs_gone;
    double busy = r->busy_gone;
    size_t alive = 0;
    json_t *list = json_array();

    for (size_t i = 0; i < r->ntms; i++) {
        const rl_tm_t *t = &r->tms[i];
        if (!t->alive)
            continue;
        alive++;
        runs += t->runs;
        busy += t->busy_s;
        if (json_array_size(list) < RELAY_BEHIND_LISTED) {
            json_t *e = json_pack("{s:s, s:I, s:i, s:I}", "host", t->host,
                                  "pid", (json_int_t)t->pid, "workers", t->workers,
                                  "runs", (json_int_t)t->runs);
            if (e && t->relay_id[0])
                json_object_set_new(e, "relay", json_true());
            json_array_append_new(list, e);
        }
    }
    json_object_set_new(stats, "runs", json_integer((json_int_t)runs));
    json_object_set_new(stats, "busy_s", json_real(busy));
    json_object_set_new(stats, "workers", json_integer(r->workers));
    json_object_set_new(stats, "slots", json_integer(r->slots));
    json_object_set_new(stats, "behind",
                        json_pack("{s:I, s:I, s:I, s:I, s:o}",
                                  "alive", (json_int_t)alive,
                                  "joins", (json_int_t)r->joins,
                                  "leaves", (json_int_t)r->leaves,
                                  "losses", (json_int_t)r->losses, "tms", list));
    r->cap_dirty = 0;
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
    int server = 1;

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
    if (!(r->zap = spits_zap_new(tm->link.context, keys.client_public, err,
                                 sizeof err))) {
        spits_error("%s", err);
        return -1;
    }
    if (zmq_setsockopt(r->router, ZMQ_CURVE_SERVER, &server, sizeof server) != 0 ||
        zmq_setsockopt(r->router, ZMQ_CURVE_SECRETKEY, keys.server_secret,
                       strlen(keys.server_secret) + 1) != 0 ||
        zmq_setsockopt(r->router, ZMQ_ZAP_DOMAIN, "spits", 5) != 0) {
        spits_error("cannot set up CurveZMQ: %s", zmq_strerror(errno));
        return -1;
    }
    return 0;
}

tm_relay_t *tm_relay_new(tm_t *tm)
{
    tm_relay_t *r = calloc(1, sizeof *r);
    int one = 1, linger = 1000, hwm = 100000, backlog = 4096;
    int64_t maxmsg = 2 * tm->link.max_task + (16LL << 20);
    char bound[512];
    size_t blen = sizeof bound;

    if (!r || !(r->copies = spits_idmap_new())) {
        spits_error("relay: out of memory");
        free(r);
        return NULL;
    }
    r->tm = tm;
    r->hb_ms = 1000;
    r->timeout_ms = 10000;
    r->router = zmq_socket(tm->link.context, ZMQ_ROUTER);
    if (!r->router) {
        spits_error("cannot make a ZeroMQ socket: %s", zmq_strerror(errno));
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    /* As the JM's (dispatch.c): a send to a TM that is gone fails, and a
     * TM re-attaching under its routing id takes it over. */
    zmq_setsockopt(r->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(r->router, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(r->router, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(r->router, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(r->router, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(r->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(r->router, ZMQ_BACKLOG, &backlog, sizeof backlog);
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

void tm_relay_destroy(tm_relay_t **rp, int job_over)
{
    tm_relay_t *r = *rp;
    if (!r)
        return;
    /* The job is over: the TMs behind us are told so, as the JM would. */
    for (size_t i = 0; job_over && r->router && i < r->ntms; i++)
        if (r->tms[i].alive)
            relay_send_empty(r, &r->tms[i], SPITS_MSG_END);
    if (r->router)
        zmq_close(r->router);
    spits_zap_destroy(&r->zap);
    spits_idmap_destroy(&r->copies);
    json_decref(r->up);
    spits_batch_free(&r->out);
    spits_batch_free(&r->recb);
    free(r->tms);
    free(r);
    *rp = NULL;
}
