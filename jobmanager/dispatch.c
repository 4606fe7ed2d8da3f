/*
 * dispatch.c - the JM's network loop, on a thread of its own.
 *
 * It waits in zmq_poll on the ROUTER socket (the TMs and spits-status),
 * on its wake eventfd (new tasks from the generator, requests from the
 * main thread, signals and fatal errors: stop.c), on the socket monitor
 * (peer disconnects, failed handshakes) and on the ZAP handler
 * (libspits/zap.c). Each turn it receives a burst of messages, which
 * the server (serving/server.c) parses and routes to the JM's handlers
 * (results: serve.c; HELLO, STATS: members.c; STATUS: here), runs
 * the timers (heartbeats, lost TMs, the live view, the timeline, the
 * progress line) and serves every TM with room. Its state is in
 * dispatch_int.h; the main thread reaches it only through the control
 * requests below.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "committer.h"
#include "dispatch_int.h"
#include "generator.h"
#include "log.h"
#include "phase.h"
#include "router.h"
#include "status.h"
#include "stop.h"
#include "util.h"
#include "wake.h"
#include "zmqutil.h"

static void on_status(jm_disp_t *d, const void *rid, size_t ridlen);

/* --- receiving --------------------------------------------------------- */

/* The server's hop (serving/server.h): what is the JM's in serving. */
static void disp_hop_lost(void *arg, server_peer_t *p, const char *why, int left, size_t n)
{
    if (left)
        members_left(arg, (jm_tm_t *)p, why, n);
    else
        members_lost(arg, (jm_tm_t *)p, why, n);
}

static int disp_hop_stopping(void *arg)
{
    (void)arg;
    return atomic_load(&jm_abort);
}

/* Leaving soon: it hands back its queued tasks and finishes the running
 * ones; it gets nothing new. */
static void disp_hop_drain(void *arg, server_peer_t *p)
{
    jm_disp_t *d = arg;
    jm_tm_t *t = (jm_tm_t *)p;
    if (loglimit_allow(&d->logs.draining, d->clock.now))
        spits_info("TM %s:%ld is draining", t->sv.proc.host, t->sv.proc.pid);
}

static void disp_hop_status(void *arg, server_msg_t *m)
{
    on_status(arg, m->rid, m->ridlen);
}

/* The TMs a send found gone are declared lost after each stage of the
 * loop (server_reap), their waiting messages read first. */
static void disp_reap(jm_disp_t *d, int force)
{
    server_reap(d->srv, force);
}

void disp_on_message(jm_disp_t *d, zmq_msg_t *ridmsg, jm_rx_t *rx)
{
    server_msg_t m = {.rid = zmq_msg_data(ridmsg), .ridlen = zmq_msg_size(ridmsg),
                      .msg = &rx->msg, .parts = &rx->parts, .hop = rx};
    /* (no reaping here, before the message is handled: it would lose a
     * gone TM whose BYE this is. The loop reaps after each stage; a gone
     * TM's HELLO finds it lost first: server_on_hello) */
    server_on_frames(d->srv, &m);
    jm_rx_release(rx, 1);       /* the dispatcher's own reference */
}

/* (server_hop_t.rx_new) A message's body becomes a jm_rx_t: results
 * are committed from it, its parts with it. */
static int disp_hop_rx_new(void *arg, server_rx_t *out)
{
    jm_rx_t *rx = jm_rx_new();
    (void)arg;
    if (!rx) {
        jm_fatal("out of memory receiving a message; stopping the job");
        return -1;
    }
    *out = (server_rx_t){&rx->msg, &rx->parts, rx};
    return 0;
}

/* (server_hop_t.rx_done) The dispatcher's own reference. */
static void disp_hop_rx_done(void *arg, server_rx_t *rx)
{
    (void)arg;
    jm_rx_release(rx->hop, 1);
}

/* --- timers, monitor, control ------------------------------------------ */

/* spits-status asks; the answer goes to its routing id. It is not a TM. */
static void on_status(jm_disp_t *d, const void *rid, size_t ridlen)
{
    /* The answer is built at most once per tick and sent as is until the
     * next, so a status client in a loop costs the job a send per request,
     * not a JSON document and a /proc read. */
    if (!d->status.buf.len || d->clock.now - d->status.at >= SERVE_TICK_MS) {
        json_t *doc = dispview_status_doc(d);
        d->status.buf.len = 0;
        if (!doc || spits_wire_encode_json(&d->status.buf, SPITS_MSG_STATUS,
                                           d->live.phase, doc) != 0)
            d->status.buf.len = 0;
        json_decref(doc);
        d->status.at = d->clock.now;
    }
    if (d->status.buf.len)
        tmio_send_to(d, rid, ridlen, d->status.buf.data, d->status.buf.len, 0);
}

