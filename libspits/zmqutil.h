/*
 * zmqutil.h - small helpers over libzmq that more than one loop needs:
 * dropping the rest of a multipart message, and reading socket monitor
 * events.
 */
#ifndef SPITS_ZMQUTIL_H
#define SPITS_ZMQUTIL_H

#include <stdint.h>

/* Reads and drops the rest of a multipart message. libzmq delivers a
 * message's frames all at once, so this never waits. */
void spits_zmq_drop_frames(void *sock);
/* The next event on a socket monitor (a PAIR connected to what
 * zmq_socket_monitor bound), without waiting: 1 and *event, or 0 when
 * there is none. The event's other frames are consumed. */
int spits_zmq_monitor_next(void *mon, uint16_t *event);

#endif
