/*
 * outbox.c - the one owner of what goes back to the JM.
 *
 * The rule (wire.h): every task copy the TM receives goes back to the JM
 * as exactly one record, its result (or failure), or RETURNED unrun. This
 * file is where every such record is queued, and the only place a
 * RETURNED record is made:
 *
 *   a result       a worker puts its chunk's results (tm_outbox_put)
 *   RETURNED       a worker's task left unstarted by a drain, queued tasks
 *                  taken out of the pool (a CANCEL, a drain, a new phase:
 *                  workers.c), and the tasks of a TASKS message the main
 *                  thread does not take (another phase, a drain, out of
 *                  memory: protocol.c) (tm_outbox_return*)
 *
 * The outbox lives in the pool, under its lock: a list of segments, each
 * one RESULTS message of one job and phase, cut near OUTBOX_SEG_BYTES.
 * The main thread takes them (tm_outbox_take, from results.c), which
 * sends them in order. A record that cannot be queued (out of memory) is
 * reported to the caller, which stops the TM (tm_pool_fail): the JM then
 * counts the TM's copies lost and sends them elsewhere; nothing is
 * dropped silently.
 */
#include <stdlib.h>
#include <string.h>

#include "tm.h"
#include "wake.h"

/* A result message is cut near this size, parts included (plus one
 * worker's chunk at most), so that its frame stays under the JM's
 * ZMQ_MAXMSGSIZE and a message holds the JM's commits of only so much. */
#define OUTBOX_SEG_BYTES (4u << 20)

/* Records of this many bytes or more that would start a segment move into
 * it (spits_batch_move) rather than be copied. */
#define OUTBOX_MOVE_MIN 4096

/* The last segment, if it takes len more bytes of records of (job, wire),
 * or NULL. Caller holds the lock. */
static tm_seg_t *outbox_last(tm_pool_t *p, unsigned job, uint32_t wire, size_t len)
{
    tm_seg_t *seg = p->outbox.n ? &p->outbox.segs[p->outbox.n - 1] : NULL;
    if (seg && seg->job == job && seg->wire == wire &&
        (!seg->batch.count || seg->bytes + len <= OUTBOX_SEG_BYTES))
        return seg;
    return NULL;
}

/* A new last segment of (job, wire): empty, or, given from, with from's
 * records moved in (from is then empty). Caller holds the lock. */
static tm_seg_t *outbox_new(tm_pool_t *p, unsigned job, uint32_t wire, spits_batch_t *from)
{
    tm_seg_t *seg;
    if (p->outbox.n == p->outbox.cap) {
        size_t cap = p->outbox.cap ? p->outbox.cap * 2 : 8;
        tm_seg_t *grown = realloc(p->outbox.segs, cap * sizeof *grown);
        if (!grown)
            return NULL;
        p->outbox.segs = grown;
        p->outbox.cap = cap;
    }
    seg = &p->outbox.segs[p->outbox.n];
    memset(seg, 0, sizeof *seg);
    if (from ? spits_batch_move(from, &seg->batch, wire) != 0
             : (spits_batch_begin(&seg->batch, SPITS_MSG_RESULTS, wire), !seg->batch.buf.data))
        return NULL;
    seg->job = job;
    seg->wire = wire;
    p->outbox.n++;
    return seg;
}

/* The segment that takes len more bytes of records of (job, wire): the
 * last one, or a new one. Caller holds the lock. */
static tm_seg_t *outbox_seg(tm_pool_t *p, unsigned job, uint32_t wire, size_t len)
{
    tm_seg_t *seg = outbox_last(p, job, wire, len);
    return seg ? seg : outbox_new(p, job, wire, NULL);
}

int tm_outbox_put(tm_pool_t *p, const tm_phase_t *ph, spits_batch_t *b,
                  spits_parts_t *parts)
{
    if (b->buf.len < SPITS_HDR_SIZE)
        return -1;   /* (its begin ran out of memory) */
    size_t body = b->buf.len - SPITS_HDR_SIZE;
    size_t part_bytes = parts ? spits_parts_bytes(parts) : 0;
    tm_seg_t *seg = outbox_last(p, ph->job, ph->wire, body + part_bytes);

    /* (records that start a segment: large ones move in whole) */
    if (!seg && body >= OUTBOX_MOVE_MIN && (seg = outbox_new(p, ph->job, ph->wire, b))) {
        if (parts) {   /* (the list itself moves: its frames stay put) */
            seg->parts = *parts;
            *parts = (spits_parts_t){0};
        }
        seg->bytes = body + part_bytes;
        return 0;
    }
    if (!seg)
        seg = outbox_new(p, ph->job, ph->wire, NULL);
    if (!seg || spits_buf_reserve(&seg->batch.buf, body) != 0 ||
        (parts && spits_parts_move(&seg->parts, parts) != 0))
        return -1;
    memcpy(seg->batch.buf.data + seg->batch.buf.len, b->buf.data + SPITS_HDR_SIZE, body);
    seg->batch.buf.len += body;
    seg->batch.count += b->count;
    seg->bytes += body + part_bytes;
    return 0;
}

int tm_outbox_return_locked(tm_pool_t *p, unsigned job, uint32_t wire, uint64_t id)
{
    tm_seg_t *seg = outbox_seg(p, job, wire, SPITS_REC_MAX);
    size_t was = seg ? seg->batch.buf.len : 0;
    if (!seg || !spits_batch_add(&seg->batch, id, SPITS_ST_RETURNED, 0))
        return -1;
    seg->bytes += seg->batch.buf.len - was;
    return 0;
}

int tm_outbox_return(tm_pool_t *p, unsigned job, uint32_t wire,
                     const tm_item_t *items, size_t n)
{
    size_t done = 0;

    pthread_mutex_lock(&p->lock);
    int was_empty = p->outbox.n == 0;
    while (done < n && tm_outbox_return_locked(p, job, wire, items[done].id) == 0)
        done++;
    pthread_mutex_unlock(&p->lock);
    if (was_empty && done)
        spits_wake_signal(p->wake_fd);
    return done == n ? 0 : -1;
}

tm_seg_t *tm_outbox_take(tm_pool_t *p, size_t *n)
{
    pthread_mutex_lock(&p->lock);
    tm_seg_t *out = p->outbox.segs;
    *n = p->outbox.n;
    p->outbox.segs = NULL;
    p->outbox.n = p->outbox.cap = 0;
    pthread_mutex_unlock(&p->lock);
    return out;
}

void tm_seg_free(tm_seg_t *seg)
{
    spits_batch_free(&seg->batch);
    spits_parts_free(&seg->parts);
}

void tm_outbox_free(tm_pool_t *p)
{
    for (size_t i = 0; i < p->outbox.n; i++)
        tm_seg_free(&p->outbox.segs[i]);
    free(p->outbox.segs);
    p->outbox.segs = NULL;
    p->outbox.n = p->outbox.cap = 0;
}
