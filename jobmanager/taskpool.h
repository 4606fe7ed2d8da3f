/*
 * taskpool.h - recycles the JM's small tasks (taskpool.c). The generator
 * makes every task and the dispatcher frees it when it is resolved: a
 * malloc on one thread and a free on the other for each task, which with
 * empty tasks cost the JM more than any other step. Tasks of up to
 * JM_TASKPOOL_BYTES bytes are made as cells instead: the dispatcher hands
 * the cells of resolved tasks back in batches (one atomic operation per
 * batch), and the generator makes its next tasks in them.
 *
 * A cell is an allocation of its own (malloc), so free() (jm_task_free)
 * is still right for it anywhere: recycling is only what the dispatcher's
 * resolve does, and what the generator does with a task it will not
 * queue. Cells are far below SPITS_PART_MIN, so libzmq never holds one.
 */
#ifndef SPITS_JM_TASKPOOL_H
#define SPITS_JM_TASKPOOL_H

#include <stdint.h>

#include "jm.h"

/* Tasks with at most this many bytes are cells. */
#define JM_TASKPOOL_BYTES 64

typedef struct jm_taskpool jm_taskpool_t;

/* Cells of resolved tasks the dispatcher has not handed back yet. */
typedef struct {
    jm_task_t *head, *tail;
    unsigned n;
    jm_taskpool_t *pool;     /* where they go (jm_taskpool_release) */
} jm_taskpool_batch_t;

/* NULL when out of memory (tasks are then never recycled). */
jm_taskpool_t *jm_taskpool_new(void);
/* Frees the cells handed back. Every thread that makes or resolves
 * tasks must be done with the pool. */
void jm_taskpool_destroy(jm_taskpool_t **pp);

/* Generator: a task of len bytes (len and cell set), from *spare, else
 * from the cells handed back, else new; NULL when out of memory. pool
 * may be NULL. */
jm_task_t *jm_taskpool_make(jm_taskpool_t *pool, jm_task_t **spare, uint32_t len);
/* Generator: a task it made and does not queue goes to *spare. */
void jm_taskpool_unmake(jm_task_t **spare, jm_task_t *t);
/* Frees a list of cells (a generator's spare ones, at its end). */
void jm_taskpool_free_list(jm_task_t **list);

/* Dispatcher: a resolved task, whose last reference the caller holds:
 * a cell goes to the batch (handed back once it is full), anything else
 * is freed. pool may be NULL. */
void jm_taskpool_put(jm_taskpool_t *pool, jm_taskpool_batch_t *b, jm_task_t *t);
/* Dispatcher: hands the batch back (with no pool: frees it). */
void jm_taskpool_flush(jm_taskpool_t *pool, jm_taskpool_batch_t *b);
/* The scheduler's release hooks (serving/scheduler.h sched_hooks_t), arg
 * a jm_taskpool_batch_t whose pool is set: jm_taskpool_put and
 * jm_taskpool_flush into b->pool, one call a task. */
void jm_taskpool_release(void *b, jm_task_t *t);
void jm_taskpool_release_flush(void *b);

int jm_taskpool_selftest(void);

#endif
