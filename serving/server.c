/*
 * server.c - the serving both hops do alike: the serve loop, the tick,
 * the reaping of peers gone, CANCELs, a new phase's PHASE and the job's
 * END (see server.h); a peer's marks, sends and loss are
 * server_peers.c's, what peers send server_recv.c's. It calls them, the
 * scheduler, credit, liveness and cancels.c below it, and its hop's
 * functions; nothing here knows which hop it serves. Its self-test
 * covers server_peers.c and server_recv.c too.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cancels.h"
#include "constants.h"
#include "credit.h"
#include "server.h"
#include "server_int.h"
#include "util.h"
#include "wire.h"
#include "zmqutil.h"

server_t *server_new(const server_cfg_t *cfg)
{
    const server_hop_t *h = &cfg->hop;
    const server_source_t *src = &cfg->src;
    assert(cfg->rules.tick_ms > 0);
    assert(cfg->tab && cfg->sched && cfg->probe);
    assert(cfg->io.send && cfg->io.send_buf && cfg->io.send_msg && cfg->io.rest &&
           cfg->io.pending && cfg->io.recv);
    assert(src->refill && src->part_hold && src->part_free && src->results);
    assert(h->lost && h->stopping && h->joined && h->accept && h->stats && h->drain &&
           !h->rx_new == !h->rx_done);
    server_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    return s;
}

void server_destroy(server_t **sp)
{
    server_t *s = *sp;
    if (!s)
        return;
    spits_batch_free(&s->out);
    spits_batch_free(&s->tasks_out);
    json_decref(s->job);
    free(s->due);
    free(s);
    *sp = NULL;
}

liveness_hop_t *server_rules(server_t *s)
{
    return &s->cfg.rules;
}

const server_stats_t *server_stats(const server_t *s)
{
    return &s->st;
}

void server_clock(server_t *s, int64_t now)
{
    s->now = now;
}

int64_t server_now(const server_t *s)
{
    return s->now;
}

void server_turn(server_t *s, int64_t now)
{
    if (s->turn_at)
        liveness_stall(&s->cfg.rules, s->turn_at, now);
    else
        s->next_tick = now + s->cfg.rules.tick_ms;
    s->turn_at = now;
    s->now = now;
}

void server_phase(server_t *s, uint32_t wire)
{
    s->wire = wire;
}

void server_probe_until(server_t *s, int64_t until)
{
    s->probe_until = until;
}

int server_probing(const server_t *s)
{
    return s->now < s->probe_until;
}

int server_tick_due(const server_t *s)
{
    assert(s->turn_at);   /* (the first turn starts the count) */
    return s->now >= s->next_tick || server_probing(s);
}

long server_sleep_ms(const server_t *s)
{
    assert(s->turn_at);
    int64_t left = s->next_tick - s->now;
    if (server_serve_due(s))
        return 0;
    if (server_probing(s) && left > SERVE_PROBE_POLL_MS)
        left = SERVE_PROBE_POLL_MS;
    return left > 0 ? (long)left : 0;
}

/* --- the serve loop ----------------------------------------------------- */

static int server_wants(server_t *s, const server_peer_t *p)
{
    return p->peer.alive && !p->draining && !p->stalled && !p->gone &&
           joins_settle_open(&p->settle, s->now) && !s->cfg.hop.stopping(s->cfg.hop.arg);
}

/* p gets what the scheduler picks, up to its room (workers_first: the
 * room its idle workers would start at once; credit.h), in TASKS of at
 * most SERVE_BATCH_TASKS copies. */
static void server_serve_peer(server_t *s, server_peer_t *p, int workers_first, int others)
{
    sched_t *sc = s->cfg.sched;
    const server_source_t *src = &s->cfg.src;
    while (server_wants(s, p)) {
        int room = workers_first ? credit_room_workers(&p->sched.credit)
                                 : credit_room(&p->sched.credit);
        if (room <= 0)
            return;
        size_t want = (size_t)room < SERVE_BATCH_TASKS ? (size_t)room : SERVE_BATCH_TASKS;
        if (!s->dry && !sched_has_fresh(sc) && src->refill(src->arg, want) == 0)
            s->dry = 1;
        size_t n = sched_pick(sc, &p->sched, want, SERVE_BATCH_BYTES, others);
        if (n) {
            size_t sent = server_send_tasks(s, p, sched_picked(sc), n);
            sched_sent_part(sc, &p->sched, sent);
            if (sent < n)
                return;
        }
        if (n < want) {
            /* (work or bytes ran out with room left: more may come) */
            if (!workers_first)
                s->starved = 1;
            return;
        }
    }
}

/* The k-th peer of this serve: the due list's, or the live set's from
 * the round-robin start. NULL: its slot is empty now. */
static server_peer_t *server_nth(server_t *s, int all, size_t k, size_t nlive)
{
    if (all)
        return peertab_live_at(s->cfg.tab, (s->rr + k) % nlive);
    return peertab_at(s->cfg.tab, (size_t)s->due[k]);
}

/* A peer gets tasks only when it has room, and room only comes from what
 * it says (results, HELLO, STATS, speaking after a stall: server_due),
 * from time (settling, late copies), or from work that appears (fresh
 * tasks, copies to run again) while a peer was left with room. So a
 * serve looks at the peers due, and walks every live peer only when the
 * rest may have changed (server_due_all: each tick, a peer lost, a
 * phase): walking them all each turn would cost a share of the hop's CPU
 * that grows with the peers. First each gets up to its idle workers,
 * then its prefetch: filling one's prefetch while another's workers wait
 * would queue there tasks the idle one could run. No peer leaves the
 * live set during a serve: a failed send only marks it (server_reap). */
void server_serve(server_t *s)
{
    sched_t *sc = s->cfg.sched;
    const server_source_t *src = &s->cfg.src;
    s->dry = 0;
    sched_clock(sc, s->now);
    if (s->starved && !s->all) {
        if (!sched_has_fresh(sc) && src->refill(src->arg, SERVE_BATCH_TASKS) == 0)
            s->dry = 1;
        if (sched_has_fresh(sc) || sched_has_retries(sc))
            s->all = 1;
    }
    int all = s->all;
    s->all = 0;          /* (set again during the serve: the next walks all) */
    if (all)
        s->starved = 0;   /* (said again below if so) */
    size_t nlive = peertab_live_count(s->cfg.tab);
    size_t n = all ? nlive : s->ndue;
    int others = nlive > 1;
    s->serving = 1;
    for (int pass = 0; pass < 2 && n; pass++)
        for (size_t k = 0; k < n; k++) {
            server_peer_t *p = server_nth(s, all, k, nlive);
            if (p)
                server_serve_peer(s, p, pass == 0, others);
        }
    s->serving = 0;
    for (size_t k = 0; k < s->ndue; k++) {
        server_peer_t *p = peertab_at(s->cfg.tab, (size_t)s->due[k]);
        if (p)
            p->due = 0;
    }
    s->ndue = 0;
    if (all)
        s->rr++;
}

/* --- the tick and reaping ---------------------------------------------- */

/* (sched_quiet's judge) The peer in slot is alive and quiet. */
static int server_quiet(void *arg, int slot)
{
    server_t *s = arg;
    server_peer_t *p = peertab_at(s->cfg.tab, (size_t)slot);
    return p && p->peer.alive &&
           liveness_quiet(&s->cfg.rules, &p->live, s->now, s->cfg.probe, s->cfg.probe_arg);
}

void server_tick(server_t *s)
{
    unsigned char hb[SPITS_HDR_SIZE];
    int probing = server_probing(s);
    s->next_tick = s->now + s->cfg.rules.tick_ms;
    spits_wire_encode_empty(hb, SPITS_MSG_HEARTBEAT, s->wire);
    /* (from the end: a peer lost leaves the live set, the last taking
     * its place) */
    for (size_t i = peertab_live_count(s->cfg.tab); i-- > 0;) {
        server_peer_t *p = peertab_live_at(s->cfg.tab, i);
        int v = liveness_judge(&s->cfg.rules, &p->live, s->now, probing, s->cfg.probe,
                               s->cfg.probe_arg, p->proc.host, p->proc.pid);
        if (v == LIVENESS_LOST) {
            char why[64];
            snprintf(why, sizeof why, "silent for %.1f s",
                     (double)(s->now - p->live.last_heard) / 1000.0);
            server_lose(s, p, why, 0);
        } else if (v == LIVENESS_HEARTBEAT && !p->gone &&
                   server_send(s, p, hb, sizeof hb, 0) == 0) {
            s->st.heartbeats++;
        }
    }
    /* (what only quiet peers hold is stalled, not running: scheduler.h) */
    sched_quiet(s->cfg.sched, server_quiet, s);
    /* (time passed: settling ends, copies become late) */
    server_due_all(s);
}

void server_reap(server_t *s, int force)
{
    const router_io_t *io = &s->cfg.io;
    if (!s->gone)
        return;
    /* A drained TM sent its last RESULTS, STATS and BYE and closed: a
     * send may find its connection gone before they are read. So they
     * are read first, for SERVE_REAP_WAIT_MS at most, and it leaves
     * instead of being lost. */
    if (!force && s->now - s->gone_at < SERVE_REAP_WAIT_MS && io->pending(io->arg))
        return;
    s->gone = 0;
    for (size_t i = peertab_live_count(s->cfg.tab); i-- > 0;) {
        server_peer_t *p = peertab_live_at(s->cfg.tab, i);
        if (p->gone)
            server_lose(s, p, "disconnected", 0);
    }
}

/* --- a new phase -------------------------------------------------------- */

void server_send_phase(server_t *s)
{
    for (size_t i = peertab_live_count(s->cfg.tab); i-- > 0;) {
        server_peer_t *p = peertab_live_at(s->cfg.tab, i);
        if (!p->gone)   /* (lost at the next reap: its send would fail) */
            server_send_job(s, p, SPITS_MSG_PHASE);
    }
}

/* --- the job's end ------------------------------------------------------ */

static const void *server_end_rid(void *arg, size_t k, size_t *ridlen)
{
    const server_end_t *e = arg;
    const server_peer_t *p = peertab_live_at(e->s->cfg.tab, k);
    *ridlen = p->peer.ridlen;
    return p->peer.rid;
}

static int server_end_bye(void *arg, const void *rid, size_t ridlen)
{
    const server_end_t *e = arg;
    server_peer_t *p = peertab_find(e->s->cfg.tab, rid, ridlen);
    if (!p || !p->peer.alive || p->ended)
        return 0;
    p->ended = 1;
    if (e->bye)
        e->bye(e->arg, p);
    return 1;
}

static void server_end_stats(void *arg, const void *rid, size_t ridlen, zmq_msg_t *body)
{
    const server_end_t *e = arg;
    server_peer_t *p = peertab_find(e->s->cfg.tab, rid, ridlen);
    if (p && p->peer.alive && !p->ended)
        e->stats(e->arg, p, body);
}

router_peers_t server_end_peers(const server_end_t *e)
{
    router_peers_t r = {peertab_live_count(e->s->cfg.tab), server_end_rid, server_end_bye,
                        (void *)e, e->stats ? server_end_stats : NULL};
    return r;
}

/* --- cancels ------------------------------------------------------------ */

static int server_cancel_send(void *arg, int slot, const void *buf, size_t len)
{
    server_t *s = arg;
    server_peer_t *p = peertab_at(s->cfg.tab, (size_t)slot);
    return p && p->peer.alive ? server_send(s, p, buf, len, 0) : -1;
}

size_t server_cancels(server_t *s, uint32_t wire, sched_cancel_t *c, size_t n, int by_hash)
{
    cancels_sink_t sink = {server_cancel_send, s, by_hash};
    return n ? cancels_send(c, n, wire, &s->out, &sink) : 0;
}

size_t server_cancel_held(server_t *s, uint32_t wire, int by_hash)
{
    size_t named = 0;
    /* (from the end: a loop that may lose peers must, peertab.h) */
    for (size_t i = peertab_live_count(s->cfg.tab); i-- > 0;) {
        server_peer_t *p = peertab_live_at(s->cfg.tab, i);
        size_t n;
        sched_task_t *const *held = sched_held(s->cfg.sched, &p->sched, &n);
        sched_cancel_t *c = n ? malloc(n * sizeof *c) : NULL;
        if (!c)
            continue;   /* (none; or no memory: its copies run on) */
        for (size_t k = 0; k < n; k++)
            c[k] = (sched_cancel_t){p->peer.slot, held[k]->id, held[k]->hash};
        named += server_cancels(s, wire, c, n, by_hash);
        free(c);
    }
    return named;
}

#ifdef SPITS_SELFTEST
#include <string.h>

#include "scheduler_int.h"   /* (the quiet copies the tick sets) */

/* A hop of up to 4 peers (slots 0..3), 2 workers each, whose sends are
 * noted: TASKS in a log ("slot:n " each), the last message's bytes and
 * flags; a peer's send fails as its fail says, once. Its source has
 * avail tasks, and moves want at a time. */
#define ST_PEERS 4

