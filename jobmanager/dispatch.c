/*
 * dispatch.c - the JM's network loop: pull scheduling and the circular
 * re-send of unfinished tasks.
 *
 * One thread owns the ROUTER socket, the TM table, the ring of tasks in
 * flight and the retry list. It waits in zmq_poll on the socket, on an
 * eventfd (new tasks from the generator, requests from the main thread)
 * and on the socket monitor (peer disconnects).
 *
 * Scheduling is pull with credits: a TM announces how many tasks it may
 * hold (workers + prefetch); the dispatcher keeps that many out on it,
 * counting one back for every record it returns. A TM with room gets, in
 * this order:
 *   1. tasks whose every copy was lost (dead TM, failed run): the retry list;
 *   2. fresh tasks from the generator;
 *   3. when no fresh task exists, the oldest unfinished task that is not
 *      already running on it and has fewer than --max-copies copies out.
 * The first result of a task resolves it: it leaves the ring and goes to
 * the committer, and its other copies are cancelled (CANCEL): a queued
 * copy comes back unrun, a running one's result counts as a duplicate.
 * A failed, crashed or timed-out run counts toward --max-attempts and is
 * retried, preferably on another TM; past that the task is a poison task,
 * given up and named in the report.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "jm.h"
#include "log.h"
#include "scheduler.h"
#include "timeline.h"
#include "tmtable.h"
#include "util.h"
#include "wake.h"
#include "zap.h"
#include "zmqutil.h"

#define DISP_BATCH_BYTES (4u << 20)  /* a TASKS message's soft size cap */
#define DISP_RECV_BURST 256          /* messages per poll wake-up */
#define DISP_TICK_MS 100
#define DISP_PROBE_MS 1500           /* probe window after a disconnect */
#define MONITOR_EP "inproc://spits-jm-monitor"
#define SLOTS_MAX 65536                      /* adaptive prefetch's cap... */
#define SLOTS_BYTES (64u << 20)              /* ...and its cap in task bytes */
#define DISP_COMMIT_CHUNK 4096               /* resolutions per commitq push */

struct jm_disp {
    jm_t *jm;
    void *zctx, *router, *mon;
    jm_zap_t *zap;                   /* NULL with --insecure */
    char endpoint[512];
    int wake_fd;
    pthread_t thread;
    int started;

    /* main thread <-> dispatcher requests, under ctl_lock */
    pthread_mutex_t ctl_lock;
    pthread_cond_t ctl_cond;
    atomic_int ctl_pending;
    jm_phase_t *ctl_begin;
    int ctl_end, ctl_finish, ctl_ack;

    /* everything below: the dispatcher thread's own */
    jm_phase_t *phase;
    jm_sched_t *sched;               /* the tasks from genq to resolution */
    int gen_done;                    /* the genq said done */
    jm_tmtab_t *tms;
    size_t alive;
    size_t rr;                       /* round-robin start */
    spits_batch_t out;
    jm_commit_t *cbuf;               /* resolutions for the committer: */
    size_t ncommit, ncommit_rx;      /* DISP_COMMIT_CHUNK at most, of which */
                                     /* ncommit_rx point into one message */
    uint64_t pub_low, pub_freed;     /* the window as last published */
    int64_t now, next_tick, probe_until;
    int64_t hb_ms, timeout_ms;
    int64_t bad_logged_at;
    int stopping;                    /* a signal stopped the job */
    jm_adopt_t *adopt;               /* a resumed phase's early results */
    jm_live_t live;                  /* the phase as of the last tick */
    jm_progress_t progress;          /* the progress line, the rate */
    jm_timeline_t timeline;          /* for report.json */
    uint64_t resolved_before;        /* resolutions of finished phases */
    int alive_workers;               /* workers of the TMs alive now */
    spits_buf_t status;              /* the last STATUS answer, encoded */
    int64_t status_at;               /* when it was built */
    jm_disp_stats_t st;
};

static void disp_lost(jm_disp_t *d, jm_tm_t *t, const char *why);

static void on_status(jm_disp_t *d, const void *rid, size_t ridlen);

/* --- sending ----------------------------------------------------------- */

static int send_to(jm_disp_t *d, const void *rid, size_t ridlen,
                   const void *buf, size_t len)
{
    if (zmq_send(d->router, rid, ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    if (zmq_send(d->router, buf, len, ZMQ_DONTWAIT) < 0)
        return -1;
    d->st.bytes_out += len;
    return 0;
}

/* Sends to a known TM; a TM that is gone is declared lost. */
static int send_tm(jm_disp_t *d, jm_tm_t *t, const void *buf, size_t len)
{
    if (send_to(d, t->rid, t->ridlen, buf, len) == 0) {
        t->last_sent = d->now;
        return 0;
    }
    if (errno == EHOSTUNREACH)
        disp_lost(d, t, "disconnected");
    else if (errno == EAGAIN)
        t->stalled = 1;
    return -1;
}

static void send_empty(jm_disp_t *d, const void *rid, size_t ridlen, int type)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, d->phase ? d->phase->st.id : 0);
    send_to(d, rid, ridlen, hdr, sizeof hdr);
}

