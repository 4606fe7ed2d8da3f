/*
 * retryq.h - the retry queue: ids of tasks that must be sent again, first
 * in, first out (their every copy was lost with a TM, failed, or was
 * handed back unrun). A circular array that doubles when full; the
 * scheduler (scheduler.c) owns one and keeps each id in it at most once.
 */
#ifndef SPITS_JM_RETRYQ_H
#define SPITS_JM_RETRYQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *ids;
    size_t head;      /* index of the oldest id */
    size_t count;
    size_t cap;
} jm_retryq_t;

/* A zeroed jm_retryq_t is an empty queue. */
/* Appends id: 0, or -1 when out of memory (the queue is unchanged). */
int jm_retryq_push(jm_retryq_t *q, uint64_t id);
/* Removes and returns the oldest id; the queue must not be empty. */
uint64_t jm_retryq_pop(jm_retryq_t *q);
void jm_retryq_clear(jm_retryq_t *q);
/* Frees the array; the queue is empty and usable again. */
void jm_retryq_free(jm_retryq_t *q);

#endif
