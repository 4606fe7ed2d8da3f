/*
 * loop.c - spits-tm's main loop, and how it leaves early.
 *
 * One thread, one zmq_poll on three things: the socket to the JM, the
 * eventfd the workers and the signal handler write (wake.h), and the
 * socket's monitor; a relay's socket to the TMs behind it too (relay.c,
 * turned after the JM's messages). Each turn it reads the JM's messages (protocol.c),
 * acts on a signal or a near walltime, moves the outbox's records out
 * (results.c), and runs the link's timers (link.c). It ends when the JM
 * says the job is over, the JM is given up on, or a drain is done.
 *
 * A drain is how a TM leaves with nothing lost: SIGTERM or SIGINT (what
 * Slurm sends at a time limit), or a walltime end (--end-time) too near
 * for another task, starts it. The TM tells the JM to send nothing more
 * (DRAIN), hands back its queued tasks, lets running ones finish within
 * --drain-timeout, and sends their results. It leaves once the JM has
 * answered the DRAIN too: tasks the JM sent before it saw the DRAIN are
 * still on their way until then, and each is handed back as it comes.
 * Left behind, the JM would take them back only when the TM is gone,
 * and send them again as tasks no one handed back. A second signal kills it,
 * but for a SIGTERM within 2 s of the first (Slurm and srun both send
 * one at a time limit).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "tm_private.h"
#include "util.h"
#include "wake.h"

/* The first SIGTERM/SIGINT (0: none) and when it came (monotonic ms):
 * set by the handler, read by the loop. Lock-free atomics: safe in a
 * handler and across threads. */
static atomic_int tm_signal;
static atomic_llong tm_signal_ms;
static spits_wake_ref_t tm_wake = SPITS_WAKE_REF_INIT;   /* (wake.h) */

/* A SIGTERM this soon after the first is the same request: at a time
 * limit Slurm signals a step's processes and srun passes its own SIGTERM
 * on, two signals within a second, and the second must not end the
 * drain the first began. */
#define TM_SIGNAL_REPEAT_MS 2000

/* How long a drained TM waits for the JM's answer to its DRAIN (within
 * --drain-timeout): a JM that never answers costs this much, and then
 * only the re-sending of the tasks still on their way. */
#define TM_DRAIN_ACK_MS 5000

static void on_signal(int sig)
{
    struct timespec ts;
    int none = 0;

    clock_gettime(CLOCK_MONOTONIC, &ts);   /* (async-signal-safe) */
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (atomic_compare_exchange_strong(&tm_signal, &none, sig)) {
        atomic_store(&tm_signal_ms, now);
        spits_wake_ref_signal(&tm_wake);
        return;
    }
    if (sig == SIGTERM && now - atomic_load(&tm_signal_ms) < TM_SIGNAL_REPEAT_MS)
        return;
    /* Any later one ends the TM at once, as the signal does by default. */
    signal(sig, SIG_DFL);
    raise(sig);
}

void tm_loop_release_signals(void)
{
    spits_wake_ref_release(&tm_wake);
}