typedef struct {
    server_t *s;
    sched_t *sc;
    peertab_t *tab;
    sched_stats_t st;
    server_peer_t *p[ST_PEERS];
    uint64_t next_id, avail;
    int refills;
    int fail[ST_PEERS];          /* errno of a peer's next send (once) */
    char log[256];
    uint64_t last_id;            /* the first copy of the last TASKS */
    uint32_t big_len;            /* refill's tasks: 1 byte, those of ids
                                    in big_ids (bits 0-63) this many */
    uint64_t big_ids;
    int bad_bytes;               /* records or parts not their task's bytes */
    int parts_held, parts_freed, parts_sent, part_more;
    uint64_t part_ids[8];        /* the last TASKS' part records */
    int nparts, next_part;
    uint32_t tasks_phase;        /* the last TASKS' */
    uint64_t part_bytes;
    int part_fail;               /* send_msg fails this many times */
    unsigned char last[SPITS_HDR_SIZE];  /* the last short message */
    int last_more;
    int lost_slot;               /* the last lost */
    size_t lost_n;               /* ...its copies to run again */
    char lost[128];              /* "slot why; " of each lost */
    int pending, stopping;
    int64_t rec_start;           /* sched_recorded of the last result */
    long pid[ST_PEERS];          /* each peer's process, as joined saw it */
    int add_first;               /* what add says of a new entry; -1: none */
    char joins[128];             /* "slot first|again[ renewed]; " of each */
    int welcomes[ST_PEERS];
    char phases[32];             /* "slot " of each PHASE */
    json_t *job_sent;            /* the last WELCOME's or PHASE's body */
    uint32_t job_sent_phase;     /* ...and its phase */
    char msgs[256];              /* what the message handlers were given */
    int rest_rc;                 /* what rest returns... */
    size_t rest_parts;           /* ...and how many empty parts it adds
                                    to a RESULTS */
    int rest_drops;              /* rest calls that dropped frames */
    int hello_joins;             /* accept says 1 (else 0: not now)... */
    int hello_bad;               /* ...or -1 */
    int stats_bad;               /* stats_check says -1 */
    json_t *stats_parsed;        /* what stats_check parses (NULL: none) */
    int sink_drop;               /* st_results drops the records */
    char sink[256];              /* what st_results was given */
    const char *in[8];           /* frames server_recv reads: a routing id,
                                    or, after it, "DRAIN" (a DRAIN); each
                                    but the last of a message ends in '+' */
    int nin, next_in;
    int in_more;                 /* the last frame read had more after it */
    int hb_left;                 /* then HEARTBEATs from "a", this many */
    int rx_fail;                 /* rx_new says out of memory */
    int rx_news, rx_dones;
    int frames_made, frames_freed;   /* (server_recv closes each it read) */
    spits_batch_t in_batch;      /* (st_recv's "PARTS") */
    zmq_msg_t rx_msg;
    spits_parts_t rx_parts;
} st_hop_t;

static void st_reply(st_hop_t *h, const void *rid, size_t ridlen, int type);
static void st_sent_tasks(st_hop_t *h, server_peer_t *p, const spits_hdr_t *hd,
                          const void *buf, size_t len);

/* (cfg.io.send) An empty WHO or DRAIN to a routing id with no live entry
 * is a reply (st_reply); anything else goes to a live peer. */
static int st_send(void *arg, const void *rid, size_t ridlen, const void *buf, size_t len,
                   int more)
{
    st_hop_t *h = arg;
    server_peer_t *p = peertab_find(h->tab, rid, ridlen);
    spits_hdr_t hd;
    const char *why;
    if ((!p || !p->peer.alive) && spits_wire_parse(buf, len, &hd, &why) == 0 &&
        (hd.type == SPITS_MSG_WHO || hd.type == SPITS_MSG_DRAIN)) {
        st_reply(h, rid, ridlen, more ? -1 : hd.type);   /* (a reply is one frame) */
        return 0;
    }
    assert(p && p->peer.alive);
    if (h->fail[p->peer.slot]) {
        errno = h->fail[p->peer.slot];
        h->fail[p->peer.slot] = 0;
        return -1;
    }
    if (spits_wire_parse(buf, len, &hd, &why) == 0 && hd.type == SPITS_MSG_TASKS)
        st_sent_tasks(h, p, &hd, buf, len);
    if (spits_wire_parse(buf, len, &hd, &why) == 0 &&
        (hd.type == SPITS_MSG_WELCOME || hd.type == SPITS_MSG_PHASE)) {
        size_t at = strlen(h->phases);
        if (hd.type == SPITS_MSG_WELCOME)
            h->welcomes[p->peer.slot]++;
        else
            snprintf(h->phases + at, sizeof h->phases - at, "%d ", p->peer.slot);
        json_decref(h->job_sent);
        h->job_sent = spits_wire_decode_json(buf, len, &why);
        h->job_sent_phase = hd.phase;
    }
    if (len <= sizeof h->last)
        memcpy(h->last, buf, len);
    h->last_more = more;
    return 0;
}

/* (cfg.io.send_buf) As st_send; what went is gone from b, as when the
 * bytes move into libzmq, so no caller may read them after. */
static int st_send_buf(void *arg, const void *rid, size_t ridlen, spits_buf_t *b, int more)
{
    int rc = st_send(arg, rid, ridlen, b->data, b->len, more);
    if (rc == 0) {
        memset(b->data, 0xee, b->len);
        b->len = 0;
    }
    return rc;
}

/* The worlds' tasks: go as parts from this many bytes (cfg.part_min),
 * and are borrowed (cfg.borrowed: by hash 1000 + id, their bytes those of
 * st_bytes from id % 8 on). */
static uint64_t st_part_min = UINT64_MAX;
static int st_borrowed;
static const char st_bytes[] = "0123456789abcdef";

/* Byte k of task id (an own task's). */
static unsigned char st_byte(uint64_t id, size_t k)
{
    return (unsigned char)('a' + (id + k) % 26);
}

/* Whether len bytes at data are those of the task that went by id. */
static int st_bytes_are(uint64_t id, const unsigned char *data, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (data[k] != (st_borrowed ? (unsigned char)st_bytes[(id - 1000) % 8 + k]
                                    : st_byte(id, k)))
            return 0;
    return 1;
}

static size_t st_refill(void *arg, size_t want)
{
    st_hop_t *h = arg;
    size_t n = 0;
    sched_task_t *head = NULL, *tail = NULL;
    h->refills++;
    for (; n < want && h->avail; n++, h->avail--) {
        uint32_t len = h->next_id < 64 && h->big_ids >> h->next_id & 1 ? h->big_len : 1;
        sched_task_t *t = calloc(1, sizeof *t + (st_borrowed ? sizeof(void *) : len));
        if (!t)
            break;
        t->id = h->next_id++;
        t->len = len;
        if (st_borrowed) {
            const char *bytes = st_bytes + t->id % 8;
            t->hash = 1000 + t->id;
            memcpy(t->data, &bytes, sizeof bytes);
        }
        for (size_t k = 0; !st_borrowed && k < len; k++)
            t->data[k] = st_byte(t->id, k);
        sched_task_init(t);
        if (tail)
            tail->next = t;
        else
            head = t;
        tail = t;
    }
    if (head)
        sched_add_fresh(h->sc, head, tail);
    sched_gen_state(h->sc, 0, !h->avail);
    return n;
}

/* A TASKS p was sent: "slot:n " logged, its first id kept, and its
 * inline records checked. */
static void st_sent_tasks(st_hop_t *h, server_peer_t *p, const spits_hdr_t *hd,
                          const void *buf, size_t len)
{
    char one[24];
    spits_reader_t r;
    spits_rec_t rec;
    size_t n = 0;
    spits_reader_init(&r, buf, len);
    h->tasks_phase = hd->phase;
    h->nparts = h->next_part = 0;
    while (spits_reader_next(&r, &rec)) {
        if (!n++)
            h->last_id = rec.id;
        if (rec.part && h->nparts < 8)
            h->part_ids[h->nparts++] = rec.id;
        h->bad_bytes += !rec.part && !st_bytes_are(rec.id, rec.data, rec.len);
    }
    snprintf(one, sizeof one, "%d:%zu ", p->peer.slot, n);
    strncat(h->log, one, sizeof h->log - strlen(h->log) - 1);
}

static void *st_part_hold(void *arg, sched_task_t *task)
{
    st_hop_t *h = arg;
    (void)task;
    h->parts_held++;
    return h;
}

static void st_part_free(void *data, void *hint)
{
    (void)data;
    ((st_hop_t *)hint)->parts_freed++;
}

/* (cfg.io.send_msg) A part: checked against the next part record of
 * the last TASKS, and closed, as libzmq would once it went. */
static int st_send_msg(void *arg, zmq_msg_t *m, int more)
{
    st_hop_t *h = arg;
    if (h->part_fail > 0) {
        h->part_fail--;
        h->next_part++;
        return -1;
    }
    h->parts_sent++;
    h->part_more += more != 0;
    h->part_bytes += zmq_msg_size(m);
    h->bad_bytes += h->next_part == h->nparts ||
                    !st_bytes_are(h->part_ids[h->next_part++], zmq_msg_data(m), zmq_msg_size(m));
    zmq_msg_close(m);
    zmq_msg_init(m);
    return 0;
}

static void st_lost(void *arg, server_peer_t *p, const char *why, int left, size_t n)
{
    st_hop_t *h = arg;
    assert(!p->peer.alive && p->share.workers == 0);
    h->lost_n = n;
    size_t at = strlen(h->lost);
    h->lost_slot = p->peer.slot;
    snprintf(h->lost + at, sizeof h->lost - at, "%d %s%s; ", p->peer.slot,
             left ? "left " : "", why ? why : "-");
}

static int st_pending(void *arg)
{
    return ((st_hop_t *)arg)->pending;
}

static void st_frame_free(void *data, void *hint)
{
    free(data);
    ((st_hop_t *)hint)->frames_freed++;
}

/* (cfg.io.recv) The frames of in, then hb_left HEARTBEATs. */
static int st_recv(void *arg, zmq_msg_t *frame, int *more)
{
    st_hop_t *h = arg;
    unsigned char hdr[SPITS_HDR_SIZE];
    const char *f;
    size_t len;
    if (h->next_in < h->nin) {
        f = h->in[h->next_in++];
        len = strlen(f);
        *more = len && f[len - 1] == '+';
        len -= *more;
        if (!strncmp(f, "DRAIN", 5)) {
            spits_wire_encode_empty(hdr, SPITS_MSG_DRAIN, 0);
            f = (const char *)hdr;
            len = sizeof hdr;
        } else if (!strncmp(f, "PARTS", 5)) {   /* (RESULTS of ids 90 and 91, as
                                                  parts of 3 and 4 bytes) */
            spits_batch_begin(&h->in_batch, SPITS_MSG_RESULTS, 0);
            spits_batch_add_part(&h->in_batch, 90, SPITS_ST_OK, 3);
            spits_batch_add_part(&h->in_batch, 91, SPITS_ST_OK, 4);
            spits_batch_seal(&h->in_batch);
            f = (const char *)h->in_batch.buf.data;
            len = h->in_batch.buf.len;
        }
    } else if (h->hb_left > 0) {
        *more = h->hb_left > 0 && (h->next_in++ - h->nin) % 2 == 0;
        h->hb_left -= !*more;
        spits_wire_encode_empty(hdr, SPITS_MSG_HEARTBEAT, 0);
        f = *more ? "a" : (const char *)hdr;
        len = *more ? 1 : sizeof hdr;
    } else {
        return -1;
    }
    void *copy = malloc(len ? len : 1);
    assert(copy);
    memcpy(copy, f, len);
    zmq_msg_close(frame);
    zmq_msg_init_data(frame, copy, len, st_frame_free, h);
    h->frames_made++;
    h->in_more = *more;
    return 0;
}

static int st_rx_new(void *arg, server_rx_t *rx)
{
    st_hop_t *h = arg;
    if (h->rx_fail)
        return -1;
    zmq_msg_init(&h->rx_msg);
    memset(&h->rx_parts, 0, sizeof h->rx_parts);
    *rx = (server_rx_t){&h->rx_msg, &h->rx_parts, h};
    h->rx_news++;
    return 0;
}

static void st_rx_done(void *arg, server_rx_t *rx)
{
    st_hop_t *h = arg;
    assert(rx->msg == &h->rx_msg && rx->hop == h);
    spits_parts_free(rx->parts);
    zmq_msg_close(rx->msg);
    h->rx_dones++;
}

static int st_stopping(void *arg)
{
    return ((st_hop_t *)arg)->stopping;
}

static server_peer_t *st_add(void *arg, const void *rid, size_t len, int *first)
{
    st_hop_t *h = arg;
    server_peer_t *p = h->add_first < 0 ? NULL : peertab_add(h->tab, rid, len);
    if (p) {
        server_peer_init(p);
        *first = h->add_first;
    }
    return p;
}

static void st_joined(void *arg, server_peer_t *p, const server_join_t *j)
{
    st_hop_t *h = arg;
    size_t at = strlen(h->joins);
    h->pid[p->peer.slot] = p->proc.pid;   /* (the server's, set before) */
    snprintf(h->joins + at, sizeof h->joins - at, "%d %s%s; ", p->peer.slot,
             j->first ? "first" : "again", j->renewed ? " renewed" : "");
}

/* The message handlers note "what slot" in msgs (slot -1: none; a
 * trailing d: a dead entry; u: unrun). */
static void st_note(st_hop_t *h, const char *what, const server_peer_t *p, const char *more)
{
    size_t at = strlen(h->msgs);
    snprintf(h->msgs + at, sizeof h->msgs - at, "%s %d%s%s; ", what, p ? p->peer.slot : -1,
             p && !p->peer.alive ? "d" : "", more);
}

