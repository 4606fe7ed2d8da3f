/*
 * committer.c - the commit queue and the committer loop.
 *
 * commit_pit is not idempotent: it must run exactly once per task. The
 * dispatcher guarantees that by resolving each task once (it takes the
 * task out of the ring); this file only consumes those resolutions, in
 * batches: the dispatcher appends a whole received message's worth under
 * one lock, and the committer swaps the whole array out under one lock.
 *
 * Results are committed straight from the received ZeroMQ message: the
 * bytes are not copied on the JM, except into the journal's buffer. With
 * a journal, a batch's results are written and synced before commit_pit
 * sees any of them: one fdatasync per batch, and a result that reached
 * commit_pit is always in the journal, so a resumed job commits it again
 * into its fresh committer and never loses it.
 *
 * A commit_pit that fails is counted (the report and the exit status say
 * so); its warnings are rate-limited so a committer failing on every
 * result cannot flood the log: see commit_failed.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "committer.h"
#include "crash.h"
#include "jm.h"
#include "joblog.h"
#include "log.h"
#include "phase.h"
#include "recovery.h"
#include "util.h"

void jm_commitq_init(jm_commitq_t *q)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->ready, NULL);
    atomic_init(&q->syncing, 0);
}

jm_rx_t *jm_rx_new(void)
{
    jm_rx_t *rx = calloc(1, sizeof *rx);
    if (rx) {
        zmq_msg_init(&rx->msg);
        atomic_init(&rx->refs, 1);
    }
    return rx;
}

void jm_rx_hold(jm_rx_t *rx, size_t n)
{
    atomic_fetch_add_explicit(&rx->refs, n, memory_order_relaxed);
}

void jm_rx_release(jm_rx_t *rx, size_t n)
{
    /* acq_rel: the last owner sees every other owner's reads finished. */
    if (rx && n && atomic_fetch_sub_explicit(&rx->refs, n, memory_order_acq_rel) == n) {
        zmq_msg_close(&rx->msg);
        spits_parts_free(&rx->parts);
        free(rx);
    }
}

void jm_commit_release(jm_commit_t *c)
{
    jm_rx_release(c->rx, 1);
    free(c->owned);
}

void jm_commitq_destroy(jm_commitq_t *q)
{
    for (size_t i = 0; i < q->n; i++)
        jm_commit_release(&q->items[i]);
    free(q->items);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->ready);
}

int jm_commitq_push(jm_commitq_t *q, const jm_commit_t *items, size_t n)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&q->lock);
    if (q->cap - q->n < n) {
        size_t cap = q->cap ? q->cap : 1024;
        while (cap - q->n < n)
            cap *= 2;
        jm_commit_t *p = realloc(q->items, cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&q->lock);
            return -1;
        }
        q->items = p;
        q->cap = cap;
    }
    int was_empty = q->n == 0;
    memcpy(q->items + q->n, items, n * sizeof *items);
    q->n += n;
    q->pushed += n;
    pthread_mutex_unlock(&q->lock);
    if (was_empty)
        pthread_cond_signal(&q->ready);
    return 0;
}

int jm_commitq_hand(jm_commitq_t *q, jm_commit_t **items, size_t n, size_t cap)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&q->lock);
    if (q->n != 0 || q->cap < cap) {
        pthread_mutex_unlock(&q->lock);
        return jm_commitq_push(q, *items, n);
    }
    /* (the committer took the last batch: this one goes over whole) */
    jm_commit_t *old = q->items;
    q->items = *items;
    q->cap = cap;
    q->n = n;
    q->pushed += n;
    pthread_mutex_unlock(&q->lock);
    pthread_cond_signal(&q->ready);
    *items = old;
    return 0;
}

void jm_commitq_gen_done(jm_commitq_t *q, uint64_t total)
{
    pthread_mutex_lock(&q->lock);
    q->gen_done = 1;
    q->gen_total = total;
    q->ck_due = 1;
    pthread_mutex_unlock(&q->lock);
    pthread_cond_signal(&q->ready);
}

void jm_commitq_checkpoint(jm_commitq_t *q, uint64_t count, uint64_t hash,
                           int due)
{
    pthread_mutex_lock(&q->lock);
    q->ck_count = count;
    q->ck_hash = hash;
    q->ck_due |= due;
    pthread_mutex_unlock(&q->lock);
    if (due)
        pthread_cond_signal(&q->ready);
}