/* A job no TM has joined for DISP_NO_TM_MS: most often none was started
 * (or they wait on another dir), so the command that starts one is said,
 * once, with the job dir as a TM elsewhere must name it. */
static void disp_hint_no_tm(jm_disp_t *d)
{
    char abs[PATH_MAX];
    if (d->fleet.no_tm_said || !d->phase || server_stats(d->srv)->joins ||
        d->clock.now - d->clock.started_ms < DISP_NO_TM_MS)
        return;
    d->fleet.no_tm_said = 1;
    spits_info("no task manager has joined in %d s; start one with: spits-tm "
               "--jobdir %s", DISP_NO_TM_MS / 1000,
               realpath(d->jm->opt.jobdir, abs) ? abs : d->jm->opt.jobdir);
}

/* Memory that TMs held goes back to the system once they left. glibc
 * keeps what is freed inside its heaps (spits_malloc_tune keeps their top
 * too), and the connections libzmq makes and frees leave holes there:
 * under churn the JM's RSS grew by two thirds over a job while what it
 * used stayed flat (spits-bench churn, 18,000 joins: 1.67x). Trimming
 * takes the heaps' locks for milliseconds (4 ms typical, 12 at most at
 * 450 live TMs), so it runs at most every DISP_TRIM_MS, and only after
 * TMs left: a job whose TMs stay never pays it. Nor does a job of large
 * tasks (SPITS_PART_MIN or more on average): the freed buffers it keeps
 * are what spits_malloc_tune keeps them for, and a trim would make it
 * fault their pages in again. */
static void disp_trim(jm_disp_t *d)
{
    uint64_t gone = server_stats(d->srv)->losses + server_stats(d->srv)->leaves;
    if (gone == d->clock.gone_at_trim || d->clock.now < d->clock.trim_at ||
        sched_mean_task_bytes(d->sched) >= SPITS_PART_MIN)
        return;
    d->clock.gone_at_trim = gone;
    d->clock.trim_at = d->clock.now + DISP_TRIM_MS;
    spits_malloc_release();
}

/* The TM event lines held back in a busy interval are counted once it
 * is over, or now (force: the job is over). */
static void disp_log_flush(jm_disp_t *d, int force)
{
    loglimit_t *all[] = {&d->logs.joined, &d->logs.reattached, &d->logs.lost,
                            &d->logs.left, &d->logs.draining};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        loglimit_flush(all[i], d->clock.now, force);
}

static void disp_monitor(jm_disp_t *d)
{
    if (router_monitor_read(d->net.l.mon, d->net.conngen, d->net.l.zap, d->clock.now))
        server_probe_until(d->srv, d->clock.now + LIVENESS_PROBE_MS);
}

/* A signal stops the job: the generator and the committer give up, and
 * every later phase is refused by run(). The TMs get END at finish. */
static void disp_stop_phase(jm_disp_t *d)
{
    d->stopping = 1;
    if (jm_signal)
        spits_warn("stopping the job (signal %d)", (int)jm_signal);
    if (!d->phase)
        return;
    jm_genq_t *q = &d->phase->genq;
    pthread_mutex_lock(&q->lock);
    atomic_store_explicit(&q->stop, 1, memory_order_relaxed);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_broadcast(&q->room);
    jm_commitq_t *cq = &d->phase->cq;
    pthread_mutex_lock(&cq->lock);
    cq->abort = 1;
    pthread_mutex_unlock(&cq->lock);
    pthread_cond_broadcast(&cq->ready);
}

void disp_phase_begin(jm_disp_t *d, jm_phase_t *p)
{
    d->phase = p;
    server_phase(d->srv, p->st.id);
    server_due_all(d->srv);
    if (d->stopping)
        disp_stop_phase(d);
    jm_adopt_destroy(&d->adopt);
    if (tmio_set_job(d) != 0 || sched_reset(d->sched) != 0 || (p->st.resumed &&
        !(d->adopt = jm_adopt_new((size_t)d->jm->opt.window_bytes)))) {
        /* The phase cannot run: stopped before anything is sent. */
        jm_fatal("out of memory starting phase %u; "
                 "stopping the job", p->st.id);
        disp_stop_phase(d);
        d->phase = NULL;
        tmio_set_job(d);
        return;
    }
    /* Only a resumed phase has early results to adopt: asked of every
     * fresh task then, of none otherwise. */
    serve_set_hooks(d);
    d->gen_done = 0;
    d->pub.low = d->pub.freed = d->pub.taken = d->pub.window = 0;
    server_send_phase(d->srv);
}

