/*
 * retryq.c - the retry queue (see retryq.h).
 */
#include <stdlib.h>

#include "retryq.h"

int retryq_push(retryq_t *q, uint64_t id)
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

uint64_t retryq_pop(retryq_t *q)
{
    uint64_t id = q->ids[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return id;
}

void retryq_clear(retryq_t *q)
{
    q->head = q->count = 0;
}

void retryq_free(retryq_t *q)
{
    free(q->ids);
    q->ids = NULL;
    q->head = q->count = q->cap = 0;
}