static void send_phase(jm_disp_t *d, jm_tm_t *t, int type)
{
    spits_buf_t buf = {0};
    jm_phase_t *p = d->phase;
    json_t *body = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o}",
                             "job_id", d->jm->job_id,
                             "module", d->jm->module_path,
                             "module_hash", d->jm->module_hash,
                             "heartbeat_ms", (json_int_t)d->hb_ms,
                             "timeout_ms", (json_int_t)d->timeout_ms,
                             "max_task_bytes", (json_int_t)d->jm->opt.max_task,
                             "argv", p ? jm_phase_argv_json(p) : json_null());
    if (body && spits_wire_encode_json(&buf, type, p ? p->st.id : 0, body) == 0)
        send_tm(d, t, buf.data, buf.len);
    else
        spits_error("out of memory encoding a %s message",
                    spits_wire_type_name(type));
    json_decref(body);
    spits_buf_free(&buf);
}

/* Sends one CANCEL per TM for the copies the scheduler noted. The TM
 * answers each with a RETURNED record (queued copy) or a result that
 * counts as a duplicate (running copy), so its slot accounting stays
 * exact. */
static void cancel_flush(jm_disp_t *d)
{
    size_t ncancel;
    jm_sched_cancel_t *cancels = jm_sched_take_cancels(d->sched, &ncancel);
    while (ncancel) {
        int slot = cancels[0].slot;
        size_t keep = 0, n = 0;
        spits_batch_begin(&d->out, SPITS_MSG_CANCEL, d->phase->st.id);
        for (size_t i = 0; i < ncancel; i++) {
            if (cancels[i].slot != slot) {
                cancels[keep++] = cancels[i];
                continue;
            }
            /* Out of memory: that copy runs on, and its result is a
             * duplicate; nothing is lost. */
            if (spits_batch_add(&d->out, cancels[i].id, 0, 0))
                n++;
        }
        ncancel = keep;
        spits_batch_finish(&d->out);
        jm_tm_t *t = jm_tmtab_at(d->tms, (size_t)slot);
        if (n && t && t->alive && send_tm(d, t, d->out.buf.data, d->out.buf.len) == 0)
            d->st.cancelled += n;
    }
}

/* Tells the generator how far the window has moved. */
static void publish_window(jm_disp_t *d)
{
    if (!d->phase)
        return;
    uint64_t low = jm_sched_low(d->sched), freed = jm_sched_freed_bytes(d->sched);
    if (low == d->pub_low && freed == d->pub_freed)
        return;
    jm_genq_t *q = &d->phase->genq;
    pthread_mutex_lock(&q->lock);
    q->low = low;
    q->freed_bytes = freed;
    pthread_mutex_unlock(&q->lock);
    pthread_cond_signal(&q->room);
    d->pub_low = low;
    d->pub_freed = freed;
}

/* The scheduler lost a task: the phase cannot finish. */
static void check_sched(jm_disp_t *d)
{
    if (jm_sched_broken(d->sched) && !atomic_load(&jm_abort))
        jm_fatal("out of memory in the scheduler (a task could not be "
                 "requeued); stopping the job");
}

static void disp_lost(jm_disp_t *d, jm_tm_t *t, const char *why)
{
    if (!t->alive)
        return;
    t->alive = 0;
    d->alive_workers -= t->workers;
    d->alive--;
    d->st.tms_lost++;
    jm_timeline_event(&d->timeline, 0, t->slot);
    size_t n = jm_sched_lost(d->sched, t);
    check_sched(d);
    spits_info("TM %s:%ld lost (%s); %zu task(s) requeued", t->host, t->pid,
               why, n);
}

/* --- serving a TM with room -------------------------------------------- */

/* Takes everything the generator has queued. */
static void refill_fresh(jm_disp_t *d)
{
    jm_genq_t *q = &d->phase->genq;
    pthread_mutex_lock(&q->lock);
    jm_task_t *head = q->head, *tail = q->tail;
    q->head = q->tail = NULL;
    atomic_store(&q->queued, 0);
    d->gen_done = q->done;
    jm_sched_gen_state(d->sched, q->done, q->waiting);
    pthread_mutex_unlock(&q->lock);
    jm_sched_add_fresh(d->sched, head, tail);
}

/* The scheduler's early-result hook: a fresh task whose result a
 * re-attached TM already sent (after --resume) is committed from that
 * result instead of being sent. */
static int take_early_result(void *arg, const jm_task_t *task)
{
    jm_disp_t *d = arg;
    jm_commit_t c;
    unsigned char *data;
    uint32_t len;

    if (!d->adopt || !jm_adopt_count(d->adopt) ||
        !jm_adopt_take(d->adopt, task->id, &data, &len))
        return 0;
    memset(&c, 0, sizeof c);
    c.id = task->id;
    c.hash = task->hash;
    c.data = c.owned = data;
    c.len = len;
    c.status = SPITS_ST_OK;
    if (jm_commitq_push(&d->phase->cq, &c, 1) != 0) {
        free(data);
        jm_fatal("out of memory queueing an early result for the committer; "
                 "stopping the job");
    }
    d->st.adopted++;
    return 1;
}

/* Sends TM t the copies the scheduler picks for it, as one TASKS batch. */
static void serve_tm(jm_disp_t *d, jm_tm_t *t)
{
    if (!jm_sched_has_fresh(d->sched) && !d->gen_done)
        refill_fresh(d);
    size_t n = jm_sched_pick(d->sched, t, DISP_BATCH_BYTES, d->alive > 1);
    if (!n)
        return;

    jm_task_t *const *picked = jm_sched_picked(d->sched);
    int built = 1;
    spits_batch_begin(&d->out, SPITS_MSG_TASKS, d->phase->st.id);
    for (size_t i = 0; i < n && built; i++) {
        unsigned char *dst = spits_batch_add(&d->out, picked[i]->id, 0, picked[i]->len);
        if (dst && picked[i]->len)
            memcpy(dst, picked[i]->data, picked[i]->len);
        built = dst != NULL;
    }
    spits_batch_finish(&d->out);
    if (!built)
        jm_fatal("out of memory building a batch of %zu task(s); "
                 "stopping the job", n);
    if (built && send_tm(d, t, d->out.buf.data, d->out.buf.len) == 0)
        jm_sched_sent(d->sched, t, n);
    else
        jm_sched_unsent(d->sched, n);   /* every picked task without a copy goes back */
    check_sched(d);
}

