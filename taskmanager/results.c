/*
 * results.c - results on their way from the workers to the JM.
 *
 * Workers hand back results in segments (a batch of one phase's records,
 * tm.h) through the pool's outbox. The main thread collects them into its
 * own list, tm->results, and sends what the socket takes while the link is
 * ready. What it does not take (the JM is away, or the socket is full)
 * stays in the list, in order, for the next turn of the loop or the next
 * connection: results are never lost to a reconnect. Results of a job the
 * JM no longer runs are dropped unsent.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tm_private.h"

void tm_results_collect(tm_t *tm)
{
    size_t n;
    tm_seg_t *segs = tm_pool_take_out(&tm->pool, &n);
    if (!n) {
        free(segs);
        return;
    }
    if (tm->results.cap - tm->results.n < n) {
        size_t cap = tm->results.cap ? tm->results.cap : 8;
        while (cap - tm->results.n < n)
            cap *= 2;
        tm_seg_t *grown = realloc(tm->results.segs, cap * sizeof *grown);
        if (!grown) {
            spits_error("out of memory keeping results");
            abort();
        }
        tm->results.segs = grown;
        tm->results.cap = cap;
    }
    memcpy(tm->results.segs + tm->results.n, segs, n * sizeof *segs);
    tm->results.n += n;
    free(segs);
}

void tm_results_send(tm_t *tm)
{
    tm_results_t *results = &tm->results;
    size_t sent = 0;

    if (tm->link.state != TM_READY)
        return;
    /* Stats ahead of results (10 a second at most): when the last result
     * ends the job, the JM already has the time spent on it. */
    if (results->n && tm->pool_started && tm->now - tm->link.last_stats >= 100)
        tm_link_send_stats(tm);
    for (; sent < results->n; sent++) {
        tm_seg_t *seg = &results->segs[sent];
        if (seg->phase->job != tm->job.joined) {
            spits_batch_free(&seg->batch);   /* a job that is gone */
            continue;
        }
        spits_batch_seal(&seg->batch);
        if (tm_link_send(tm, seg->batch.buf.data, seg->batch.buf.len) != 0)
            break;
        spits_batch_free(&seg->batch);
    }
    if (sent) {
        memmove(results->segs, results->segs + sent,
                (results->n - sent) * sizeof *results->segs);
        results->n -= sent;
    }
}

void tm_results_free(tm_results_t *results)
{
    for (size_t i = 0; i < results->n; i++)
        spits_batch_free(&results->segs[i].batch);
    free(results->segs);
}
