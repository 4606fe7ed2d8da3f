/*
 * simulate.c - spits-tm --simulate K: K virtual task managers in one
 * process, for scale tests and benchmarks on a small machine.
 *
 * A virtual TM is a whole tm_t: its own DEALER socket, routing id, CURVE
 * handshake, HELLO, heartbeats, STATS, re-attach, message handlers,
 * outbox and results, that is, the code every spits-tm runs, turn by
 * turn (loop.c's tm_loop_turn). Only its workers differ: they are virtual
 * (tm.h), so a task holds a slot for --sim-task-time and then runs in the
 * module for its real result. Run the JM with a module that is fast (the
 * bench module without -s): the job's result is then as exact as with
 * real TMs, and the JM sees K TMs (of one host and pid).
 *
 * One thread drives them all; nothing here is shared with another thread
 * but libzmq's own. What makes a TM turn:
 *   - its socket: an epoll set holds each socket's ZMQ_FD, edge triggered
 *     as ZeroMQ wants; after a turn the socket's ZMQ_EVENTS tells whether
 *     messages still wait, and the TM turns again at once;
 *   - its monitor, the same way, and then the turn reads the monitor: a
 *     HELLO sent before the handshake went through waits for its
 *     HANDSHAKE_SUCCEEDED, as spits-tm's does (waiting for the sweep
 *     instead held each join up to SIM_SWEEP_MS);
 *   - its virtual runs: a min-heap of the times they are due;
 *   - the sweep: every TM once per SIM_SWEEP_MS, spread over steps of
 *     SIM_STEP_MS, for its timers (heartbeats and STATS, once a second; a
 *     silent JM; the end of a drain), its monitor's events (a dropped
 *     connection), a signal and churn. Other turns leave the monitor
 *     alone: each ZeroMQ call costs a poll of the socket's mailbox, and
 *     those turns are many.
 * Churn (--sim-churn SEC): a TM leaves 0.5 to 1.5 x SEC after it joined
 * (one that never joins fails by --wait, and is not replaced), either as
 * if killed (--sim-kill percent: its socket closed at once, no BYE, its
 * tasks lost) or drained (as SIGTERM drains a spits-tm: DRAIN, queued
 * tasks handed back, running ones finished, BYE), and a new TM, with a new
 * routing id, joins in its place, until the job is over. SIGTERM or SIGINT
 * drains every TM, and none is replaced from then on.
 *
 * Logs stay readable at thousands of TMs: a virtual TM logs only its
 * warnings and errors (its info lines too with -v); the harness logs its
 * counts every 10 s and, last, one summary line (sim_summary).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "log.h"
#include "tm_private.h"
#include "util.h"
#include "wake.h"

#define SIM_SWEEP_MS 500        /* every TM turns at least this often */
#define SIM_STEP_MS 10          /* ...a 50th of them each step */
#define SIM_REPORT_MS 10000     /* the harness's counts */
#define SIM_FDS_PER_TM 5        /* socket, monitor pair (2), connection, spare */
#define SIM_WAKE UINT64_MAX     /* the epoll tag of the shared eventfd */
#define SIM_MON (1ULL << 32)    /* a tag's bit: a monitor's ZMQ_FD */

typedef struct {
    tm_t tm;
    int live;                   /* a TM runs in this slot */
    int ready;                  /* on the ready list */
    int swept;                  /* ...for the sweep: reads the monitor too */
    int mon_due;                /* ...its monitor has events: reads them */
    int leaving;                /* churn began its drain */
    int64_t leave_at;           /* churn: its life ends (ms; 0: never) */
    int64_t due;                /* its virtual run in the heap (INT64_MAX:
                                   none); older heap entries are stale */
    void *watched;              /* the socket whose ZMQ_FD is in epoll */
    void *watched_mon;          /* ...and its monitor (tagged SIM_MON) */
    double joined;              /* wall clock of its first WELCOME (0: none) */
} sim_tm_t;

