/*
 * taskbatch.h - a TASKS message to one TM: small tasks inline, large
 * ones as parts.
 *
 * Part of serving/: the server (server_peers.c, server_send_tasks) sends
 * the copies its scheduler picked, for either hop. A task of part_min
 * bytes or more (spits_parts_min) goes as a part of its own (wire.h),
 * straight from its owner's memory: no copy into the batch and none into
 * ZeroMQ (zmq_msg_init_data). The caller sends the batch's frame itself
 * (its own send accounts for its TM), then the parts with
 * taskbatch_send_parts. ROUTER takes every frame after the first it
 * took: a part that cannot be queued, to a connection being torn down,
 * drops the whole message, as a disconnect would.
 *
 * A hop's tasks are its own or borrowed. The JM's own go by their id,
 * their bytes in their data. A relay's are borrowed: each goes by its
 * hash, the id upstream gave it, and its data begins with a pointer to
 * its bytes, which stay in the message they came in.
 */
#ifndef SPITS_SERVING_TASKBATCH_H
#define SPITS_SERVING_TASKBATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zmq.h>

#include "scheduler.h"
#include "wire.h"

/* A task's id on the wire and its bytes (see the top). */
static inline uint64_t taskbatch_id(const sched_task_t *t, int borrowed)
{
    return borrowed ? t->hash : t->id;
}

static inline const void *taskbatch_bytes(const sched_task_t *t, int borrowed)
{
    const void *bytes;
    if (!borrowed)
        return t->data;
    memcpy(&bytes, t->data, sizeof bytes);
    return bytes;
}

/* How a task's part is held and sent. */
typedef struct {
    /* task goes as a part: a reference to its bytes for the part (the
     * hint part_free gets, on libzmq's I/O thread, once it is done) */
    void *(*hold)(void *arg, sched_task_t *task);
    zmq_free_fn *part_free;
    void *arg;
    /* sends m, a frame of the message begun (as router_send_msg) */
    int (*send)(void *io, zmq_msg_t *m, int more);
    void *io;
} taskbatch_parts_t;

/* What taskbatch_send_parts did. */
typedef struct {
    size_t parts;            /* parts queued */
    uint64_t bytes;          /* ...and their bytes */
    size_t failed;           /* parts that could not be made (no memory:
                                an empty part went instead) or sent: the
                                TM hands back the message's copies */
} taskbatch_sent_t;

/* Builds the TASKS message of the n tasks of wire phase phase in out.
 * The number of parts to send after it, or -1 when out of memory.
 * Always inline, each call with borrowed a constant: its loop runs once
 * per task, and is then one for each kind of task. */
__attribute__((always_inline)) static inline long
taskbatch_build(spits_batch_t *out, uint32_t phase, uint64_t part_min, sched_task_t *const *tasks,
                size_t n, int borrowed)
{
    long parts = 0;
    spits_batch_begin(out, SPITS_MSG_TASKS, phase);
    for (size_t k = 0; k < n; k++) {
        const sched_task_t *t = tasks[k];
        uint64_t id = taskbatch_id(t, borrowed);
        if (t->len >= part_min) {
            if (spits_batch_add_part(out, id, 0, t->len) != 0)
                return -1;
            parts++;
            continue;
        }
        unsigned char *dst = spits_batch_add(out, id, 0, t->len);
        if (!dst)
            return -1;
        if (t->len)
            spits_copy(dst, taskbatch_bytes(t, borrowed), t->len);
    }
    spits_batch_seal(out);
    return parts;
}

/* After the batch's frame went with ZMQ_SNDMORE: its parts. */
void taskbatch_send_parts(const taskbatch_parts_t *how, uint64_t part_min,
                          sched_task_t *const *tasks, size_t n, long parts, int borrowed,
                          taskbatch_sent_t *sent);

#endif
