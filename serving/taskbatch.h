/*
 * taskbatch.h - a TASKS message to one TM: small tasks inline, large
 * ones as parts.
 *
 * Part of serving/: the JM's dispatcher (serve.c) and a relay
 * (taskmanager/relay_copies.c) send the copies their scheduler picked;
 * both build the message and send its parts here. A task of part_min
 * bytes or more (spits_parts_min) goes as a part of its own
 * (wire.h), straight from the caller's memory: no copy into the batch
 * and none into ZeroMQ (zmq_msg_init_data). The caller says what its
 * items are (taskbatch_src_t), sends the batch's frame itself (its own
 * send accounts for its TM), then the parts with taskbatch_send_parts.
 * ROUTER takes every frame after the first it took: a part that cannot
 * be queued, to a connection being torn down, drops the whole message,
 * as a disconnect would.
 */
#ifndef SPITS_SERVING_TASKBATCH_H
#define SPITS_SERVING_TASKBATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zmq.h>

#include "wire.h"

typedef struct {
    uint64_t id;
    const void *data;
    size_t len;
} taskbatch_item_t;

/* The caller's items, 0..n-1. */
typedef struct {
    /* item k's id and bytes */
    void (*item)(void *arg, size_t k, taskbatch_item_t *it);
    /* item k goes as a part: a reference to its bytes for the part (the
     * hint part_free gets once libzmq is done with them) */
    void *(*hold)(void *arg, size_t k);
    zmq_free_fn *part_free;
    void *arg;
} taskbatch_src_t;

/* What taskbatch_send_parts did. */
typedef struct {
    size_t parts;            /* parts queued */
    uint64_t bytes;          /* ...and their bytes */
    size_t failed;           /* parts that could not be made (no memory:
                                an empty part went instead, and the TM
                                drops the message as malformed) */
} taskbatch_sent_t;

/* Builds the TASKS message of n items of wire phase phase in out. The
 * number of parts to send after it, or -1 when out of memory. Inline, so
 * that the caller's src->item, a constant there, is inlined too: it runs
 * once per task. (Read once, before the loop: the calls in it could
 * change *src, as far as the compiler knows, and it would stay a call.) */
static inline long taskbatch_build(spits_batch_t *out, uint32_t phase, uint64_t part_min,
                     size_t n, const taskbatch_src_t *src)
{
    long parts = 0;
    taskbatch_item_t it;
    void (*item)(void *, size_t, taskbatch_item_t *) = src->item;
    void *arg = src->arg;
    spits_batch_begin(out, SPITS_MSG_TASKS, phase);
    for (size_t k = 0; k < n; k++) {
        item(arg, k, &it);
        if (it.len >= part_min) {
            if (spits_batch_add_part(out, it.id, 0, (uint32_t)it.len) != 0)
                return -1;
            parts++;
            continue;
        }
        unsigned char *dst = spits_batch_add(out, it.id, 0, (uint32_t)it.len);
        if (!dst)
            return -1;
        if (it.len)
            spits_copy(dst, it.data, it.len);
    }
    spits_batch_seal(out);
    return parts;
}

/* After the batch's frame went to sock with ZMQ_SNDMORE: its parts. */
void taskbatch_send_parts(void *sock, uint64_t part_min, size_t n, long parts,
                          const taskbatch_src_t *src, taskbatch_sent_t *sent);

#endif
