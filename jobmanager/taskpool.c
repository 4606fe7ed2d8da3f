/*
 * taskpool.c - recycles the JM's small tasks (see taskpool.h).
 *
 * The cells handed back form one lock-free stack: the dispatcher pushes a
 * whole batch with one compare-and-swap, and the generator takes the whole
 * stack with one exchange. Nothing ever pops a single cell off the shared
 * stack, so a cell coming back while another thread looks at the top
 * cannot be mistaken for the one it saw (no ABA).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "taskpool.h"

/* Cells a batch gathers before the dispatcher hands it back. */
#define TASKPOOL_BATCH 64

_Static_assert(JM_TASKPOOL_BYTES < SPITS_PART_MIN,
               "a cell must never be sent as a part: libzmq would hold it");

struct jm_taskpool {
    _Atomic(jm_task_t *) back;   /* cells handed back, linked by next */
};

jm_taskpool_t *jm_taskpool_new(void)
{
    jm_taskpool_t *pool = malloc(sizeof *pool);
    if (pool)
        atomic_init(&pool->back, NULL);
    return pool;
}

void jm_taskpool_free_list(jm_task_t **list)
{
    jm_task_t *t = *list;
    while (t) {
        jm_task_t *next = t->next;
        free(t);
        t = next;
    }
    *list = NULL;
}

void jm_taskpool_destroy(jm_taskpool_t **pp)
{
    jm_taskpool_t *pool = *pp;
    if (!pool)
        return;
    jm_task_t *back = atomic_exchange(&pool->back, NULL);
    jm_taskpool_free_list(&back);
    free(pool);
    *pp = NULL;
}

jm_task_t *jm_taskpool_make(jm_taskpool_t *pool, jm_task_t **spare, uint32_t len)
{
    jm_task_t *t;
    if (!pool || len > JM_TASKPOOL_BYTES) {
        if ((t = malloc(sizeof *t + len)))
            t->cell = 0;
    } else {
        if (!*spare)
            *spare = atomic_exchange_explicit(&pool->back, NULL,
                                              memory_order_acquire);
        if ((t = *spare))
            *spare = t->next;
        else if ((t = malloc(sizeof *t + JM_TASKPOOL_BYTES)))
            t->cell = 1;
    }
    if (t)
        t->len = len;
    return t;
}

void jm_taskpool_unmake(jm_task_t **spare, jm_task_t *t)
{
    if (t && t->cell) {
        t->next = *spare;
        *spare = t;
    } else {
        free(t);
    }
}

void jm_taskpool_flush(jm_taskpool_t *pool, jm_taskpool_batch_t *b)
{
    if (!b->head)
        return;
    if (!pool) {
        jm_taskpool_free_list(&b->head);
    } else {
        jm_task_t *top = atomic_load_explicit(&pool->back, memory_order_relaxed);
        do
            b->tail->next = top;
        while (!atomic_compare_exchange_weak_explicit(&pool->back, &top, b->head,
                                                      memory_order_release,
                                                      memory_order_relaxed));
    }
    b->head = b->tail = NULL;
    b->n = 0;
}

void jm_taskpool_put(jm_taskpool_t *pool, jm_taskpool_batch_t *b, jm_task_t *t)
{
    if (!pool || !t->cell) {
        jm_task_free(t);
        return;
    }
    t->next = b->head;
    b->head = t;
    if (!b->tail)
        b->tail = t;
    if (++b->n >= TASKPOOL_BATCH)
        jm_taskpool_flush(pool, b);
}

void jm_taskpool_release(void *b, jm_task_t *t)
{
    jm_taskpool_batch_t *batch = b;
    jm_taskpool_put(batch->pool, batch, t);
}

void jm_taskpool_release_flush(void *b)
{
    jm_taskpool_batch_t *batch = b;
    jm_taskpool_flush(batch->pool, batch);
}

#ifdef SPITS_SELFTEST
#include <pthread.h>
#include <string.h>

#define TP_TASKS 20000

/* A generator thread makes tasks (each its id in its bytes) and hands them
 * over through a locked list; the caller resolves them into the pool. */
typedef struct {
    jm_taskpool_t *pool;
    pthread_mutex_t lock;
    jm_task_t *head;
    int made;
} tp_pipe_t;