/* A poison task: f holds what the dispatcher knew of it (NULL when it had
 * no memory for that: the id and status then). */
static void record_failure(jm_phase_t *p, const jm_commit_t *c)
{
    const jm_failure_t *f = (const jm_failure_t *)c->owned;
    jm_phase_stats_t *st = &p->st;
    if (st->nfailed == st->capfailed) {
        size_t cap = st->capfailed ? st->capfailed * 2 : 16;
        jm_failure_t *f = realloc(st->failed, cap * sizeof *f);
        if (!f) {
            st->nfailed++;   /* counted, not named */
            return;
        }
        st->failed = f;
        st->capfailed = cap;
    }
    jm_failure_t *to = &st->failed[st->nfailed++];
    if (f) {
        *to = *f;
    } else {
        memset(to, 0, sizeof *to);
        to->id = c->id;
        to->status = c->status;
    }
}

/* The first COMMIT_NAMED failures of a phase are named one by one, later
 * ones only counted: a line with the count so far at most every
 * COMMIT_EVERY_MS, and the phase's total at its end (commit_errors_end).
 * Main thread only; phases run one after another, and each one's named
 * failures set the clock before any is only counted. */
#define COMMIT_NAMED 10
#define COMMIT_EVERY_MS 5000
static int64_t commit_warned_ms;   /* when the last such line was written */

static void commit_failed(jm_phase_t *p, int rc, uint64_t id, const char *how)
{
    uint64_t n = ++p->st.commit_errors;
    int64_t now = spits_now_ms();
    if (n <= COMMIT_NAMED) {
        spits_warn("commit_pit returned %d for task %llu of phase %u%s", rc,
                   (unsigned long long)id, p->st.id, how);
    } else if (now - commit_warned_ms >= COMMIT_EVERY_MS) {
        spits_warn("commit_pit has failed for %llu result(s) of phase %u so "
                   "far (only the first %d are named)", (unsigned long long)n,
                   p->st.id, COMMIT_NAMED);
    } else {
        return;
    }
    commit_warned_ms = now;
}

static void commit_errors_end(const jm_phase_t *p)
{
    uint64_t n = p->st.commit_errors;
    if (n > COMMIT_NAMED)
        spits_warn("commit_pit failed for %llu result(s) of phase %u in all "
                   "(only the first %d are named)", (unsigned long long)n,
                   p->st.id, COMMIT_NAMED);
}

/* Journals a batch's results, and the generator's checkpoint if it moved
 * (*ck: the count last journaled), and syncs; -1 (job stopped) on failure. */
static int journal_batch(jm_t *jm, jm_phase_t *p, const jm_commit_t *b, size_t n,
                         uint64_t *ck)
{
    char err[PATH_MAX + 256];
    uint64_t count, hash;
    pthread_mutex_lock(&p->cq.lock);
    count = p->cq.ck_count;
    hash = p->cq.ck_hash;
    pthread_mutex_unlock(&p->cq.lock);
    if (!n && count == *ck)
        return 0;   /* nothing new to make durable */
    if (count != *ck) {
        if (spits_journal_add(jm->journal, SPITS_JR_GENCHECK, p->st.id, count,
                              hash, NULL, 0) != 0) {
            snprintf(err, sizeof err, "out of memory buffering the journal");
            goto fail;
        }
        *ck = count;
    }
    for (size_t i = 0; i < n; i++)
        if (b[i].status == SPITS_ST_OK &&
            spits_journal_add(jm->journal, SPITS_JR_RESULT, p->st.id, b[i].id,
                              b[i].hash, b[i].data, b[i].len) != 0) {
            snprintf(err, sizeof err, "out of memory buffering the journal");
            goto fail;
        }
    if (spits_journal_sync(jm->journal, err, sizeof err) == 0)
        return 0;
fail:
    jm_recovery_failed(jm, err);
    return -1;
}