static void disp_serve(jm_disp_t *d)
{
    size_t ntm = jm_tmtab_count(d->tms);
    if (!d->phase || !d->alive || !ntm)
        return;
    for (size_t k = 0; k < ntm; k++) {
        jm_tm_t *t = jm_tmtab_at(d->tms, (d->rr + k) % ntm);
        if (t->alive && !t->stalled && !t->draining && t->outstanding < t->slots &&
            t->settle_until <= d->now && !atomic_load(&jm_abort))
            serve_tm(d, t);
    }
    d->rr++;
}

/* --- receiving --------------------------------------------------------- */

static void bad_message(jm_disp_t *d, const char *why)
{
    d->st.bad_messages++;
    /* Logged at most every 10 s: a hostile peer must not flood the log. */
    if (d->now - d->bad_logged_at >= 10000 || d->bad_logged_at == 0) {
        spits_warn("dropped a malformed message (%s); %llu so far", why,
                   (unsigned long long)d->st.bad_messages);
        d->bad_logged_at = d->now;
    }
}

/* Adaptive prefetch. A TM that hands back everything it held ran dry
 * before new tasks reached it: its tasks are short against the round
 * trip. While there is work to give, it may hold twice as many, up to
 * SLOTS_MAX tasks or SLOTS_BYTES of tasks. Long tasks never empty a TM
 * whose slots exceed its workers, so they never grow its share. No TM
 * grows past its share of the --window, so none hoards the others' work. */
static void grow_slots(jm_disp_t *d, jm_tm_t *t)
{
    if (!d->phase || jm_sched_exhausted(d->sched) || t->slots >= SLOTS_MAX)
        return;
    uint64_t mean = jm_sched_mean_task_bytes(d->sched);
    uint64_t cap = SLOTS_BYTES / (mean ? mean : 1);
    uint64_t share = (uint64_t)d->jm->opt.window / (d->alive ? d->alive : 1);
    if (cap > SLOTS_MAX)
        cap = SLOTS_MAX;
    if (cap > share)
        cap = share;
    if ((uint64_t)t->slots * 2 <= cap)
        t->slots *= 2;
}

/* A result of a task this JM has not sent: after --resume, work a TM did
 * for the dead JM. Kept until the task is generated (adopt_result). */
static void adopt_keep(jm_disp_t *d, const spits_rec_t *rec)
{
    int rc = jm_adopt_put(d->adopt, rec->id, rec->data, rec->len);
    if (rc < 0)   /* dropped: the task just runs again */
        spits_warn("out of memory keeping the early result of task %llu",
                   (unsigned long long)rec->id);
    if (rc > 0)
        d->st.duplicates++;   /* held already, or over the byte bound */
}

/* Hands the resolutions gathered so far to the committer. Those that point
 * into rx each hold a reference to it, taken here in one step. */
static void commits_flush(jm_disp_t *d, jm_rx_t *rx)
{
    if (!d->ncommit)
        return;
    if (d->ncommit_rx)
        jm_rx_hold(rx, d->ncommit_rx);
    if (jm_commitq_push(&d->phase->cq, d->cbuf, d->ncommit) != 0) {
        for (size_t i = 0; i < d->ncommit; i++)
            jm_commit_release(&d->cbuf[i]);
        jm_fatal("out of memory queueing %zu result(s) for the committer; "
                 "stopping the job",
                 d->ncommit);
    }
    d->ncommit = d->ncommit_rx = 0;
}

/* The next free resolution slot; a full chunk goes to the committer
 * first, so however many records a message claims, memory stays fixed. */
static jm_commit_t *commit_slot(jm_disp_t *d, jm_rx_t *rx)
{
    if (d->ncommit == DISP_COMMIT_CHUNK)
        commits_flush(d, rx);
    jm_commit_t *c = &d->cbuf[d->ncommit++];
    memset(c, 0, sizeof *c);
    return c;
}

/* A record of a task this JM has not sent: after --resume, an early
 * result a re-attached TM computed for the dead JM (kept until the task
 * is generated), or else a bogus one. */
static void on_unknown_record(jm_disp_t *d, const spits_rec_t *rec)
{
    if (d->adopt && rec->status == SPITS_ST_OK)
        adopt_keep(d, rec);
    else if (rec->status != SPITS_ST_RETURNED || !d->adopt)
        d->st.bogus++;
}

/* A resolution for the committer: a result in rx, or a poison task. */
static void commit_note(jm_disp_t *d, const spits_rec_t *rec, uint64_t hash,
                        jm_rx_t *rx)
{
    jm_commit_t *c = commit_slot(d, rx);
    c->id = rec->id;
    c->status = rec->status;
    if (rec->status == SPITS_ST_OK) {
        c->hash = hash;
        c->data = rec->data;
        c->len = rec->len;
        c->rx = rx;
        d->ncommit_rx++;
        return;
    }
    spits_warn("task %llu of phase %u: %d run(s), the last %s; giving up on "
               "it (poison task)", (unsigned long long)rec->id,
               d->phase->st.id, d->jm->opt.max_attempts,
               spits_wire_status_name(rec->status));
}