static void *tp_generator(void *arg)
{
    tp_pipe_t *pp = arg;
    jm_task_t *spare = NULL;
    for (uint64_t id = 0; id < TP_TASKS; id++) {
        jm_task_t *t = jm_taskpool_make(pp->pool, &spare, sizeof id);
        if (!t)
            break;
        t->id = id;
        memcpy(t->data, &id, sizeof id);
        pthread_mutex_lock(&pp->lock);
        t->next = pp->head;
        pp->head = t;
        pp->made++;
        pthread_mutex_unlock(&pp->lock);
    }
    jm_taskpool_free_list(&spare);
    return NULL;
}

static int tp_threads(void)
{
    tp_pipe_t pp = {jm_taskpool_new(), PTHREAD_MUTEX_INITIALIZER, NULL, 0};
    jm_taskpool_batch_t b = {.head = NULL};
    pthread_t th;
    int got = 0, bad = 0;

    if (!pp.pool || pthread_create(&th, NULL, tp_generator, &pp) != 0)
        return -1;
    for (int made = 0; made < TP_TASKS;) {
        pthread_mutex_lock(&pp.lock);
        jm_task_t *t = pp.head;
        pp.head = NULL;
        made = pp.made;
        pthread_mutex_unlock(&pp.lock);
        while (t) {
            jm_task_t *next = t->next;
            uint64_t id;
            memcpy(&id, t->data, sizeof id);
            bad += !t->cell || t->len != sizeof id || id != t->id;
            got++;
            jm_taskpool_put(pp.pool, &b, t);
            t = next;
        }
    }
    pthread_join(th, NULL);
    jm_taskpool_flush(pp.pool, &b);
    jm_taskpool_destroy(&pp.pool);
    return got == TP_TASKS && !bad && !pp.pool ? 0 : -1;
}

int jm_taskpool_selftest(void)
{
    jm_taskpool_t *pool = jm_taskpool_new();
    jm_taskpool_batch_t b = {.head = NULL};
    jm_task_t *spare = NULL, *cells[TASKPOOL_BATCH], *again[TASKPOOL_BATCH];
    if (!pool)
        return -1;

    /* Small tasks are cells, larger ones not; without a pool, none is. */
    jm_task_t *big = jm_taskpool_make(pool, &spare, JM_TASKPOOL_BYTES + 1);
    jm_task_t *none = jm_taskpool_make(NULL, &spare, 0);
    if (!big || big->cell || big->len != JM_TASKPOOL_BYTES + 1 ||
        !none || none->cell)
        return -1;
    jm_taskpool_put(pool, &b, big);     /* (freed, not kept) */
    jm_taskpool_put(NULL, &b, none);
    if (b.n != 0)
        return -1;

    /* A full batch goes back, and the next tasks are made in its cells. */
    for (int i = 0; i < TASKPOOL_BATCH; i++) {
        cells[i] = jm_taskpool_make(pool, &spare, (uint32_t)(i % 2 ? JM_TASKPOOL_BYTES : 0));
        if (!cells[i] || !cells[i]->cell)
            return -1;
        memset(cells[i]->data, 0xab, cells[i]->len);
    }
    for (int i = 0; i < TASKPOOL_BATCH; i++) {
        jm_taskpool_put(pool, &b, cells[i]);
        if (b.n != (unsigned)(i + 1) % TASKPOOL_BATCH)
            return -1;
    }
    for (int i = 0; i < TASKPOOL_BATCH; i++) {
        jm_task_t *t = jm_taskpool_make(pool, &spare, 8);
        int found = 0;
        for (int k = 0; k < TASKPOOL_BATCH; k++)
            found += t == cells[k];
        if (found != 1 || t->len != 8)
            return -1;
        /* A task not queued is made again in the same cell. */
        jm_taskpool_unmake(&spare, t);
        if (jm_taskpool_make(pool, &spare, 1) != t)
            return -1;
        again[i] = t;
    }
    if (spare)
        return -1;    /* every cell handed back was used */

    /* A partial batch is kept until flushed; destroy frees what came back. */
    jm_taskpool_put(pool, &b, again[0]);
    jm_taskpool_flush(pool, &b);
    if (b.n || b.head || jm_taskpool_make(pool, &spare, 0) != again[0])
        return -1;
    for (int i = 0; i < TASKPOOL_BATCH; i++)
        jm_taskpool_unmake(&spare, again[i]);
    jm_taskpool_free_list(&spare);
    jm_taskpool_destroy(&pool);
    return !pool ? tp_threads() : -1;
}
#endif