void tm_loop_catch_signals(int wake_fd)
{
    struct sigaction sa;

    spits_wake_ref_set(&tm_wake, wake_fd);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

static void drain_begin(tm_t *tm, const char *why)
{
    unsigned char drain[SPITS_HDR_SIZE];
    size_t handed = 0, running = 0;

    tm->drain.active = 1;
    tm->drain.deadline = tm->now + (int64_t)(tm->opts.drain_timeout * 1000);
    spits_wire_encode_empty(drain, SPITS_MSG_DRAIN, tm_job_wire(&tm->job));
    /* (no DRAIN sent, none answered: nothing is waited for) */
    tm->drain.acked = !tm_link_ready(tm) || tm_link_send(tm, drain, sizeof drain) != 0;
    tm->drain.ack_by = tm->now + TM_DRAIN_ACK_MS < tm->drain.deadline
                           ? tm->now + TM_DRAIN_ACK_MS : tm->drain.deadline;
    if (tm->pool_started) {
        handed = tm_pool_drain(&tm->pool);
        if (tm->relay)
            tm_relay_drain(tm);
        running = tm_pool_running(&tm->pool);
    }
    spits_info("%s: draining: %zu queued task(s) handed back, waiting "
               "up to %.0f s for %zu running", why, handed,
               tm->opts.drain_timeout, running);
}

/* 1 when the drain is over: nothing runs, every result went out, and
 * the JM answered the DRAIN (or was waited for long enough). */
static int drain_done(tm_t *tm)
{
    size_t held = tm->pool_started ? tm_pool_held(&tm->pool) : 0;
    /* Read held before collecting: a worker hands back its results and
     * stops counting as running under one lock, so none can slip by. */
    tm_results_collect(tm);
    tm_results_send(tm);
    if (held == 0 && tm->results.n == 0 && (tm->drain.acked || tm->now >= tm->drain.ack_by)) {
        if (!tm->drain.acked)
            spits_warn("the job manager did not answer the drain in time: it "
                       "sends the tasks still on their way here to others");
        spits_info("drained: every started task finished and its result was sent");
        return 1;
    }
    if (tm->now >= tm->drain.deadline) {
        spits_warn("drain timed out after %.0f s: %zu task(s) still running and "
                   "%zu result batch(es) unsent are left to the job manager",
                   tm->opts.drain_timeout, held, tm->results.n);
        tm->done = -1;
        return 1;
    }
    return 0;
}

/* Walltime: drain once what is left cannot fit another task or two and
 * the last results. Task time is what the workers last measured. */
static void walltime_check(tm_t *tm)
{
    if (!tm->drain.end_ms || tm->drain.active || !tm->pool_started)
        return;
    int64_t task_ms = (int64_t)(atomic_load_explicit(&tm->pool.stats.task_ns,
                                                     memory_order_relaxed) / 1000000);
    int64_t left = tm->drain.end_ms - tm->now;
    if (left > 2 * task_ms + (int64_t)(tm->opts.end_margin * 1000))
        return;
    char why[128];
    snprintf(why, sizeof why, "walltime: %.0f s left, a task takes about %.1f s",
             left / 1000.0, task_ms / 1000.0);
    drain_begin(tm, why);
    /* Leave by the end, whatever --drain-timeout says. */
    int64_t by = tm->drain.end_ms - 1000;
    if (by < tm->drain.deadline)
        tm->drain.deadline = by > tm->now ? by : tm->now;
}

/* Up to 256 of the JM's messages a turn, so results still go out. */
static void receive_messages(tm_t *tm)
{
    for (int i = 0; i < 256 && !tm->done; i++) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, tm->link.socket, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        tm_proto_on_message(tm, &msg);
        zmq_msg_close(&msg);
    }
}

int tm_loop_signalled(void)
{
    return atomic_load(&tm_signal) != 0;
}

/* A TM whose worker processes started before it joined (tm.c) says
 * HELLO once each is ready, or given up on (workers.c, isolate.c): the
 * JM counts its slots from then, and no task waits for an interpreter's
 * start. Each worker waits pool.opts.start_wait_ms for its process (and
 * says so if that passes); this wait, a second more, backs theirs up.
 * A signal or a failed pool ends it (the loop then acts on them). */
static void await_workers(tm_t *tm)
{
    int64_t start = spits_now_ms(), end = start + tm->pool.opts.start_wait_ms + 1000;
    int n = tm->pool.workers.n, ready;

    while ((ready = tm_pool_ready_count(&tm->pool)) < n && !tm_signal &&
           !tm_pool_failed(&tm->pool)) {
        int64_t left = end - spits_now_ms();
        if (left <= 0) {
            spits_warn("%d of %d worker process(es) not started within %.1f s: "
                       "joining without them", n - ready, n,
                       (double)(end - start) / 1000);
            break;
        }
        struct pollfd pfd = {tm->wake_fd, POLLIN, 0};
        if (poll(&pfd, 1, left < 100 ? (int)left : 100) > 0)
            spits_wake_drain(tm->wake_fd);
    }
    spits_debug("%d of %d worker process(es) started in %.3f s; joining", ready, n,
                (spits_now_ms() - start) / 1000.0);
}

