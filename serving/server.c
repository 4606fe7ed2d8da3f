/*
 * server.c - the serving both hops do alike: sends and their marks, the
 * serve loop, the tick, the reaping of peers gone, and CANCELs (see
 * server.h). It calls the scheduler, credit, liveness, joins' settle gate
 * and cancels.c below it, and its hop's functions; nothing here knows
 * which hop it serves.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cancels.h"
#include "constants.h"
#include "credit.h"
#include "server.h"
#include "util.h"
#include "wire.h"

struct server {
    server_cfg_t cfg;
    int64_t now;
    int64_t probe_until;
    uint32_t wire;               /* the phase heartbeats carry */
    size_t rr;                   /* round-robin start of the next walk */
    int *due;                    /* slots of peers to look at next serve */
    size_t ndue, capdue;
    int all;                     /* the next serve walks every peer */
    int starved;                 /* a peer was left with room unfilled */
    int dry;                     /* this serve's refills found nothing */
    int serving;                 /* inside server_serve (asserts) */
    int gone;                    /* a peer is marked gone */
    int64_t gone_at;             /* ...the first, since the last reaping */
    spits_batch_t out;           /* CANCELs being built */
    server_stats_t st;
};

server_t *server_new(const server_cfg_t *cfg)
{
    const server_hop_t *h = &cfg->hop;
    assert(cfg->tab && cfg->sched && cfg->probe && h->send && h->refill &&
           h->send_tasks && h->lost && h->pending && h->stopping && h->who);
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

/* --- peers ------------------------------------------------------------- */

void server_peer_init(server_peer_t *p)
{
    p->sched.slot = p->peer.slot;
    p->draining = p->stalled = p->gone = p->due = 0;
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

int server_send(server_t *s, server_peer_t *p, const void *buf, size_t len, int more)
{
    if (s->cfg.hop.send(s->cfg.hop.arg, p, buf, len, more) == 0) {
        p->live.last_sent = s->now;
        return 0;
    }
    int err = errno;
    if (err == EHOSTUNREACH && !p->gone) {
        p->gone = 1;
        if (!s->gone)
            s->gone_at = s->now;
        s->gone = 1;
    } else if (err == EAGAIN) {
        p->stalled = 1;
    }
    errno = err;
    return -1;
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
    const server_hop_t *h = &s->cfg.hop;
    while (server_wants(s, p)) {
        int room = workers_first ? credit_room_workers(&p->sched.credit)
                                 : credit_room(&p->sched.credit);
        if (room <= 0)
            return;
        size_t want = (size_t)room < SERVE_BATCH_TASKS ? (size_t)room : SERVE_BATCH_TASKS;
        if (!s->dry && !sched_has_fresh(sc) && h->refill(h->arg, want) == 0)
            s->dry = 1;
        size_t n = sched_pick(sc, &p->sched, want, SERVE_BATCH_BYTES, others);
        size_t sent = n ? h->send_tasks(h->arg, p, sched_picked(sc), n) : 0;
        if (n)
            sched_sent_part(sc, &p->sched, sent);
        if (sent < n)
            return;
        if (n < want) {
            /* (work or bytes ran out with room left: more may come) */
            if (!workers_first && credit_room(&p->sched.credit) > 0)
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
    const server_hop_t *h = &s->cfg.hop;
    s->dry = 0;
    sched_clock(sc, s->now);
    if (s->starved && !s->all) {
        if (!sched_has_fresh(sc) && h->refill(h->arg, SERVE_BATCH_TASKS) == 0)
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

/* --- losses ------------------------------------------------------------- */

static void server_lose(server_t *s, server_peer_t *p, const char *why)
{
    p->gone = 0;
    server_due_all(s);   /* (its copies run again on the others) */
    s->cfg.hop.lost(s->cfg.hop.arg, p, why);
    assert(!p->peer.alive);
}

void server_tick(server_t *s)
{
    unsigned char hb[SPITS_HDR_SIZE];
    int probing = server_probing(s);
    spits_wire_encode_empty(hb, SPITS_MSG_HEARTBEAT, s->wire);
    /* (from the end: a peer lost leaves the live set, the last taking
     * its place) */
    for (size_t i = peertab_live_count(s->cfg.tab); i-- > 0;) {
        server_peer_t *p = peertab_live_at(s->cfg.tab, i);
        const char *host;
        long pid;
        s->cfg.hop.who(s->cfg.hop.arg, p, &host, &pid);
        int v = liveness_judge(&s->cfg.rules, &p->live, s->now, probing, s->cfg.probe,
                               s->cfg.probe_arg, host, pid);
        if (v == LIVENESS_LOST) {
            char why[64];
            snprintf(why, sizeof why, "silent for %.1f s",
                     (double)(s->now - p->live.last_heard) / 1000.0);
            server_lose(s, p, why);
        } else if (v == LIVENESS_HEARTBEAT && !p->gone &&
                   server_send(s, p, hb, sizeof hb, 0) == 0) {
            s->st.heartbeats++;
        }
    }
    /* (time passed: settling ends, copies become late) */
    server_due_all(s);
}

void server_reap(server_t *s, int force)
{
    const server_hop_t *h = &s->cfg.hop;
    if (!s->gone)
        return;
    /* A drained TM sent its last RESULTS, STATS and BYE and closed: a
     * send may find its connection gone before they are read. So they
     * are read first, for reap_wait_ms at most, and it leaves instead of
     * being lost. */
    if (!force && s->now - s->gone_at < s->cfg.reap_wait_ms && h->pending(h->arg))
        return;
    s->gone = 0;
    for (size_t i = peertab_live_count(s->cfg.tab); i-- > 0;) {
        server_peer_t *p = peertab_live_at(s->cfg.tab, i);
        if (p->gone)
            server_lose(s, p, "disconnected");
    }
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

#ifdef SPITS_SELFTEST
#include <string.h>

/* A hop of three peers (slots 0, 1, 2) with 2 workers and 4 slots each,
 * whose sends are noted in a log ("slot:n " per TASKS message) and fail
 * as a peer's fail says, once; its source has avail tasks. */
typedef struct {
    server_peer_t sp;
} st_peer_t;

typedef struct {
    server_t *s;
    sched_t *sc;
    peertab_t *tab;
    uint64_t next_id, avail;
    int fail[3];                 /* errno of a peer's next send (once) */
    char log[256];
    int lost_slot;
    char lost_why[64];
    int pending, stopping;
    int64_t quiet;               /* what the probe says */
} st_hop_t;

static int st_send(void *arg, server_peer_t *p, const void *buf, size_t len, int more)
{
    st_hop_t *h = arg;
    (void)buf, (void)len, (void)more;
    if (h->fail[p->peer.slot]) {
        errno = h->fail[p->peer.slot];
        h->fail[p->peer.slot] = 0;
        return -1;
    }
    return 0;
}

static size_t st_refill(void *arg, size_t want)
{
    st_hop_t *h = arg;
    size_t n = 0;
    sched_task_t *head = NULL, *tail = NULL;
    for (; n < want && h->avail; n++, h->avail--) {
        sched_task_t *t = calloc(1, sizeof *t);
        if (!t)
            break;
        t->id = h->next_id++;
        t->len = 1;
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

static size_t st_send_tasks(void *arg, server_peer_t *p, sched_task_t *const *tasks, size_t n)
{
    st_hop_t *h = arg;
    char one[16];
    (void)tasks;
    if (server_send(h->s, p, "T", 1, 0) != 0)
        return 0;
    snprintf(one, sizeof one, "%d:%zu ", p->peer.slot, n);
    strncat(h->log, one, sizeof h->log - strlen(h->log) - 1);
    return n;
}

static void st_lost(void *arg, server_peer_t *p, const char *why)
{
    st_hop_t *h = arg;
    sched_lost(h->sc, &p->sched);
    peertab_set_alive(h->tab, p, 0);
    h->lost_slot = p->peer.slot;
    snprintf(h->lost_why, sizeof h->lost_why, "%s", why);
}

static int st_pending(void *arg)
{
    return ((st_hop_t *)arg)->pending;
}

static int st_stopping(void *arg)
{
    return ((st_hop_t *)arg)->stopping;
}

static void st_who(void *arg, const server_peer_t *p, const char **host, long *pid)
{
    (void)arg;
    *host = "h";
    *pid = p->peer.slot;
}

static int64_t st_probe(const liveness_t *l, void *arg)
{
    (void)l;
    return ((st_hop_t *)arg)->quiet;
}

/* The log so far is want; it starts again. */
static int st_log_is(st_hop_t *h, const char *want)
{
    int ok = strcmp(h->log, want) == 0;
    if (!ok)
        fprintf(stderr, "server selftest: sent \"%s\", expected \"%s\"\n", h->log, want);
    h->log[0] = 0;
    return ok;
}

/* One result of the copies p holds comes back: a slot of room. */
static void st_result(st_hop_t *h, server_peer_t *p)
{
    size_t n;
    uint64_t hash;
    sched_task_t *const *held = sched_held(h->sc, &p->sched, &n);
    if (!n)
        return;
    uint64_t id = held[0]->id;
    sched_credit(h->sc, &p->sched, 1);
    sched_record(h->sc, &p->sched, id, SPITS_ST_OK, 0, &hash);
    server_heard(h->s, p);
    server_due(h->s, p);
}

#define S_CHECK(c) do { if (!(c)) { fprintf(stderr, "server selftest: " \
    "failed at line %d: %s\n", __LINE__, #c); goto out; } } while (0)

int server_selftest(void)
{
    static sched_stats_t st;
    st_hop_t h = {.avail = 100, .lost_slot = -1, .quiet = -1};
    server_peer_t *p[3] = {NULL};
    int rc = -1;
    server_cfg_t cfg = {
        .hop = {&h, st_send, st_refill, st_send_tasks, st_lost, st_pending,
                st_stopping, st_who},
        .rules = {.prefix = "", .loop = "the test", .timeout_ms = 1000, .hb_ms = 100,
                  .tick_ms = 100},
        .probe = st_probe, .probe_arg = &h, .reap_wait_ms = 250};

    h.sc = sched_new(1, 3, &st);
    h.tab = peertab_new(sizeof(st_peer_t), 4, 16, NULL, NULL);
    S_CHECK(h.sc && h.tab);
    cfg.tab = h.tab;
    cfg.sched = h.sc;
    h.s = server_new(&cfg);
    S_CHECK(h.s);
    server_clock(h.s, 1000);
    for (int i = 0; i < 3; i++) {
        char rid[2] = {(char)('a' + i), 0};
        p[i] = peertab_add(h.tab, rid, 1);
        S_CHECK(p[i] && p[i]->peer.slot == i);
        server_peer_init(p[i]);
        credit_set(&p[i]->sched.credit, 2, 4);
        sched_joined(h.sc, &p[i]->sched, 0);
        p[i]->live.last_heard = p[i]->live.last_sent = 1000;
    }
    /* Two alive: each first up to its workers, then its prefetch. */
    peertab_set_alive(h.tab, p[0], 1);
    peertab_set_alive(h.tab, p[1], 1);
    server_peer_join(h.s, p[0]);
    server_peer_join(h.s, p[1]);
    server_due(h.s, p[0]);
    server_due(h.s, p[1]);
    S_CHECK(!server_serve_due(h.s));
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:2 1:2 0:2 1:2 ") && !server_serve_due(h.s));
    /* Nothing due: nothing sent. A result makes its peer due: only it is
     * looked at. */
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    st_result(&h, p[1]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "1:1 "));

    /* A full pipe stalls a peer until it speaks; what it was picked goes
     * to the next peer with room. */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    h.fail[0] = EAGAIN;
    server_serve(h.s);
    S_CHECK(p[0]->stalled && st_log_is(&h, "1:1 "));
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    server_heard(h.s, p[0]);
    server_due(h.s, p[0]);
    server_serve(h.s);
    S_CHECK(!p[0]->stalled && st_log_is(&h, "0:1 "));

    /* Draining, settling and a stopping hop get nothing. */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    p[0]->draining = 1;
    joins_settle_begin(&p[1]->settle, 1, 1000, 5000);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    joins_settle_results(&p[1]->settle, 1);
    p[0]->draining = 0;
    h.stopping = 1;
    server_due_all(h.s);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, ""));
    h.stopping = 0;
    server_due_all(h.s);
    server_serve(h.s);   /* (the second walk of all: it starts at 1) */
    S_CHECK(st_log_is(&h, "1:1 0:1 "));

    /* The source runs dry with room left: the peer is starved, and fresh
     * work later is served without any peer speaking. */
    h.avail = 0;
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "") && !server_serve_due(h.s));
    h.avail = 10;
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 1:1 "));

    /* A gone connection: marked, nothing more sent to it, lost only once
     * no message waits (or reap_wait_ms passed). */
    st_result(&h, p[0]);
    st_result(&h, p[1]);
    h.fail[1] = EHOSTUNREACH;
    server_serve(h.s);
    S_CHECK(p[1]->gone && p[1]->peer.alive && st_log_is(&h, "0:1 "));
    h.pending = 1;
    server_reap(h.s, 0);
    S_CHECK(p[1]->peer.alive && h.lost_slot == -1);
    server_clock(h.s, 1250);
    server_reap(h.s, 0);
    S_CHECK(!p[1]->peer.alive && h.lost_slot == 1 && !strcmp(h.lost_why, "disconnected"));
    S_CHECK(!p[1]->gone && server_serve_due(h.s));
    /* Its 4 copies run again on peer 0, as it has room: 1 slot. */
    S_CHECK(sched_has_retries(h.sc));
    st_result(&h, p[0]);
    server_serve(h.s);
    S_CHECK(st_log_is(&h, "0:1 "));

    /* The tick: a quiet peer gets a heartbeat, a silent one is lost. */
    peertab_set_alive(h.tab, p[2], 1);
    server_peer_join(h.s, p[2]);
    p[0]->live.last_heard = 1250;
    p[0]->live.last_sent = 1250;
    p[2]->live.last_heard = 100;
    h.lost_slot = -1;
    server_clock(h.s, 1400);
    server_tick(h.s);
    S_CHECK(h.lost_slot == 2 && !strcmp(h.lost_why, "silent for 1.3 s"));
    S_CHECK(server_stats(h.s)->heartbeats == 1 && p[0]->live.last_sent == 1400);
    server_tick(h.s);
    S_CHECK(server_stats(h.s)->heartbeats == 1 && server_serve_due(h.s));
    rc = 0;
out:
    server_destroy(&h.s);
    sched_destroy(&h.sc);
    peertab_destroy(&h.tab);
    return rc;
}
#endif