/* Says once per phase how many early results were not adopted, and why
 * (the generator is done: its findings are final). */
static void adopt_dropped_log(const jm_disp_t *d)
{
    const jm_phase_t *p = d->phase;
    const jm_genq_t *q = &p->genq;
    char why[256];
    if (!p->nchecks)
        snprintf(why, sizeof why, "the journal holds no generation "
                 "checkpoint for the phase");
    else if (q->ck_bad)
        snprintf(why, sizeof why, "next_task now generates differently "
                 "from the job manager that sent them: the journal's "
                 "checkpoint at %llu task(s) does not match (only tasks "
                 "below %llu matched)", (unsigned long long)q->ck_bad,
                 (unsigned long long)q->verified);
    else
        snprintf(why, sizeof why, "their tasks are past the journal's last "
                 "generation checkpoint (%llu task(s)) or were sent before "
                 "it was checked", (unsigned long long)q->verified);
    spits_warn("phase %u: %llu result(s) that task managers kept from the "
               "previous job manager were not adopted, and their tasks ran "
               "again: %s", p->st.id, (unsigned long long)d->adopt_dropped, why);
}

void disp_phase_end(jm_disp_t *d)
{
    if (d->phase) {
        dispview_live_update(d);
        jm_progress_end(&d->progress, &d->live);
        d->resolved_before += d->live.resolved;
        memset(&d->live, 0, sizeof d->live);
    } else {
        jm_progress_end(&d->progress, NULL);
    }
    /* Every task is resolved, unless the job was stopped: free the rest. */
    sched_reset(d->sched);
    if (d->phase && d->adopt_dropped)
        adopt_dropped_log(d);
    d->adopt_dropped = d->adopt_below = 0;
    d->phase = NULL;
    tmio_set_job(d);
    if (d->adopt) {
        /* Early results whose task was committed some other way. */
        d->st.sched.duplicates += jm_adopt_count(d->adopt);
        jm_adopt_destroy(&d->adopt);
    }
}

static int disp_control(jm_disp_t *d)
{
    int finish = 0;
    pthread_mutex_lock(&d->ctl.lock);
    atomic_store(&d->ctl.pending, 0);
    if (d->ctl.begin) {
        disp_phase_begin(d, d->ctl.begin);
        d->ctl.begin = NULL;
        d->ctl.ack = 1;
    }
    if (d->ctl.end) {
        disp_phase_end(d);
        d->ctl.end = 0;
        d->ctl.ack = 1;
    }
    finish = d->ctl.stop;
    pthread_mutex_unlock(&d->ctl.lock);
    pthread_cond_broadcast(&d->ctl.cond);
    return finish;
}

/* After a fatal network error: no socket is read again. The job is
 * stopped, and the main thread's requests are still answered, so that
 * run() returns and the job ends with its report. */
static void disp_control_only(jm_disp_t *d)
{
    if (!d->stopping)
        disp_stop_phase(d);
    for (;;) {
        pthread_mutex_lock(&d->ctl.lock);
        while (!atomic_load(&d->ctl.pending))
            pthread_cond_wait(&d->ctl.cond, &d->ctl.lock);
        pthread_mutex_unlock(&d->ctl.lock);
        if (disp_control(d))
            return;
    }
}

/* The job is over: END to every TM, and a moment for their BYEs
 * (router_end). Nothing is counted any more but the TMs' last STATS (so
 * the report's runs and busy time are each TM's whole): the report is
 * the job's as it ended. */
static void disp_end_stats(void *arg, server_peer_t *p, zmq_msg_t *body)
{
    server_take_stats(((jm_disp_t *)arg)->srv, p, body);
}

static void disp_end(jm_disp_t *d)
{
    server_end_t e = {d->srv, NULL, disp_end_stats, d};
    router_peers_t peers = server_end_peers(&e);
    router_end(d->net.l.sock, d->phase ? d->phase->st.id : 0, &peers, SERVE_END_WAIT_MS);
}

