/*
 * zmqutil.h - small helpers over libzmq that more than one loop needs:
 * sending a message's later frames, dropping the rest of a multipart
 * message, reading socket monitor events, telling how long a peer's
 * connection has carried no bytes, and the endpoint peers can reach a
 * bound socket at.
 */
#ifndef SPITS_ZMQUTIL_H
#define SPITS_ZMQUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "wire.h"

/* Sends a later frame of a message whose first frame sock took: a socket
 * takes them all (its high-water mark counts messages), but a signal can
 * interrupt the call, which then goes again: the socket must not stay
 * inside the message, or the next one is glued to it. zmq_send's and
 * zmq_msg_send's results (m is empty once sent). */
int spits_zmq_send_more(void *sock, const void *buf, size_t len, int flags);
int spits_zmq_msg_send_more(zmq_msg_t *m, void *sock, int flags);
/* Sends b's bytes as a frame (as spits_zmq_send_more). One of
 * SPITS_ZMQ_MOVE_MIN bytes or more moves into libzmq without a copy
 * (zmq_msg_init_data): b is then left empty, with a buffer of its
 * capacity for the next message (spits_buf_move). A send that fails
 * leaves b as it was. Never under ThreadSanitizer, as parts
 * (spits_parts_min): it cannot see libzmq's hand-off to its I/O thread,
 * and its reports of that thread's reads and free stall it. */
#ifdef __SANITIZE_THREAD__
#define SPITS_ZMQ_MOVE_MIN SIZE_MAX
#else
#define SPITS_ZMQ_MOVE_MIN 4096
#endif
int spits_zmq_send_buf(void *sock, spits_buf_t *b, int flags);
/* zmq_bind, zmq_connect and zmq_socket_monitor, called again while a
 * signal interrupts them (EINTR): libzmq reads its socket's command
 * mailbox first, and a signal there (a terminal resize, a child's exit,
 * a timer) would fail the call though nothing is wrong. Their results. */
int spits_zmq_bind(void *sock, const char *ep);
/* zmq_ctx_term, called again while a signal interrupts it (EINTR: a
 * SIGTERM or SIGCHLD at exit): once interrupted it has stopped the
 * context's threads without joining them, and the process would leave
 * with the context half ended. Its result. */
int spits_zmq_ctx_term(void *ctx);
int spits_zmq_connect(void *sock, const char *ep);
int spits_zmq_monitor(void *sock, const char *ep, int events);
/* Reads and drops the rest of a multipart message. libzmq delivers a
 * message's frames all at once, so this never waits. */
void spits_zmq_drop_frames(void *sock);
/* The next event on a socket monitor (a PAIR connected to what
 * zmq_socket_monitor bound), without waiting: 1 and *event (and, if value
 * is not NULL, the event's value: the connection's descriptor for
 * connection events), or 0 when there is none. The event's other frames
 * are consumed. */
int spits_zmq_monitor_next(void *mon, uint16_t *event, uint32_t *value);
/* The file descriptor of the connection a received message came over
 * (libzmq's ZMQ_SRCFD), or -1 when it has none. */
int spits_zmq_msg_fd(zmq_msg_t *msg);
/* Milliseconds since the TCP connection on fd last received data from its
 * peer, as the kernel counts them (every byte, not whole messages), or -1
 * when fd is no established TCP connection (closed, ipc://, not Linux). */
int64_t spits_tcp_quiet_ms(int fd);
/* The endpoint a socket bound at bound (ZMQ_LAST_ENDPOINT) is reached at
 * from other hosts: a wildcard address (0.0.0.0, [::], or * as the host
 * of a tcp:// endpoint) becomes this host's name; anything else is kept. */
void spits_zmq_reachable(const char *bound, char *out, size_t outlen);
#ifdef SPITS_SELFTEST
/* Self-test: 0, or -1 after printing what failed. */
int spits_zmqutil_selftest(void);
#endif

#endif
