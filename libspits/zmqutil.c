/*
 * zmqutil.c - small helpers over libzmq (see zmqutil.h).
 */
#include <string.h>
#include <zmq.h>

#include "zmqutil.h"

void spits_zmq_drop_frames(void *sock)
{
    zmq_msg_t f;
    int more = 1;
    zmq_msg_init(&f);
    while (more && zmq_msg_recv(&f, sock, ZMQ_DONTWAIT) >= 0)
        more = zmq_msg_more(&f);
    zmq_msg_close(&f);
}

int spits_zmq_monitor_next(void *mon, uint16_t *event)
{
    zmq_msg_t ev;
    int got = 0;
    zmq_msg_init(&ev);
    /* An event is a frame starting with the 16-bit event number, then a
     * frame with the endpoint. */
    while (!got && zmq_msg_recv(&ev, mon, ZMQ_DONTWAIT) >= 0) {
        got = zmq_msg_size(&ev) >= 2;
        if (got)
            memcpy(event, zmq_msg_data(&ev), 2);
        if (zmq_msg_more(&ev))
            spits_zmq_drop_frames(mon);
    }
    zmq_msg_close(&ev);
    return got;
}
