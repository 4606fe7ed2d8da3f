/*
 * serve.c - the dispatcher's task path: tasks out to TMs with room, and
 * results back to the committer.
 *
 * A TM with room (credit: its slots minus the copies it holds) gets the
 * copies the scheduler picks (serving/scheduler.c), in one TASKS batch
 * the server sends, when it is looked at: the TMs heard from since the
 * last serve, or all of them when anything else may have given one room
 * (serve_tms); a task of SPITS_PART_MIN bytes or more goes as a part of
 * that message (wire.h), straight from the task's memory: the part
 * holds a reference to it (serve_part_hold, jm.h). What it gains:
 * spits_parts_min (parts.h).
 * Large results come the same way, as parts of a RESULTS message that
 * the dispatcher received whole (disp_on_message), and are committed
 * from them as from its frame. The server (serving/server.c) gives the
 * TM its credit back and hands over a RESULTS' records (server_recs_t),
 * each of which goes to the scheduler; results then go to the committer
 * straight from the received message, in chunks of a fixed size, so no
 * count a peer claims sizes an allocation. Copies of a committed task still out are
 * cancelled. The generator learns how far the window moved
 * (serve_publish_window). All of it runs on the dispatcher thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cancels.h"
#include "committer.h"
#include "dispatch_int.h"
#include "generator.h"
#include "joblog.h"
#include "log.h"
#include "phase.h"
#include "stop.h"
#include "util.h"
#include "wire.h"
#include "zmqutil.h"

/* CANCEL to each TM for the copies the scheduler noted. */
static void cancel_flush(jm_disp_t *d)
{
    size_t n;
    sched_cancel_t *cancels = sched_take_cancels(d->sched, &n);
    if (n)
        d->st.cancelled += server_cancels(d->srv, d->phase->st.id, cancels, n, 0);
}

/* The window in tasks: --window, or twice the workers of the TMs alive
 * if that is more (a task running and one queued for each), so that the
 * window never idles a worker: 10,000 TMs of 4 workers under the default
 * 65,536 ran at 35,000 of their 40,000 tasks a second. --window-bytes
 * still bounds the memory. */
static uint64_t disp_window(const jm_disp_t *d)
{
    uint64_t busy = 2 * (uint64_t)(d->fleet.alive_workers > 0 ? d->fleet.alive_workers : 0);
    return busy > (uint64_t)d->jm->opt.window ? busy : (uint64_t)d->jm->opt.window;
}

/* Tells the generator how far the window has moved, and how wide it is. */
void serve_publish_window(jm_disp_t *d)
{
    if (!d->phase)
        return;
    uint64_t low = sched_low(d->sched), freed = sched_freed_bytes(d->sched);
    uint64_t taken = sched_taken_bytes(d->sched), window = disp_window(d);
    if (low == d->pub.low && freed == d->pub.freed && taken == d->pub.taken &&
        window == d->pub.window)
        return;
    jm_genq_t *q = &d->phase->genq;
    pthread_mutex_lock(&q->lock);
    q->low = low;
    q->freed_bytes = freed;
    q->taken_bytes = taken;
    q->window = window;
    pthread_mutex_unlock(&q->lock);
    pthread_cond_signal(&q->room);
    d->pub.low = low;
    d->pub.freed = freed;
    d->pub.taken = taken;
    d->pub.window = window;
}

/* Takes everything the generator has queued, and what it holds while
 * next_task runs: a task made must not wait for the next one
 * (generator.c). Both under the genq lock: the generator reclaims a lent
 * chunk and flushes it (which takes the lock) before it lends the next,
 * so the lent chunk taken here is never newer than a chunk still to come
 * through the genq. Taken after the unlock, it could be: the tasks would
 * reach the scheduler out of order, the older ones could never enter its
 * ring, and the job would hang. */
static size_t refill_fresh(jm_disp_t *d)
{
    jm_genq_t *q = &d->phase->genq;
    jm_task_t *lent_tail;
    pthread_mutex_lock(&q->lock);
    jm_task_t *head = q->head, *tail = q->tail;
    q->head = q->tail = NULL;
    atomic_store(&q->queued, 0);
    d->gen_done = q->done;
    d->adopt_below = q->verified;   /* (covers the tasks taken with it) */
    sched_gen_state(d->sched, q->done, q->waiting);
    jm_task_t *lent = jm_genq_take_lent(q, &lent_tail);
    pthread_mutex_unlock(&q->lock);
    sched_add_fresh(d->sched, head, tail);
    sched_add_fresh(d->sched, lent, lent_tail);
    return (head != NULL) + (lent != NULL);
}

/* The server's source: all the generator has made (want is no bound: a
 * task made must not wait), while it may make more. */
size_t serve_refill(void *arg, size_t want)
{
    jm_disp_t *d = arg;
    (void)want;
    return d->phase && !d->gen_done ? refill_fresh(d) : 0;
}

/* The scheduler's early-result hook: a fresh task whose result a
 * re-attached TM already sent (after --resume) is committed from that
 * result instead of being sent, if a journaled generation checkpoint
 * vouches that the old JM's task of that id was this one (generator.c);
 * otherwise the result is dropped and the task runs. */