/* RESULTS: every record gives its TM a slot back (wire.h), and each is a
 * result, a failed run or a copy handed back unrun (scheduler.c decides).
 * rx is the message; results are committed straight from it, so it lives
 * until the last of them is (jm_rx_release). */
static void on_results(jm_disp_t *d, jm_tm_t *t, const spits_hdr_t *h,
                       jm_rx_t *rx)
{
    spits_reader_t r;
    spits_rec_t rec;
    uint64_t hash;

    jm_sched_credit(d->sched, t, h->count);
    if (t && t->alive && t->outstanding == 0)
        grow_slots(d, t);
    if (!d->phase || h->phase != d->phase->st.id) {
        d->st.stale += h->count;
        return;
    }
    spits_reader_init(&r, zmq_msg_data(&rx->msg), zmq_msg_size(&rx->msg));
    while (spits_reader_next(&r, &rec)) {
        switch (jm_sched_record(d->sched, t, rec.id, rec.status, &hash)) {
        case JM_REC_COMMIT:
        case JM_REC_POISON:
            commit_note(d, &rec, hash, rx);
            break;
        case JM_REC_RETRY:
            spits_debug("task %llu failed; retrying", (unsigned long long)rec.id);
            break;
        case JM_REC_UNKNOWN:
            on_unknown_record(d, &rec);
            break;
        default:
            break;
        }
    }
    commits_flush(d, rx);
    cancel_flush(d);
    check_sched(d);
}

static int json_int_field(json_t *j, const char *key, long min, long max,
                          long *out)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return -1;
    *out = (long)json_integer_value(v);
    return 0;
}

static void on_hello(jm_disp_t *d, jm_tm_t *t, const unsigned char *rid,
                     size_t ridlen, zmq_msg_t *body)
{
    const char *why = NULL;
    long pid, workers, slots, held, pending = 0;
    json_t *j = spits_wire_decode_json(zmq_msg_data(body), zmq_msg_size(body), &why);
    const char *host = j ? json_string_value(json_object_get(j, "host")) : NULL;

    if (!j || !host || json_int_field(j, "pid", 1, 1L << 40, &pid) ||
        json_int_field(j, "workers", 1, 1 << 20, &workers) ||
        json_int_field(j, "slots", 1, 1 << 24, &slots) ||
        json_int_field(j, "held", 0, 1 << 24, &held)) {
        bad_message(d, why ? why : "HELLO without host/pid/workers/slots/held");
        json_decref(j);
        return;
    }
    /* Results it computed while it had no JM (optional field). */
    if (json_object_get(j, "pending") &&
        json_int_field(j, "pending", 0, 1L << 40, &pending) != 0) {
        bad_message(d, "HELLO with a bad pending count");
        json_decref(j);
        return;
    }
    if (!t) {
        t = jm_tmtab_add(d->tms, rid, ridlen);
        if (!t) {
            bad_message(d, "bad routing id");
            json_decref(j);
            return;
        }
    } else if (t->alive && t->pid == pid && t->sent == t->sent_at_hello) {
        /* Its HELLO again: our WELCOME had not reached it yet (it asks
         * every second). Nothing was sent to it since, so nothing is lost:
         * take what it holds now and answer again. */
        jm_sched_joined(d->sched, t, held);
        json_decref(j);
        send_phase(d, t, SPITS_MSG_WELCOME);
        return;
    } else if (t->alive) {
        disp_lost(d, t, "reconnected");
    }
    snprintf(t->host, sizeof t->host, "%s", host);
    t->pid = pid;
    t->workers = (int)workers;
    t->slots = t->slots_asked = (int)slots;
    jm_sched_joined(d->sched, t, held);
    t->sent_at_hello = t->sent;
    t->alive = 1;
    t->stalled = 0;
    t->draining = 0;
    t->last_heard = d->now;
    t->joined = spits_wall_time();
    /* A TM back from an outage sends its results right after WELCOME. Wait
     * for them before sending it tasks, or it would be sent (and run
     * again) the very tasks it holds results for. */
    t->settle_until = pending > 0 ? d->now + 2000 : 0;
    t->settle_records = pending;
    d->alive++;
    d->alive_workers += t->workers;
    if (d->alive_workers > d->st.peak_workers)
        d->st.peak_workers = d->alive_workers;
    d->st.tms_joined++;
    jm_timeline_event(&d->timeline, 1, t->slot);
    json_decref(j);
    spits_info("TM %s:%ld joined with %d worker(s)", t->host, t->pid,
               t->workers);
    send_phase(d, t, SPITS_MSG_WELCOME);
}

/* STATS: a TM's busy time and runs so far (cumulative, so a lost one
 * costs nothing). */
static void on_stats(jm_disp_t *d, jm_tm_t *t, zmq_msg_t *body)
{
    const char *why = NULL;
    json_t *j = spits_wire_decode_json(zmq_msg_data(body), zmq_msg_size(body), &why);
    json_t *busy = j ? json_object_get(j, "busy_s") : NULL;
    long runs;
    if (!json_is_number(busy) || json_number_value(busy) < 0 ||
        json_number_value(busy) > 1e12 ||
        json_int_field(j, "runs", 0, LONG_MAX, &runs) != 0) {
        bad_message(d, why ? why : "STATS without busy_s/runs");
    } else if (t) {
        t->busy_s = json_number_value(busy);
        t->runs = (uint64_t)runs;
    }
    json_decref(j);
}