typedef struct {
    int64_t due;                /* ns, monotonic */
    uint32_t ix;
} sim_due_t;

typedef struct {
    tm_opts_t opts;
    void *context;              /* one for all: one I/O thread */
    int wake_fd;                /* the pools' and signals' eventfd */
    int ep;                     /* epoll: every socket's ZMQ_FD, and wake_fd */
    spits_module_t *mod;        /* the module every TM shares (job.c) */
    int tm_level;               /* the virtual TMs' log level */
    sim_tm_t *tms;              /* opts.simulate slots */
    uint32_t *ready;            /* slots to turn now */
    size_t nready;
    sim_due_t *heap;            /* virtual runs' end times, earliest first */
    size_t nheap, capheap;
    size_t sweep_at;            /* the sweep's next slot */
    int live;                   /* slots with a TM */
    int over;                   /* the job is over (or a drain of all): no
                                   more joins */
    /* counts */
    uint64_t starts, joins, killed, drained, ended, failed, runs;
    double first_start, first_join, kth_join, last_join;   /* wall clock */
    double all_started;      /* ...when the K first had started (connected) */
} sim_t;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the ready list and the heap of virtual runs ------------------------ */

static void sim_ready(sim_t *sim, uint32_t ix)
{
    if (sim->tms[ix].ready || !sim->tms[ix].live)
        return;
    sim->tms[ix].ready = 1;
    sim->ready[sim->nready++] = ix;
}

static int heap_push(sim_t *sim, int64_t due, uint32_t ix)
{
    if (sim->nheap == sim->capheap) {
        size_t cap = sim->capheap ? 2 * sim->capheap : 1024;
        sim_due_t *h = realloc(sim->heap, cap * sizeof *h);
        if (!h)
            return -1;
        sim->heap = h;
        sim->capheap = cap;
    }
    size_t i = sim->nheap++;
    while (i && sim->heap[(i - 1) / 2].due > due) {
        sim->heap[i] = sim->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    sim->heap[i] = (sim_due_t){due, ix};
    return 0;
}

static sim_due_t heap_pop(sim_t *sim)
{
    sim_due_t top = sim->heap[0], last = sim->heap[--sim->nheap];
    size_t i = 0, n = sim->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && sim->heap[c + 1].due < sim->heap[c].due)
            c++;
        if (sim->heap[c].due >= last.due)
            break;
        sim->heap[i] = sim->heap[c];
        i = c;
    }
    if (n)
        sim->heap[i] = last;
    return top;
}

/* The TM turns when its earliest virtual run is due. */
static void sim_schedule(sim_t *sim, uint32_t ix, int64_t due)
{
    sim_tm_t *s = &sim->tms[ix];
    if (due == INT64_MAX || due >= s->due)
        return;     /* (an earlier entry turns it, and it reschedules) */
    if (heap_push(sim, due, ix) != 0) {
        sim_ready(sim, ix);   /* no memory: the sweep turns it instead */
        return;
    }
    s->due = due;
}

/* ---- one TM ------------------------------------------------------------- */

/* Puts the TM's current socket in the epoll set. A closed socket's
 * descriptor leaves the set when libzmq closes it. */