static int serve_take_early_result(void *arg, const jm_task_t *task)
{
    jm_disp_t *d = arg;
    jm_commit_t c;
    unsigned char *data;
    uint32_t len;

    if (!d->adopt || !jm_adopt_count(d->adopt) ||
        !jm_adopt_take(d->adopt, task->id, &data, &len))
        return 0;
    if (task->id >= d->adopt_below) {
        free(data);
        d->adopt_dropped++;
        d->st.adopt_dropped++;
        return 0;
    }
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

/* A task the scheduler is done with: its cell goes back to the task pool,
 * in batches; any other task is freed (taskpool.h). */
void serve_set_hooks(jm_disp_t *d)
{
    d->serve.pool_batch.pool = d->jm->taskpool;
    sched_hooks_t h = {jm_taskpool_release, jm_taskpool_release_flush,
                       &d->serve.pool_batch,
                       d->adopt ? serve_take_early_result : NULL, d};
    sched_set_hooks(d->sched, &h);
}

/* libzmq is done with a part (sent, or dropped with its connection): the
 * part's reference to its task goes. Runs on one of libzmq's I/O threads
 * (--io-threads: several may drop references to one task at once). */
void serve_part_done(void *data, void *arg)
{
    jm_task_t *task = arg;
    (void)data;
    jm_backlog_left(task->len);
    /* (before the reference goes: the scheduler reads it once refs is 1) */
    atomic_store_explicit(&task->left_ms, spits_now_ms(), memory_order_relaxed);
    jm_task_free(task);
}

/* (server_hop_t.part_hold) A task sent as a part (SPITS_PART_MIN bytes
 * or more: one jm_task_free counts references for) gets a reference for
 * it, and its bytes join the backlog of parts handed to libzmq
 * (serve_part_done takes both back). */
void *serve_part_hold(void *arg, sched_task_t *task)
{
    jm_disp_t *d = arg;
    atomic_fetch_add_explicit(&task->refs, 1, memory_order_relaxed);
    task->stuck_at = jm_backlog_queue(&d->backlog, task->len, jm_backlog_released());
    return task;
}

/* The TMs with room get tasks (server_serve), as the backlog of parts
 * allows copies of tasks stuck in it. */
void serve_tms(jm_disp_t *d)
{
    sched_set_backlog(d->sched, jm_backlog_released(), d->backlog.idle);
    server_serve(d->srv);
    disp_check_sched(d);
}

/* The most slots a TM may have: SLOTS_MAX tasks, SLOTS_BYTES of tasks,
 * and its share of the --window, so none hoards the others' work. */
static int slots_cap(jm_disp_t *d)
{
    uint64_t mean = sched_mean_task_bytes(d->sched);
    uint64_t cap = SLOTS_BYTES / (mean ? mean : 1);
    size_t alive = peertab_live_count(d->fleet.tab);
    uint64_t share = disp_window(d) / (alive ? alive : 1);
    if (cap > SLOTS_MAX)
        cap = SLOTS_MAX;
    if (cap > share)
        cap = share;
    return (int)cap;
}

/* Adaptive prefetch (serving/credit.h credit_grow), while there is work
 * to give; slots never shrink here (a relay's may, when the TMs behind
 * it leave: serving/server.c server_on_stats). */
static void grow_slots(jm_disp_t *d, jm_tm_t *t)
{
    if (!d->phase || sched_exhausted(d->sched))
        return;
    credit_grow(&t->sv.sched.credit, slots_cap(d), t->sv.sched.turn_ms, t->sv.proc.runs, t->sv.proc.busy_s);
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
        d->st.sched.duplicates++;   /* held already, or over the byte bound */
}

/* Hands the resolutions gathered so far to the committer. Those that point
 * into rx each hold a reference to it, taken here in one step. */
static void commits_flush(jm_disp_t *d, jm_rx_t *rx)
{
    if (!d->commit.n)
        return;
    if (d->commit.n_rx)
        jm_rx_hold(rx, d->commit.n_rx);
    if (jm_commitq_hand(&d->phase->cq, &d->commit.buf, d->commit.n,
                        DISP_COMMIT_CHUNK) != 0) {
        for (size_t i = 0; i < d->commit.n; i++)
            jm_commit_release(&d->commit.buf[i]);
        jm_fatal("out of memory queueing %zu result(s) for the committer; "
                 "stopping the job",
                 d->commit.n);
    }
    d->commit.n = d->commit.n_rx = 0;
}

/* The next free resolution slot; a full chunk goes to the committer
 * first, so however many records a message claims, memory stays fixed. */
static jm_commit_t *commit_slot(jm_disp_t *d, jm_rx_t *rx)
{
    if (d->commit.n == DISP_COMMIT_CHUNK)
        commits_flush(d, rx);
    jm_commit_t *c = &d->commit.buf[d->commit.n++];
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

/* A poison task's last run, as the report names it: how it ended, the
 * code the worker returned if its TM said (wire.h), and where. */
static void failure_note(jm_failure_t *f, const jm_tm_t *t, const spits_rec_t *rec)
{
    memset(f, 0, sizeof *f);
    f->id = rec->id;
    f->status = rec->status;
    f->has_rc = spits_fail_parse(rec, &f->rc, f->why, sizeof f->why);
    if (t)
        snprintf(f->host, sizeof f->host, "%s", t->sv.proc.host);
}

/* A resolution for the committer: a result in rx, or a poison task (its
 * details go along, in an allocation of their own: poison tasks are rare). */
/* What --joblog says of the task just recorded (joblog.h). */
static void joblog_note(jm_disp_t *d, const jm_tm_t *t, jm_commit_t *c)
{
    int64_t start, epoch = jm_joblog_epoch_ms(d->jm->joblog);
    sched_recorded(d->sched, &start, &c->log_in);
    c->log_start = start > epoch ? (uint32_t)(start - epoch) : 0;
    c->log_run = d->clock.now > start ? (uint32_t)(d->clock.now - start) : 0;
    c->log_host = t ? t->id.log_host : 0;
}

/* A poison task's record, note and log line. Rare: kept out of line so
 * its buffers are no part of commit_note's frame on the per-task path. */
static __attribute__((noinline, cold)) void commit_note_failed(jm_disp_t *d, const jm_tm_t *t,
                                                               const spits_rec_t *rec,
                                                               jm_commit_t *c)
{
    jm_failure_t note, *f = malloc(sizeof *f);
    char how[sizeof note.why + 256];
    failure_note(&note, t, rec);
    if (f)
        *f = note;
    c->owned = (unsigned char *)f;
    if (!d->poison.list)
        d->poison.list = calloc(DISP_LIVE_FAILED, sizeof *d->poison.list);
    if (d->poison.list && d->poison.n < DISP_LIVE_FAILED) {
        d->poison.list[d->poison.n].phase = d->phase->st.id;
        d->poison.list[d->poison.n++].f = note;
    }
    jm_failure_describe(&note, how, sizeof how);
    spits_warn("task %llu of phase %u: %d run(s), the last %s; giving up on "
               "it (poison task); the last run was %s", (unsigned long long)rec->id,
               d->phase->st.id, d->jm->opt.max_attempts,
               spits_wire_status_name(rec->status), how);
}

static void commit_note(jm_disp_t *d, const jm_tm_t *t, const spits_rec_t *rec,
                        uint64_t hash, jm_rx_t *rx)
{
    jm_commit_t *c = commit_slot(d, rx);
    c->id = rec->id;
    c->status = rec->status;
    if (d->jm->joblog)
        joblog_note(d, t, c);
    if (rec->status != SPITS_ST_OK) {
        commit_note_failed(d, t, rec, c);
        return;
    }
    c->hash = hash;
    c->data = rec->data;
    c->len = rec->len;
    c->rx = rx;
    d->commit.n_rx++;
}

/* A resumed phase: a result of a task this JM sent, from a TM that holds
 * no copy of it, may be one the TM kept from the previous JM, whose task
 * of that id may differ. Unless a generation checkpoint vouches for the
 * id (serve_take_early_result), it is dropped like an early result that
 * is not adopted: 1. The copies out still bring the task's result. */
static int unvouched_result(jm_disp_t *d, const jm_tm_t *t, const spits_rec_t *rec)
{
    if (rec->status != SPITS_ST_OK || rec->foreign || rec->id < d->adopt_below ||
        (t && sched_holds(d->sched, t->sv.sched.slot, rec->id) != 0) ||
        (!t && sched_holds(d->sched, -2, rec->id) < 0))
        return 0;
    d->adopt_dropped++;
    d->st.adopt_dropped++;
    return 1;
}

/* The server's RESULTS (server_hop_t.results): results go to the
 * committer straight from the message they came in (a jm_rx_t), which
 * lives until the last of them is committed (jm_rx_release). */
void serve_hop_results(void *arg, server_peer_t *p, server_recs_t *it)
{
    jm_disp_t *d = arg;
    jm_tm_t *t = (jm_tm_t *)p;
    jm_rx_t *rx = it->m->hop;
    const spits_hdr_t *h = &it->m->h;
    uint64_t hash;

    d->st.foreign_results += h->foreign;
    if (t && t->sv.peer.alive)
        grow_slots(d, t);
    if (!d->phase || h->phase != d->phase->st.id) {
        d->st.stale += h->count;
        return;
    }
    while (server_recs_next(it)) {
        const spits_rec_t *rec = &it->rec;
        if (d->adopt && unvouched_result(d, t, rec))
            continue;
        switch (server_recs_record(it, rec->id, &hash)) {
        case SCHED_REC_COMMIT:
        case SCHED_REC_POISON:
            commit_note(d, t, rec, hash, rx);
            break;
        case SCHED_REC_RETRY:
            spits_debug("task %llu failed; retrying", (unsigned long long)rec->id);
            break;
        case SCHED_REC_UNKNOWN:
            on_unknown_record(d, rec);
            break;
        default:
            break;
        }
    }
    commits_flush(d, rx);
    cancel_flush(d);
    disp_check_sched(d);
}