static void on_message(jm_disp_t *d, zmq_msg_t *ridmsg, jm_rx_t *rx)
{
    const unsigned char *rid = zmq_msg_data(ridmsg);
    size_t ridlen = zmq_msg_size(ridmsg);
    size_t len = zmq_msg_size(&rx->msg);
    spits_hdr_t h;
    const char *why;

    d->st.bytes_in += len;
    jm_tm_t *t = jm_tmtab_find(d->tms, rid, ridlen);
    if (spits_wire_parse(zmq_msg_data(&rx->msg), len, &h, &why) != 0) {
        bad_message(d, why);
        goto out;
    }
    if (t) {
        t->last_heard = d->now;
        t->stalled = 0;
    }
    switch (h.type) {
    case SPITS_MSG_HELLO:
        on_hello(d, t, rid, ridlen, &rx->msg);
        break;
    case SPITS_MSG_RESULTS:
        /* Results from a TM we lost still count: work is never thrown
         * away while its task is unfinished. */
        if (t && t->settle_until && (t->settle_records -= (int64_t)h.count) <= 0)
            t->settle_until = 0;
        on_results(d, t, &h, rx);
        if (!t || !t->alive)
            send_empty(d, rid, ridlen, SPITS_MSG_WHO);
        break;
    case SPITS_MSG_HEARTBEAT:
        if (!t || !t->alive)
            send_empty(d, rid, ridlen, SPITS_MSG_WHO);
        break;
    case SPITS_MSG_STATUS:
        on_status(d, rid, ridlen);
        break;
    case SPITS_MSG_STATS:
        on_stats(d, t, &rx->msg);
        break;
    case SPITS_MSG_DRAIN:
        /* Leaving soon: it hands back its queued tasks and finishes the
         * running ones; it gets nothing new. */
        if (t && t->alive && !t->draining) {
            t->draining = 1;
            spits_info("TM %s:%ld is draining", t->host, t->pid);
        }
        break;
    case SPITS_MSG_BYE:
        if (t)
            disp_lost(d, t, "left");
        break;
    default:
        bad_message(d, "a JM-to-TM message sent to the JM");
    }
out:
    jm_rx_release(rx, 1);       /* the dispatcher's own reference */
}

/* Receives up to a burst of messages: a routing id frame, then one body
 * frame, which becomes a jm_rx_t (results are committed from it). */
static void disp_recv(jm_disp_t *d)
{
    for (int i = 0; i < DISP_RECV_BURST; i++) {
        zmq_msg_t rid;
        zmq_msg_init(&rid);
        if (zmq_msg_recv(&rid, d->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&rid);
            return;
        }
        if (!zmq_msg_more(&rid)) {
            zmq_msg_close(&rid);
            bad_message(d, "no body");
            continue;
        }
        jm_rx_t *rx = jm_rx_new();
        if (!rx) {
            spits_zmq_drop_frames(d->router);
            zmq_msg_close(&rid);
            jm_fatal("out of memory receiving a message; "
                 "stopping the job");
            return;
        }
        if (zmq_msg_recv(&rx->msg, d->router, ZMQ_DONTWAIT) < 0 ||
            zmq_msg_more(&rx->msg)) {
            /* Our peers send one frame. */
            spits_zmq_drop_frames(d->router);
            bad_message(d, "multipart message");
        } else {
            on_message(d, &rid, rx);
            rx = NULL;
        }
        jm_rx_release(rx, 1);
        zmq_msg_close(&rid);
    }
}

/* --- timers, monitor, control ------------------------------------------ */

/* Takes the live snapshot: counters of the other threads are read under
 * the genq lock, once per tick. */
static void live_update(jm_disp_t *d)
{
    jm_live_t *l = &d->live;
    jm_phase_t *p = d->phase;
    if (!p)
        return;
    jm_genq_t *q = &p->genq;
    pthread_mutex_lock(&q->lock);
    l->generated = q->made;
    l->gen_done = q->done;
    l->total = q->total + p->st.replayed;
    l->resolved = q->resolved;
    pthread_mutex_unlock(&q->lock);
    l->phase = p->st.id;
    l->replayed = p->st.replayed;
    l->failed = d->st.poison;
    l->sent = d->st.sent;
    l->resent = d->st.resent;
    l->duplicates = d->st.duplicates;
    l->requeued = d->st.requeued;
    l->running = 0;
    l->tms_alive = d->alive;
    for (size_t i = 0; i < jm_tmtab_count(d->tms); i++) {
        jm_tm_t *t = jm_tmtab_at(d->tms, i);
        if (t->alive)
            l->running += (uint64_t)t->outstanding;
    }
    l->rate = jm_progress_rate(&d->progress, d->now, l->resolved);
}

/* spits-status asks; the answer goes to its routing id. It is not a TM. */
static void on_status(jm_disp_t *d, const void *rid, size_t ridlen)
{
    /* The answer is built at most once per tick and sent as is until the
     * next, so a status client in a loop costs the job a send per request,
     * not a JSON document and a /proc read. */
    if (!d->status.len || d->now - d->status_at >= DISP_TICK_MS) {
        json_t *doc = jm_status_json(d->jm, &d->live, d->tms, d->now);
        if (doc && !d->phase)
            json_object_set_new(doc, "state", json_string("between phases"));
        d->status.len = 0;
        if (!doc || spits_wire_encode_json(&d->status, SPITS_MSG_STATUS,
                                           d->live.phase, doc) != 0)
            d->status.len = 0;
        json_decref(doc);
        d->status_at = d->now;
    }
    if (d->status.len)
        send_to(d, rid, ridlen, d->status.data, d->status.len);
}

