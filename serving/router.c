/*
 * router.c - a hop's ROUTER socket: sends and monitor (see router.h).
 */
#include <errno.h>
#include <stdint.h>

#include <zmq.h>

#include "log.h"
#include "router.h"
#include "zmqutil.h"

int router_send(void *sock, const void *rid, size_t ridlen, const void *buf,
                size_t len, int more)
{
    if (zmq_send(sock, rid, ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        spits_zmq_send_more(sock, buf, len, ZMQ_DONTWAIT | more) < 0)
        return -1;
    return 0;
}

int router_monitor_open(void *ctx, void *sock, const char *ep, void **mon)
{
    if (zmq_socket_monitor(sock, ep, ZMQ_EVENT_DISCONNECTED |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0 ||
        !(*mon = zmq_socket(ctx, ZMQ_PAIR)) ||
        /* No limit: libzmq's I/O thread blocks on a full monitor pipe, and
         * once the hop stops reading (at the end, when every TM
         * disconnects at once) that would deadlock the socket's close. */
        zmq_setsockopt(*mon, ZMQ_RCVHWM, &(int){0}, sizeof(int)) != 0 ||
        zmq_connect(*mon, ep) != 0)
        return -1;
    zmq_setsockopt(*mon, ZMQ_LINGER, &(int){0}, sizeof(int));
    return 0;
}

void router_monitor_close(void *sock, void **mon)
{
    if (sock)
        zmq_socket_monitor(sock, NULL, 0);
    if (*mon)
        zmq_close(*mon);
    *mon = NULL;
}

size_t router_monitor_read(void *mon, conngen_t *gen, spits_zap_t *zap, int64_t now)
{
    uint16_t event;
    uint32_t fd;
    size_t closed = 0;
    while (spits_zmq_monitor_next(mon, &event, &fd)) {
        if (event == ZMQ_EVENT_DISCONNECTED) {
            closed++;
            /* (out of memory: no TM's fd is trusted from now on) */
            conngen_closed(gen, fd <= INT32_MAX ? (int)fd : -1);
        } else if (zap) {           /* no CURVE, or garbage */
            spits_zap_handshake_failed(zap, now);
        } else {
            spits_debug("a connection failed its handshake (event %u)", event);
        }
    }
    return closed;
}

int64_t router_probe(const liveness_t *l, void *gen)
{
    return conngen_same(gen, l->fd, l->fd_gen) ? spits_tcp_quiet_ms(l->fd) : -1;
}
