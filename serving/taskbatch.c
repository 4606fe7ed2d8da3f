/*
 * taskbatch.c - a TASKS message, inline and as parts (see taskbatch.h).
 */
#include "taskbatch.h"

void taskbatch_send_parts(const taskbatch_parts_t *how, uint64_t part_min,
                          sched_task_t *const *tasks, size_t n, long parts, int borrowed,
                          taskbatch_sent_t *sent)
{
    sent->parts = sent->failed = 0;
    sent->bytes = 0;
    for (size_t k = 0; k < n && parts > 0; k++) {
        sched_task_t *t = tasks[k];
        if (t->len < part_min)
            continue;
        zmq_msg_t m;
        void *data = (void *)taskbatch_bytes(t, borrowed);
        void *hint = how->hold(how->arg, t);
        int made = zmq_msg_init_data(&m, data, t->len, how->part_free, hint) == 0;
        if (!made) {
            how->part_free(data, hint);   /* (libzmq did not take it) */
            /* An empty part keeps the message whole; the socket must not
             * be left inside a message. */
            zmq_msg_init(&m);
            sent->failed++;
        }
        if (how->send(how->io, &m, --parts ? ZMQ_SNDMORE : 0) < 0) {
            zmq_msg_close(&m);
            sent->failed += made;
            continue;
        }
        sent->parts += made;
        sent->bytes += made ? t->len : 0;
    }
}
