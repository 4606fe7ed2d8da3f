/*
 * relay.c - spits-tm --serve: a relay between the job and TMs that cannot
 * reach it, or that should not all land on one JM.
 *
 * Upstream, a relay is a TM: the same link (link.c), protocol handlers
 * (protocol.c), pool counts and outbox (workers.c, outbox.c) and results
 * path (results.c), so it joins, re-attaches, drains and leaves as a TM
 * does. What differs is who runs the tasks: the pool is remote
 * (pool.opts.remote), and the relay hands its tasks to the TMs behind it
 * through a server of its own (serving/server.h, the JM's too), speaking
 * the JM's side of the same protocol (wire.h). This file sets it up,
 * turns it, and passes on what upstream tells it; relay_int.h lists the
 * others.
 *
 * Nothing here cannot be lost. A TM that goes silent for the job's
 * --tm-timeout, or whose connection is gone, is lost by the JM's own rules
 * and code (serving/liveness.c): its copies run again on the relay's
 * other TMs at once (or go back upstream as RETURNED records, when none
 * is left), without waiting for the JM's own timeout. A relay that dies
 * costs its copies, which the JM sends again after --tm-timeout; its TMs
 * fall back to their next hop (spits-tm --via) with their results.
 */
#define _DEFAULT_SOURCE
#include <assert.h>
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
#include "util.h"

#define RELAY_MONITOR_EP "inproc://spits-relay-monitor"

/* --- the server's hop (serving/server.h) --------------------------------- */

static void relay_hop_lost(void *arg, server_peer_t *p, const char *why, int left, size_t n)
{
    char gone[320], safe[256];
    if (!left)
        snprintf(gone, sizeof gone, "lost (%s)", why);
    else if (why)   /* (a BYE's why: the job it refused, escaped for the log) */
        snprintf(gone, sizeof gone, "refused the job: %s",
                 spits_escape(safe, sizeof safe, why));
    else
        snprintf(gone, sizeof gone, "left");
    tm_relay_t *r = arg;
    if (loglimit_allow(&r->events, r->tm->now))
        spits_info("relay: %s %s:%ld %s; %zu task(s) to run again",
                   p->proc.relay ? "relay" : "TM", p->proc.host, p->proc.pid, gone, n);
    copies_peer_gone(r->copies);   /* (with none left, nothing runs them here) */
}

static int relay_hop_stopping(void *arg)
{
    return ((tm_relay_t *)arg)->tm->done != 0;
}

/* The records of copies go up through the outbox. */
static void relay_copies_up(void *arg, const void *ph, spits_batch_t *b, spits_parts_t *parts,
                            size_t held)
{
    tm_relay_t *r = arg;
    tm_pool_remote_done(&r->tm->pool, ph, b, parts, held);
}

static void relay_copies_fail(void *arg, const char *why)
{
    tm_pool_fail(&((tm_relay_t *)arg)->tm->pool, why);
}

size_t tm_relay_take(tm_t *tm, const spits_hdr_t *hdr, spits_reader_t *reader, spits_rx_t *rx)
{
    /* (counted running before any is answered) */
    tm_pool_remote_taken(&tm->pool, hdr->count);
    size_t n = copies_take(tm->relay->copies, tm->job.current, hdr->phase, reader, rx);
    assert(n == hdr->count);   /* (the parser matched the count) */
    return n;
}

static server_t *relay_server(tm_relay_t *r, sched_t *sched)
{
    uint64_t part_min = spits_parts_min();
    server_cfg_t cfg = {
        .tab = r->peers.tab, .sched = sched, .src = copies_source(r->copies),
        .hop = {r, relay_hop_lost, relay_hop_stopping, NULL, relay_peers_hop_joined,
                .accept = relay_peers_hop_accept, .stats = relay_peers_hop_stats,
                .drain = relay_peers_hop_drain},
        .io = router_io(r->sock.l.sock),
        .rules = {.prefix = "relay: ", .loop = "the relay", .timeout_ms = 10000,
                  .hb_ms = 1000, .tick_ms = SERVE_TICK_MS},
        .probe = router_probe, .probe_arg = r->sock.conngen, .conngen = r->sock.conngen,
        .result_parts = part_min != UINT64_MAX, .part_min = part_min, .borrowed = 1};
    return server_new(&cfg);
}

void tm_relay_turn(tm_t *tm)
{
    tm_relay_t *r = tm->relay;
    server_turn(r->srv, tm->now);
    if (r->sock.l.zap)
        spits_zap_handle(r->sock.l.zap, tm->now);
    if (router_monitor_read(r->sock.l.mon, r->sock.conngen, r->sock.l.zap, tm->now))
        server_probe_until(r->srv, tm->now + LIVENESS_PROBE_MS);
    server_recv(r->srv);
    server_reap(r->srv, 0);
    /* (draining, copies handed back here are not sent again: upstream) */
    if (tm->drain.active)
        copies_give_back(r->copies);
    if (server_job(r->srv, NULL) && tm->pool_started && !tm->drain.active)
        server_serve(r->srv);
    server_reap(r->srv, 0);
    if (server_tick_due(r->srv)) {
        loglimit_flush(&r->events, tm->now, 0);
        server_tick(r->srv);
        server_reap(r->srv, 0);
    }
    assert(!copies_unsettled(r->copies));
}

/* --- set-up and tear-down ----------------------------------------------- */

/* The job's keys (CURVE: the JM's server key, and the client key it
 * admits), so a TM's key file works for the relay as for the JM: 0, or
 * -1 (said). */
