/*
 * taskbatch.c - a TASKS message, inline and as parts (see taskbatch.h).
 */
#include <string.h>

#include "taskbatch.h"
#include "zmqutil.h"

void taskbatch_send_parts(void *sock, uint64_t part_min, size_t n, long parts,
                          const taskbatch_src_t *src, taskbatch_sent_t *sent)
{
    taskbatch_item_t it;
    sent->parts = sent->failed = 0;
    sent->bytes = 0;
    for (size_t k = 0; k < n && parts > 0; k++) {
        src->item(src->arg, k, &it);
        if (it.len < part_min)
            continue;
        zmq_msg_t m;
        void *hint = src->hold(src->arg, k);
        int made = zmq_msg_init_data(&m, (void *)it.data, it.len, src->part_free,
                                     hint) == 0;
        if (!made) {
            src->part_free((void *)it.data, hint);   /* (libzmq did not take it) */
            /* An empty part keeps the message whole; the socket must not
             * be left inside a message. */
            zmq_msg_init(&m);
            sent->failed++;
        }
        int flags = ZMQ_DONTWAIT | (--parts ? ZMQ_SNDMORE : 0);
        if (spits_zmq_msg_send_more(&m, sock, flags) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        sent->parts += made;
        sent->bytes += made ? it.len : 0;
    }
}
