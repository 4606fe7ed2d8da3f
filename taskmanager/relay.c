/*
 * relay.c - spits-tm --serve: a relay between the job and TMs that cannot
 * reach it, or that should not all land on one JM.
 *
 * Upstream, a relay is a TM: the same link (link.c), protocol handlers
 * (protocol.c), pool queue and outbox (workers.c, outbox.c) and results
 * path (results.c), so it joins, re-attaches, drains and leaves as a TM
 * does. What differs is who runs the tasks: the pool is remote
 * (pool.opts.remote) and the relay hands its tasks to the TMs behind it,
 * on a ROUTER socket of its own, speaking the JM's side of the same
 * protocol (wire.h). Its files, top down (relay_int.h says which owns what):
 *
 *   relay.c           this file: set-up and tear-down, the server's hop,
 *                     and the turn: messages in, tasks out, heartbeats
 *                     and losses (the server's: serving/server.h)
 *   relay_upstream.c  upstream's WELCOME, PHASE, CANCEL and drain
 *   relay_recv.c      the TMs' HELLO, RESULTS, STATS, DRAIN, BYE
 *   relay_tasks.c     the server's source (the pool) and sink (TASKS)
 *   relay_copies.c    the copies upstream sent: the scheduler's tasks
 *   relay_records.c   records upstream
 *   relay_peers.c     who is behind: the table of TMs, loops of relays
 *
 * Nothing here cannot be lost. A TM that goes silent for the job's
 * --tm-timeout, or whose connection is gone, is lost, by the JM's own
 * rules and code (serving/liveness.c: a connection still bringing bytes
 * is not silence, nor is a stall of this loop): its copies run again on
 * the relay's other TMs at once (or go back upstream as RETURNED
 * records, when none is left), without waiting for the JM's own
 * timeout; and, as at the JM, copies of late tasks even out the tail
 * (serving/scheduler.h, the JM's scheduler). A relay that dies costs its
 * copies, which the JM re-sends after --tm-timeout; its TMs fall back to
 * their next hop (spits-tm --via) with their results.
 *
 * Threads: all of it runs on spits-tm's main thread (tm_private.h); the
 * pool is reached through its own functions (tm.h). libzmq's I/O thread
 * only calls relay_tasks_part_done, which drops a reference with an
 * atomic.
 */
#define _DEFAULT_SOURCE
#include <assert.h>
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
#include "util.h"
#include "zmqutil.h"

#define RELAY_TICK_MS 100          /* heartbeats and silence, checked this often */
#define RELAY_MONITOR_EP "inproc://spits-relay-monitor"
#define RELAY_END_WAIT_MS 2000     /* the most it waits for BYEs after END */

/* --- timers ------------------------------------------------------------- */

static void relay_tick(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    if (tm->now < r->live.next_tick && !server_probing(r->srv))
        return;
    r->live.next_tick = tm->now + RELAY_TICK_MS;
    loglimit_flush(&r->log.events, tm->now, 0);
    server_tick(r->srv);
}

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
    relay_copies_gone(arg, (rl_tm_t *)p, gone, n);
}

static int relay_hop_stopping(void *arg)
{
    return ((tm_relay_t *)arg)->tm->done != 0;
}

static server_t *relay_server(tm_relay_t *r)
{
    server_cfg_t cfg = {
        .tab = r->peers.tab, .sched = r->copies.sched,
        .hop = {r, relay_tasks_refill, relay_tasks_send, relay_hop_lost, relay_hop_stopping,
                relay_recv_hop_add, relay_recv_hop_joined, relay_recv_hop_job,
                .accept = relay_recv_hop_accept,
                .results = relay_recv_hop_results, .stats = relay_peers_hop_stats,
                .drain = relay_recv_hop_drain},
        .io = router_io(r->sock.l.sock),
        .rules = {.prefix = "relay: ", .loop = "the relay", .timeout_ms = 10000,
                  .hb_ms = 1000, .tick_ms = RELAY_TICK_MS},
        .probe = router_probe, .probe_arg = r->sock.conngen, .conngen = r->sock.conngen,
        .job_id = r->job.id};
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
    relay_recv_burst(r);
    server_reap(r->srv, 0);
    /* (draining, copies handed back here are not sent again: upstream) */
    if (tm->drain.active)
        relay_copies_give_back(r);
    relay_tasks_serve(r);
    server_reap(r->srv, 0);
    relay_tick(r);
    server_reap(r->srv, 0);
    /* (a task the scheduler released is answered upstream in the same
     * step: relay_copies_settle after each call that may release one) */
    assert(!r->copies.released);
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

    if (r)
        r->tm = tm;
    if (!r || relay_peers_init(&r->peers) != 0 || relay_copies_init(r) != 0 ||
        !(r->sock.conngen = conngen_new())) {
        spits_error("relay: out of memory");
        tm_relay_destroy(&r, 0);
        return NULL;
    }
    r->log.events.what = "TM events";
    r->down.part_min = spits_parts_min();
    /* (the job's max_task as the link knows it so far: relay_upstream_max_msg
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
    if (!(r->srv = relay_server(r))) {
        spits_error("relay: out of memory");
        tm_relay_destroy(&r, 0);
        return NULL;
    }
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
        router_end(r->sock.l.sock, r->job.phase, &peers, RELAY_END_WAIT_MS);
    }
    loglimit_flush(&r->log.events, spits_now_ms(), 1);
    router_listen_close(&r->sock.l);
    conngen_destroy(&r->sock.conngen);
    server_destroy(&r->srv);
    relay_copies_free(r);
    relay_peers_free(&r->peers);
    json_decref(r->job.body);
    spits_batch_free(&r->down.out);
    spits_batch_free(&r->rec.batch);
    spits_parts_free(&r->rec.parts);
    free(r);
    *rp = NULL;
}
