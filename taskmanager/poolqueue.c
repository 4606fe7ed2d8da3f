/*
 * poolqueue.c - the pool's queue of tasks (see tm.h for who owns what):
 * what the network thread puts in for the workers (tm_pool_push) and
 * takes back out before they start it (a CANCEL, another phase, a drain).
 *
 * Everything here runs under the pool's lock; workers.c takes tasks out
 * of the same queue to run them (pool_pop_locked), and its workers sleep
 * on p->work until tm_pool_push signals it. A task taken back goes to the
 * outbox as a RETURNED record (outbox.c), so its hop counts its slot free.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "tm.h"
#include "wake.h"

/* Room for n more tasks in the queue; caller holds the lock. */
static int pool_grow(tm_pool_t *p, size_t n)
{
    if (p->queue.cap - p->queue.n >= n)
        return 0;
    size_t cap = p->queue.cap * 2;
    while (cap - p->queue.n < n)
        cap *= 2;
    tm_item_t *q = malloc(cap * sizeof *q);
    if (!q)
        return -1;
    for (size_t i = 0; i < p->queue.n; i++)
        q[i] = p->queue.q[(p->queue.head + i) % p->queue.cap];
    free(p->queue.q);
    p->queue.q = q;
    p->queue.cap = cap;
    p->queue.head = 0;
    return 0;
}

int tm_pool_push(tm_pool_t *p, tm_item_t *items, size_t n)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&p->lock);
    if (pool_grow(p, n) != 0) {
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        p->queue.q[(p->queue.head + p->queue.n + i) % p->queue.cap] = items[i];
    p->queue.n += n;
    pthread_mutex_unlock(&p->lock);
    if (n == 1)
        pthread_cond_signal(&p->work);
    else
        pthread_cond_broadcast(&p->work);
    return 0;
}

/* Takes out of the queue the tasks match() picks: each goes to the outbox
 * as a RETURNED record (hand_back), so the JM counts its slot free again,
 * or is just dropped. A task whose record cannot be queued stays queued
 * and the pool fails (the TM stops). Returns how many were taken out. */
static size_t pool_remove(tm_pool_t *p, int (*match)(const tm_item_t *, const void *),
                          const void *arg, int hand_back)
{
    size_t kept = 0, removed = 0;
    int lost = 0;

    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->queue.n; i++) {
        tm_item_t it = p->queue.q[(p->queue.head + i) % p->queue.cap];
        int keep = !match(&it, arg);
        if (!keep && hand_back && !lost &&
            tm_outbox_return_locked(p, it.phase->job, it.phase->wire, it.id) != 0)
            lost = 1;
        if (keep || (hand_back && lost)) {
            p->queue.q[(p->queue.head + kept++) % p->queue.cap] = it;
            continue;
        }
        spits_rx_release(it.rx, 1);
        removed++;
    }
    p->queue.n = kept;
    pthread_mutex_unlock(&p->lock);
    if (lost)
        tm_pool_fail(p, "out of memory handing back tasks");
    else if (removed && hand_back)
        spits_wake_signal(p->wake_fd);
    return removed;
}

static int other_phase(const tm_item_t *it, const void *keep)
{
    return it->phase != keep;
}

size_t tm_pool_drop_others(tm_pool_t *p, const tm_phase_t *keep, int hand_back)
{
    return pool_remove(p, other_phase, keep, hand_back);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const tm_phase_t *phase;
    const uint64_t *ids;      /* sorted */
    size_t n;
} cancel_t;

static int cancelled(const tm_item_t *it, const void *arg)
{
    const cancel_t *c = arg;
    return it->phase == c->phase &&
           bsearch(&it->id, c->ids, c->n, sizeof *c->ids, cmp_u64) != NULL;
}

size_t tm_pool_cancel(tm_pool_t *p, const tm_phase_t *ph, uint64_t *ids, size_t n)
{
    cancel_t c = {ph, ids, n};
    qsort(ids, n, sizeof *ids, cmp_u64);
    return pool_remove(p, cancelled, &c, 1);
}

size_t tm_pool_drain(tm_pool_t *p)
{
    atomic_store(&p->draining, 1);
    return tm_pool_drop_others(p, NULL, 1);
}