static void disp_tick(jm_disp_t *d)
{
    unsigned char hb[SPITS_HDR_SIZE];
    int probing = d->now < d->probe_until;

    spits_wire_encode_empty(hb, SPITS_MSG_HEARTBEAT, d->phase ? d->phase->st.id : 0);
    for (size_t i = 0; i < jm_tmtab_count(d->tms); i++) {
        jm_tm_t *t = jm_tmtab_at(d->tms, i);
        if (!t->alive)
            continue;
        if (d->now - t->last_heard > d->timeout_ms) {
            char why[64];
            snprintf(why, sizeof why, "silent for %.1f s",
                     (d->now - t->last_heard) / 1000.0);
            disp_lost(d, t, why);
        } else if (probing || d->now - t->last_sent >= d->hb_ms) {
            /* With ROUTER_MANDATORY a vanished peer fails the send. */
            send_tm(d, t, hb, sizeof hb);
        }
    }
}

static void disp_monitor(jm_disp_t *d)
{
    uint16_t event;
    while (spits_zmq_monitor_next(d->mon, &event)) {
        if (event == ZMQ_EVENT_DISCONNECTED)
            d->probe_until = d->now + DISP_PROBE_MS;
        else if (d->zap)            /* no CURVE, or garbage */
            jm_zap_handshake_failed(d->zap, d->now);
        else
            spits_debug("a connection failed its handshake (event %u)", event);
    }
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
    q->stop = 1;
    pthread_mutex_unlock(&q->lock);
    pthread_cond_broadcast(&q->room);
    jm_commitq_t *cq = &d->phase->cq;
    pthread_mutex_lock(&cq->lock);
    cq->abort = 1;
    pthread_mutex_unlock(&cq->lock);
    pthread_cond_broadcast(&cq->ready);
}

static void disp_phase_begin(jm_disp_t *d, jm_phase_t *p)
{
    d->phase = p;
    if (d->stopping)
        disp_stop_phase(d);
    jm_adopt_destroy(&d->adopt);
    if (jm_sched_reset(d->sched) != 0 || (p->st.resumed &&
        !(d->adopt = jm_adopt_new((size_t)d->jm->opt.window_bytes)))) {
        /* The phase cannot run: stopped before anything is sent. */
        jm_fatal("out of memory starting phase %u; "
                 "stopping the job", p->st.id);
        disp_stop_phase(d);
        d->phase = NULL;
        return;
    }
    d->gen_done = 0;
    d->pub_low = d->pub_freed = 0;
    for (size_t i = 0; i < jm_tmtab_count(d->tms); i++) {
        jm_tm_t *t = jm_tmtab_at(d->tms, i);
        if (t->alive)
            send_phase(d, t, SPITS_MSG_PHASE);
    }
}

static void disp_phase_end(jm_disp_t *d)
{
    jm_progress_end(&d->progress);
    if (d->phase) {
        live_update(d);
        d->resolved_before += d->live.resolved;
        memset(&d->live, 0, sizeof d->live);
    }
    /* Every task is resolved, unless the job was stopped: free the rest. */
    jm_sched_reset(d->sched);
    d->phase = NULL;
    if (d->adopt) {
        /* Early results whose task was committed some other way. */
        d->st.duplicates += jm_adopt_count(d->adopt);
        jm_adopt_destroy(&d->adopt);
    }
}

static int disp_control(jm_disp_t *d)
{
    int finish = 0;
    pthread_mutex_lock(&d->ctl_lock);
    atomic_store(&d->ctl_pending, 0);
    if (d->ctl_begin) {
        disp_phase_begin(d, d->ctl_begin);
        d->ctl_begin = NULL;
        d->ctl_ack = 1;
    }
    if (d->ctl_end) {
        disp_phase_end(d);
        d->ctl_end = 0;
        d->ctl_ack = 1;
    }
    finish = d->ctl_finish;
    pthread_mutex_unlock(&d->ctl_lock);
    pthread_cond_broadcast(&d->ctl_cond);
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
        pthread_mutex_lock(&d->ctl_lock);
        while (!atomic_load(&d->ctl_pending))
            pthread_cond_wait(&d->ctl_cond, &d->ctl_lock);
        pthread_mutex_unlock(&d->ctl_lock);
        if (disp_control(d))
            return;
    }
}