static void sim_watch(sim_t *sim, uint32_t ix)
{
    sim_tm_t *s = &sim->tms[ix];
    int fd;
    size_t len = sizeof fd;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = ix};

    s->watched = s->tm.link.socket;
    if (s->watched && zmq_getsockopt(s->watched, ZMQ_FD, &fd, &len) == 0 &&
        epoll_ctl(sim->ep, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
        epoll_ctl(sim->ep, EPOLL_CTL_MOD, fd, &ev);
    if (s->watched_mon == s->tm.link.monitor)
        return;
    s->watched_mon = s->tm.link.monitor;
    ev.data.u64 = ix | SIM_MON;
    len = sizeof fd;
    if (!s->watched_mon || zmq_getsockopt(s->watched_mon, ZMQ_FD, &fd, &len) != 0)
        return;
    if (epoll_ctl(sim->ep, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
        epoll_ctl(sim->ep, EPOLL_CTL_MOD, fd, &ev);
    /* A new monitor's fd gives no edge until a look finds it empty (libzmq
     * signals a reader it has seen waiting): this look arms it, or finds
     * events already there. Later, a turn that reads the monitor reads
     * it to the end, and the others leave it alone, so its edges hold. */
    int events = 0;
    len = sizeof events;
    if (zmq_getsockopt(s->watched_mon, ZMQ_EVENTS, &events, &len) == 0 &&
        (events & ZMQ_POLLIN)) {
        s->mon_due = 1;
        sim_ready(sim, ix);
    }
}

/* What tm.c's main does before its loop, for one virtual TM. Returns 0,
 * -1 when the job is over already, or 1 (said why). */
static int sim_tm_start(sim_t *sim, uint32_t ix)
{
    sim_tm_t *s = &sim->tms[ix];
    tm_t *tm = &s->tm;
    int ready = s->ready;    /* (the slot may be on the ready list, once) */

    memset(s, 0, sizeof *s);
    s->ready = ready;
    s->due = INT64_MAX;
    tm->opts = sim->opts;
    tm->wake_fd = sim->wake_fd;
    tm->job.shared = &sim->mod;
    tm->link.context = sim->context;
    tm_link_init(tm, tm_results_pending);
    int rc = tm_link_find_jm(tm);
    if (rc != 0)
        return rc;
    if (tm_pool_init(&tm->pool, tm->opts.workers, sim->wake_fd) != 0) {
        spits_error("cannot set up a virtual task manager: out of memory");
        tm_pool_destroy(&tm->pool);
        return 1;
    }
    tm->pool.opts.virtual_ns = (int64_t)(sim->opts.sim_task * 1e9);
    s->live = 1;
    sim->live++;
    if (tm_link_connect(tm) != 0)
        return 1;     /* (live: the caller retires it) */
    tm_loop_begin(tm);
    sim_watch(sim, ix);
    if (!sim->starts++)
        sim->first_start = spits_wall_time();
    sim_ready(sim, ix);
    return 0;
}

/* Frees the TM in slot ix: with BYE if it leaves well, or at once, as a
 * killed process leaves (kill). */
static void sim_tm_retire(sim_t *sim, uint32_t ix, int kill)
{
    sim_tm_t *s = &sim->tms[ix];
    tm_t *tm = &s->tm;

    sim->runs += (uint64_t)atomic_load(&tm->pool.stats.runs);
    if (tm->pool_started)
        tm_pool_stop(&tm->pool, 0);        /* (virtual: at once) */
    if (kill)
        tm_link_abandon(tm);
    else
        tm_link_close(tm, tm->done > 0 || tm->drain.active);
    tm_link_destroy(tm);
    tm_pool_destroy(&tm->pool);
    tm_results_free(&tm->results);
    tm_proto_free(&tm->proto);
    tm_job_free(&tm->job);
    s->live = 0;
    sim->live--;
}

/* A new TM in slot ix, in place of one that left, while the job runs. */
static void sim_replace(sim_t *sim, uint32_t ix)
{
    if (sim->over)
        return;
    int rc = sim_tm_start(sim, ix);
    if (rc < 0) {
        sim->over = 1;               /* the job is over: report.json */
    } else if (rc > 0) {
        sim->failed++;
        if (sim->tms[ix].live)
            sim_tm_retire(sim, ix, 1);
    }
}

/* The TM's turn said it leaves (tm->done): count how, free it, and
 * replace it if churn made it leave. */
static void sim_tm_left(sim_t *sim, uint32_t ix)
{
    sim_tm_t *s = &sim->tms[ix];
    int churned = s->leaving && s->tm.done > 0;

    if (s->tm.done < 0) {
        sim->failed++;    /* (said why; not replaced: it may be the JM's) */
    } else if (churned) {
        sim->drained++;
    } else {
        sim->ended++;
        sim->over = 1;    /* the job is over, or every TM drains */
    }
    sim_tm_retire(sim, ix, 0);
    if (churned)
        sim_replace(sim, ix);
}

/* Its first WELCOME: counted, and churn's clock starts (one that never
 * joins fails by --wait, and is not replaced). */
static void sim_note_join(sim_t *sim, sim_tm_t *s)
{
    if (s->joined || !s->tm.link.status.welcomed)
        return;
    s->joined = spits_wall_time();
    if (sim->opts.sim_churn > 0)
        s->leave_at = s->tm.now + (int64_t)(sim->opts.sim_churn * 1000 *
                                            (0.5 + randombytes_uniform(1001) / 1000.0));
    if (!sim->joins)
        sim->first_join = s->joined;
    if (++sim->joins == (uint64_t)sim->opts.simulate)
        sim->kth_join = s->joined;
    sim->last_join = s->joined;
}

/* One turn of TM ix: its virtual runs that are due, tm_loop_turn (the
 * socket, the timers, results out), then the tasks that came in take
 * free slots. Virtual runs start and end at the same t0, so that none
 * ends unseen between the two calls. */
static void sim_turn(sim_t *sim, uint32_t ix)
{
    sim_tm_t *s = &sim->tms[ix];
    tm_t *tm = &s->tm;
    int64_t t0 = now_ns();
    int monitor = s->swept || s->mon_due;

    s->ready = s->swept = s->mon_due = 0;
    if (!s->live)
        return;
    tm_pool_virtual_turn(&tm->pool, t0);
    int level = spits_log_set_level(sim->tm_level);
    int leave = tm_loop_turn(tm, monitor);
    spits_log_set_level(level);
    sim_note_join(sim, s);
    if (leave) {
        sim_tm_left(sim, ix);
        return;
    }
    sim_schedule(sim, ix, tm_pool_virtual_turn(&tm->pool, t0));
    if (tm->link.socket != s->watched || tm->link.monitor != s->watched_mon)
        sim_watch(sim, ix);
    int events = 0;
    size_t len = sizeof events;
    /* Edge-triggered: what is still there after the turn would give no
     * new edge. More than a turn reads, or results the socket now takes. */
    if (zmq_getsockopt(tm->link.socket, ZMQ_EVENTS, &events, &len) == 0 &&
        ((events & ZMQ_POLLIN) ||
         ((events & ZMQ_POLLOUT) && tm->results.n && tm_link_ready(tm))))
        sim_ready(sim, ix);
}

/* The sweep's churn: a TM whose life is over leaves, killed or drained. */
static void sim_churn(sim_t *sim, uint32_t ix, int64_t now_ms)
{
    sim_tm_t *s = &sim->tms[ix];

    if (!s->live || !s->leave_at || s->leaving || now_ms < s->leave_at ||
        sim->over)
        return;
    if ((int)randombytes_uniform(100) < sim->opts.sim_kill) {
        sim->killed++;
        sim_tm_retire(sim, ix, 1);
        sim_replace(sim, ix);
        return;
    }
    s->leaving = 1;
    s->tm.now = now_ms;
    int level = spits_log_set_level(sim->tm_level);
    tm_loop_drain(&s->tm, "leaving (--sim-churn)");
    spits_log_set_level(level);
}

/* ---- the harness -------------------------------------------------------- */

/* The harness's counts, one line (tools/spits-bench reads the last):
 * the wall-clock times are epoch seconds. */
static void sim_summary(const sim_t *sim, const char *when)
{
    int k = sim->opts.simulate;
    double span = sim->kth_join > 0 ? sim->kth_join - sim->first_start : 0;
    spits_info("simulate %s: %d virtual TM(s) x %d worker(s), %d live; joins %llu "
               "(all %d by %.3f s: %.0f joins/s); left: %llu killed, %llu "
               "drained, %llu at the end, %llu failed; tasks run %llu; "
               "first_start %.3f first_join %.3f last_join %.3f all_started %.3f",
               when, k, sim->opts.workers, sim->live,
               (unsigned long long)sim->joins, k, span,
               span > 0 ? k / span : 0.0,
               (unsigned long long)sim->killed, (unsigned long long)sim->drained,
               (unsigned long long)sim->ended, (unsigned long long)sim->failed,
               (unsigned long long)sim->runs, sim->first_start, sim->first_join,
               sim->last_join, sim->all_started);
}

/* Sockets the context may hold: three a TM (its DEALER, its monitor's
 * pair), and those of TMs that left, which linger up to 2 s (a drain's
 * last results) after churn replaced them. */
static int sim_max_sockets(void *context, int k)
{
    int limit = zmq_ctx_get(context, ZMQ_SOCKET_LIMIT);
    int want = 6 * k + 1024;
    return limit > 0 && want > limit ? limit : want;
}

/* The process's limits, context, eventfd, epoll set and slots. Returns
 * 0, or 1 (said why). */
static int sim_setup(sim_t *sim)
{
    int k = sim->opts.simulate;
    struct rlimit rl;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SIM_WAKE};

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        rl.rlim_cur < (rlim_t)k * SIM_FDS_PER_TM + 64) {
        rlim_t want = (rlim_t)k * SIM_FDS_PER_TM + 64;
        rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < want) {
            spits_error("--simulate %d needs about %llu file descriptors; this "
                        "process may open %llu (ulimit -Hn): run fewer per "
                        "process", k, (unsigned long long)want,
                        (unsigned long long)rl.rlim_cur);
            return 1;
        }
    }
    if (sodium_init() < 0) {
        spits_error("cannot initialise libsodium");
        return 1;
    }
    sim->context = zmq_ctx_new();
    sim->wake_fd = spits_wake_open();
    sim->ep = epoll_create1(EPOLL_CLOEXEC);
    sim->tms = calloc((size_t)k, sizeof *sim->tms);
    sim->ready = malloc((size_t)k * sizeof *sim->ready);
    if (!sim->context || sim->wake_fd < 0 || sim->ep < 0 || !sim->tms ||
        !sim->ready ||
        zmq_ctx_set(sim->context, ZMQ_MAX_SOCKETS, sim_max_sockets(sim->context, k)) != 0 ||
        epoll_ctl(sim->ep, EPOLL_CTL_ADD, sim->wake_fd, &ev) != 0) {
        spits_error("cannot set up %d virtual task managers: %s", k, strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    tm_loop_catch_signals(sim->wake_fd);
    return 0;
}

static void sim_free(sim_t *sim)
{
    for (int i = 0; sim->tms && i < sim->opts.simulate; i++)
        if (sim->tms[i].live)
            sim_tm_retire(sim, (uint32_t)i, 1);
    spits_module_close(&sim->mod);
    if (sim->context)
        spits_zmq_ctx_term(sim->context);
    tm_loop_release_signals();   /* (before its fd number can be reused) */
    spits_wake_close(&sim->wake_fd);
    if (sim->ep >= 0)
        close(sim->ep);
    free(sim->tms);
    free(sim->ready);
    free(sim->heap);
}

/* How long the loop may wait: until the next virtual run or sweep step. */
static int sim_timeout_ms(const sim_t *sim, int64_t next_step_ms)
{
    if (sim->nready)
        return 0;
    int64_t wait = next_step_ms - spits_now_ms();
    if (sim->nheap) {
        int64_t due = (sim->heap[0].due - now_ns() + 999999) / 1000000;
        if (due < wait)
            wait = due;
    }
    return wait < 0 ? 0 : wait > SIM_STEP_MS ? SIM_STEP_MS : (int)wait;
}

static void sim_run(sim_t *sim)
{
    int k = sim->opts.simulate;
    int64_t next_step = spits_now_ms(), next_report = next_step + SIM_REPORT_MS;
    uint32_t *turning = malloc((size_t)k * sizeof *turning);
    struct epoll_event evs[256];

    if (!turning) {
        spits_error("cannot run %d virtual task managers: out of memory", k);
        sim->failed++;
        return;
    }
    while (sim->live > 0) {
        int n = epoll_wait(sim->ep, evs, 256, sim_timeout_ms(sim, next_step));
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == SIM_WAKE) {
                spits_wake_drain(sim->wake_fd);
                continue;
            }
            if (tag & SIM_MON)
                sim->tms[(uint32_t)tag].mon_due = 1;
            sim_ready(sim, (uint32_t)tag);
        }
        int64_t t = now_ns(), now_ms = spits_now_ms();
        if (tm_loop_signalled())
            sim->over = 1;     /* every TM drains; none is replaced */
        while (sim->nheap && sim->heap[0].due <= t) {
            sim_due_t d = heap_pop(sim);
            if (d.due == sim->tms[d.ix].due) {
                sim->tms[d.ix].due = INT64_MAX;
                sim_ready(sim, d.ix);
            }
        }
        if (now_ms >= next_step) {
            /* A 50th of the slots a step, each turned once a sweep; a
             * loop that fell behind catches up (all of them at most). */
            size_t steps = (size_t)((now_ms - next_step) / SIM_STEP_MS) + 1;
            size_t step = ((size_t)k * SIM_STEP_MS + SIM_SWEEP_MS - 1) / SIM_SWEEP_MS;
            step = step * steps > (size_t)k ? (size_t)k : step * steps;
            for (size_t i = 0; i < step; i++) {
                uint32_t ix = (uint32_t)(sim->sweep_at++ % (size_t)k);
                sim_churn(sim, ix, now_ms);
                sim->tms[ix].swept = 1;
                sim_ready(sim, ix);
            }
            next_step = now_ms + SIM_STEP_MS;
        }
        /* Turn those ready now; a turn may make others (or itself) ready
         * for the next round. */
        size_t nturn = sim->nready;
        memcpy(turning, sim->ready, nturn * sizeof *turning);
        sim->nready = 0;
        for (size_t i = 0; i < nturn; i++)
            sim_turn(sim, turning[i]);
        if (now_ms >= next_report) {
            sim_summary(sim, "so far");
            next_report = now_ms + SIM_REPORT_MS;
        }
    }
    free(turning);
}

int tm_sim_main(const tm_opts_t *opts)
{
    sim_t sim;
    int rc = 0;

    memset(&sim, 0, sizeof sim);
    sim.opts = *opts;
    sim.wake_fd = sim.ep = -1;
    /* The TMs' own info lines only with -v: K of each are no log. */
    sim.tm_level = opts->verbosity > SPITS_LOG_INFO ? SPITS_LOG_INFO
                 : opts->verbosity < SPITS_LOG_WARN ? opts->verbosity
                                                    : SPITS_LOG_WARN;
    if (sim_setup(&sim) != 0) {
        sim_free(&sim);
        return 1;
    }
    for (int i = 0; i < opts->simulate && !rc; i++) {
        rc = sim_tm_start(&sim, (uint32_t)i);
        if (rc < 0 && i == 0)   /* the job is over already */
            spits_info("no virtual task manager started");
        if (rc)
            sim.over = 1;
    }
    sim.all_started = spits_wall_time();   /* (they join only from here) */
    if (rc <= 0)
        sim_run(&sim);
    sim_summary(&sim, "done");
    sim_free(&sim);
    return rc > 0 || sim.failed ? 1 : 0;
}
