/*
 * results.c - records on their way from the outbox to the JM.
 *
 * Every record a task copy comes back as, a result or RETURNED, is queued
 * in the pool's outbox (outbox.c, their one owner), in segments (one job
 * phase's records each, tm.h). The main thread collects them into its
 * own list, tm->results, and sends what the socket takes while the link is
 * ready. What it does not take (the JM is away, or the socket is full)
 * stays in the list, in order, for the next turn of the loop or the next
 * connection: results are never lost to a reconnect. Results of a job the
 * JM no longer runs are dropped unsent. Large results travel as parts
 * (the workers' buffers, wire.h), to a hop whose WELCOME said it takes
 * them; to another, a segment's parts are put inline just before it goes.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tm_private.h"
#include "util.h"

/* The TM cannot keep the rule: it stops (exit 1, no BYE), and the JM
 * counts the copies it holds lost and sends them elsewhere. */
static void results_fail(tm_t *tm, const char *why)
{
    if (tm->done >= 0)
        spits_error("%s; stopping, so that the job manager sends this task "
                    "manager's tasks to another", why);
    tm->done = -1;
}

void tm_results_collect(tm_t *tm)
{
    size_t n;
    tm_seg_t *segs = tm_outbox_take(&tm->pool, &n);
    const char *failed = tm_pool_failed(&tm->pool);

    if (failed)
        results_fail(tm, failed);
    if (!n) {
        free(segs);
        return;
    }
    if (spits_grow((void **)&tm->results.segs, &tm->results.cap, tm->results.n + n,
                   sizeof *tm->results.segs, 8) != 0) {
        for (size_t i = 0; i < n; i++)
            tm_seg_free(&segs[i]);
        free(segs);
        results_fail(tm, "out of memory keeping results");
        return;
    }
    memcpy(tm->results.segs + tm->results.n, segs, n * sizeof *segs);
    tm->results.n += n;
    free(segs);
}

void tm_results_send(tm_t *tm)
{
    tm_results_t *results = &tm->results;
    size_t sent = 0;

    if (!tm_link_ready(tm))
        return;
    /* Stats ahead of results (10 a second at most): when the last result
     * ends the job, the JM already has the time spent on it. */
    if (results->n && tm->pool_started && tm->now - tm->link.live.last_stats >= 100)
        tm_link_send_stats(tm);
    for (; sent < results->n; sent++) {
        tm_seg_t *seg = &results->segs[sent];
        if (seg->job != tm->job.joined) {
            tm_seg_free(seg);   /* a job that is gone */
            continue;
        }
        spits_batch_seal(&seg->batch);
        /* (a hop that takes no parts: a JM or relay of an earlier
         * release) */
        if (seg->parts.n && !tm->link.status.result_parts &&
            spits_parts_inline(&seg->batch, &seg->parts) != 0) {
            results_fail(tm, "cannot put large results inline for this job "
                             "manager (out of memory)");
            break;
        }
        int rc = tm_link_send_parts(tm, &seg->batch.buf, &seg->parts);
        if (rc == -1)
            break;   /* (the socket is full or the JM away: next turn) */
        tm_seg_free(seg);
        if (rc == -2) {
            /* (a socket being closed: never while the link is ready) */
            results_fail(tm, "a results message was cut short");
            sent++;
            break;
        }
    }
    if (sent) {
        memmove(results->segs, results->segs + sent,
                (results->n - sent) * sizeof *results->segs);
        results->n -= sent;
    }
}

uint64_t tm_results_pending(const tm_t *tm)
{
    uint64_t pending = 0;
    for (size_t i = 0; i < tm->results.n; i++)
        if (tm->results.segs[i].job == tm->job.joined)
            pending += tm->results.segs[i].batch.count;
    return pending;
}

void tm_results_free(tm_results_t *results)
{
    for (size_t i = 0; i < results->n; i++)
        tm_seg_free(&results->segs[i]);
    free(results->segs);
}
