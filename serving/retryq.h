/*
 * retryq.h - the retry queue: ids of tasks that must be sent again, first
 * in, first out (their every copy was lost with a TM, failed, or was
 * handed back unrun). A circular array that doubles when full; the
 * scheduler (scheduler.c) owns one and keeps each id in it at most once.
 */
#ifndef SPITS_SERVING_RETRYQ_H
#define SPITS_SERVING_RETRYQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *ids;
    size_t head;      /* index of the oldest id */
    size_t count;
    size_t cap;
} retryq_t;

/* A zeroed retryq_t is an empty queue. */
/* Appends id: 0, or -1 when out of memory (the queue is unchanged). */
int retryq_push(retryq_t *q, uint64_t id);
/* Removes and returns the oldest id; the queue must not be empty. */
uint64_t retryq_pop(retryq_t *q);
void retryq_clear(retryq_t *q);
/* Frees the array; the queue is empty and usable again. */
void retryq_free(retryq_t *q);

#endif
