/*
 * relay_records.c - a relay's records upstream (see relay_int.h): what
 * the TMs behind it answer, and the copies that go back unrun, gathered
 * into one RESULTS batch per phase and handed to the outbox (results.c
 * sends them to the relay's own upstream, as a TM's).
 *
 * Every copy the relay took from the pool (tm_pool_take, which counts it
 * running) goes back as exactly one record with held set
 * (relay_copies.c keeps that rule); foreign results go up without.
 *
 * The lowest of the relay's files: it uses the pool
 * (tm.h), nothing above.
 */
#define _DEFAULT_SOURCE
#include <string.h>

#include "log.h"
#include "relay_int.h"

/* Hands the records gathered so far to the outbox (results.c sends
 * them). */
void relay_records_flush(tm_relay_t *r)
{
    if (!r->rec.ph)
        return;
    tm_pool_remote_done(&r->tm->pool, r->rec.ph,
                        r->rec.batch.count ? &r->rec.batch : NULL,
                        &r->rec.parts, r->rec.done);
    r->rec.ph = NULL;
    r->rec.done = 0;
}

/* A record's payload as a part upstream: the frame it came in, shared
 * (zmq_msg_copy counts a reference, no bytes are copied). 0, or -1 when
 * out of memory (nothing added). */
static int relay_records_add_part(tm_relay_t *r, uint64_t id, uint32_t status,
                                  zmq_msg_t *part)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    int rc = zmq_msg_copy(&m, part) == 0 &&
             spits_parts_add(&r->rec.parts, &m) == 0 ? 0 : -1;
    zmq_msg_close(&m);
    if (rc == 0 && spits_batch_add_part(&r->rec.batch, id, status,
                                        (uint32_t)zmq_msg_size(part)) != 0) {
        spits_parts_drop_last(&r->rec.parts);
        rc = -1;
    }
    return rc;
}

/* Adds a record of phase ph for upstream, its payload inline, or, given
 * part (the frame it came in), as a part; held: it answers a copy this
 * relay took from the pool (counted running there). */
void relay_records_add(tm_relay_t *r, const tm_phase_t *ph, uint64_t id,
                       uint32_t status, const void *data, uint32_t len,
                       zmq_msg_t *part, int held)
{
    if (ph != r->rec.ph) {
        relay_records_flush(r);
        r->rec.ph = ph;
        spits_batch_begin(&r->rec.batch, SPITS_MSG_RESULTS, ph->wire);
    }
    unsigned char *dst = NULL;
    if (part ? relay_records_add_part(r, id, status, part) != 0
             : !(dst = spits_batch_add(&r->rec.batch, id, status, len))) {
        /* Its copy then stays held upstream, and the pool must say so:
         * the relay stops and the JM sends its copies elsewhere. */
        tm_pool_fail(&r->tm->pool, "out of memory queueing results");
    } else if (dst && len) {
        memcpy(dst, data, len);
    }
    r->rec.done += held != 0;
}
