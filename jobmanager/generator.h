/*
 * generator.h - the generator thread and the genq it fills (generator.c): next_task runs
 * on exactly one thread per phase, and its tasks reach the dispatcher
 * through the genq in chunks, with the window's flow control back.
 */
#ifndef SPITS_JM_GENERATOR_H
#define SPITS_JM_GENERATOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "jm.h"

/* generator -> dispatcher, with flow control back. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t room;      /* the generator waits here for window room */
    jm_task_t *head, *tail;
    atomic_size_t queued;     /* read without the lock as a hint only */
    _Atomic(jm_task_t *) lent; /* the generator's unflushed chunk while it
                                  calls next_task: the dispatcher may take it */
    int done;                 /* next_task returned 0 (or gave up) */
    int waiting;              /* the generator waits for window room */
    uint64_t total;           /* tasks generated, final when done */
    uint64_t low;             /* dispatcher: oldest unresolved id */
    uint64_t freed_bytes;     /* dispatcher: bytes of resolved tasks */
    uint64_t taken_bytes;     /* dispatcher: bytes of tasks taken to be
                                 sent (sched_taken_bytes) */
    uint64_t window;          /* dispatcher: the window in tasks, at least
                                 --window (0: just --window; serve.c
                                 disp_window) */
    uint64_t resolved;        /* committer: tasks committed or failed */
    uint64_t made;            /* generator: ids made so far (for status) */
    uint64_t verified;        /* generator, resumed phase: the ids below it
                                 match a journaled checkpoint, so their
                                 early results may be adopted; published
                                 before (or with) the tasks it covers */
    uint64_t ck_bad;          /* generator: the count of a journaled
                                 checkpoint that did not match (0: none),
                                 final when done */
    atomic_int stop;          /* main: give up generating (set under the
                                 lock, read without it too) */
    int wake_fd;              /* the dispatcher's eventfd */
} jm_genq_t;

void jm_genq_init(jm_genq_t *q, int wake_fd);
void jm_genq_destroy(jm_genq_t *q);
/* Dispatcher: takes the chunk the generator lent, if any (NULL if none).
 * Call it holding q->lock, in the same hold as taking the genq's tasks:
 * the generator flushes a reclaimed chunk (under the lock) before it
 * lends the next, so only then is the lent chunk never newer than one
 * still in the genq (serve.c refill_fresh). And after zeroing queued, so
 * that the generator, which checks queued after lending, flushes what it
 * lent if this call missed it. */
jm_task_t *jm_genq_take_lent(jm_genq_t *q, jm_task_t **tail);
/* Starts the phase's generator thread: 0, or -1 with errno set. */
int jm_generator_start(jm_t *jm, jm_phase_t *p);
void jm_generator_join(jm_phase_t *p);

#endif