static void *disp_main(void *arg)
{
    jm_disp_t *d = arg;
    zmq_pollitem_t items[4] = {
        {d->net.l.sock, 0, ZMQ_POLLIN, 0},
        {NULL, d->net.wake_fd, ZMQ_POLLIN, 0},
        {d->net.l.mon, 0, ZMQ_POLLIN, 0},
        {d->net.l.zap ? spits_zap_socket(d->net.l.zap) : NULL, 0, ZMQ_POLLIN, 0},
    };
    int nitems = d->net.l.zap ? 4 : 3;

    d->clock.now = d->clock.started_ms = spits_now_ms();
    server_turn(d->srv, d->clock.now);
    for (;;) {
        if (zmq_poll(items, nitems, server_sleep_ms(d->srv)) < 0 && errno != EINTR) {
            jm_fatal("the dispatcher cannot poll its sockets: %s; stopping "
                     "the job", zmq_strerror(errno));
            disp_control_only(d);
            break;
        }
        d->clock.now = spits_now_ms();
        server_turn(d->srv, d->clock.now);
        if (items[1].revents & ZMQ_POLLIN)
            spits_wake_drain(d->net.wake_fd);
        if (atomic_load(&d->ctl.pending) && disp_control(d))
            break;
        disp_reap(d, 0);
        if ((jm_signal || atomic_load(&jm_abort)) && !d->stopping)
            disp_stop_phase(d);
        if (items[2].revents & ZMQ_POLLIN)
            disp_monitor(d);
        if (d->net.l.zap && (items[3].revents & ZMQ_POLLIN))
            spits_zap_handle(d->net.l.zap, d->clock.now);
        /* While probing after a disconnect, read whatever came first: a
         * drained TM's BYE must be seen before a heartbeat to its closed
         * connection fails and calls it lost. */
        if ((items[0].revents & ZMQ_POLLIN) || server_probing(d->srv))
            server_recv(d->srv);
        if (server_tick_due(d->srv)) {
            server_tick(d->srv);
            jm_backlog_tick(&d->backlog, d->clock.now, jm_backlog_released());
            disp_log_flush(d, 0);
            disp_trim(d);
            dispview_live_update(d);
            jm_timeline_sample(&d->timeline, d->clock.now, d->resolved_before +
                               (d->phase ? d->live.resolved : 0));
            if (d->phase)
                jm_progress_tick(&d->progress, &d->live, d->clock.now);
            disp_hint_no_tm(d);
            disp_reap(d, 0);
        }
        serve_tms(d);
        disp_reap(d, 0);
        serve_publish_window(d);
    }
    disp_log_flush(d, 1);
    disp_end(d);
    return NULL;
}

/* --- the main thread's side -------------------------------------------- */

static void ctl_request(jm_disp_t *d, jm_phase_t *begin, int end, int finish)
{
    pthread_mutex_lock(&d->ctl.lock);
    d->ctl.begin = begin;
    d->ctl.end = end;
    d->ctl.stop |= finish;
    d->ctl.ack = 0;
    atomic_store(&d->ctl.pending, 1);
    pthread_mutex_unlock(&d->ctl.lock);
    /* The dispatcher wakes from its poll, or (disp_control_only) here. */
    pthread_cond_broadcast(&d->ctl.cond);
    spits_wake_signal(d->net.wake_fd);
    if (finish)
        return;
    pthread_mutex_lock(&d->ctl.lock);
    while (!d->ctl.ack)
        pthread_cond_wait(&d->ctl.cond, &d->ctl.lock);
    pthread_mutex_unlock(&d->ctl.lock);
}

void jm_disp_phase_begin(jm_disp_t *d, jm_phase_t *p)
{
    ctl_request(d, p, 0, 0);
}

void jm_disp_phase_end(jm_disp_t *d)
{
    ctl_request(d, NULL, 1, 0);
}

void jm_disp_stop(jm_disp_t *d)
{
    if (!d->started)
        return;
    ctl_request(d, NULL, 0, 1);
    pthread_join(d->thread, NULL);
    d->started = 0;
}