static int st_rest(void *arg, const spits_hdr_t *hd, zmq_msg_t *first, spits_parts_t *parts,
                   const char **why)
{
    st_hop_t *h = arg;
    (void)first;
    if (!hd) {   /* (as router_rest: the frames left of its message) */
        zmq_msg_t rest;
        zmq_msg_init(&rest);
        for (int more = h->in_more; more && st_recv(h, &rest, &more) == 0;)
            ;
        zmq_msg_close(&rest);
        h->rest_drops++;
        return 0;
    }
    /* (told apart by their sizes and bytes: 3 'a's, 4 'b's...) */
    for (size_t i = 0; !h->rest_rc && hd->type == SPITS_MSG_RESULTS && i < h->rest_parts; i++) {
        zmq_msg_t m;
        unsigned char *b = malloc(3 + i);
        assert(b);
        memset(b, 'a' + (int)i, 3 + i);
        zmq_msg_init_data(&m, b, 3 + i, st_frame_free, h);   /* (counted as frames) */
        h->frames_made++;
        if (spits_parts_add(parts, &m) != 0)
            zmq_msg_close(&m);
    }
    if (parts && parts->n && (parts->view = calloc(parts->n, sizeof *parts->view)))
        for (size_t i = 0; i < parts->n; i++)
            parts->view[i] = (spits_part_t){zmq_msg_data(&parts->msgs[i]),
                                            zmq_msg_size(&parts->msgs[i])};
    *why = "parts that do not fit";
    return h->rest_rc;
}

static void st_bad(void *arg, const char *why)
{
    st_hop_t *h = arg;
    size_t at = strlen(h->msgs);
    snprintf(h->msgs + at, sizeof h->msgs - at, "bad %s; ", why);
}

static int st_accept(void *arg, server_peer_t *p, const spits_hello_t *hi, void **ctx,
                     const char **why)
{
    st_hop_t *h = arg;
    char pid[24];
    snprintf(pid, sizeof pid, " pid %ld", hi->pid);
    st_note(h, "hello", p, pid);
    *ctx = NULL;
    *why = "not accepted";
    return h->hello_bad ? -1 : h->hello_joins;
}

/* RESULTS: "results" in msgs; unless drop, each record to sink, as
 * "OUTCOME:ID:HASH:PART " (c commit, p poison, r retry, u unknown, t
 * returned; x a record the hop keeps: ids 90 to 99; PART: the frame's
 * size and first byte, or -), then "end"; an id of 1000 or more is the
 * task 1000 less. */
static void st_results(void *arg, server_peer_t *p, server_recs_t *it)
{
    st_hop_t *h = arg;
    st_note(h, "results", p, it->m->unrun ? "u" : "");
    if (h->sink_drop)
        return;
    while (server_recs_next(it)) {
        const spits_rec_t *rec = &it->rec;
        char size[24] = "-", what = 'x';
        uint64_t hash = 0;
        if (it->frame)   /* (and its bytes, as the record's data) */
            snprintf(size, sizeof size, "%zu%c", zmq_msg_size(it->frame),
                     rec->data ? rec->data[0] : '?');
        if (rec->id < 90 || rec->id > 99) {
            sched_outcome_t o = server_recs_record(it, rec->id >= 1000 ? rec->id - 1000 :
                                                   rec->id, &hash);
            what = o == SCHED_REC_COMMIT ? 'c' : o == SCHED_REC_POISON ? 'p' :
                   o == SCHED_REC_RETRY ? 'r' : o == SCHED_REC_UNKNOWN ? 'u' :
                   o == SCHED_REC_RETURNED ? 't' : '?';
        }
        size_t at = strlen(h->sink);
        snprintf(h->sink + at, sizeof h->sink - at, "%c:%llu:%llu:%s ", what,
                 (unsigned long long)rec->id, (unsigned long long)hash, size);
    }
    strncat(h->sink, "end", sizeof h->sink - strlen(h->sink) - 1);
}

static int st_stats_check(void *arg, server_peer_t *p, json_t *body, spits_stats_t *st,
                          json_t **parsed, const char **why)
{
    st_hop_t *h = arg;
    (void)body, (void)st;
    st_note(h, "check", p, "");
    *why = "not checked";
    if (h->stats_parsed)   /* (refused or not: the server releases it) */
        *parsed = json_incref(h->stats_parsed);
    return h->stats_bad ? -1 : 0;
}

static void st_stats_msg(void *arg, server_peer_t *p, json_t *body, const spits_stats_t *st,
                         json_t *parsed, int changed, int before)
{
    st_hop_t *h = arg;
    char more[80];
    snprintf(more, sizeof more, " runs %ld changed %d before %d slots %d%s%s", st->runs, changed,
             before, p->sched.credit.slots, json_object_get(body, "runs") ? "" : " nobody",
             !parsed ? "" : parsed == h->stats_parsed ? " parsed" : " parsed?");
    st_note(arg, "stats", p, more);
}

static void st_drain(void *arg, server_peer_t *p)
{
    st_note(arg, "drain", p, "");
}

static void st_status(void *arg, server_msg_t *m)
{
    (void)m;
    st_note(arg, "status", NULL, "");
}

static void st_reply(st_hop_t *h, const void *rid, size_t ridlen, int type)
{
    char more[8];
    snprintf(more, sizeof more, " %.*s", (int)ridlen, (const char *)rid);
    st_note(h, type == SPITS_MSG_WHO ? "who" : type == SPITS_MSG_DRAIN ? "drained" : "?",
            NULL, more);
}

static int64_t st_probe(const liveness_t *l, void *arg)
{
    (void)l, (void)arg;
    return -1;
}

/* A world of n peers of slots slots each, alive and due, at 1000 ms,
 * with avail tasks to come: 0, or -1. */
static int st_world(st_hop_t *h, int n, int slots, uint64_t avail)
{
    server_cfg_t cfg = {
        .src = {h, st_refill, st_part_hold, st_part_free, st_results},
        .hop = {h, st_lost, st_stopping, st_add, st_joined, .bad = st_bad,
                .accept = st_accept, .stats_check = st_stats_check,
                .stats = st_stats_msg, .drain = st_drain, .rx_new = st_rx_new,
                .rx_done = st_rx_done, .status = st_status},
        .io = {h, st_send, st_rest, st_pending, st_recv, st_send_buf, st_send_msg},
        .rules = {.prefix = "", .loop = "the test", .timeout_ms = 1000, .hb_ms = 100,
                  .tick_ms = 100},
        .probe = st_probe, .result_parts = 1,
        .part_min = st_part_min, .borrowed = st_borrowed};
    memset(h, 0, sizeof *h);
    h->avail = avail;
    h->lost_slot = -1;
    h->add_first = 1;
    h->sc = sched_new(1, 3, &h->st);
    h->tab = peertab_new(sizeof(server_peer_t), 4, 16, NULL, NULL, NULL);
    cfg.tab = h->tab;
    cfg.sched = h->sc;
    if (!h->sc || !h->tab || !(h->s = server_new(&cfg)))
        return -1;
    json_t *job = json_pack("{s:s}", "job_id", "job");
    server_set_job(h->s, 0, job);
    json_decref(job);
    if (!job)
        return -1;
    server_clock(h->s, 1000);
    for (int i = 0; i < n; i++) {
        char rid[2] = {(char)('a' + i), 0};
        server_peer_t *p = h->p[i] = peertab_add(h->tab, rid, 1);
        if (!p || p->peer.slot != i)
            return -1;
        server_peer_init(p);
        p->proc.pid = h->pid[i] = i;
        snprintf(p->proc.host, sizeof p->proc.host, "h");
        credit_set(&p->sched.credit, 2, slots);
        sched_joined(h->sc, &p->sched, 0);
        peertab_set_alive(h->tab, p, 1);
        server_peer_join(h->s, p);
        p->live.last_sent = 1000;
        server_due(h->s, p);
    }
    return 0;
}

static void st_world_end(st_hop_t *h)
{
    json_decref(h->job_sent);
    h->job_sent = NULL;
    spits_batch_free(&h->in_batch);
    server_destroy(&h->s);
    sched_destroy(&h->sc);
    peertab_destroy(&h->tab);
}

/* A log (of what, for the message) so far is want; it starts again. */
static int st_text_is(char *log, const char *what, const char *want)
{
    int ok = strcmp(log, want) == 0;
    if (!ok)
        fprintf(stderr, "server selftest: %s \"%s\", expected \"%s\"\n", what, log, want);
    log[0] = 0;
    return ok;
}

/* The last WELCOME or PHASE said job id job, attach (-1: none) and
 * result_parts (NULL: none), and no other key. */
static int st_job_is(const st_hop_t *h, const char *job, long attach, const char *parts)
{
    const json_t *b = h->job_sent;
    size_t keys = 1 + (attach >= 0) + (parts != NULL);
    int ok = b && !h->last_more && json_object_size(b) == keys &&
             !strcmp(json_string_value(json_object_get(b, "job_id")), job) &&
             (attach < 0 || json_integer_value(json_object_get(b, "attach")) == attach) &&
             (!parts || !strcmp(json_string_value(json_object_get(b, "result_parts")), parts));
    if (!ok)
        fprintf(stderr, "server selftest: a job message not as expected\n");
    return ok;
}

static int st_log_is(st_hop_t *h, const char *want)
{
    return st_text_is(h->log, "sent", want);
}

/* A BYE to p as a TM sends it: a bare header, or a body saying the job
 * it refused (refused: "{...}" is sent as it is, no JSON built). */
static void st_bye(st_hop_t *h, server_peer_t *p, const char *refused)
{
    spits_buf_t b = {0};
    json_t *body = refused && refused[0] != '{' ? json_pack("{s:s}", "refused", refused) : NULL;
    if (!refused) {
        unsigned char hdr[SPITS_HDR_SIZE];
        spits_wire_encode_empty(hdr, SPITS_MSG_BYE, 0);
        server_on_bye(h->s, p, hdr, sizeof hdr);
        return;
    }
    if (body && spits_wire_encode_json(&b, SPITS_MSG_BYE, 0, body) == 0) {
        server_on_bye(h->s, p, b.data, b.len);
    } else if (!body && spits_buf_reserve(&b, SPITS_HDR_SIZE + strlen(refused)) == 0) {
        spits_wire_encode_empty(b.data, SPITS_MSG_BYE, 0);
        memcpy(b.data + SPITS_HDR_SIZE, refused, strlen(refused));
        server_on_bye(h->s, p, b.data, SPITS_HDR_SIZE + strlen(refused));
    }
    json_decref(body);
    spits_buf_free(&b);
}

/* A record of the oldest copy p holds (status st) comes back: a slot of
 * room, and (due) p spoke. Returns its task id. */
static uint64_t st_record(st_hop_t *h, server_peer_t *p, uint32_t st, int due)
{
    size_t n;
    uint64_t hash;
    uint32_t len;
    sched_task_t *const *held = sched_held(h->sc, &p->sched, &n);
    uint64_t id = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (held[i]->id < id)
            id = held[i]->id;
    if (!n)
        return UINT64_MAX;
    sched_credit(h->sc, &p->sched, 1);
    if (sched_record(h->sc, &p->sched, id, st, 0, &hash) == SCHED_REC_COMMIT)
        sched_recorded(h->sc, &h->rec_start, &len);
    if (due) {
        server_heard(h->s, p);
        server_due(h->s, p);
    }
    return id;
}

static uint64_t st_result(st_hop_t *h, server_peer_t *p)
{
    return st_record(h, p, SPITS_ST_OK, 1);
}

#define S_CHECK(c) do { if (!(c)) { fprintf(stderr, "server selftest: " \
    "failed at line %d: %s\n", __LINE__, #c); goto out; } } while (0)

/* Who is served, in what order, and who is not. */
static int st_serving(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    S_CHECK(st_world(&h, 3, 4, 1000) == 0);
    /* A join clears what an earlier life left, and is heard. */
    peertab_set_alive(h.tab, p[2], 0);
    p[0]->draining = p[0]->stalled = p[0]->gone = 1;
    p[0]->live.last_heard = 0;
    server_peer_join(h.s, p[0]);
    S_CHECK(!p[0]->draining && !p[0]->stalled && !p[0]->gone && p[0]->live.last_heard == 1000);
    /* The due ones, first up to their workers, then their prefetch. */
    S_CHECK(!server_serve_due(h.s));
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 0:2 1:2 ") && !server_serve_due(h.s));
    /* Nothing due: nothing sent; a result makes its peer due: only it is
     * looked at, and the copy was timed by the serve's clock. */
    server_clock(h.s, 1010);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    st_result(&h, p[1]);
    S_CHECK(h.rec_start == 1000);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "1:1 "));

    /* A full pipe stalls a peer until it speaks; what it was picked goes
     * to the next with room. */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    h.fail[0] = EAGAIN;
    server_serve(h.s);
    S_CHECK(p[0]->stalled && st_log_is(&h, "1:1 "));
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    server_clock(h.s, 1020);
    server_heard(h.s, p[0]);
    S_CHECK(!p[0]->stalled && p[0]->live.last_heard == 1020);
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 "));

    /* Only the due list of this serve: not the last one's, nor past its
     * end (p1, with room, was listed second two serves ago). */
    st_record(&h, p[1], SPITS_ST_OK, 0);
    st_record(&h, p[0], SPITS_ST_OK, 0);
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 "));
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    st_record(&h, p[0], SPITS_ST_OK, 0);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 "));
    server_due(h.s, p[1]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "1:1 "));

    /* Draining, settling and a stopping hop get nothing. */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    p[0]->draining = 1;
    joins_settle_begin(&p[1]->settle, 1, 1020, 5000);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    joins_settle_results(&p[1]->settle, 1);
    p[0]->draining = 0;
    h.stopping = 1;
    server_due_all(h.s);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    h.stopping = 0;

    /* Walks of all go round, one further each time. */
    peertab_set_alive(h.tab, p[2], 1);
    server_peer_join(h.s, p[2]);
    st_record(&h, p[2], SPITS_ST_OK, 0);   /* (none held: no room change) */
    server_due_all(h.s);
    server_serve(h.s);   /* (the second walk: from 1) */
    S_CHECK(st_log_is(&h, "2:2 1:1 2:2 0:1 "));
    for (int i = 0; i < 3; i++)
        st_record(&h, p[i], SPITS_ST_OK, 0);
    server_due_all(h.s);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "2:1 0:1 1:1 "));
    for (int i = 0; i < 3; i++)
        st_record(&h, p[i], SPITS_ST_OK, 0);
    server_due_all(h.s);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 1:1 2:1 "));
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* The source is asked once a serve when dry, and a peer left with room
 * is served when work comes, without speaking. */