int jm_committer_replay(jm_t *jm, jm_phase_t *p, const spits_jr_phase_t *rp)
{
    for (size_t i = 0; i < rp->nresults; i++) {
        const spits_jr_result_t *r = &rp->results[i];
        spits_crash_task(r->id);
        int rc = spits_module_commit_pit(jm->mod, &p->committer, r->data,
                                        (spitssize_t)r->len);
        p->st.committed++;
        if (rc != 0)
            commit_failed(p, rc, r->id, " (replayed)");
    }
    p->st.replayed = rp->nresults;
    return 0;
}

/* A resolved task's joblog line: Exitval is commit_pit's rc (0 when
 * committed), or for a poison task the worker's return code, -1 when
 * it crashed or timed out. */
static void joblog_add(jm_t *jm, const jm_phase_t *p, const jm_commit_t *c, int rc)
{
    const char *why = NULL;
    if (c->status != SPITS_ST_OK) {
        const jm_failure_t *f = (const jm_failure_t *)c->owned;
        rc = f && f->has_rc ? f->rc : -1;
        why = f && f->why[0] ? f->why : NULL;
    }
    jm_joblog_add(jm->joblog, p->st.id, c->id, c->log_host, c->log_start, c->log_run,
                  c->log_in, c->status == SPITS_ST_OK ? c->len : 0, rc, why);
}

void jm_committer_run(jm_t *jm, jm_phase_t *p)
{
    jm_commitq_t *q = &p->cq;
    jm_commit_t *batch = NULL;
    size_t bcap = 0;
    uint64_t resolved = 0, ck = 0;

    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->n == 0 && !q->abort && !(q->ck_due && jm->journal) &&
               !(q->gen_done && resolved == q->gen_total))
            pthread_cond_wait(&q->ready, &q->lock);
        if (q->abort) {
            pthread_mutex_unlock(&q->lock);
            break;   /* the job is being stopped: commit nothing more */
        }
        int ck_due = q->ck_due;
        q->ck_due = 0;
        if (q->n == 0 && ck_due && jm->journal &&
            !(q->gen_done && resolved == q->gen_total)) {
            /* Only the checkpoint: results that TMs compute for tasks it
             * covers can be adopted after a crash. */
            pthread_mutex_unlock(&q->lock);
            if (journal_batch(jm, p, NULL, 0, &ck) != 0)
                break;
            continue;
        }
        if (q->n == 0) {
            pthread_mutex_unlock(&q->lock);
            break;   /* every generated task is resolved */
        }
        /* Swap arrays: the dispatcher refills the other one meanwhile. */
        jm_commit_t *items = q->items;
        size_t n = q->n, cap = q->cap;
        q->items = batch;
        q->cap = bcap;
        q->n = 0;
        pthread_mutex_unlock(&q->lock);
        batch = items;
        bcap = cap;

        /* (a slow disk shows in the live view: waiting for the disk) */
        atomic_store_explicit(&q->syncing, 1, memory_order_relaxed);
        int jrc = jm->journal ? journal_batch(jm, p, batch, n, &ck) : 0;
        atomic_store_explicit(&q->syncing, 0, memory_order_relaxed);
        if (jrc != 0) {
            for (size_t i = 0; i < n; i++)
                jm_commit_release(&batch[i]);
            break;
        }
        size_t run = 0;      /* results from one message, released at once */
        for (size_t i = 0; i < n; i++) {
            jm_commit_t *c = &batch[i];
            if (c->status == SPITS_ST_OK) {
                spits_crash_task(c->id);
                int rc = spits_module_commit_pit(jm->mod, &p->committer, c->data,
                                                (spitssize_t)c->len);
                p->st.committed++;
                if (rc != 0)
                    commit_failed(p, rc, c->id, "");
                if (jm->joblog)
                    joblog_add(jm, p, c, rc);
            } else {
                if (jm->joblog)
                    joblog_add(jm, p, c, 0);
                record_failure(p, c);
            }
            free(c->owned);
            if (c->rx && (++run, i + 1 == n || batch[i + 1].rx != c->rx)) {
                jm_rx_release(c->rx, run);
                run = 0;
            }
        }
        resolved += n;
        if (jm->joblog)
            jm_joblog_flush(jm->joblog);

        /* Window room for the generator. */
        pthread_mutex_lock(&p->genq.lock);
        p->genq.resolved = resolved;
        pthread_mutex_unlock(&p->genq.lock);
        pthread_cond_signal(&p->genq.room);
    }
    free(batch);
    commit_errors_end(p);
}