void tm_loop_begin(tm_t *tm)
{
    if (tm->pool_early)
        await_workers(tm);
    tm->now = spits_now_ms();
    tm->first_deadline = tm->now + (int64_t)(tm->opts.wait * 1000);
    if (tm->opts.end_wall > 0)
        tm->drain.end_ms = tm->now +
            (int64_t)((tm->opts.end_wall - spits_wall_time()) * 1000);
    tm->link.live.last_look = tm->now;
    tm_link_send_hello(tm);
}

void tm_loop_drain(tm_t *tm, const char *why)
{
    if (!tm->drain.active)
        drain_begin(tm, why);
}

int tm_loop_turn(tm_t *tm, int monitor)
{
    tm->now = spits_now_ms();
    if (monitor) {
        tm_link_on_monitor(tm);
        if (tm->done)
            return 1;
    }
    receive_messages(tm);
    if (tm->relay && !tm->done)
        tm_relay_turn(tm);
    if (tm_signal && !tm->drain.active) {
        char why[32];
        snprintf(why, sizeof why, "signal %d", (int)tm_signal);
        drain_begin(tm, why);
    }
    walltime_check(tm);
    tm_results_collect(tm);   /* (tasks go back before the pool starts too) */
    tm_results_send(tm);
    if (tm->drain.active && !tm->done && drain_done(tm)) {
        if (!tm->done)
            tm->done = 1;
        return 1;
    }
    if (!tm->link.status.welcomed && tm->now > tm->first_deadline && !tm->drain.active) {
        char hint[PATH_MAX + 256];
        if (tm_link_refusal(tm)) {
            /* (said why) */
        } else if (tm->opts.n_via)
            spits_error("no job manager answered at %s, nor through its %d "
                        "relay(s), within %.0f s%s", tm->link.hops.jm_endpoint,
                        tm->opts.n_via, tm->opts.wait,
                        tm_link_gone_hint(tm, hint, sizeof hint));
        else
            spits_error("no job manager answered at %s within %.0f s%s",
                        tm->link.hops.endpoint, tm->opts.wait,
                        tm_link_gone_hint(tm, hint, sizeof hint));
        tm->done = -1;
        return 1;
    }
    tm_link_timers(tm);
    return tm->done != 0;
}

int tm_loop_run(tm_t *tm)
{
    enum { POLL_SOCKET, POLL_WAKE, POLL_MONITOR, POLL_RELAY, POLL_ZAP, POLL_COUNT };

    tm_loop_begin(tm);
    for (;;) {
        zmq_pollitem_t pollset[POLL_COUNT] = {
            [POLL_SOCKET] = {tm->link.socket, 0, ZMQ_POLLIN, 0},
            [POLL_WAKE] = {NULL, tm->wake_fd, ZMQ_POLLIN, 0},
            [POLL_MONITOR] = {tm->link.monitor, 0, ZMQ_POLLIN, 0},
            [POLL_RELAY] = {tm->relay ? tm_relay_socket(tm->relay) : NULL, 0,
                            ZMQ_POLLIN, 0},
            /* (a handshake waits on its ZAP answer: answered at once) */
            [POLL_ZAP] = {tm->relay ? tm_relay_zap_socket(tm->relay) : NULL, 0,
                          ZMQ_POLLIN, 0},
        };
        int npoll = !tm->relay ? POLL_RELAY
                    : pollset[POLL_ZAP].socket ? POLL_COUNT : POLL_ZAP;
        if (tm->results.n && tm_link_ready(tm))
            pollset[POLL_SOCKET].events |= ZMQ_POLLOUT;
        if (zmq_poll(pollset, npoll, 100) < 0 && errno != EINTR) {
            spits_error("zmq_poll: %s", zmq_strerror(errno));
            return 1;
        }
        if (pollset[POLL_WAKE].revents & ZMQ_POLLIN)
            spits_wake_drain(tm->wake_fd);
        if (tm_loop_turn(tm, pollset[POLL_MONITOR].revents & ZMQ_POLLIN))
            break;
    }
    return tm->done < 0 ? 1 : 0;
}