static void *disp_main(void *arg)
{
    jm_disp_t *d = arg;
    zmq_pollitem_t items[4] = {
        {d->router, 0, ZMQ_POLLIN, 0},
        {NULL, d->wake_fd, ZMQ_POLLIN, 0},
        {d->mon, 0, ZMQ_POLLIN, 0},
        {d->zap ? jm_zap_socket(d->zap) : NULL, 0, ZMQ_POLLIN, 0},
    };
    int nitems = d->zap ? 4 : 3;

    d->now = spits_now_ms();
    d->next_tick = d->now + DISP_TICK_MS;
    for (;;) {
        long timeout = (long)(d->next_tick - d->now);
        if (d->now < d->probe_until && timeout > 50)
            timeout = 50;
        if (zmq_poll(items, nitems, timeout < 0 ? 0 : timeout) < 0 && errno != EINTR) {
            jm_fatal("the dispatcher cannot poll its sockets: %s; stopping "
                     "the job", zmq_strerror(errno));
            disp_control_only(d);
            break;
        }
        d->now = spits_now_ms();
        if (items[1].revents & ZMQ_POLLIN)
            spits_wake_drain(d->wake_fd);
        if (atomic_load(&d->ctl_pending) && disp_control(d))
            break;
        if ((jm_signal || atomic_load(&jm_abort)) && !d->stopping)
            disp_stop_phase(d);
        if (items[2].revents & ZMQ_POLLIN)
            disp_monitor(d);
        if (d->zap && (items[3].revents & ZMQ_POLLIN))
            jm_zap_handle(d->zap, d->now);
        if (items[0].revents & ZMQ_POLLIN)
            disp_recv(d);
        if (d->now >= d->next_tick || d->now < d->probe_until) {
            disp_tick(d);
            live_update(d);
            jm_timeline_sample(&d->timeline, d->now, d->resolved_before +
                               (d->phase ? d->live.resolved : 0));
            if (d->phase)
                jm_progress_tick(&d->progress, &d->live, d->now);
            d->next_tick = d->now + DISP_TICK_MS;
        }
        disp_serve(d);
        publish_window(d);
    }
    /* The job is over: tell every TM, then answer stragglers with END. */
    for (size_t i = 0; i < jm_tmtab_count(d->tms); i++) {
        jm_tm_t *t = jm_tmtab_at(d->tms, i);
        if (t->alive)
            send_empty(d, t->rid, t->ridlen, SPITS_MSG_END);
    }
    return NULL;
}

/* --- the main thread's side -------------------------------------------- */

static void ctl_request(jm_disp_t *d, jm_phase_t *begin, int end, int finish)
{
    pthread_mutex_lock(&d->ctl_lock);
    d->ctl_begin = begin;
    d->ctl_end = end;
    d->ctl_finish |= finish;
    d->ctl_ack = 0;
    atomic_store(&d->ctl_pending, 1);
    pthread_mutex_unlock(&d->ctl_lock);
    /* The dispatcher wakes from its poll, or (disp_control_only) here. */
    pthread_cond_broadcast(&d->ctl_cond);
    spits_wake_signal(d->wake_fd);
    if (finish)
        return;
    pthread_mutex_lock(&d->ctl_lock);
    while (!d->ctl_ack)
        pthread_cond_wait(&d->ctl_cond, &d->ctl_lock);
    pthread_mutex_unlock(&d->ctl_lock);
}

void jm_disp_phase_begin(jm_disp_t *d, jm_phase_t *p)
{
    ctl_request(d, p, 0, 0);
}

void jm_disp_phase_end(jm_disp_t *d)
{
    ctl_request(d, NULL, 1, 0);
}

void jm_disp_finish(jm_disp_t *d)
{
    if (!d->started)
        return;
    ctl_request(d, NULL, 0, 1);
    pthread_join(d->thread, NULL);
    d->started = 0;
}

/* Announced endpoint: a wildcard bind is announced under this host's name. */
static void announce_endpoint(jm_disp_t *d, const char *bound)
{
    char host[256];
    const char *port = strrchr(bound, ':');
    if (strncmp(bound, "tcp://", 6) == 0 && port &&
        (strncmp(bound + 6, "0.0.0.0:", 8) == 0 || strncmp(bound + 6, "[::]:", 5) == 0 ||
         strncmp(bound + 6, "*:", 2) == 0)) {
        spits_hostname(host, sizeof host);
        snprintf(d->endpoint, sizeof d->endpoint, "tcp://%s%s", host, port);
    } else {
        snprintf(d->endpoint, sizeof d->endpoint, "%s", bound);
    }
}

