/*
 * relay_peers.c - who is behind a relay (see relay_int.h): the table of
 * TMs (and relays) by routing id, their joins, loops of relays, and what
 * upstream is told of them: HELLO's "relay" object, and STATS' capacity
 * (the server's sums, server_capacity) and "behind".
 *
 * Table: serving/peertab.h's, the JM's too (keyed SipHash of the routing
 * id, stable entries, a live set, the dead kept up to SERVE_KEEP_DEAD);
 * what is the relay's is the rest of rl_tm_t. Loops: serving/hopchain.h's
 * rules; what is the relay's is what they mean (a log line, or the relay
 * stops) and its own HELLO's "below".
 */
#define _DEFAULT_SOURCE
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "behind.h"
#include "escape.h"
#include "hopchain.h"
#include "log.h"
#include "relay_int.h"

#define RELAY_STATS_MIN_MS 250     /* capacity that fell goes up this often at
                                      most; capacity that grew, at once */

/* (peertab hands out entries as their header: it must come first) */
_Static_assert(offsetof(rl_tm_t, sv) == 0, "rl_tm_t begins with its server_peer_t");

/* An entry goes, evicted or with the table (its copies were settled as
 * it went; its runs stay in the server's totals). */
static void relay_peers_free_tm(peertab_entry_t *e)
{
    json_decref(((const rl_tm_t *)e)->worker_res);
}

int relay_peers_init(rl_peers_t *p)
{
    memset(p, 0, sizeof *p);
    p->tab = peertab_new(sizeof(rl_tm_t), SERVE_KEEP_DEAD, 0, NULL, relay_peers_free_tm, NULL);
    return p->tab ? 0 : -1;
}

void relay_peers_hop_stats(void *arg, server_peer_t *p, json_t *body, const spits_stats_t *st,
                           json_t *parsed, int changed, int before)
{
    rl_tm_t *t = (rl_tm_t *)p;
    (void)arg, (void)body, (void)parsed, (void)before, (void)changed;
    /* (a TM's own, checked, passed up as it said it: keys of a later
     * release too; upstream checks it again) */
    if (!t->sv.proc.relay && st->worker_res) {
        json_decref(t->worker_res);
        t->worker_res = json_incref(st->worker_res);
        t->worker_res_bytes = json_dumpb(t->worker_res, NULL, 0, JSON_COMPACT);
    }
}

/* A relay's HELLO said "relay": 0 (its place in *place), 1 when it is a
 * loop (logged; the HELLO is refused; tm->done -1 when the relay is its
 * own upstream, or the loop lasts while we have no job), -1 when
 * malformed. */
static int relay_peers_check_loop(tm_relay_t *r, const json_t *relay, hopchain_place_t *place)
{
    const char *ep = json_string_value(json_object_get(relay, "endpoint"));
    char sep[256], sid[HOPCHAIN_ID_MAX * 4];
    hopchain_verdict_t v = hopchain_check(&r->peers.chain, r->tm->link.routing_id, relay,
                                          server_job(r->srv, NULL) != NULL, r->tm->now,
                                          place);
    if (v == HOPCHAIN_BAD || v == HOPCHAIN_OK)
        return v == HOPCHAIN_OK ? 0 : -1;
    /* (a peer's strings, escaped for the log: escape.h) */
    spits_escape(sep, sizeof sep, ep ? ep : "?");
    spits_escape(sid, sizeof sid, place->id);
    if (v == HOPCHAIN_SELF)
        spits_error("relay loop: this relay's upstream (%s) is itself; point "
                    "it at the job manager or at another relay",
                    r->tm->link.hops.endpoint);
    else if (v == HOPCHAIN_FATAL)
        spits_error("relay loop: the relay at %s (%s), behind this one, is "
                    "also upstream of it; a relay must not point at a relay "
                    "behind it", sep, sid);
    else if (loglimit_allow(&r->events, r->tm->now))
        spits_warn("relay: refused the relay at %s (%s): this relay is behind "
                   "it (a loop); it should move on to another hop", sep, sid);
    if (v != HOPCHAIN_LOOP)
        r->tm->done = -1;
    return 1;
}

/* --- joins (the server's hop) -------------------------------------------- */

/* A TM (or a relay) may join, re-attach or repeat itself, unless it closes
 * a loop of relays or the relay has no job yet: it then says HELLO again
 * each second. */
int relay_peers_hop_accept(void *arg, server_peer_t *p, const spits_hello_t *h, void **ctx,
                           const char **why)
{
    tm_relay_t *r = arg;
    int loop = 0;
    (void)p;
    r->peers.hello.id[0] = 0;
    r->peers.hello.nbelow = 0;
    if (h->relay && (loop = relay_peers_check_loop(r, h->relay, &r->peers.hello)) < 0) {
        *why = "HELLO with a bad relay id";
        return -1;
    }
    if (loop || !server_job(r->srv, NULL))
        return 0;
    *ctx = &r->peers.hello;
    return 1;
}

