/*
 * retryq.c - the retry queue (see retryq.h).
 */
#include <stdlib.h>

#include "retryq.h"

int jm_retryq_push(jm_retryq_t *q, uint64_t id)
{
    if (q->count == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 256;
        uint64_t *ids = malloc(cap * sizeof *ids);
        if (!ids)
            return -1;
        for (size_t i = 0; i < q->count; i++)   /* unwrapped, oldest first */
            ids[i] = q->ids[(q->head + i) % q->cap];
        free(q->ids);
        q->ids = ids;
        q->cap = cap;
        q->head = 0;
    }
    q->ids[(q->head + q->count++) % q->cap] = id;
    return 0;
}

uint64_t jm_retryq_pop(jm_retryq_t *q)
{
    uint64_t id = q->ids[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return id;
}

void jm_retryq_clear(jm_retryq_t *q)
{
    q->head = q->count = 0;
}

void jm_retryq_free(jm_retryq_t *q)
{
    free(q->ids);
    q->ids = NULL;
    q->head = q->count = q->cap = 0;
}