static int st_refills(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    S_CHECK(st_world(&h, 2, 4, 8) == 0);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 0:2 1:2 ") && h.refills == 4 && !h.avail);
    /* Dry: one refill for both peers. */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    h.refills = 0;
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "") && h.refills == 1 && !server_serve_due(h.s));
    /* A walk of all asks the source again. */
    h.avail = 10;
    server_due_all(h.s);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 1:1 ") && h.refills == 3);
    /* ...and filled them: nothing starved, nothing asked. */
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "") && h.refills == 3);
    /* Starved with the source dry: asked once for the serve. */
    h.avail = 0;
    st_result(&h, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "") && h.refills == 4);
    st_result(&h, p[1]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "") && h.refills == 5);
    /* Work comes: both served, neither having spoken. */
    h.avail = 10;
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "1:1 0:1 "));
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* A failed task runs again elsewhere while another peer is alive, on
 * the same one when it is alone. */
static int st_retries(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    S_CHECK(st_world(&h, 2, 2, 100) == 0);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 "));
    uint64_t failed = st_record(&h, p[0], SPITS_ST_FAILED, 1);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 ") && h.last_id != failed);
    st_result(&h, p[1]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "1:1 ") && h.last_id == failed);
    /* Alone. */
    peertab_set_alive(h.tab, p[1], 0);
    sched_lost(h.sc, &p[1]->sched);
    st_result(&h, p[0]);
    st_result(&h, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 "));
    failed = st_record(&h, p[0], SPITS_ST_FAILED, 1);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 ") && h.last_id == failed);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* Gone peers are lost once their messages are read; the tick beats the
 * quiet and loses the silent. */
/* The hop's turns: one that came late is its own stall, and its
 * peers get their timeout anew from its end; the first turn is none. */
static int st_turns(void)
{
    st_hop_t h;
    int rc = -1;
    S_CHECK(st_world(&h, 1, 4, 0) == 0);
    server_turn(h.s, 1000);
    server_tick(h.s);
    S_CHECK(h.p[0]->peer.alive && h.lost_slot == -1);
    server_turn(h.s, 1000 + 5000);
    server_tick(h.s);
    S_CHECK(h.p[0]->peer.alive && h.lost_slot == -1);
    for (int k = 1; k <= 41; k++)   /* (turns on time: no stall) */
        server_turn(h.s, 1000 + 5000 + 100 * k);
    server_tick(h.s);
    S_CHECK(!h.p[0]->peer.alive && h.lost_slot == 0 && strstr(h.lost, "silent for 9."));
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

static int st_losses(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    spits_hdr_t hdr;
    const char *why;
    int rc = -1;
    S_CHECK(st_world(&h, 3, 4, 100) == 0);
    server_phase(h.s, 7);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 2:2 0:2 1:2 2:2 "));
    /* A gone connection (the first live peer): marked, nothing more
     * sent to it, lost once no message waits, or SERVE_REAP_WAIT_MS passed. */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    h.fail[0] = EHOSTUNREACH;
    server_serve(h.s);
    S_CHECK(p[0]->gone && p[0]->peer.alive && st_log_is(&h, "1:1 "));
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    h.pending = 1;
    server_clock(h.s, 1000 + SERVE_REAP_WAIT_MS - 1);
    server_reap(h.s, 0);
    S_CHECK(p[0]->peer.alive && h.lost_slot == -1);
    server_clock(h.s, 1000 + SERVE_REAP_WAIT_MS);
    server_reap(h.s, 0);
    S_CHECK(!p[0]->peer.alive && !strcmp(h.lost, "0 disconnected; "));
    S_CHECK(!p[0]->gone && server_serve_due(h.s));
    /* Its copies run again on the others. */
    st_result(&h, p[2]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "2:1 "));

    /* The tick: a heartbeat of the phase to the quiet (one that fails is
     * not counted), the silent lost; then every peer is looked at. */
    p[1]->live.last_heard = p[2]->live.last_heard = 1250;
    p[1]->live.last_sent = 1250;
    p[2]->live.last_sent = 1350;
    server_clock(h.s, 1350);
    h.fail[1] = EAGAIN;
    server_tick(h.s);
    S_CHECK(server_stats(h.s)->heartbeats == 0 && p[1]->stalled && h.lost_slot == 0);
    server_serve(h.s);
    p[1]->stalled = 0;
    S_CHECK(!server_serve_due(h.s));
    server_clock(h.s, 1450);
    server_tick(h.s);
    S_CHECK(server_stats(h.s)->heartbeats == 2 && p[2]->live.last_sent == 1450);
    S_CHECK(server_serve_due(h.s) && h.last_more == 0);
    S_CHECK(spits_wire_parse(h.last, SPITS_HDR_SIZE, &hdr, &why) == 0 &&
            hdr.type == SPITS_MSG_HEARTBEAT && hdr.phase == 7);
    /* Probing: every peer beats each tick, until the probe ends. */
    server_probe_until(h.s, 1460);
    server_clock(h.s, 1459);
    S_CHECK(server_probing(h.s));
    server_tick(h.s);
    S_CHECK(server_stats(h.s)->heartbeats == 4);
    server_clock(h.s, 1460);
    S_CHECK(!server_probing(h.s));
    server_tick(h.s);
    S_CHECK(server_stats(h.s)->heartbeats == 4);
    /* Quiet past 3 heartbeat periods (300 ms): the tasks only it holds
     * count as stalled for the lateness gate, each tick anew. */
    size_t held1, held2;
    (void)sched_held(h.sc, &p[1]->sched, &held1);
    (void)sched_held(h.sc, &p[2]->sched, &held2);
    S_CHECK(held1 > 0 && held2 > 0);
    p[1]->live.last_heard = 1460 - 301;
    p[2]->live.last_heard = 1460 - 300;
    server_tick(h.s);
    S_CHECK(h.sc->quiet == held1);
    p[2]->live.last_heard = 1460 - 301;
    server_tick(h.s);
    S_CHECK(h.sc->quiet == held1 + held2);
    p[1]->live.last_heard = p[2]->live.last_heard = 1460;
    server_tick(h.s);
    S_CHECK(h.sc->quiet == 0);
    /* Silent past the timeout, in tenths of a second. */
    p[1]->live.last_heard = 1460 - 1051;
    p[2]->live.last_heard = 1460 - 1250;
    server_tick(h.s);
    S_CHECK(!strcmp(h.lost, "0 disconnected; 1 silent for 1.1 s; 2 silent for 1.2 s; "));
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* A peer of more room than a batch's cap gets several messages. */
static int st_big(void)
{
    st_hop_t h;
    int rc = -1;
    S_CHECK(st_world(&h, 1, SERVE_BATCH_TASKS + 100, SERVE_BATCH_TASKS + 100) == 0);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 0:65536 0:98 "));
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* TASKS as a peer gets them, of the server's phase: each record's id
 * and bytes, inline or as a part (cfg.part_min), of own tasks and of
 * borrowed ones; a part that does not go is freed all the same. */
static int st_tasks_out(void)
{
    st_hop_t h;
    int rc = -1;
    st_part_min = 5;
    /* (ids 0, 1 and 3 large: the first TASKS has two parts, the second
     * one, after an inline record) */
    for (st_borrowed = 0; st_borrowed < 2; st_borrowed++) {
        S_CHECK(st_world(&h, 1, 4, 4) == 0);
        h.big_len = 5;
        h.big_ids = 0xb;
        server_phase(h.s, 7);
        server_serve(h.s);
        const server_stats_t *ss = server_stats(h.s);
        S_CHECK(st_log_is(&h, "0:2 0:2 ") && h.tasks_phase == 7 && h.bad_bytes == 0);
        S_CHECK(h.last_id == (st_borrowed ? 1002 : 2) && h.last_more);
        S_CHECK(h.parts_sent == 3 && h.parts_held == 3 && h.parts_freed == 3 &&
                h.part_more == 1 && h.part_bytes == 15);
        S_CHECK(ss->tasks_as_parts == 3 && ss->part_bytes_out == 15);
        st_world_end(&h);
    }
    st_borrowed = 0;
    S_CHECK(st_world(&h, 1, 4, 4) == 0);
    h.big_len = 5;
    h.big_ids = 0xa;
    h.part_fail = 1;
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 0:2 ") && h.bad_bytes == 0);
    S_CHECK(h.parts_sent == 1 && h.parts_held == 2 && h.parts_freed == 2 &&
            server_stats(h.s)->tasks_as_parts == 1 && server_stats(h.s)->part_bytes_out == 5);
    st_world_end(&h);
    /* (none as parts: all inline, two records of 1 and 5 bytes a TASKS) */
    st_part_min = UINT64_MAX;
    S_CHECK(st_world(&h, 1, 4, 4) == 0);
    h.big_len = 5;
    h.big_ids = 0xa;
    uint64_t before = server_stats(h.s)->bytes_out;
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 0:2 ") && h.bad_bytes == 0 && !h.last_more &&
            h.parts_held == 0 &&
            server_stats(h.s)->bytes_out ==
                before + 2 * (SPITS_HDR_SIZE + 2 * SPITS_REC_SHORT + 1 + 5));
    rc = 0;
out:
    st_part_min = UINT64_MAX;
    st_borrowed = 0;
    st_world_end(&h);
    return rc;
}

/* CANCELs go to live peers only, one message each, alone. */
static int st_cancels(void)
{
    st_hop_t h;
    int rc = -1;
    S_CHECK(st_world(&h, 2, 4, 0) == 0);
    S_CHECK(server_cancels(h.s, 1, NULL, 0, 0) == 0);
    peertab_set_alive(h.tab, h.p[1], 0);
    sched_cancel_t c[3] = {{1, 5, 0}, {0, 6, 0}, {0, 7, 0}};
    h.last_more = -1;
    S_CHECK(server_cancels(h.s, 1, c, 3, 0) == 2 && h.last_more == 0);
    st_world_end(&h);
    /* Every copy the live peers hold: the 6 served, then the second's
     * once the first is dead, then none. */
    S_CHECK(st_world(&h, 2, 4, 6) == 0);
    server_serve(h.s);
    size_t n0, n1;
    sched_held(h.sc, &h.p[0]->sched, &n0);
    sched_held(h.sc, &h.p[1]->sched, &n1);
    S_CHECK(n0 + n1 == 6 && n0 && n1);
    S_CHECK(server_cancel_held(h.s, 0, 0) == 6 && h.last_more == 0);
    peertab_set_alive(h.tab, h.p[0], 0);
    S_CHECK(server_cancel_held(h.s, 0, 1) == n1);
    peertab_set_alive(h.tab, h.p[1], 0);
    S_CHECK(server_cancel_held(h.s, 0, 0) == 0);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

static int st_joins_are(st_hop_t *h, const char *want)
{
    return st_text_is(h->joins, "joins", want);
}

/* HELLO: a join, repeats with and without copies sent since, a
 * re-attach with results pending (not served until they are in), a
 * reconnect of a new process, a relay's capacity, and no entry. */
static int st_hello(void)
{
    st_hop_t h;
    int rc = -1;
    const server_stats_t *ss;
    spits_hello_t hi = {"n\n", 100, 2, 4, 0, 0, 1, "job", NULL, -1};
    S_CHECK(st_world(&h, 0, 0, 100) == 0);
    ss = server_stats(h.s);
    /* A join: alive, its credit, its proc, WELCOME; then served. */
    S_CHECK(server_on_hello(h.s, NULL, "a", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *a = peertab_find(h.tab, "a", 1);
    S_CHECK(a && a->peer.alive && a->peer.slot == 0 && a->sched.slot == 0);
    S_CHECK(a->sched.credit.workers == 2 && a->sched.credit.slots == 4);
    S_CHECK(a->proc.attach == 1 && a->proc.sent_at_hello == 0 && a->settle.until == 0);
    S_CHECK(a->proc.pid == 100 && a->proc.host[0] == 'n' && !strchr(a->proc.host, '\n'));
    S_CHECK(ss->joins == 1 && ss->reattaches == 0 && h.welcomes[0] == 1);
    /* ...its WELCOME: the job's, with its attach and its routing id. */
    S_CHECK(h.job_sent_phase == 0 && st_job_is(&h, "job", 1, "a"));
    S_CHECK(st_joins_are(&h, "0 first; ") && a->live.last_heard == 1000);
    server_due(h.s, a);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 0:2 ") && a->sched.sent == 4);

    /* A repeat with copies sent since: answered, what it says it holds
     * predates them, nothing lost. */
    hi.held = 0;
    hi.pending = 3;
    S_CHECK(server_on_hello(h.s, a, "a", 1, &hi, "job", NULL) == SERVER_HELLO_AGAIN);
    S_CHECK(h.welcomes[0] == 2 && a->sched.credit.outstanding == 4 && a->settle.until == 0);
    S_CHECK(st_joins_are(&h, "") && h.lost[0] == 0 && a->proc.sent_at_hello == 0);
    /* ...a later one of an older outage leaves its attach. */
    hi.attach = 0;
    S_CHECK(server_on_hello(h.s, a, "a", 1, &hi, "job", NULL) == SERVER_HELLO_AGAIN);
    S_CHECK(a->proc.attach == 1 && h.welcomes[0] == 3 && st_job_is(&h, "job", 1, "a"));

    /* A repeat with nothing sent since: what it holds and its pending
     * results are taken, as at a join; a higher attach is kept. */
    hi = (spits_hello_t){"m", 200, 2, 4, 0, 0, 1, "job", NULL, -1};
    S_CHECK(server_on_hello(h.s, NULL, "b", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *b = peertab_find(h.tab, "b", 1);
    S_CHECK(b && b->peer.slot == 1 && st_joins_are(&h, "1 first; "));
    /* ...of another job: none of it counts. */
    hi.held = 1;
    hi.pending = 2;
    hi.attach = 2;
    S_CHECK(server_on_hello(h.s, b, "b", 1, &hi, "other", NULL) == SERVER_HELLO_AGAIN);
    S_CHECK(b->sched.credit.outstanding == 0 && b->settle.until == 0 && b->proc.attach == 2);
    hi.attach = 3;
    S_CHECK(server_on_hello(h.s, b, "b", 1, &hi, "job", NULL) == SERVER_HELLO_AGAIN);
    S_CHECK(b->sched.credit.outstanding == 1 && b->settle.until == 3000 &&
            b->settle.records == 2 && b->proc.attach == 3 && h.welcomes[1] == 3);
    S_CHECK(ss->joins == 2 && ss->reattaches == 0);

    /* A re-attach after a loss, with results pending: no tasks until
     * they are in. */
    h.fail[0] = EHOSTUNREACH;
    S_CHECK(server_send(h.s, a, "x", 1, 0) == -1 && a->gone);
    server_reap(h.s, 1);
    S_CHECK(!a->peer.alive && !strcmp(h.lost, "0 disconnected; "));
    hi = (spits_hello_t){"n", 100, 2, 4, 0, 2, 2, "job", NULL, -1};
    S_CHECK(server_on_hello(h.s, a, "a", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    S_CHECK(a->peer.alive && a->proc.attach == 2 && a->proc.sent_at_hello == 4);
    S_CHECK(ss->joins == 2 && ss->reattaches == 1 && st_joins_are(&h, "0 again; "));
    S_CHECK(a->settle.until == 3000 && h.welcomes[0] == 4);
    server_due(h.s, a);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    joins_settle_results(&a->settle, 2);
    server_due(h.s, a);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 0:2 ") && a->sched.sent == 8);

    /* A new process on its routing id, copies sent since: the old one
     * is lost, its runs go to the totals, the new one joins. */
    spits_stats_t st = {1.5, 7, -1, -1, -1, -1, -1, NULL, NULL, NULL};
    const char *why = NULL;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 0 && ss->runs == 7 && ss->busy_s == 1.5);
    hi = (spits_hello_t){"n", 101, 3, 6, 0, 0, 0, "job", NULL, -1};
    S_CHECK(server_on_hello(h.s, a, "a", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    S_CHECK(!strcmp(h.lost, "0 disconnected; 0 reconnected; ") && a->peer.alive);
    S_CHECK(st_joins_are(&h, "0 again renewed; ") && h.pid[0] == 101 &&
            a->proc.pid == 101 && strcmp(a->proc.host, "n") == 0);
    S_CHECK(a->proc.runs == 0 && a->proc.busy_s == 0 && ss->runs == 7 &&
            ss->busy_s == 1.5 && ss->reattaches == 2 && ss->joins == 2);
    st.runs = 2;
    st.busy_s = 0.5;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 0 && ss->runs == 9 && ss->busy_s == 2.0);
    S_CHECK(a->sched.credit.workers == 3 && a->sched.credit.slots == 6 &&
            a->sched.credit.outstanding == 0 && a->proc.attach == 0);
    /* ...its old process's copies run again (on it: b settles). */
    server_due(h.s, a);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:3 0:3 "));

    /* A relay: its capacity is what its TMs can have. */
    json_t *relay = json_object();
    hi = (spits_hello_t){"r", 300, 9000, 50, 0, 0, 0, "job", relay, 2};
    S_CHECK(server_on_hello(h.s, NULL, "c", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *c = peertab_find(h.tab, "c", 1);
    S_CHECK(c && c->sched.credit.workers == 2 * SPITS_TM_WORKERS_MAX &&
            c->sched.credit.slots == 50);
    hi.tms = 0;
    hi.pid = 301;
    S_CHECK(server_on_hello(h.s, c, "c", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    S_CHECK(c->sched.credit.workers == 0 && c->sched.credit.slots == 0);
    json_decref(relay);
    S_CHECK(st_joins_are(&h, "2 first; 2 again renewed; "));

    /* A routing id the hop knew once: a re-attach; none made: nothing.
     * (This one is no UTF-8: its WELCOME cannot say it, and says no
     * result_parts.) */
    h.add_first = 0;
    hi = (spits_hello_t){"o", 400, 1, 1, 0, 0, 0, "job", NULL, -1};
    S_CHECK(server_on_hello(h.s, NULL, "\xff", 1, &hi, "job", NULL) ==
            SERVER_HELLO_REATTACHED);
    S_CHECK(st_joins_are(&h, "3 again; ") && ss->joins == 3 && ss->reattaches == 4);
    S_CHECK(h.welcomes[3] == 1 && st_job_is(&h, "job", 0, NULL));
    h.add_first = -1;
    S_CHECK(server_on_hello(h.s, NULL, "e", 1, &hi, "job", NULL) == SERVER_HELLO_NO_ENTRY);
    S_CHECK(st_joins_are(&h, "") && ss->joins == 3 && ss->reattaches == 4 &&
            peertab_live_count(h.tab) == 4);
    st_world_end(&h);

    /* With no hop.add, the server's entry (server_peer_add): a first
     * join, in the slot after the world's peer; an empty routing id has
     * none. */
    S_CHECK(st_world(&h, 1, 4, 100) == 0);
    h.s->cfg.hop.add = NULL;
    hi = (spits_hello_t){"q", 500, 2, 4, 0, 0, 1, "job", NULL, -1};
    S_CHECK(server_on_hello(h.s, NULL, "q", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *q = peertab_find(h.tab, "q", 1);
    S_CHECK(q && q->peer.alive && q->peer.slot == 1 && q->sched.slot == 1 &&
            q->proc.pid == 500);
    S_CHECK(st_joins_are(&h, "1 first; ") && server_stats(h.s)->joins == 1);
    int first = 0;
    S_CHECK(!server_peer_add(h.s, "", 0, &first) && first == 1);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* The other messages: each heard from a live peer, RESULTS settling
 * it, DRAIN, BYE, and a HELLO from a peer whose connection is gone. */
static int st_messages(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    spits_hdr_t res = {.type = SPITS_MSG_RESULTS, .count = 2};
    spits_hdr_t stats = {.type = SPITS_MSG_STATS, .count = 2};
    S_CHECK(st_world(&h, 3, 4, 100) == 0);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 2:2 0:2 1:2 2:2 "));
    /* Heard, no longer stalled; a RESULTS counts towards its settling,
     * another message does not. */
    joins_settle_begin(&p[0]->settle, 3, 1000, 1000);
    p[0]->stalled = 1;
    server_clock(h.s, 1100);
    server_on_message(h.s, p[0], &stats);
    S_CHECK(!p[0]->stalled && p[0]->live.last_heard == 1100 && p[0]->settle.records == 3);
    server_on_message(h.s, p[0], &res);
    S_CHECK(p[0]->settle.records == 1 && p[0]->settle.until == 3000);
    server_on_message(h.s, p[0], &res);
    S_CHECK(p[0]->settle.until == 0);
    server_on_message(h.s, NULL, &res);

    /* Handled: its connection noted, and it is due; not a dead one. */
    server_on_handled(h.s, p[0], 7, 3);
    S_CHECK(p[0]->live.fd == 7 && p[0]->live.fd_gen == 3 && p[0]->due);
    server_on_handled(h.s, NULL, 8, 4);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "") && !p[0]->due);
    /* DRAIN: its first only; no more tasks to it. */
    S_CHECK(server_on_drain(p[1]) == 1 && p[1]->draining);
    S_CHECK(server_on_drain(p[1]) == 0 && server_on_drain(NULL) == 0);
    st_record(&h, p[1], SPITS_ST_OK, 1);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));

    /* BYE: it left (not lost), its copies run again on the others; a
     * second is nothing; a dead peer is not heard. */
    st_bye(&h, p[1], NULL);
    S_CHECK(!p[1]->peer.alive && !strcmp(h.lost, "1 left -; ") && server_serve_due(h.s));
    st_bye(&h, p[1], "x");
    server_on_drain(p[1]);
    S_CHECK(!strcmp(h.lost, "1 left -; "));
    p[1]->stalled = 1;
    p[1]->live.last_heard = 5;
    server_on_message(h.s, p[1], &res);
    server_on_handled(h.s, p[1], 9, 9);
    S_CHECK(p[1]->stalled && p[1]->live.last_heard == 5 && p[1]->live.fd != 9 && !p[1]->due);
    st_result(&h, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 "));

    /* A HELLO from a peer whose connection a send found gone: lost
     * first, then it re-attaches. */
    h.fail[2] = EHOSTUNREACH;
    S_CHECK(server_send(h.s, p[2], "x", 1, 0) == -1 && p[2]->gone);
    h.pending = 1;
    spits_hello_t hi = {"h", 2, 2, 4, 0, 0, -1, "job", NULL, -1};
    S_CHECK(server_on_hello(h.s, p[2], "c", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    S_CHECK(!strcmp(h.lost, "1 left -; 2 disconnected; ") && p[2]->peer.alive && !p[2]->gone);
    S_CHECK(st_joins_are(&h, "2 again; ") && server_stats(h.s)->reattaches == 1);
    /* ...or says it refused the job. */
    st_bye(&h, p[2], "no gpu");
    S_CHECK(!strcmp(h.lost, "1 left -; 2 disconnected; 2 left no gpu; "));
    /* ...or sends a body that is no JSON object, or says nothing of a
     * refusal: it left all the same. */
    S_CHECK(server_on_hello(h.s, p[2], "c", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    st_bye(&h, p[2], "{\"refused\": 7, \"x\"");
    S_CHECK(!p[2]->peer.alive &&
            !strcmp(h.lost, "1 left -; 2 disconnected; 2 left no gpu; 2 left -; "));
    S_CHECK(server_on_hello(h.s, p[2], "c", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    st_bye(&h, p[2], "{\"refused\": 7}");
    S_CHECK(!strcmp(h.lost, "1 left -; 2 disconnected; 2 left no gpu; 2 left -; 2 left -; "));
    S_CHECK(st_joins_are(&h, "2 again; 2 again; "));

    /* A HELLO of a new outage, copies sent since: a reconnect. */
    h.lost[0] = 0;
    hi = (spits_hello_t){"h", 0, 2, 4, 0, 0, 1, "job", NULL, -1};
    S_CHECK(p[0]->proc.attach == 0 && p[0]->sched.sent > p[0]->proc.sent_at_hello);
    S_CHECK(server_on_hello(h.s, p[0], "a", 1, &hi, "job", NULL) == SERVER_HELLO_REATTACHED);
    S_CHECK(!strcmp(h.lost, "0 reconnected; ") && st_joins_are(&h, "0 again; "));
    /* No job (no memory for it): no WELCOME; the TM says HELLO again. */
    int welcomed = h.welcomes[0];
    server_set_job(h.s, 0, NULL);
    S_CHECK(server_on_hello(h.s, p[0], "a", 1, &hi, "job", NULL) == SERVER_HELLO_AGAIN);
    S_CHECK(h.welcomes[0] == welcomed);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* A new phase: PHASE to each live peer, the last joined first, none to
 * one whose connection is gone or that left. */
static int st_phase(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    json_t *id = json_string("job2"), *job = json_pack("{s:O}", "job_id", id);
    S_CHECK(st_world(&h, 4, 2, 0) == 0 && job);
    server_set_job(h.s, 5, job);
    server_send_phase(h.s);
    S_CHECK(!strcmp(h.phases, "3 2 1 0 ") && h.welcomes[0] == 0);
    /* (a PHASE says neither attach nor result_parts; the server holds
     * the body, and each message's copy of it is released) */
    S_CHECK(h.job_sent_phase == 5 && st_job_is(&h, "job2", -1, NULL));
    S_CHECK(job->refcount == 2 && id->refcount == 2);
    uint32_t wire = 0;
    S_CHECK(server_job(h.s, &wire) == job && wire == 5 && server_job(h.s, NULL) == job);
    h.phases[0] = 0;
    h.fail[1] = EHOSTUNREACH;
    S_CHECK(server_send(h.s, p[1], "x", 1, 0) == -1 && p[1]->gone);
    st_bye(&h, p[3], NULL);
    server_send_phase(h.s);
    S_CHECK(!strcmp(h.phases, "2 0 ") && h.lost[0] && h.welcomes[2] == 0);
    /* A body replaced, or the server's end, releases it; the one it
     * holds, set again, stays. */
    server_set_job(h.s, 6, NULL);
    S_CHECK(job->refcount == 1 && server_job(h.s, &wire) == NULL && wire == 6);
    json_t *only = json_pack("{s:s}", "job_id", "job3");
    S_CHECK(only);
    server_set_job(h.s, 7, only);
    json_decref(only);
    server_set_job(h.s, 7, only);
    h.phases[0] = 0;
    server_send_phase(h.s);
    S_CHECK(!strcmp(h.phases, "2 0 ") && st_job_is(&h, "job3", -1, NULL));
    server_set_job(h.s, 6, job);
    server_destroy(&h.s);
    S_CHECK(job->refcount == 1);
    st_world_end(&h);
    /* What the body says of the loss rules and copies is followed; what
     * is out of range is not. */
    S_CHECK(st_world(&h, 1, 2, 0) == 0);
    const liveness_hop_t *rules = server_rules(h.s);
    static const int says[4][3] = {{250, 900, SCHED_MAX_COPIES}, {0, -1, 0},
                                   {-5, 0, SCHED_MAX_COPIES + 1}, {1, 1, 1}};
    for (int i = 0; i < 4; i++) {
        const int *is = says[i == 3 ? 3 : 0];
        only = json_pack("{s:s, s:i, s:i, s:i}", "job_id", "job", "heartbeat_ms", says[i][0],
                         "timeout_ms", says[i][1], "max_copies", says[i][2]);
        S_CHECK(only);
        server_set_job(h.s, 1, only);
        json_decref(only);
        S_CHECK(rules->hb_ms == is[0] && rules->timeout_ms == is[1] &&
                h.sc->max_copies == is[2]);
    }
    rc = 0;
out:
    json_decref(job);
    json_decref(id);
    st_world_end(&h);
    return rc;
}

/* The job's end: the live peers' routing ids, then each one's first BYE
 * (not a dead peer's, a stranger's or a repeat) to bye; a STATS to
 * stats until its peer ended or left the live set. */
static void st_end_bye(void *arg, server_peer_t *p)
{
    st_hop_t *h = arg;
    char one[8];
    snprintf(one, sizeof one, "b%d ", p->peer.slot);
    strncat(h->log, one, sizeof h->log - strlen(h->log) - 1);
    if (p->peer.slot == 1)      /* (as a relay's does: it leaves) */
        peertab_set_alive(h->tab, p, 0);
}

static void st_end_stats(void *arg, server_peer_t *p, zmq_msg_t *body)
{
    st_hop_t *h = arg;
    char one[8];
    snprintf(one, sizeof one, "s%d:%zu ", p->peer.slot, zmq_msg_size(body));
    strncat(h->log, one, sizeof h->log - strlen(h->log) - 1);
}

static int st_end(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    zmq_msg_t body;
    size_t len;
    int rc = -1;
    zmq_msg_init_size(&body, 3);
    S_CHECK(st_world(&h, 4, 2, 0) == 0);
    st_bye(&h, p[2], NULL);
    server_end_t e = {h.s, st_end_bye, st_end_stats, &h};
    router_peers_t r = server_end_peers(&e);
    S_CHECK(r.n == 3 && r.arg == &e && r.stats);
    char rids[4] = "";
    for (size_t k = 0; k < r.n; k++) {
        const char *rid = r.rid(r.arg, k, &len);
        S_CHECK(rid && len == 1);
        rids[k] = rid[0];
    }
    S_CHECK(strchr(rids, 'a') && strchr(rids, 'b') && strchr(rids, 'd') && !strchr(rids, 'c'));
    r.stats(r.arg, "a", 1, &body);
    S_CHECK(r.bye(r.arg, "c", 1) == 0 && r.bye(r.arg, "z", 1) == 0);
    S_CHECK(r.bye(r.arg, "a", 1) == 1 && p[0]->ended == 1 && r.bye(r.arg, "a", 1) == 0);
    r.stats(r.arg, "a", 1, &body);
    S_CHECK(r.bye(r.arg, "b", 1) == 1 && !p[1]->peer.alive);
    r.stats(r.arg, "b", 1, &body);
    r.stats(r.arg, "d", 1, &body);
    r.stats(r.arg, "c", 1, &body);
    S_CHECK(!strcmp(h.log, "s0:3 b0 b1 s3:3 ") && !p[3]->ended);
    server_end_t quiet = {h.s, NULL, NULL, NULL};
    r = server_end_peers(&quiet);
    S_CHECK(r.n == 2 && !r.stats && r.bye(r.arg, "d", 1) == 1 && p[3]->ended);
    S_CHECK(!strcmp(h.log, "s0:3 b0 b1 s3:3 "));
    rc = 0;
out:
    zmq_msg_close(&body);
    st_world_end(&h);
    return rc;
}

/* STATS: runs and busy time of any entry; a live TM's planned
 * capacity (a bad one: nothing changes), a relay's capped by the TMs
 * it says, or else by its HELLO's; a dead one's credit untouched. */
static int st_stats(void)
{
    st_hop_t h;
    int rc = -1;
    const char *why = NULL;
    spits_stats_t st = {1.5, 7, -1, -1, -1, -1, -1, NULL, NULL, NULL};
    spits_hello_t hi = {"n", 100, 2, 4, 0, 0, 0, "job", NULL, -1};
    json_t *relay = json_object();
    S_CHECK(relay && st_world(&h, 0, 0, 0) == 0);
    S_CHECK(server_on_hello(h.s, NULL, "a", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *a = peertab_find(h.tab, "a", 1);
    S_CHECK(a && !a->proc.relay && a->proc.tms == -1);
    /* A TM: runs and busy time; no capacity said, none changed. */
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 0 && why == NULL);
    S_CHECK(a->proc.runs == 7 && a->proc.busy_s == 1.5 && a->sched.credit.workers == 2 &&
            a->sched.credit.slots == 4);
    /* ...its plan's counts, both said; one alone is not a plan. */
    st.workers = 3;
    st.runs = 9;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 0 && a->sched.credit.workers == 2 &&
            a->proc.runs == 9);
    st.workers = -1;
    st.slots = 5;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 0 && a->sched.credit.slots == 4 &&
            why == NULL);
    st.workers = 3;
    st.slots = 0;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == -1 && a->sched.credit.workers == 2);
    st.slots = 5;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 1 && a->sched.credit.workers == 3 &&
            a->sched.credit.slots == 5 && a->sched.credit.asked == 5);
    /* ...a capacity no HELLO may have: why, and nothing noted. */
    st.workers = 0;
    st.runs = 11;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == -1 && why && strstr(why, "no worker"));
    S_CHECK(a->proc.runs == 9 && a->sched.credit.workers == 3 && a->sched.credit.slots == 5);
    st.workers = SPITS_TM_WORKERS_MAX + 1;
    S_CHECK(server_on_stats(h.s, a, &st, &why) == -1 && a->proc.runs == 9);

    /* A relay of 2 TMs: capped by them; a STATS without tms keeps
     * them, one with tms 0 leaves it no workers and no slots. */
    hi = (spits_hello_t){"r", 300, 10, 20, 0, 0, 0, "job", relay, 2};
    S_CHECK(server_on_hello(h.s, NULL, "b", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *b = peertab_find(h.tab, "b", 1);
    S_CHECK(b && b->proc.relay && b->proc.tms == 2 && b->sched.credit.workers == 10);
    st = (spits_stats_t){2.5, 4, 9000, 30, -1, -1, -1, NULL, NULL, NULL};
    S_CHECK(server_on_stats(h.s, b, &st, &why) == 1 && b->proc.runs == 4 && b->proc.tms == 2);
    S_CHECK(b->sched.credit.workers == 2 * SPITS_TM_WORKERS_MAX && b->sched.credit.slots == 30);
    st.tms = 1;
    S_CHECK(server_on_stats(h.s, b, &st, &why) == 1 && b->proc.tms == 1 &&
            b->sched.credit.workers == SPITS_TM_WORKERS_MAX);
    st.tms = 0;
    S_CHECK(server_on_stats(h.s, b, &st, &why) == 1 && b->proc.tms == 0 &&
            b->sched.credit.workers == 0 && b->sched.credit.slots == 0);
    /* ...no capacity said: nothing changes, it is still a resize. */
    st = (spits_stats_t){3.5, 6, -1, -1, -1, -1, -1, NULL, NULL, NULL};
    S_CHECK(server_on_stats(h.s, b, &st, &why) == 1 && b->proc.tms == 0 &&
            b->sched.credit.workers == 0 && b->proc.busy_s == 3.5);

    /* A dead one: its runs noted, its credit is its next HELLO's. */
    st_bye(&h, a, NULL);
    S_CHECK(!a->peer.alive && !strcmp(h.lost, "0 left -; "));
    st = (spits_stats_t){4.5, 12, 1, 1, -1, -1, -1, NULL, NULL, NULL};
    S_CHECK(server_on_stats(h.s, a, &st, &why) == 0 && a->proc.runs == 12 &&
            a->proc.busy_s == 4.5 && a->sched.credit.workers == 3 &&
            a->sched.credit.slots == 5);
    /* The totals: each process's last word, a refused one not taken. */
    S_CHECK(server_stats(h.s)->runs == 12 + 6 && server_stats(h.s)->busy_s == 4.5 + 3.5);
    rc = 0;
out:
    json_decref(relay);
    st_world_end(&h);
    return rc;
}

/* A message of type (a RESULTS of n records) from routing id rid, as
 * server_on_frames takes it; bad: a header that does not parse. */
static void st_frames(st_hop_t *h, const char *rid, int type, int n, int bad)
{
    spits_batch_t b = {0};
    spits_parts_t parts = {0};
    zmq_msg_t msg;
    spits_batch_begin(&b, type, 0);
    for (int i = 0; i < n; i++)
        spits_batch_add(&b, (uint64_t)i, SPITS_ST_OK, 0);
    spits_batch_seal(&b);
    if (type == SPITS_MSG_STATS) {   /* (n -1: its runs missing; -2: no worker) */
        json_t *j = n == -1 ? json_pack("{s:f}", "busy_s", 1.5)
                            : json_pack("{s:f, s:i, s:i, s:i}", "busy_s", 1.5, "runs", 7,
                                        "workers", n == -2 ? 0 : 2, "slots", 6);
        spits_wire_encode_json(&b.buf, SPITS_MSG_STATS, 0, j);
        json_decref(j);
    }
    if (type == SPITS_MSG_HELLO) {   /* (n < 0: its pid and the rest missing) */
        json_t *j = n < 0 ? json_pack("{s:s}", "host", "h")
                          : json_pack("{s:s, s:i, s:i, s:i, s:i, s:s}", "host", "h", "pid", 9,
                                      "workers", 2, "slots", 4, "held", 0, "job_id", "job");
        spits_wire_encode_json(&b.buf, SPITS_MSG_HELLO, 0, j);
        json_decref(j);
    }
    if (bad)
        b.buf.data[0] ^= 0xff;
    zmq_msg_init_size(&msg, b.buf.len);
    memcpy(zmq_msg_data(&msg), b.buf.data, b.buf.len);
    /* (unrun set wrong: the server's to set) */
    server_msg_t m = {.rid = rid, .ridlen = strlen(rid), .msg = &msg, .parts = &parts,
                      .unrun = 1};
    server_on_frames(h->s, &m);
    spits_parts_free(&parts);
    zmq_msg_close(&msg);
    spits_batch_free(&b);
}

/* A RESULTS from rid of n records: ids, their statuses (with
 * SPITS_REC_FOREIGN), each inline (1 byte) or as a part (part[i]). */
static void st_results_msg(st_hop_t *h, const char *rid, int n, const uint64_t *ids,
                           const uint32_t *st, const int *part)
{
    spits_batch_t b = {0};
    spits_parts_t parts = {0};
    zmq_msg_t msg;
    size_t nparts = 0;
    spits_batch_begin(&b, SPITS_MSG_RESULTS, 0);
    for (int i = 0; i < n; i++) {
        if (part[i]) {
            spits_batch_add_part(&b, ids[i], st[i], (uint32_t)(3 + nparts));
            nparts++;
        } else {
            unsigned char *at = spits_batch_add(&b, ids[i], st[i], 1);
            if (at)
                *at = 'r';
        }
    }
    spits_batch_seal(&b);
    zmq_msg_init_size(&msg, b.buf.len);
    memcpy(zmq_msg_data(&msg), b.buf.data, b.buf.len);
    h->rest_parts = nparts;
    server_msg_t m = {.rid = rid, .ridlen = strlen(rid), .msg = &msg, .parts = &parts};
    server_on_frames(h->s, &m);
    h->rest_parts = 0;
    spits_parts_free(&parts);
    zmq_msg_close(&msg);
    spits_batch_free(&b);
}

/* The capacity of the live peers, but of those draining: each one's
 * share follows it after each message, and as it leaves; losses and
 * leaves counted, with the copies each had. */
static int st_capacity(void)
{
    st_hop_t h;
    int rc = -1;
    const server_cap_t *cap;
    const server_stats_t *ss;
    json_t *relay = json_object();
    S_CHECK(relay && st_world(&h, 0, 0, 100) == 0);
    cap = server_capacity(h.s);
    ss = server_stats(h.s);
    h.hello_joins = 1;
    st_frames(&h, "a", SPITS_MSG_HELLO, 0, 0);
    st_frames(&h, "b", SPITS_MSG_HELLO, 0, 0);
    server_peer_t *a = peertab_find(h.tab, "a", 1), *b = peertab_find(h.tab, "b", 1);
    S_CHECK(a && b && a->peer.alive && b->peer.alive);
    S_CHECK(cap->workers == 4 && cap->slots == 8 && cap->tms == 2);
    S_CHECK(a->share.workers == 2 && a->share.slots == 4 && a->share.tms == 1);
    /* Bytes out: each send that went, and replies to anyone. */
    uint64_t out = ss->bytes_out;
    S_CHECK(server_send(h.s, a, "xyz", 3, 0) == 0 && ss->bytes_out == out + 3);
    h.fail[a->peer.slot] = EAGAIN;
    S_CHECK(server_send(h.s, a, "xyz", 3, 0) == -1 && a->stalled && ss->bytes_out == out + 3);
    /* ...and a buffer's, counted before it is moved out. */
    unsigned char four[4] = "wxyz";
    spits_buf_t b4 = {four, 4, 4};
    S_CHECK(server_send_buf(h.s, a, &b4, 0) == 0 && b4.len == 0 && ss->bytes_out == out + 7);
    b4.len = 4;
    a->stalled = 0;
    h.fail[a->peer.slot] = EAGAIN;
    S_CHECK(server_send_buf(h.s, a, &b4, 0) == -1 && a->stalled && b4.len == 4 &&
            ss->bytes_out == out + 7);
    out += 4;
    st_frames(&h, "z", SPITS_MSG_HEARTBEAT, 0, 0);   /* (WHO to a stranger) */
    S_CHECK(ss->bytes_out == out + 3 + SPITS_HDR_SIZE && strstr(h.msgs, "who -1 z"));
    /* A STATS that changes b's plan: its share follows. */
    st_frames(&h, "b", SPITS_MSG_STATS, 0, 0);
    S_CHECK(b->sched.credit.slots == 6 && cap->workers == 4 && cap->slots == 10);
    /* A relay of 3 TMs (its HELLO taken, then handled). */
    spits_hello_t hi = {"r", 300, 10, 20, 0, 0, 0, "job", relay, 3};
    S_CHECK(server_on_hello(h.s, NULL, "c", 1, &hi, "job", NULL) == SERVER_HELLO_JOINED);
    server_peer_t *c = peertab_find(h.tab, "c", 1);
    S_CHECK(c && cap->tms == 2);
    server_on_handled(h.s, c, -1, 0);
    S_CHECK(cap->workers == 14 && cap->slots == 30 && cap->tms == 5);
    /* ...a relay's TMs not said, or none, count none. */
    c->proc.tms = -1;
    server_on_handled(h.s, c, -1, 0);
    S_CHECK(c->share.tms == 0 && cap->tms == 2);
    c->proc.tms = 1;
    server_on_handled(h.s, c, -1, 0);
    S_CHECK(c->share.tms == 1 && cap->tms == 3);
    c->proc.tms = 3;
    server_on_handled(h.s, c, -1, 0);
    /* a drains: it counts no more. */
    st_frames(&h, "a", SPITS_MSG_DRAIN, 0, 0);
    S_CHECK(a->draining && a->share.workers == 0 && a->share.tms == 0);
    S_CHECK(cap->workers == 12 && cap->slots == 26 && cap->tms == 4);
    /* b, served, leaves: its copies go back, counted as a leave. */
    server_due(h.s, b);
    server_serve(h.s);
    uint64_t held = b->sched.credit.outstanding;
    S_CHECK(held == 6);
    st_frames(&h, "b", SPITS_MSG_BYE, 0, 0);
    S_CHECK(!b->peer.alive && h.lost_n == held && ss->leaves == 1 && ss->losses == 0);
    S_CHECK(cap->workers == 10 && cap->slots == 20 && cap->tms == 3);
    /* a (draining) and c are lost, silent past the timeout; b, back,
     * leaves at the job's end, not counted. */
    server_clock(h.s, 1000 + 5000);
    server_tick(h.s);
    S_CHECK(!c->peer.alive && !a->peer.alive && ss->losses == 2 && ss->leaves == 1);
    S_CHECK(cap->workers == 0 && cap->slots == 0 && cap->tms == 0 && h.lost_n == 0);
    st_frames(&h, "b", SPITS_MSG_HELLO, 0, 0);
    S_CHECK(b->peer.alive && cap->workers == 2 && cap->tms == 1);
    server_leave(h.s, b);
    S_CHECK(!b->peer.alive && cap->workers == 0 && cap->slots == 0 && cap->tms == 0 &&
            ss->leaves == 1 && ss->losses == 2);
    rc = 0;
out:
    json_decref(relay);
    st_world_end(&h);
    return rc;
}

static int st_msgs_are(st_hop_t *h, const char *want)
{
    return st_text_is(h->msgs, "handled", want);
}

/* server_on_frames: each type to its handler, WHO to a peer not alive,
 * DRAIN answered to anyone, and a bad message's sender lost. */
static int st_frames_route(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    S_CHECK(st_world(&h, 3, 4, 0) == 0);
    server_serve(h.s);
    S_CHECK(!p[0]->due);
    /* To each handler; a live sender is heard, and due after. */
    server_clock(h.s, 1500);
    p[0]->stalled = 1;
    h.rest_parts = 2;
    st_frames(&h, "a", SPITS_MSG_RESULTS, 2, 0);
    S_CHECK(st_msgs_are(&h, "results 0; ") && !p[0]->stalled &&
            p[0]->live.last_heard == 1500 && p[0]->due);
    /* (its connection: a message made here has no descriptor) */
    S_CHECK(p[0]->live.fd == -1 && p[0]->live.fd_gen == 0 && p[1]->live.fd == 0);
    S_CHECK(server_stats(h.s)->results_as_parts == 2 &&
            server_stats(h.s)->bytes_in == SPITS_HDR_SIZE + 2 * SPITS_REC_SHORT + 3 + 4);
    h.rest_parts = 0;
    st_frames(&h, "a", SPITS_MSG_HELLO, 0, 0);
    st_frames(&h, "b", SPITS_MSG_STATS, 0, 0);
    st_frames(&h, "c", SPITS_MSG_STATUS, 0, 0);
    st_frames(&h, "c", SPITS_MSG_HEARTBEAT, 0, 0);
    S_CHECK(st_msgs_are(&h, "hello 0 pid 9; check 1; stats 1 runs 7 changed 1 before 2 "
                            "slots 6; status -1; "));
    /* A STATS that does not parse, or that the hop's check refuses:
     * counted, nothing taken. */
    st_frames(&h, "b", SPITS_MSG_STATS, -1, 0);
    h.stats_bad = 1;
    st_frames(&h, "b", SPITS_MSG_STATS, 0, 0);
    h.stats_bad = 0;
    st_frames(&h, "b", SPITS_MSG_STATS, -2, 0);
    S_CHECK(st_msgs_are(&h, "bad STATS without busy_s/runs; check 1; bad not checked; check 1; "
                            "bad STATS of a TM with no worker or slot, or over 4096 workers; ") &&
            p[1]->proc.runs == 7 && p[1]->peer.alive);
    /* An unknown routing id: its HELLO has no entry, its STATS is
     * dropped, its RESULTS and HEARTBEAT get WHO. */
    st_frames(&h, "z", SPITS_MSG_HELLO, 0, 0);
    st_frames(&h, "z", SPITS_MSG_STATS, 0, 0);
    st_frames(&h, "z", SPITS_MSG_RESULTS, 1, 0);
    st_frames(&h, "z", SPITS_MSG_HEARTBEAT, 0, 0);
    S_CHECK(st_msgs_are(&h, "hello -1 pid 9; results -1; who -1 z; who -1 z; "));
    /* DRAIN: its first to the hop; each answered, an unknown one's too. */
    spits_hdr_t hd;
    const char *why;
    st_frames(&h, "b", SPITS_MSG_DRAIN, 0, 0);
    S_CHECK(spits_wire_parse(h.last, SPITS_HDR_SIZE, &hd, &why) == 0 &&
            hd.type == SPITS_MSG_DRAIN && !h.last_more && p[1]->live.last_sent == 1500);
    memset(h.last, 0, sizeof h.last);
    h.fail[1] = EAGAIN;   /* (sent as any message to it: a full pipe stalls it) */
    st_frames(&h, "b", SPITS_MSG_DRAIN, 0, 0);
    S_CHECK(p[1]->stalled && !h.last[0]);
    p[1]->stalled = 0;
    st_frames(&h, "b", SPITS_MSG_DRAIN, 0, 0);
    S_CHECK(spits_wire_parse(h.last, SPITS_HDR_SIZE, &hd, &why) == 0 &&
            hd.type == SPITS_MSG_DRAIN);
    st_frames(&h, "z", SPITS_MSG_DRAIN, 0, 0);
    S_CHECK(st_msgs_are(&h, "drain 1; drained -1 z; ") && p[1]->draining);
    /* A message only a hop sends. */
    st_frames(&h, "a", SPITS_MSG_TASKS, 0, 0);
    S_CHECK(st_msgs_are(&h, "bad a message only a job manager or a relay sends; ") &&
            p[0]->peer.alive);
    /* A header that does not parse: its frames dropped, its sender lost;
     * a routing id of a bad size: dropped, no one lost. */
    char rid[PEERTAB_RID_MAX + 2];
    memset(rid, 'y', sizeof rid - 1);
    rid[sizeof rid - 1] = 0;
    st_frames(&h, "", SPITS_MSG_HEARTBEAT, 0, 0);
    st_frames(&h, rid, SPITS_MSG_HEARTBEAT, 0, 0);
    rid[PEERTAB_RID_MAX] = 0;
    st_frames(&h, rid, SPITS_MSG_STATUS, 0, 0);
    S_CHECK(h.rest_drops == 2 && !h.lost[0] &&
            st_msgs_are(&h, "bad a routing id of a bad size; "
                            "bad a routing id of a bad size; status -1; "));
    h.rest_drops = 0;
    uint64_t bad = server_stats(h.s)->bad;
    st_frames(&h, "c", SPITS_MSG_HEARTBEAT, 0, 1);
    S_CHECK(h.rest_drops == 1 && !p[2]->peer.alive && !strncmp(h.lost, "2 a bad peer: ", 14));
    S_CHECK(server_stats(h.s)->bad == bad + 1 && !strncmp(h.msgs, "bad ", 4));
    h.lost[0] = h.msgs[0] = 0;
    /* A dead entry: its HELLO (a re-attach) and STATS are the hop's; its
     * RESULTS too, then WHO; its BYE and DRAIN change nothing. */
    st_frames(&h, "c", SPITS_MSG_STATS, 0, 0);
    st_frames(&h, "c", SPITS_MSG_HELLO, 0, 0);
    st_frames(&h, "c", SPITS_MSG_RESULTS, 1, 0);
    st_frames(&h, "c", SPITS_MSG_BYE, 0, 0);
    st_frames(&h, "c", SPITS_MSG_DRAIN, 0, 0);
    S_CHECK(st_msgs_are(&h, "check 2d; stats 2d runs 7 changed 0 before 2 slots 4; "
                            "hello 2d pid 9; results 2d; who -1 c; drained -1 c; ") &&
            !h.lost[0] && !p[2]->draining);
    /* RESULTS whose parts do not fit: its records answer their copies
     * unrun, then its sender is lost, then WHO; any other such message:
     * lost, not handled. */
    h.rest_rc = -1;
    st_frames(&h, "a", SPITS_MSG_RESULTS, 1, 0);
    S_CHECK(st_msgs_are(&h, "bad parts that do not fit; results 0u; who -1 a; ") &&
            !strcmp(h.lost, "0 a bad peer: parts that do not fit; "));
    h.lost[0] = 0;
    h.rest_rc = -2;
    st_frames(&h, "b", SPITS_MSG_RESULTS, 1, 0);
    S_CHECK(st_msgs_are(&h, "bad no memory for its parts; results 1u; who -1 b; ") &&
            !strcmp(h.lost, "1 a bad peer: no memory for its parts; "));
    /* A HELLO that joins: the entry it made is the one handled. */
    h.lost[0] = 0;
    h.rest_rc = 0;
    h.hello_joins = 1;
    server_serve(h.s);   /* (a loss made every peer due: no longer) */
    S_CHECK(!server_serve_due(h.s));
    st_frames(&h, "d", SPITS_MSG_HELLO, 0, 0);
    p[3] = peertab_find(h.tab, "d", 1);
    S_CHECK(st_msgs_are(&h, "hello -1 pid 9; ") && p[3] && p[3]->peer.alive &&
            p[3]->live.fd == -1 && p[3]->due);
    h.hello_joins = 0;
    /* Any other message whose frames do not fit: lost, not handled. */
    h.rest_rc = -1;
    st_frames(&h, "d", SPITS_MSG_STATS, 0, 0);
    S_CHECK(st_msgs_are(&h, "bad parts that do not fit; ") &&
            !strcmp(h.lost, "3 a bad peer: parts that do not fit; "));
    h.hello_joins = 1;
    h.rest_rc = 0;
    st_frames(&h, "d", SPITS_MSG_HELLO, 0, 0);
    S_CHECK(st_msgs_are(&h, "hello 3d pid 9; ") && p[3]->peer.alive && p[3]->proc.attach == -1);
    /* A HELLO whose body does not parse, one the hop refuses, and one
     * from a routing id no entry can take: counted, no one joins. */
    st_frames(&h, "e", SPITS_MSG_HELLO, -1, 0);
    h.hello_bad = 1;
    st_frames(&h, "e", SPITS_MSG_HELLO, 0, 0);
    h.hello_bad = 0;
    h.add_first = -1;
    st_frames(&h, "e", SPITS_MSG_HELLO, 0, 0);
    h.add_first = 1;
    S_CHECK(st_msgs_are(&h, "bad HELLO without host/pid/workers/slots/held; "
                            "hello -1 pid 9; bad not accepted; "
                            "hello -1 pid 9; bad HELLO from a routing id no entry can take; ") &&
            !peertab_find(h.tab, "e", 1));
    /* ...and a repeat of a live one: answered again. */
    st_frames(&h, "d", SPITS_MSG_HELLO, 0, 0);
    S_CHECK(st_msgs_are(&h, "hello 3 pid 9; ") && p[3]->peer.alive && h.welcomes[3] == 3);
    /* BYE: it left, and is told WHO if it speaks again. */
    h.lost[0] = 0;
    h.rest_rc = 0;
    st_frames(&h, "d", SPITS_MSG_BYE, 0, 0);
    st_frames(&h, "d", SPITS_MSG_HEARTBEAT, 0, 0);
    S_CHECK(!strcmp(h.lost, "3 left -; ") && st_msgs_are(&h, "who -1 d; "));
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* RESULTS: a live sender's slots back but for foreign records; each
 * record to the hop with its own part, and to the scheduler by the id
 * the hop gives, the verdict with the task's hash; unrun: every record a
 * copy handed back; a sender not alive still counts. */
static int st_intake(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    size_t n;
    uint64_t a[4], b[4];
    char want[256];
    S_CHECK(st_world(&h, 2, 4, 100) == 0);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 0:2 1:2 "));
    for (int k = 0; k < 2; k++) {
        sched_task_t *const *held = sched_held(h.sc, &p[k]->sched, &n);
        S_CHECK(n == 4 && p[k]->sched.credit.outstanding == 4);
        for (size_t i = 0; i < n; i++) {
            (k ? b : a)[i] = held[i]->id;
            held[i]->hash = 70 + 10 * (uint64_t)k + i;
        }
    }
    /* A result, and a foreign result of a task p[1] holds: one slot back,
     * both tasks resolved; the first, a copy that ran on arrival, took
     * 250 ms by the server's clock. */
    server_clock(h.s, 1250);
    uint64_t ids1[] = {a[0], b[0]};
    uint32_t st1[] = {SPITS_ST_OK, SPITS_ST_OK | SPITS_REC_FOREIGN};
    int part1[] = {0, 0};
    st_results_msg(&h, "a", 2, ids1, st1, part1);
    snprintf(want, sizeof want, "c:%llu:70:- c:%llu:80:- end", (unsigned long long)a[0],
             (unsigned long long)b[0]);
    S_CHECK(st_text_is(h.sink, "sink", want) && st_msgs_are(&h, "results 0; "));
    S_CHECK(p[0]->sched.credit.outstanding == 3 && p[1]->sched.credit.outstanding == 4 &&
            p[0]->sched.done == 2 && p[0]->sched.turn_ms == 250);
    /* A result as a part, a failed run of the task 1000 less (retried), a
     * record the hop keeps (its part the second), and a copy handed
     * back. */
    uint64_t ids2[] = {a[1], 1000 + a[2], 95, a[3]};
    uint32_t st2[] = {SPITS_ST_OK, SPITS_ST_FAILED, SPITS_ST_OK, SPITS_ST_RETURNED};
    int part2[] = {1, 0, 1, 0};
    st_results_msg(&h, "a", 4, ids2, st2, part2);
    snprintf(want, sizeof want, "c:%llu:71:3a r:%llu:0:- x:95:0:4b t:%llu:0:- end",
             (unsigned long long)a[1], (unsigned long long)(1000 + a[2]),
             (unsigned long long)a[3]);
    S_CHECK(st_text_is(h.sink, "sink", want) && st_msgs_are(&h, "results 0; ") &&
            p[0]->sched.credit.outstanding == 0 && p[0]->sched.done == 3 &&
            p[0]->sched.failed == 1);
    S_CHECK(sched_held(h.sc, &p[0]->sched, &n) && n == 0);
    /* From a routing id no entry has: still counted. */
    uint64_t ids3[] = {b[1]};
    uint32_t st3[] = {SPITS_ST_OK};
    int part3[] = {0};
    st_results_msg(&h, "z", 1, ids3, st3, part3);
    snprintf(want, sizeof want, "c:%llu:81:- end", (unsigned long long)b[1]);
    S_CHECK(st_text_is(h.sink, "sink", want) && st_msgs_are(&h, "results -1; who -1 z; ") &&
            p[1]->sched.credit.outstanding == 4);
    /* Parts that do not fit: each record a copy handed back, then its
     * sender lost; from it, dead, a result still counts on its entry. */
    h.rest_rc = -1;
    uint64_t ids4[] = {b[2], b[3]};
    int part4[] = {0, 0};
    uint32_t st4[] = {SPITS_ST_OK, SPITS_ST_OK};
    st_results_msg(&h, "b", 2, ids4, st4, part4);
    snprintf(want, sizeof want, "t:%llu:0:- t:%llu:0:- end", (unsigned long long)b[2],
             (unsigned long long)b[3]);
    S_CHECK(st_text_is(h.sink, "sink", want) && !p[1]->peer.alive &&
            st_msgs_are(&h, "bad parts that do not fit; results 1u; who -1 b; "));
    h.rest_rc = 0;
    uint64_t done = p[1]->sched.done;
    st_results_msg(&h, "b", 1, ids4, st4, part4);
    snprintf(want, sizeof want, "c:%llu:82:- end", (unsigned long long)b[2]);
    S_CHECK(st_text_is(h.sink, "sink", want) && p[1]->sched.done == done + 1);
    /* A hop that drops them all still gave the slots back. */
    server_serve(h.s);
    S_CHECK(sched_held(h.sc, &p[0]->sched, &n) && n == 4);
    h.log[0] = h.msgs[0] = 0;
    h.sink_drop = 1;
    uint64_t ids5[] = {sched_held(h.sc, &p[0]->sched, &n)[0]->id};
    st_results_msg(&h, "a", 1, ids5, st3, part3);
    S_CHECK(st_text_is(h.sink, "sink", "") && st_msgs_are(&h, "results 0; ") &&
            p[0]->sched.credit.outstanding == 3 && sched_held(h.sc, &p[0]->sched, &n) &&
            n == 4);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* server_take_stats: what the hop's check parsed goes to its stats,
 * and the server releases it whether the message is taken, refused by
 * the check or refused by server_on_stats after the check. */
static int st_stats_parsed(void)
{
    st_hop_t h;
    int rc = -1;
    json_t *parsed = json_object();
    S_CHECK(st_world(&h, 2, 4, 0) == 0 && parsed);
    h.stats_parsed = parsed;
    st_frames(&h, "b", SPITS_MSG_STATS, 0, 0);
    S_CHECK(st_msgs_are(&h, "check 1; stats 1 runs 7 changed 1 before 2 slots 6 parsed; ") &&
            parsed->refcount == 1);
    h.stats_bad = 1;
    st_frames(&h, "b", SPITS_MSG_STATS, 0, 0);
    h.stats_bad = 0;
    S_CHECK(st_msgs_are(&h, "check 1; bad not checked; ") && parsed->refcount == 1);
    st_frames(&h, "b", SPITS_MSG_STATS, -2, 0);
    S_CHECK(st_msgs_are(&h, "check 1; bad STATS of a TM with no worker or slot, or over "
                            "4096 workers; ") && parsed->refcount == 1);
    rc = 0;
out:
    st_world_end(&h);
    json_decref(parsed);
    return rc;
}

/* server_recv: messages in a burst, each through the hop's place; one
 * with no body is bad; no place: the message dropped, the burst over;
 * a burst reads SERVE_RECV_BURST messages at most. */
static int st_recv_burst(void)
{
    st_hop_t h;
    server_peer_t **p = h.p;
    int rc = -1;
    S_CHECK(st_world(&h, 3, 4, 0) == 0);
    const char *first[] = {"a+", "DRAIN", "z", "b+", "DRAIN"};
    memcpy(h.in, first, sizeof first);
    h.nin = 5;
    server_recv(h.s);
    S_CHECK(st_msgs_are(&h, "drain 0; bad no body; drain 1; ") && h.next_in == 5 &&
            h.rx_news == 2 && h.rx_dones == 2 && p[0]->draining && p[1]->draining);
    const char *second[] = {"c+", "DRAIN+", "x", "z", "a+"};
    memcpy(h.in, second, sizeof second);
    h.nin = 5;
    h.next_in = 0;
    h.rx_fail = 1;
    server_recv(h.s);
    S_CHECK(st_msgs_are(&h, "") && h.next_in == 3 && !p[2]->draining && h.rx_news == 2);
    h.rx_fail = 0;
    server_recv(h.s);
    S_CHECK(st_msgs_are(&h, "bad no body; bad no body; ") && h.next_in == 5 &&
            h.rx_news == 3 && h.rx_dones == 3);
    S_CHECK(h.frames_made == 10 && h.frames_freed == 10);
    h.nin = h.next_in = 0;
    h.hb_left = SERVE_RECV_BURST + 2;
    server_clock(h.s, 1700);
    server_recv(h.s);
    S_CHECK(h.hb_left == 2 && h.rx_news == 3 + SERVE_RECV_BURST &&
            h.rx_dones == h.rx_news && p[0]->live.last_heard == 1700 && st_msgs_are(&h, ""));
    server_recv(h.s);
    S_CHECK(h.hb_left == 0 && h.rx_dones == 5 + SERVE_RECV_BURST &&
            h.frames_made == h.frames_freed);
    /* With no rx_new, the server's own place: read, handled, freed. */
    h.s->cfg.hop.rx_new = NULL;
    h.s->cfg.hop.rx_done = NULL;
    const char *third[] = {"c+", "DRAIN", "z", "a+", "PARTS"};
    memcpy(h.in, third, sizeof third);
    h.nin = 5;
    h.next_in = 0;
    h.rest_parts = 2;
    int made = h.frames_made;
    server_recv(h.s);
    S_CHECK(st_msgs_are(&h, "drain 2; bad no body; results 0; ") && p[2]->draining &&
            h.rx_news == 5 + SERVE_RECV_BURST && h.frames_made == made + 7 &&
            h.frames_made == h.frames_freed);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

/* The tick's timing: due tick_ms after the first turn and after each
 * tick, and at once while probing; the poll sleeps until then, at most
 * SERVE_PROBE_POLL_MS while probing, and not at all when a serve is
 * due. */
static int st_tick_due(void)
{
    st_hop_t h;
    int rc = -1;
    S_CHECK(st_world(&h, 1, 2, 0) == 0);
    server_turn(h.s, 2000);
    server_serve(h.s);
    S_CHECK(!server_tick_due(h.s) && server_sleep_ms(h.s) == 100);
    server_turn(h.s, 2099);
    S_CHECK(!server_tick_due(h.s) && server_sleep_ms(h.s) == 1);
    server_turn(h.s, 2100);
    S_CHECK(server_tick_due(h.s) && server_sleep_ms(h.s) == 0);
    server_tick(h.s);
    S_CHECK(!server_tick_due(h.s) && server_sleep_ms(h.s) == 0);   /* (all due) */
    server_serve(h.s);
    S_CHECK(server_sleep_ms(h.s) == 100);
    server_probe_until(h.s, 2150);
    S_CHECK(server_tick_due(h.s) && server_sleep_ms(h.s) == SERVE_PROBE_POLL_MS);
    server_turn(h.s, 2160);
    S_CHECK(!server_tick_due(h.s) && server_sleep_ms(h.s) == 40);
    server_turn(h.s, 2250);
    S_CHECK(server_tick_due(h.s) && server_sleep_ms(h.s) == 0);
    rc = 0;
out:
    st_world_end(&h);
    return rc;
}

int server_selftest(void)
{
    server_t *s = NULL;
    st_hop_t h;
    int rc = 0;
    if (st_serving() || st_capacity() || st_turns() || st_refills() || st_retries() ||
        st_losses() || st_big() || st_tasks_out() || st_cancels() ||
        st_hello() || st_messages() || st_stats() || st_phase() || st_end() ||
        st_frames_route() || st_intake() || st_stats_parsed() || st_recv_burst() || st_tick_due())
        rc = -1;
    if (st_world(&h, 0, 0, 0) == 0) {
        s = h.s;
        server_destroy(&h.s);
        if (h.s || !s)
            rc = -1;
    }
    st_world_end(&h);
    return rc;
}
#endif