void relay_peers_hop_joined(void *arg, server_peer_t *p, const server_join_t *j)
{
    tm_relay_t *r = arg;
    rl_tm_t *t = (rl_tm_t *)p;
    assert(j->ctx == &r->peers.hello);   /* (this same message's accept) */
    if (j->renewed) {   /* (a new process: its plan is said anew) */
        json_decref(t->worker_res);
        t->worker_res = NULL;
    }
    t->place = r->peers.hello;
    if (loglimit_allow(&r->events, r->tm->now))
        spits_info("relay: %s %s:%ld %s with %d worker(s)",
                   j->h->relay ? "relay" : "TM", t->sv.proc.host, j->h->pid,
                   j->first ? "joined" : "re-attached", t->sv.sched.credit.workers);
}

void relay_peers_hop_drain(void *arg, server_peer_t *p)
{
    tm_relay_t *r = arg;
    if (loglimit_allow(&r->events, r->tm->now))
        spits_info("relay: TM %s:%ld is draining", p->proc.host, p->proc.pid);
}

/* --- what upstream is told ---------------------------------------------- */

/* The capacity of the TMs behind us (server_capacity), as far as a
 * HELLO or STATS may say (wire.h; upstream caps our workers by the TMs:
 * spits_relay_cap). */
static void relay_peers_cap(const tm_relay_t *r, int *workers, int *slots, long *tms)
{
    const server_cap_t *c = server_capacity(r->srv);
    *workers = c->workers > SPITS_WORKERS_MAX ? SPITS_WORKERS_MAX : (int)c->workers;
    *slots = c->slots > SPITS_SLOTS_MAX ? SPITS_SLOTS_MAX : (int)c->slots;
    *tms = c->tms > SPITS_RELAY_TMS_MAX ? SPITS_RELAY_TMS_MAX : (long)c->tms;
}

void tm_relay_capacity(const tm_relay_t *r, int *workers, int *slots)
{
    long tms;
    relay_peers_cap(r, workers, slots, &tms);
}

json_t *tm_relay_hello_json(const tm_relay_t *r)
{
    const rl_peers_t *p = &r->peers;
    json_t *below = json_array();
    int64_t now = r->tm->now;

    /* Relays behind us still talking (a lost one may be elsewhere now),
     * and those heard from lately. */
    for (size_t i = 0; i < peertab_live_count(p->tab); i++) {
        const rl_tm_t *t = peertab_live_at(p->tab, i);
        if (t->place.id[0] &&
            now - t->sv.live.last_heard <= 3 * server_rules(r->srv)->hb_ms &&
            hopchain_list_place(below, &t->place))
            break;
    }
    hopchain_list_heard(&p->chain, below, now);
    int workers, slots;
    long tms;
    relay_peers_cap(r, &workers, &slots, &tms);
    return json_pack("{s:s, s:s, s:o, s:I}", "id", r->tm->link.routing_id,
                     "endpoint", r->sock.l.endpoint, "below", below, "tms", (json_int_t)tms);
}

/* Slots that grew go up in the turn they grew: a TM that joined has idle
 * workers, and only upstream can send it work (the relay holds what it
 * was told to, no more), so any wait here is its wait. A burst of joins
 * read in one turn is one STATS. Slots that fell (a TM left or drains)
 * idle no one: they go up every RELAY_STATS_MIN_MS at most, unless none
 * is left: what upstream sends then only comes back to it (a relay with
 * no TM gives its copies back), so that goes up at once too. */
int tm_relay_stats_due(const tm_relay_t *r, int64_t since_last)
{
    const rl_peers_t *p = &r->peers;
    int workers, slots;
    long tms;
    relay_peers_cap(r, &workers, &slots, &tms);
    if (workers == p->told_workers && slots == p->told_slots)
        return 0;
    return since_last >= RELAY_STATS_MIN_MS || slots > p->told_slots ||
           (slots == 0 && p->told_slots > 0);
}

/* Runs and busy time: the server's totals, each process's last STATS (a
 * TM's are cumulative over its life: one lost and back counts once). */
void tm_relay_stats(tm_relay_t *r, json_t *stats)
{
    rl_peers_t *p = &r->peers;
    const server_stats_t *ss = server_stats(r->srv);
    size_t alive = peertab_live_count(p->tab);
    int workers, slots;
    long tms;
    relay_peers_cap(r, &workers, &slots, &tms);
    json_t *behind = spits_behind_new(alive, ss->joins, ss->leaves, ss->losses);
    size_t res_bytes = 0;
    for (size_t i = 0; behind && i < alive; i++) {
        const rl_tm_t *t = peertab_live_at(p->tab, i);
        spits_behind_tm_t b = {t->sv.proc.host, t->sv.proc.pid, t->sv.sched.credit.workers,
                               t->sv.proc.runs, t->sv.proc.relay, t->worker_res,
                               t->worker_res_bytes};
        if (!spits_behind_add(behind, &b, &res_bytes))
            break;
    }
    json_object_set_new(stats, "runs", json_integer((json_int_t)ss->runs));
    json_object_set_new(stats, "busy_s", json_real(ss->busy_s));
    json_object_set_new(stats, "workers", json_integer(workers));
    json_object_set_new(stats, "slots", json_integer(slots));
    json_object_set_new(stats, "tms", json_integer((json_int_t)tms));
    json_object_set_new(stats, "behind", behind);
    p->told_workers = workers;
    p->told_slots = slots;
}
