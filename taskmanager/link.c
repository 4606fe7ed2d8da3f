/*
 * link.c - spits-tm's connection to the JM.
 *
 * One DEALER socket, the main thread's alone, connected to the JM's
 * ROUTER. This file finds the JM (DIR/jm.json, or --connect), sets up
 * CurveZMQ from the job's key file, connects, and sends (through
 * linksay.c): HELLO (also after each reconnect), STATS, heartbeats and,
 * at the end, BYE.
 *
 * A JM that stops answering while its connection brings no bytes
 * either (a large message in flight is no silence: jm_busy), or whose
 * connection drops (the socket's monitor says so), is looked for again:
 * the TM re-reads jm.json once a second, since a restarted or resumed JM
 * may listen elsewhere with other keys, reconnects, and says HELLO again,
 * for --reconnect-timeout seconds. Queued tasks and unsent results are
 * kept meanwhile. Each outage (a silent JM, a dropped connection, a new
 * socket) bumps link.status.attach, sent in every HELLO: the JM takes a HELLO
 * with a number it has welcomed as a queued copy, not as a new outage.
 *
 * With --via, the TM reaches the JM through relays: its hops are the
 * relays in the order given, then the JM itself (jm_endpoint). It starts
 * on the first. A hop that has not said WELCOME within TM_HOP_TIMEOUT_MS
 * of being connected to, or of being lost (TM_HOP_PATIENCE_MS when the
 * handshake on a new connection went through: it is up, but busy, or
 * waits for its own upstream), is left for the next, round
 * and round, until --reconnect-timeout (or, before the first WELCOME,
 * --wait) gives up; a relay that refuses the handshake is left at once.
 * Each round that found no hop doubles the wait (TM_HOP_DOUBLINGS_MAX).
 * Each move is a new socket, so the new hop counts a re-attach and our
 * HELLO says what we hold; unsent results wait for its WELCOME. jm.json
 * only ever moves the JM's hop: a relay that works is kept. All hops
 * take the same keys (the job's key file).
 *
 * A first handshake that fails is an error (the key file or the mode is
 * wrong), except with a job dir, where jm.json and tm.key were seen to
 * agree: a JM that closes as the job ends cuts handshakes too, so the
 * error waits KEYS_SETTLE_MS for report.json to say the job is over.
 *
 * What the JM sends back is handled in protocol.c; link.c only keeps the
 * time it was last heard from and the connection it came over
 * (link.live.last_heard and link.live.fd, set there).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobdir.h"
#include "log.h"
#include "pyjob.h"
#include "tm_private.h"
#include "util.h"
#include "zmqutil.h"

void tm_link_init(tm_t *tm, tm_link_pending_fn pending)
{
    tm->link.pending = pending;
    tm->link.max_task = 1LL << 30;
    spits_hostname(tm->link.host, sizeof tm->link.host);
    snprintf(tm->link.routing_id, sizeof tm->link.routing_id, "tm-");
    spits_random_hex(tm->link.routing_id + 3, 8);
    tm->link.live.heartbeat_ms = 1000;
    tm->link.live.lost_ms = 5000;
    tm->link.live.fd = -1;
}

void tm_link_found(tm_t *tm)
{
    spits_info("the job manager answers again");
    tm->link.status.state = TM_READY;
}

int tm_link_raise_max(tm_t *tm, long long max_task)
{
    if (max_task <= tm->link.max_task)
        return 0;
    tm->link.max_task = max_task;
    return tm_link_connect(tm) != 0 ? -1 : 1;
}

void tm_link_welcomed(tm_t *tm, long long heartbeat_ms, const char *parts_to)
{
    tm->link.live.heartbeat_ms = heartbeat_ms;
    tm->link.live.lost_ms = 5 * heartbeat_ms < 3000 ? 3000 : 5 * heartbeat_ms;
    tm->link.status.result_parts = parts_to && strcmp(parts_to, tm->link.routing_id) == 0;
    tm->link.status.welcomed = 1;
    tm->link.hops.welcomed = 1;
    tm->link.hops.rounds = 0;
    tm->link.status.state = TM_READY;
}

void tm_link_asked_who(tm_t *tm)
{
    if (tm->link.status.state == TM_READY)
        tm->link.hops.since = tm->now;   /* its WELCOME is due, as after a loss */
    tm->link.status.state = TM_CONNECTING;
    tm_link_send_hello(tm);
}

