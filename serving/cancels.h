/*
 * cancels.h - CANCEL messages for the copies a scheduler noted
 * (scheduler.h sched_take_cancels): one message per TM.
 *
 * Part of serving/: the JM's dispatcher (serve.c) and a relay
 * (copies.c) both send them here. What differs between
 * the two hops is the sink: which id the TMs know a task by, and how a
 * message reaches the TM in a slot.
 */
#ifndef SPITS_SERVING_CANCELS_H
#define SPITS_SERVING_CANCELS_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler.h"
#include "wire.h"

typedef struct {
    /* Sends the sealed message (len bytes) to the TM in slot: 0 when it
     * went, -1 when not (no TM alive there, or the send failed). */
    int (*send)(void *arg, int slot, const void *buf, size_t len);
    void *arg;
    /* The TMs know a task by its hash (a relay's: upstream's id), not by
     * the scheduler's id. */
    int by_hash;
} cancels_sink_t;

/* Sends one CANCEL of wire phase phase per TM slot in c[0..n), built in
 * out; c is sorted by slot on the way. Returns the copies named in the
 * messages that went. A copy left out for want of memory runs on, and its
 * result comes back as a duplicate: nothing is lost. */
size_t cancels_send(sched_cancel_t *c, size_t n, uint32_t phase, spits_batch_t *out,
                    const cancels_sink_t *sink);

int cancels_selftest(void);

#endif