jm_disp_t *jm_disp_new(jm_t *jm, char *err, size_t errlen)
{
    jm_disp_t *d = calloc(1, sizeof *d);
    int one = 1, linger = 1000, hwm = 100000;
    char bound[512];
    size_t blen = sizeof bound;

    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->jm = jm;
    d->wake_fd = -1;
    pthread_mutex_init(&d->ctl_lock, NULL);
    pthread_cond_init(&d->ctl_cond, NULL);
    atomic_init(&d->ctl_pending, 0);
    d->hb_ms = (int64_t)(jm->opt.heartbeat * 1000);
    jm_timeline_init(&d->timeline, jm->started);
    jm_progress_init(&d->progress, jm->opt.progress);
    d->timeout_ms = (int64_t)(jm->opt.tm_timeout * 1000);
    d->tms = jm_tmtab_new();
    d->cbuf = malloc(DISP_COMMIT_CHUNK * sizeof *d->cbuf);
    d->sched = jm_sched_new(jm->opt.max_copies, jm->opt.max_attempts, &d->st);
    if (d->sched)
        jm_sched_set_early(d->sched, take_early_result, d);
    d->wake_fd = spits_wake_open();
    d->zctx = zmq_ctx_new();
    if (!d->tms || !d->cbuf || !d->sched || d->wake_fd < 0 || !d->zctx) {
        snprintf(err, errlen, "cannot set up the dispatcher: %s", strerror(errno));
        goto fail;
    }
    d->router = zmq_socket(d->zctx, ZMQ_ROUTER);
    if (!d->router) {
        snprintf(err, errlen, "cannot make a ZeroMQ socket: %s", zmq_strerror(errno));
        goto fail;
    }
    /* A peer sending more is disconnected by libzmq before we see it. */
    int64_t maxmsg = JM_MAX_MSG(jm->opt.max_task);
    /* ROUTER_MANDATORY: a send to a vanished TM fails, which is how a lost
     * TM is found (send_tm); HANDOVER: a TM re-attaching under its routing
     * id takes it over from its dead connection. */
    const struct { int opt; const void *val; size_t len; const char *name; } opts[] = {
        {ZMQ_ROUTER_MANDATORY, &one, sizeof one, "ZMQ_ROUTER_MANDATORY"},
        {ZMQ_ROUTER_HANDOVER, &one, sizeof one, "ZMQ_ROUTER_HANDOVER"},
        {ZMQ_LINGER, &linger, sizeof linger, "ZMQ_LINGER"},
        {ZMQ_SNDHWM, &hwm, sizeof hwm, "ZMQ_SNDHWM"},
        {ZMQ_RCVHWM, &hwm, sizeof hwm, "ZMQ_RCVHWM"},
        {ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg, "ZMQ_MAXMSGSIZE"},
    };
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (zmq_setsockopt(d->router, opts[i].opt, opts[i].val, opts[i].len) != 0) {
            snprintf(err, errlen, "cannot set %s on the socket: %s",
                     opts[i].name, zmq_strerror(errno));
            goto fail;
        }
    if (!jm->opt.insecure) {
        /* The ZAP handler must be bound before any handshake can start. */
        int server = 1;
        if (!(d->zap = jm_zap_new(d->zctx, jm->keys.client_public, err, errlen)))
            goto fail;
        if (zmq_setsockopt(d->router, ZMQ_CURVE_SERVER, &server, sizeof server) != 0 ||
            zmq_setsockopt(d->router, ZMQ_CURVE_SECRETKEY, jm->keys.server_secret,
                           strlen(jm->keys.server_secret) + 1) != 0 ||
            zmq_setsockopt(d->router, ZMQ_ZAP_DOMAIN, "spits", 5) != 0) {
            snprintf(err, errlen, "cannot set up CurveZMQ: %s (use --insecure "
                     "to run without it)", zmq_strerror(errno));
            goto fail;
        }
    }
    if (zmq_bind(d->router, jm->opt.bind) != 0) {
        snprintf(err, errlen, "cannot bind %s: %s", jm->opt.bind, zmq_strerror(errno));
        goto fail;
    }
    if (zmq_getsockopt(d->router, ZMQ_LAST_ENDPOINT, bound, &blen) != 0) {
        snprintf(err, errlen, "cannot read the bound endpoint: %s", zmq_strerror(errno));
        goto fail;
    }
    announce_endpoint(d, bound);
    if (zmq_socket_monitor(d->router, MONITOR_EP, ZMQ_EVENT_DISCONNECTED |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0 ||
        !(d->mon = zmq_socket(d->zctx, ZMQ_PAIR)) ||
        /* No limit: libzmq's I/O thread blocks on a full monitor pipe, and
         * once the dispatcher stops reading (at the end, when every TM
         * disconnects at once) that would deadlock the socket's close. */
        zmq_setsockopt(d->mon, ZMQ_RCVHWM, &(int){0}, sizeof(int)) != 0 ||
        zmq_connect(d->mon, MONITOR_EP) != 0) {
        snprintf(err, errlen, "cannot monitor the socket: %s", zmq_strerror(errno));
        goto fail;
    }
    zmq_setsockopt(d->mon, ZMQ_LINGER, &(int){0}, sizeof(int));
    return d;
fail:
    jm_disp_destroy(&d);
    return NULL;
}

int jm_disp_start(jm_disp_t *d)
{
    if (pthread_create(&d->thread, NULL, disp_main, d) != 0)
        return -1;
    d->started = 1;
    return 0;
}

const char *jm_disp_endpoint(const jm_disp_t *d) { return d->endpoint; }
int jm_disp_wake_fd(const jm_disp_t *d) { return d->wake_fd; }
const jm_disp_stats_t *jm_disp_stats(const jm_disp_t *d) { return &d->st; }

json_t *jm_disp_timeline_json(const jm_disp_t *d)
{
    return jm_timeline_json(&d->timeline, d->tms, d->resolved_before);
}

json_t *jm_disp_tms_json(const jm_disp_t *d)
{
    json_t *a = json_array();
    char when[32];
    for (size_t i = 0; i < jm_tmtab_count(d->tms); i++) {
        jm_tm_t *t = jm_tmtab_at(d->tms, i);
        spits_iso_time(t->joined, when, sizeof when);
        json_array_append_new(a, json_pack("{s:s, s:I, s:i, s:s, s:I, s:I, s:I, s:f, s:I}",
            "host", t->host, "pid", (json_int_t)t->pid, "workers", t->workers,
            "joined", when, "sent", (json_int_t)t->sent,
            "done", (json_int_t)t->done, "failed", (json_int_t)t->failed,
            "busy_s", t->busy_s, "runs", (json_int_t)t->runs));
    }
    return a;
}

void jm_disp_destroy(jm_disp_t **dp)
{
    jm_disp_t *d = *dp;
    if (!d)
        return;
    jm_disp_finish(d);
    if (d->phase)
        disp_phase_end(d);
    /* The monitor goes first, while its reader still exists. */
    if (d->router)
        zmq_socket_monitor(d->router, NULL, 0);
    if (d->mon)
        zmq_close(d->mon);
    jm_zap_destroy(&d->zap);
    if (d->router)
        zmq_close(d->router);
    if (d->zctx)
        zmq_ctx_term(d->zctx);
    spits_wake_close(&d->wake_fd);
    jm_tmtab_destroy(&d->tms);
    spits_batch_free(&d->out);
    spits_buf_free(&d->status);
    jm_sched_destroy(&d->sched);
    free(d->cbuf);
    pthread_mutex_destroy(&d->ctl_lock);
    pthread_cond_destroy(&d->ctl_cond);
    free(d);
    *dp = NULL;
}