#define REFUSALS_LOG_EVERY_MS 30000
#define BUSY_LOG_EVERY_MS 60000
#define KEYS_SETTLE_MS 5000        /* tm.key and jm.json may disagree this long */

/* The key file in use: --key-file, or the job dir's tm.key. */
static const char *key_file_name(const tm_t *tm)
{
    static char path[PATH_MAX];
    if (tm->opts.key_file)
        return tm->opts.key_file;
    snprintf(path, sizeof path, "%s/%s", tm->opts.jobdir ? tm->opts.jobdir : ".",
             SPITS_TM_KEY_FILE);
    return path;
}

/* Security from the job dir: jm.json says whether the JM runs CURVE; the
 * keys come from DIR/tm.key (or --key-file). A mismatch is an error here,
 * with the fix in it, rather than a handshake that never completes.
 * Returns 0, -1 after saying what is wrong, or 1 when DIR/tm.key names
 * another server key than jm.json: a JM starting in the dir writes tm.key
 * just before jm.json, so the two may be caught between their updates and
 * the caller reads both again (say: report it as an error now). */
static int security_from_announce(tm_t *tm, const spits_announce_t *announce,
                                  int say)
{
    char path[PATH_MAX], err[1024];
    spits_keys_t keys;

    if (!announce->curve) {
        if (!tm->opts.insecure) {
            spits_error("the job manager of %s runs --insecure (no CurveZMQ): "
                        "start this task manager with --insecure too",
                        tm->opts.jobdir);
            return -1;
        }
        return 0;
    }
    if (tm->opts.insecure) {
        spits_error("the job manager of %s requires CurveZMQ: drop --insecure",
                    tm->opts.jobdir);
        return -1;
    }
    snprintf(path, sizeof path, "%s", key_file_name(tm));
    if (spits_keys_read(path, &keys, 0, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    /* (The socket's keys change only with a pair that matches.) */
    if (strcmp(keys.server_public, announce->server_key) != 0) {
        if (!say && !tm->opts.key_file)
            return 1;
        spits_error("%s does not match the server key in %s/%s (a stale key "
                    "file?)", path, tm->opts.jobdir, SPITS_ANNOUNCE_FILE);
        return -1;
    }
    tm->link.keys = keys;
    return 0;
}

/* Watches the socket for failed handshakes (wrong keys, or a JM that does
 * not speak CURVE, or speaks it while we do not) and for a dropped
 * connection: a JM that died is looked for at once, not after --wait's
 * silence (a resumed JM announces a new endpoint in jm.json). */
static int monitor_start(tm_t *tm)
{
    tm_link_t *link = &tm->link;
    char endpoint[96];

    if (link->monitor)
        zmq_close(link->monitor);
    link->monitor = NULL;
    /* (unique in the context, which --simulate's TMs share) */
    snprintf(endpoint, sizeof endpoint, "inproc://spits-tm-monitor-%s-%u",
             link->routing_id, ++link->monitor_gen);
    if (spits_zmq_monitor(link->socket, endpoint,
                          ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                          ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                          ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(link->monitor = zmq_socket(link->context, ZMQ_PAIR)) ||
        zmq_setsockopt(link->monitor, ZMQ_RCVHWM, &(int){0}, sizeof(int)) != 0 ||
        spits_zmq_connect(link->monitor, endpoint) != 0) {
        spits_error("cannot monitor the socket: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_setsockopt(link->monitor, ZMQ_LINGER, &(int){0}, sizeof(int));
    return 0;
}

/* Why the JM refused a handshake (a monitor's event). Our own key pair
 * was checked when the key file was read (keys.c), so it is the server's
 * key or mode. */
static void refusal_why(const tm_t *tm, uint16_t event, char *why, size_t len)
{
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        snprintf(why, len, "it does not accept this task manager's key: %s is "
                 "a key file of another job?", key_file_name(tm));
    else if (tm->opts.insecure)
        snprintf(why, len, "it requires CurveZMQ: drop --insecure and give "
                 "--key-file");
    else    /* a CURVE server just closes, as does a proxy with no way on */
        snprintf(why, len, "the server key in %s is not this job manager's, "
                 "it runs --insecure, or a proxy in between closed the "
                 "connection", key_file_name(tm));
}

/* What the current hop is, for the log. */
static const char *hop_what(const tm_t *tm)
{
    return tm_link_relayed(tm) ? "relay" : "job manager";
}

/* Leaves the current hop for the next (after the JM, the first relay
 * again), saying why at level: "relay at X <why>; trying the job manager
 * at Y". A new socket, so the hop counts a re-attach. */
static void hop_next(tm_t *tm, int level, const char *why)
{
    tm_link_t *link = &tm->link;
    char from[sizeof link->hops.endpoint + 16];

    snprintf(from, sizeof from, "%s at %s", hop_what(tm), link->hops.endpoint);
    link->hops.hop = (link->hops.hop + 1) % (tm->opts.n_via + 1);
    /* (a round ends at the last hop; one that had welcomed us answered) */
    if (link->hops.hop == 0 && !link->hops.welcomed &&
        link->hops.rounds < TM_HOP_DOUBLINGS_MAX)
        link->hops.rounds++;
    snprintf(link->hops.endpoint, sizeof link->hops.endpoint, "%s",
             tm_link_relayed(tm) ? tm->opts.via[link->hops.hop] : link->hops.jm_endpoint);
    spits_log(level, "%s %s; trying the %s at %s", from, why, hop_what(tm),
              link->hops.endpoint);
    if (tm_link_connect(tm) != 0)
        tm->done = -1;
}

void tm_link_on_monitor(tm_t *tm)
{
    tm_link_t *link = &tm->link;
    uint16_t event;

    while (spits_zmq_monitor_next(link->monitor, &event, NULL)) {
        if (!event)
            continue;
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            link->hops.up = 1;
            /* (the socket attaches the connection before this event: a
             * join no longer waits for the 100 ms retry) */
            if (link->status.state == TM_CONNECTING && link->status.hello_waits)
                tm_link_send_hello(tm);
            continue;
        }
        if (event == ZMQ_EVENT_DISCONNECTED) {
            link->hops.up = 0;
            link->status.attach++;    /* what the JM sent may be lost */
            if (link->status.state == TM_READY && !tm->done) {
                spits_warn("lost the connection to the %s at %s; "
                           "looking for it", hop_what(tm), link->hops.endpoint);
                link->status.state = TM_LOST;
                link->hops.since = tm->now;
                link->live.last_look = 0;
            }
            link->live.fd = -1;
            continue;
        }
        char why[PATH_MAX + 160];
        if (tm_link_relayed(tm)) {
            /* Another hop may take us: a relay of another job, say. */
            snprintf(why, sizeof why, "refused the handshake (%s)",
                     event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                         ? "it does not accept this task manager's key"
                     : tm->opts.insecure ? "it requires CurveZMQ"
                     : "not this job's server key, or no CurveZMQ");
            hop_next(tm, SPITS_LOG_WARN, why);
            if (tm->done)
                return;
            continue;
        }
        refusal_why(tm, event, why, sizeof why);
        if (!link->status.welcomed && tm->opts.jobdir) {
            /* jm.json and tm.key agreed (security_from_announce): most
             * likely the JM closed its socket mid-handshake as the job
             * ended. The timers look for report.json before calling it
             * an error. */
            if (!link->refused.since) {
                link->refused.since = tm->now;
                link->refused.event = event;
            }
        } else if (!link->status.welcomed) {
            spits_error("the job manager at %s refused the handshake: %s",
                        link->hops.endpoint, why);
            tm->done = -1;
        } else if (link->refused.count++ == 0 ||
                   tm->now - link->refused.logged_at >= REFUSALS_LOG_EVERY_MS) {
            /* It retries on its own; say so now and then, not each time. */
            spits_warn("the job manager at %s refused the handshake: %s; "
                       "looking for it (%llu refusal(s) so far)", link->hops.endpoint,
                       why, (unsigned long long)link->refused.count);
            link->refused.logged_at = tm->now;
        }
    }
}

/* CURVE client: the job's server key and this TM's key pair. */
static int set_curve_keys(tm_link_t *link)
{
    const spits_keys_t *keys = &link->keys;
    void *socket = link->socket;

    if (zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, keys->server_public,
                       strlen(keys->server_public) + 1) != 0 ||
        zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, keys->client_public,
                       strlen(keys->client_public) + 1) != 0 ||
        zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, keys->client_secret,
                       strlen(keys->client_secret) + 1) != 0)
        return -1;
    return 0;
}

int tm_link_connect(tm_t *tm)
{
    tm_link_t *link = &tm->link;
    int one = 1, linger = 1000, ivl = 100, ivl_max = 2000, hwm = 100000;
    int64_t maxmsg = 2 * link->max_task + (16LL << 20);

    if (link->socket) {
        /* Its monitor stops first, while our end still reads (as in
         * serving/router.c): libzmq's I/O thread sends each event with a
         * blocking send, and one sent once monitor_start has closed our
         * end (the DISCONNECTED that follows the HANDSHAKE_FAILED a hop
         * moved on for) blocks that thread for good, and with it every
         * later connection of this TM. */
        zmq_socket_monitor(link->socket, NULL, 0);
        zmq_close(link->socket);
        link->status.attach++;        /* with what the JM sent to it */
    }
    link->socket = zmq_socket(link->context, ZMQ_DEALER);
    if (!link->socket) {
        spits_error("cannot make a ZeroMQ socket: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_setsockopt(link->socket, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (!tm->opts.insecure && set_curve_keys(link) != 0) {
        spits_error("cannot set up CurveZMQ: %s", zmq_strerror(errno));
        return -1;
    }
    if (monitor_start(tm) != 0)
        return -1;
    /* The routing id is how the JM knows us again after a reconnect. */
    if (zmq_setsockopt(link->socket, ZMQ_ROUTING_ID, link->routing_id,
                       strlen(link->routing_id)) != 0) {
        spits_error("cannot set the socket's routing id: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_setsockopt(link->socket, ZMQ_LINGER, &linger, sizeof linger);
    /* Queue nothing on a connection that is not up: unsent results stay in
     * our own list, and HELLO goes out only on a live connection. */
    zmq_setsockopt(link->socket, ZMQ_IMMEDIATE, &one, sizeof one);
    zmq_setsockopt(link->socket, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(link->socket, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    zmq_setsockopt(link->socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(link->socket, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (spits_zmq_connect(link->socket, link->hops.endpoint) != 0) {
        spits_error("cannot connect to %s: %s", link->hops.endpoint, zmq_strerror(errno));
        return -1;
    }
    link->status.state = TM_CONNECTING;
    link->live.last_hello = 0;
    link->status.hello_waits = 0;
    link->live.fd = -1;
    link->refused.since = 0;    /* (a new endpoint gets its own time) */
    link->hops.up = link->hops.welcomed = 0;
    link->status.result_parts = 0;     /* (until this hop's WELCOME says so) */
    link->hops.since = spits_now_ms();   /* (tm->now: not before the loop) */
    return 0;
}

const char *tm_link_gone_hint(tm_t *tm, char *buf, size_t len)
{
    spits_announce_t announce;
    char err[512];
    buf[0] = '\0';
    if (tm->opts.jobdir &&
        spits_announce_read(tm->opts.jobdir, &announce, err, sizeof err) == 0)
        spits_jobdir_gone_hint(tm->opts.jobdir, &announce, buf, len);
    return buf;
}

/* Whether our job's report.json says it ended (tm->done set, said). A
 * JM stopped by a signal told its TMs to stop; one that missed it stops
 * too (a resumed JM gets new TMs, or the ones that kept going). A TM that
 * never joined is such a new TM: it waits, for its --wait, for spits-jm
 * --resume. */
static int job_over(tm_t *tm)
{
    if (!tm->opts.jobdir || !tm->job.job_id[0] ||
        !spits_jobdir_finished(tm->opts.jobdir, tm->job.job_id, tm->link.status.welcomed))
        return 0;
    spits_info("job %s is over (report.json written)", tm->job.job_id);
    tm->done = 1;
    tm->job_over = 1;
    return 1;
}

/* Looks at the job dir again: the job may be over, or the JM elsewhere. */
static void look_for_jm(tm_t *tm)
{
    spits_announce_t announce;
    char err[512];

    tm->link.live.last_look = tm->now;
    if (!tm->opts.jobdir || job_over(tm))
        return;
    if (spits_announce_read(tm->opts.jobdir, &announce, err, sizeof err) == 0 &&
        (strcmp(announce.endpoint, tm->link.hops.jm_endpoint) != 0 ||
         strcmp(announce.server_key, tm->link.keys.server_public) != 0)) {
        /* Caught mid-update: looked at again next second, and named as an
         * error if it lasts. */
        if (!tm->link.refused.mismatch_since)
            tm->link.refused.mismatch_since = tm->now;
        int64_t mismatch_ms = tm->now - tm->link.refused.mismatch_since;
        int rc = security_from_announce(tm, &announce,
                                        mismatch_ms > KEYS_SETTLE_MS);
        if (rc > 0)
            return;
        tm->link.refused.mismatch_since = 0;
        spits_info("job manager now at %s", announce.endpoint);
        snprintf(tm->link.hops.jm_endpoint, sizeof tm->link.hops.jm_endpoint, "%s",
                 announce.endpoint);
        if (rc < 0) {
            tm->done = -1;
        } else if (!tm_link_relayed(tm)) {
            snprintf(tm->link.hops.endpoint, sizeof tm->link.hops.endpoint, "%s",
                     announce.endpoint);
            if (tm_link_connect(tm) != 0)
                tm->done = -1;
        }
        /* (On a relay, the JM's hop waits its turn: a relay still forwards
         * to the JM wherever it went. The new keys, as the key file has
         * them, serve every hop from the next connection on.) */
    }
}

/* A JM silent past lost_ms may be sending a large message: ZeroMQ
 * delivers a connection's messages whole and in order, so its heartbeats
 * wait behind it. It is alive while its connection still brings bytes
 * (the kernel counts each one); a stopped or hung JM brings none, and a
 * closed connection is a DISCONNECTED event (tm_link_on_monitor). */
static int jm_busy(tm_t *tm)
{
    tm_link_t *link = &tm->link;
    int64_t quiet = spits_tcp_quiet_ms(link->live.fd);
    if (quiet < 0 || quiet > link->live.lost_ms)
        return 0;
    if (!link->live.busy_logged_at ||
        tm->now - link->live.busy_logged_at >= BUSY_LOG_EVERY_MS) {
        spits_info("the job manager has sent no message for %.1f s, but its "
                   "connection is carrying data (a large transfer?)",
                   (tm->now - link->live.last_heard) / 1000.0);
        link->live.busy_logged_at = tm->now;
    }
    return 1;
}

/* Ready: a JM silent too long (and not busy sending) is lost; else STATS
 * or a heartbeat when due. Lost or reconnecting: give up after
 * --reconnect-timeout, re-read jm.json once a second, and say HELLO
 * again. */
void tm_link_timers(tm_t *tm)
{
    if (tm->link.status.state == TM_READY) {
        if (tm->now - tm->link.live.last_heard > tm->link.live.lost_ms && !jm_busy(tm)) {
            spits_warn("the %s has been silent for %.1f s; looking for it",
                       hop_what(tm), (tm->now - tm->link.live.last_heard) / 1000.0);
            tm->link.status.state = TM_LOST;
            tm->link.hops.since = tm->now;
            tm->link.status.attach++;
        } else if (tm->pool_started &&
                   (tm->now - tm->link.live.last_stats >= 1000 ||
                    (tm->relay &&
                     tm_relay_stats_due(tm->relay,
                                        tm->now - tm->link.live.last_stats)))) {
            tm_link_send_stats(tm);    /* (it serves as a heartbeat too) */
        } else if (tm->now - tm->link.live.last_sent >= tm->link.live.heartbeat_ms) {
            unsigned char heartbeat[SPITS_HDR_SIZE];
            spits_wire_encode_empty(heartbeat, SPITS_MSG_HEARTBEAT,
                                    tm_job_wire(&tm->job));
            tm_link_send(tm, heartbeat, sizeof heartbeat);
        }
        return;
    }
    /* A first handshake refused, and the job not over (look_for_jm reads
     * report.json once a second) after the keys' settling time. */
    if (!tm->link.status.welcomed && tm->link.refused.since &&
        tm->now - tm->link.refused.since > KEYS_SETTLE_MS &&
        tm_link_refusal(tm)) {
        tm->done = -1;
        return;
    }
    /* Looking (LOST) or reconnecting (CONNECTING) alike: a JM unheard of
     * for --reconnect-timeout is given up, unless its connection still
     * brings bytes (a large message arriving late is no lost JM), or the
     * job ended meanwhile (a TM stopped through its end). */
    if (tm->link.status.welcomed &&
        tm->now - tm->link.live.last_heard > (int64_t)(tm->opts.reconnect * 1000) &&
        !jm_busy(tm)) {
        char hint[PATH_MAX + 256];
        if (job_over(tm))
            return;
        tm_link_gone_hint(tm, hint, sizeof hint);
        if (tm->opts.n_via)
            spits_error("lost the job manager at %s and its %d relay(s): silent "
                        "for %.0f s%s", tm->link.hops.jm_endpoint, tm->opts.n_via,
                        tm->opts.reconnect, hint);
        else
            spits_error("lost the job manager at %s: silent for %.0f s%s",
                        tm->link.hops.endpoint, tm->opts.reconnect, hint);
        tm->done = -1;
        return;
    }
    /* With relays, a hop silent too long is left for the next; but the
     * JM's first refusal keeps its own rule (the job's end is ruled out
     * first, above). */
    int64_t patience = (tm->link.hops.up && !tm->link.hops.welcomed
                            ? TM_HOP_PATIENCE_MS : TM_HOP_TIMEOUT_MS) << tm->link.hops.rounds;
    if (tm->opts.n_via && tm->now - tm->link.hops.since > patience &&
        !(tm->link.refused.since && !tm_link_relayed(tm))) {
        hop_next(tm, SPITS_LOG_INFO, "not answering");
        return;
    }
    if (tm->now - tm->link.live.last_look >= 1000) {
        look_for_jm(tm);
        if (tm->done)
            return;
        if (tm->link.status.state == TM_LOST) {
            /* Once per outage: the JM will count this as a re-attach. */
            spits_info("saying HELLO again to the %s at %s", hop_what(tm),
                       tm->link.hops.endpoint);
            tm->link.status.state = TM_CONNECTING;
            tm->link.live.last_hello = 0;
        }
    }
    if (tm->link.status.state == TM_CONNECTING &&
        tm->now - tm->link.live.last_hello >= 1000)
        tm_link_send_hello(tm);
}

/* Sleeps *ms, then doubles it up to 100 ms: a TM started with its JM
 * (spits-run, a batch script) finds jm.json within milliseconds of its
 * writing, and one that waits long reads a shared file system's
 * directory ten times a second, not more. */
static void announce_nap(int *ms)
{
    struct timespec ts = {0, (long)*ms * 1000000};
    nanosleep(&ts, NULL);
    *ms = *ms * 2 > 100 ? 100 : *ms * 2;
}

/* How often a TM waiting for jm.json says so again: a minute, or
 * $SPITS_WAIT_REPEAT_S seconds (for the tests). */
static int64_t wait_repeat_ms(void)
{
    const char *e = getenv("SPITS_WAIT_REPEAT_S");
    double s;
    return e && spits_parse_seconds(e, 86400, &s) == 0 && s > 0
               ? (int64_t)(s * 1000) : 60000;
}

/* Says what a TM waits for, a second into the wait (a TM started with
 * its JM finds jm.json sooner, and says nothing) and then every
 * repeat_ms (*next: when next), so a mistyped job dir is seen at once,
 * not after --wait. */
#define WAIT_QUIET_MS 1000
static void wait_say(const tm_t *tm, int64_t start, int64_t now, int64_t *next,
                     int64_t repeat_ms)
{
    char what[PATH_MAX + 128];
    struct stat st;
    const char *dir = tm->opts.jobdir;

    if (now < *next)
        return;
    if (stat(dir, &st) != 0)
        snprintf(what, sizeof what, "the job dir %s does not exist (yet)", dir);
    else
        snprintf(what, sizeof what, "no %s in %s yet (spits-jm --jobdir %s "
                 "writes it)", SPITS_ANNOUNCE_FILE, dir, dir);
    if (*next == start + WAIT_QUIET_MS)
        spits_info("waiting up to %.0f s for the job manager: %s", tm->opts.wait, what);
    else
        spits_info("still waiting for the job manager (%.0f s of %.0f s): %s",
                   (now - start) / 1000.0, tm->opts.wait, what);
    *next = now + repeat_ms;
}

/* Reads DIR/jm.json, waiting up to --wait for it. 0, or -1 (logged). */
static int wait_for_announce(tm_t *tm, spits_announce_t *announce)
{
    char err[1024];
    int64_t start = spits_now_ms(), say = start + WAIT_QUIET_MS;
    int64_t repeat = wait_repeat_ms(), deadline = start + (int64_t)(tm->opts.wait * 1000);
    int nap = 5;

    for (;;) {
        int rc = spits_announce_read(tm->opts.jobdir, announce, err, sizeof err);
        if (rc == 0)
            return 0;
        if (rc < 0) {
            spits_error("%s", err);
            return -1;
        }
        /* (the end first: a wait that ends now needs no notice of it) */
        if (spits_now_ms() > deadline) {
            spits_error("no %s appeared in %s within %.0f s", SPITS_ANNOUNCE_FILE,
                        tm->opts.jobdir, tm->opts.wait);
            return -1;
        }
        wait_say(tm, start, spits_now_ms(), &say, repeat);
        announce_nap(&nap);
    }
}

/* The TM starts on its first hop: the first relay, or the JM. */
static void first_hop(tm_t *tm)
{
    tm->link.hops.hop = 0;
    snprintf(tm->link.hops.endpoint, sizeof tm->link.hops.endpoint, "%s",
             tm->opts.n_via ? tm->opts.via[0] : tm->link.hops.jm_endpoint);
}

int tm_link_find_jm(tm_t *tm)
{
    spits_announce_t announce;
    char err[1024];

    if (tm->opts.connect) {
        snprintf(tm->link.hops.jm_endpoint, sizeof tm->link.hops.jm_endpoint, "%s",
                 tm->opts.connect);
        if (tm->opts.key_file && spits_keys_read(tm->opts.key_file, &tm->link.keys,
                                                 0, err, sizeof err) != 0) {
            spits_error("%s", err);
            return 1;
        }
        first_hop(tm);
        return 0;
    }
    int64_t deadline = spits_now_ms() + (int64_t)(tm->opts.wait * 1000);
    int nap = 5;
    for (;;) {
        if (wait_for_announce(tm, &announce) != 0)
            return 1;
        if (spits_jobdir_finished(tm->opts.jobdir, announce.job_id, 0)) {
            spits_info("job %s in %s is already over", announce.job_id,
                       tm->opts.jobdir);
            return -1;
        }
        int rc = security_from_announce(tm, &announce, spits_now_ms() > deadline);
        if (rc < 0)
            return 1;
        if (rc == 0)
            break;
        announce_nap(&nap);   /* a JM mid-start */
    }
    snprintf(tm->link.hops.jm_endpoint, sizeof tm->link.hops.jm_endpoint, "%s",
             announce.endpoint);
    tm_job_expect(&tm->job, &announce);
    /* A Python job's workers are processes (pyjob.h): they are made
     * before HELLO, so jm.json is what tells. */
    if (spits_pyjob_is(announce.module) && !tm->opts.isolate &&
        !tm->opts.simulate && !tm->opts.serve) {
        tm->opts.isolate = 1;
        spits_info("%s is a Python job: each worker is a process "
                   "(--isolate)", announce.module);
    }
    first_hop(tm);
    return 0;
}

void tm_link_close(tm_t *tm, int say_bye)
{
    if (!tm->link.socket)
        return;
    if (say_bye) {
        unsigned char bye[SPITS_HDR_SIZE];
        spits_buf_t buf = {0};
        json_t *why = tm->job.refused[0]
                          ? json_pack("{s:s}", "refused", tm->job.refused) : NULL;
        if (tm->pool_started && tm->link.status.state == TM_READY)
            tm_link_send_stats(tm);
        /* A refusal's BYE says why, so the JM does not count a loss. */
        if (why && spits_wire_encode_json(&buf, SPITS_MSG_BYE, 0, why) == 0) {
            zmq_send(tm->link.socket, buf.data, buf.len, ZMQ_DONTWAIT);
        } else {
            spits_wire_encode_empty(bye, SPITS_MSG_BYE, 0);
            zmq_send(tm->link.socket, bye, sizeof bye, ZMQ_DONTWAIT);
        }
        json_decref(why);
        spits_buf_free(&buf);
    }
    int linger = tm->drain.active ? 2000 : 200;   /* a drain's last results */
    zmq_setsockopt(tm->link.socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(tm->link.socket);
    tm->link.socket = NULL;
}

int tm_link_refusal(tm_t *tm)
{
    char why[PATH_MAX + 160];

    if (tm->link.status.welcomed || !tm->link.refused.since)
        return 0;
    refusal_why(tm, tm->link.refused.event, why, sizeof why);
    spits_error("the job manager at %s refused the handshake: %s",
                tm->link.hops.endpoint, why);
    return 1;
}

void tm_link_abandon(tm_t *tm)
{
    if (!tm->link.socket)
        return;
    zmq_setsockopt(tm->link.socket, ZMQ_LINGER, &(int){0}, sizeof(int));
    zmq_close(tm->link.socket);
    tm->link.socket = NULL;
}

void tm_link_destroy(tm_t *tm)
{
    if (tm->link.monitor)
        zmq_close(tm->link.monitor);
    tm->link.monitor = NULL;
}