static int relay_keys(tm_relay_t *r, spits_keys_t *keys)
{
    tm_t *tm = r->tm;
    char path[PATH_MAX], err[1024];

    if (tm->opts.key_file)
        snprintf(path, sizeof path, "%s", tm->opts.key_file);
    else
        snprintf(path, sizeof path, "%s/%s", tm->opts.jobdir, SPITS_JM_KEY_FILE);
    if (spits_keys_read(path, keys, 1, err, sizeof err) != 0) {
        spits_error("%s (a relay serves with the job's server key: give it "
                    "the job dir's %s, or a copy with --key-file)", err,
                    SPITS_JM_KEY_FILE);
        return -1;
    }
    if (tm->link.keys.server_public[0] &&
        strcmp(keys->server_public, tm->link.keys.server_public) != 0) {
        spits_error("%s is not the key of the job this relay joins (a stale "
                    "copy?)", path);
        return -1;
    }
    return 0;
}

tm_relay_t *tm_relay_new(tm_t *tm)
{
    tm_relay_t *r = calloc(1, sizeof *r);
    spits_keys_t keys;
    char err[256];
    sched_t *sched = NULL;
    copies_hop_t up = {r, relay_copies_up, relay_copies_fail};

    if (r)
        r->tm = tm;
    if (!r || relay_peers_init(&r->peers) != 0 ||
        !(r->copies = copies_new(&up, r->peers.tab, &sched)) ||
        !(r->sock.conngen = conngen_new())) {
        spits_error("relay: out of memory");
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    r->events.what = "TM events";
    /* (the job's max_task as the link knows it so far: relay_max_msg
     * follows it) */
    r->sock.max_task = tm->link.max_task;
    if (!tm->opts.insecure && relay_keys(r, &keys) != 0) {
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    if (router_listen(&r->sock.l, tm->link.context, tm->opts.serve, r->sock.max_task,
                      tm->opts.insecure ? NULL : keys.client_public, keys.server_secret,
                      RELAY_MONITOR_EP, err, sizeof err) != 0) {
        spits_error("relay: %s", err);
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    if (!(r->srv = relay_server(r, sched))) {
        spits_error("relay: out of memory");
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    copies_set_server(r->copies, r->srv);
    spits_info("relay: serving task managers at %s", r->sock.l.endpoint);
    tm->pool.opts.remote = 1;
    return r;
}

void *tm_relay_socket(const tm_relay_t *r)
{
    return r->sock.l.sock;
}

void *tm_relay_zap_socket(const tm_relay_t *r)
{
    return r->sock.l.zap ? spits_zap_socket(r->sock.l.zap) : NULL;
}

/* (server_end_t.bye) A TM behind us answered the job's END; the relay
 * is closing, so its copies go back with the relay's and no TM takes
 * its slot. */
static void relay_end_bye(void *arg, server_peer_t *p)
{
    server_leave(arg, p);
}

void tm_relay_destroy(tm_relay_t **rp, int job_over)
{
    tm_relay_t *r = *rp;
    if (!r)
        return;
    /* The job is over: the TMs behind us are told so, as the JM does. */
    server_end_t e = {r->srv, relay_end_bye, NULL, r->srv};
    if (job_over && r->sock.l.sock && r->srv) {
        router_peers_t peers = server_end_peers(&e);
        uint32_t wire = 0;
        server_job(r->srv, &wire);
        router_end(r->sock.l.sock, wire, &peers, SERVE_END_WAIT_MS);
    }
    loglimit_flush(&r->events, spits_now_ms(), 1);
    router_listen_close(&r->sock.l);
    conngen_destroy(&r->sock.conngen);
    server_destroy(&r->srv);
    copies_destroy(&r->copies);
    peertab_destroy(&r->peers.tab);
    free(r);
    *rp = NULL;
}

/* --- what upstream tells ----------------------------------------------- */

/* The largest message a TM may send us follows the job's largest task or
 * result (for connections made from now on, as libzmq applies it). */
static void relay_max_msg(tm_relay_t *r)
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
    uint32_t was;
    int phase_changed = server_job(r->srv, &was) && phase != was;

    if (!copy) {
        spits_error("relay: out of memory keeping the job's %s",
                    spits_wire_type_name(type));
        tm->done = -1;
        return;
    }
    json_object_del(copy, "attach");
    json_object_del(copy, "result_parts");   /* (upstream's, to this relay) */
    /* (a TM says "(relay)" by this, whatever option led it here) */
    json_object_set_new(copy, "relay", json_true());
    /* (a WELCOME: upstream took our capacity from our HELLO, which may
     * differ from our last STATS; the next turn tells it anew) */
    if (type == SPITS_MSG_WELCOME)
        r->peers.told_workers = r->peers.told_slots = -1;
    server_set_job(r->srv, phase, copy);   /* (and the rules it says) */
    json_decref(copy);
    hopchain_job(&r->peers.chain);
    server_phase(r->srv, phase);
    server_due_all(r->srv);   /* (a job, or a phase: every TM may be served) */
    copies_phase(r->copies, tm->job.current, tm->job.current ? tm->job.current->wire : 0);
    relay_max_msg(r);
    if (!phase_changed)
        return;
    copies_reset(r->copies);
    server_send_phase(r->srv);
}

void tm_relay_cancel(tm_t *tm, const uint64_t *ids, size_t n)
{
    copies_drop(tm->relay->copies, ids, n);
}

void tm_relay_drain(tm_t *tm)
{
    /* What the TMs behind have queued comes back at once (RETURNED), and
     * what they run finishes (a relay behind hands back what it runs
     * too): the drain then waits for no prefetch. What comes back goes
     * upstream (relay.c's turn gives back what nothing runs while the
     * relay drains). */
    if (tm->job.current)
        server_cancel_held(tm->relay->srv, tm->job.current->wire, 1);
}