/* Announced endpoint: a wildcard bind is announced under this host's name. */
jm_disp_t *jm_disp_new(jm_t *jm, char *err, size_t errlen)
{
    jm_disp_t *d = calloc(1, sizeof *d);

    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->jm = jm;
    d->net.wake_fd = -1;
    pthread_mutex_init(&d->ctl.lock, NULL);
    pthread_cond_init(&d->ctl.cond, NULL);
    atomic_init(&d->ctl.pending, 0);
    jm_timeline_init(&d->timeline, jm->started);
    jm_progress_init(&d->progress, jm->opt.progress);
    d->fleet.tab = jm_tmtab_new(jm->opt.keep_dead, &d->fleet.evicted);
    d->logs.joined.what = "TM joins";
    d->logs.reattached.what = "TM re-attaches";
    d->logs.lost.what = "TM losses";
    d->logs.left.what = "TM leaves";
    d->logs.draining.what = "TMs draining";
    d->commit.buf = malloc(DISP_COMMIT_CHUNK * sizeof *d->commit.buf);
    d->sched = sched_new(jm->opt.max_copies, jm->opt.max_attempts, &d->st.sched);
    jm_backlog_reset(&d->backlog, jm_backlog_released());
    if (d->sched)
        serve_set_hooks(d);
    d->net.wake_fd = spits_wake_open();
    d->net.zctx = zmq_ctx_new();
    d->net.conngen = conngen_new();
    if (!d->fleet.tab || !d->commit.buf || !d->sched || d->net.wake_fd < 0 || !d->net.zctx ||
        !d->net.conngen) {
        snprintf(err, errlen, "cannot set up the dispatcher: %s", strerror(errno));
        goto fail;
    }
    /* (before the first socket, which starts them) */
    if (zmq_ctx_set(d->net.zctx, ZMQ_IO_THREADS,
                    jm->opt.io_threads > 0 ? jm->opt.io_threads : 1) != 0) {
        snprintf(err, errlen, "cannot use %d ZeroMQ I/O threads: %s",
                 jm->opt.io_threads, zmq_strerror(errno));
        goto fail;
    }
    d->serve.part_min = spits_parts_min();
    if (router_listen(&d->net.l, d->net.zctx, jm->opt.bind, jm->opt.max_task,
                      jm->opt.insecure ? NULL : jm->keys.client_public,
                      jm->keys.server_secret, MONITOR_EP, err, errlen) != 0)
        goto fail;
    server_cfg_t cfg = {
        .tab = d->fleet.tab, .sched = d->sched,
        .src = {d, serve_refill, serve_part_hold, serve_part_done, serve_hop_results},
        .hop = {d, disp_hop_lost, disp_hop_stopping, members_hop_add, members_hop_joined,
                .accept = members_hop_accept, .stats_check = members_hop_stats_check,
                .stats = members_hop_stats, .drain = disp_hop_drain,
                .rx_new = disp_hop_rx_new, .rx_done = disp_hop_rx_done,
                .status = disp_hop_status},
        .io = router_io(d->net.l.sock),
        .rules = {.prefix = "", .loop = "the dispatcher", .tick_ms = SERVE_TICK_MS,
                  .hb_ms = (int64_t)(jm->opt.heartbeat * 1000),
                  .timeout_ms = (int64_t)(jm->opt.tm_timeout * 1000)},
        .probe = router_probe, .probe_arg = d->net.conngen,
        .conngen = d->net.conngen,
        .result_parts = d->serve.part_min != UINT64_MAX, .part_min = d->serve.part_min};
    if (!(d->srv = server_new(&cfg)) || tmio_set_job(d) != 0) {
        snprintf(err, errlen, "cannot set up the dispatcher: out of memory");
        goto fail;
    }
    return d;
fail:
    jm_disp_destroy(&d);
    return NULL;
}

int jm_disp_start(jm_disp_t *d)
{
    int err = pthread_create(&d->thread, NULL, disp_main, d);
    if (err) {
        errno = err;
        return -1;
    }
    d->started = 1;
    return 0;
}

const char *jm_disp_endpoint(const jm_disp_t *d) { return d->net.l.endpoint; }
int jm_disp_wake_fd(const jm_disp_t *d) { return d->net.wake_fd; }
const jm_disp_stats_t *jm_disp_stats(const jm_disp_t *d) { return &d->st; }
const server_stats_t *jm_disp_server_stats(const jm_disp_t *d) { return server_stats(d->srv); }

void jm_disp_destroy(jm_disp_t **dp)
{
    jm_disp_t *d = *dp;
    if (!d)
        return;
    jm_disp_stop(d);
    if (d->phase)
        disp_phase_end(d);
    router_listen_close(&d->net.l);
    if (d->net.zctx)
        spits_zmq_ctx_term(d->net.zctx);
    spits_wake_close(&d->net.wake_fd);
    peertab_destroy(&d->fleet.tab);
    conngen_destroy(&d->net.conngen);
    spits_buf_free(&d->status.buf);
    server_destroy(&d->srv);
    sched_destroy(&d->sched);
    free(d->commit.buf);
    free(d->poison.list);
    pthread_mutex_destroy(&d->ctl.lock);
    pthread_cond_destroy(&d->ctl.cond);
    free(d);
    *dp = NULL;
}
