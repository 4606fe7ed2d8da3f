/*
 * router.c - a hop's ROUTER socket: sends and monitor (see router.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "log.h"
#include "router.h"
#include "util.h"
#include "wire.h"
#include "zmqutil.h"

static void *router_new(void *ctx, long long max_task, char *err, size_t errlen)
{
    int one = 1, linger = 1000, hwm = 100000;
    /* Thousands of TMs may connect at once (a job array starting): with
     * libzmq's 100, the rest of their SYNs are dropped and each waits out
     * its reconnect back-off. The kernel caps it at net.core.somaxconn. */
    int backlog = 4096;
    /* (max_task not known yet, 0: no bound until it is) */
    int64_t maxmsg = max_task > 0 ? ROUTER_MAX_MSG(max_task) : -1;
    const struct { int opt; const void *val; size_t len; const char *name; } opts[] = {
        {ZMQ_ROUTER_MANDATORY, &one, sizeof one, "ZMQ_ROUTER_MANDATORY"},
        {ZMQ_ROUTER_HANDOVER, &one, sizeof one, "ZMQ_ROUTER_HANDOVER"},
        {ZMQ_LINGER, &linger, sizeof linger, "ZMQ_LINGER"},
        {ZMQ_SNDHWM, &hwm, sizeof hwm, "ZMQ_SNDHWM"},
        {ZMQ_RCVHWM, &hwm, sizeof hwm, "ZMQ_RCVHWM"},
        {ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg, "ZMQ_MAXMSGSIZE"},
        {ZMQ_BACKLOG, &backlog, sizeof backlog, "ZMQ_BACKLOG"},
    };
    void *sock = zmq_socket(ctx, ZMQ_ROUTER);
    if (!sock) {
        snprintf(err, errlen, "cannot make a ZeroMQ socket: %s", zmq_strerror(errno));
        return NULL;
    }
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (zmq_setsockopt(sock, opts[i].opt, opts[i].val, opts[i].len) != 0) {
            snprintf(err, errlen, "cannot set %s on the socket: %s",
                     opts[i].name, zmq_strerror(errno));
            zmq_close(sock);
            return NULL;
        }
    return sock;
}

void router_max_msg(void *sock, long long max_task)
{
    int64_t maxmsg = ROUTER_MAX_MSG(max_task);
    zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
}

static int router_curve(void *ctx, void *sock, const char *client_public,
                        const char *server_secret, spits_zap_t **zap, char *err,
                        size_t errlen)
{
    int server = 1;
    /* The ZAP handler must be bound before any handshake can start. */
    if (!(*zap = spits_zap_new(ctx, client_public, err, errlen)))
        return -1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &server, sizeof server) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, server_secret,
                       strlen(server_secret) + 1) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "spits", 5) != 0) {
        snprintf(err, errlen, "cannot set up CurveZMQ: %s", zmq_strerror(errno));
        return -1;
    }
    return 0;
}

int router_send(void *sock, const void *rid, size_t ridlen, const void *buf,
                size_t len, int more)
{
    if (zmq_send(sock, rid, ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        spits_zmq_send_more(sock, buf, len, ZMQ_DONTWAIT | more) < 0)
        return -1;
    return 0;
}

int router_send_buf(void *sock, const void *rid, size_t ridlen, spits_buf_t *b, int more)
{
    if (zmq_send(sock, rid, ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        spits_zmq_send_buf(sock, b, ZMQ_DONTWAIT | more) < 0)
        return -1;
    return 0;
}

int router_send_msg(void *sock, zmq_msg_t *m, int more)
{
    return spits_zmq_msg_send_more(m, sock, ZMQ_DONTWAIT | more) < 0 ? -1 : 0;
}

static int router_monitor_open(void *ctx, void *sock, const char *ep, void **mon)
{
    if (spits_zmq_monitor(sock, ep, ZMQ_EVENT_DISCONNECTED |
                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0 ||
        !(*mon = zmq_socket(ctx, ZMQ_PAIR)) ||
        /* No limit: libzmq's I/O thread blocks on a full monitor pipe, and
         * once the hop stops reading (at the end, when every TM
         * disconnects at once) that would deadlock the socket's close. */
        zmq_setsockopt(*mon, ZMQ_RCVHWM, &(int){0}, sizeof(int)) != 0 ||
        spits_zmq_connect(*mon, ep) != 0)
        return -1;
    zmq_setsockopt(*mon, ZMQ_LINGER, &(int){0}, sizeof(int));
    return 0;
}

static void router_monitor_close(void *sock, void **mon)
{
    if (sock)
        zmq_socket_monitor(sock, NULL, 0);
    if (*mon)
        zmq_close(*mon);
    *mon = NULL;
}

int router_listen(router_listen_t *l, void *ctx, const char *bind, long long max_task,
                  const char *client_public, const char *server_secret,
                  const char *mon_ep, char *err, size_t errlen)
{
    char bound[512];
    size_t blen = sizeof bound;
    memset(l, 0, sizeof *l);
    if (!(l->sock = router_new(ctx, max_task, err, errlen)))
        return -1;
    if (router_monitor_open(ctx, l->sock, mon_ep, &l->mon) != 0) {
        snprintf(err, errlen, "cannot monitor the socket: %s", zmq_strerror(errno));
    } else if (!client_public ||
               router_curve(ctx, l->sock, client_public, server_secret, &l->zap, err,
                            errlen) == 0) {
        if (spits_zmq_bind(l->sock, bind) != 0) {
            snprintf(err, errlen, "cannot bind %s: %s", bind, zmq_strerror(errno));
        } else if (zmq_getsockopt(l->sock, ZMQ_LAST_ENDPOINT, bound, &blen) != 0) {
            snprintf(err, errlen, "cannot read the bound endpoint: %s", zmq_strerror(errno));
        } else {
            spits_zmq_reachable(bound, l->endpoint, sizeof l->endpoint);
            return 0;
        }
    }
    router_listen_close(l);
    return -1;
}

void router_listen_close(router_listen_t *l)
{
    router_monitor_close(l->sock, &l->mon);
    spits_zap_destroy(&l->zap);
    if (l->sock)
        zmq_close(l->sock);
    l->sock = NULL;
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

static void router_send_end(void *sock, const void *rid, size_t ridlen,
                            uint32_t phase)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, SPITS_MSG_END, phase);
    router_send(sock, rid, ridlen, hdr, sizeof hdr, 0);
}

void router_end(void *sock, uint32_t phase, const router_peers_t *peers,
                int64_t wait_ms)
{
    size_t waiting = 0, ridlen;
    int64_t deadline = spits_now_ms() + wait_ms;

    for (size_t k = 0; k < peers->n; k++) {
        const void *rid = peers->rid(peers->arg, k, &ridlen);
        if (rid) {
            router_send_end(sock, rid, ridlen, phase);
            waiting++;
        }
    }
    while (waiting > 0) {
        int64_t left = deadline - spits_now_ms();
        zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
        if (left <= 0 || zmq_poll(&it, 1, (long)left) <= 0)
            break;
        zmq_msg_t rid, body;
        spits_hdr_t h;
        const char *why;
        int got_body = 0;
        zmq_msg_init(&rid);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&rid, sock, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&rid) &&
            (got_body = zmq_msg_recv(&body, sock, ZMQ_DONTWAIT) >= 0)) {
            int ok = spits_wire_parse(zmq_msg_data(&body), zmq_msg_size(&body), &h,
                                      &why) == 0;
            int bye = ok && h.type == SPITS_MSG_BYE;
            if (ok && h.type == SPITS_MSG_STATS && peers->stats)
                peers->stats(peers->arg, zmq_msg_data(&rid), zmq_msg_size(&rid), &body);
            else if (bye && peers->bye(peers->arg, zmq_msg_data(&rid), zmq_msg_size(&rid)))
                waiting--;
            else if (!bye)
                router_send_end(sock, zmq_msg_data(&rid), zmq_msg_size(&rid), phase);
        }
        /* (the rest of a message longer than ours; never the next one) */
        if (got_body ? zmq_msg_more(&body) : zmq_msg_more(&rid))
            spits_zmq_drop_frames(sock);
        zmq_msg_close(&rid);
        zmq_msg_close(&body);
    }
}

int router_rest(void *sock, const spits_hdr_t *h, zmq_msg_t *first, spits_parts_t *parts,
                const char **why)
{
    if (h)
        return spits_parts_recv(parts, sock, h, first, SPITS_MSG_RESULTS, why);
    if (zmq_msg_more(first))
        spits_zmq_drop_frames(sock);
    return 0;
}

int router_pending(void *sock)
{
    int events = 0;
    size_t len = sizeof events;
    return zmq_getsockopt(sock, ZMQ_EVENTS, &events, &len) == 0 && (events & ZMQ_POLLIN);
}

int router_recv(void *sock, zmq_msg_t *frame, int *more)
{
    if (zmq_msg_recv(frame, sock, ZMQ_DONTWAIT) < 0)
        return -1;
    *more = zmq_msg_more(frame);
    return 0;
}

router_io_t router_io(void *sock)
{
    return (router_io_t){sock, router_send, router_rest, router_pending, router_recv,
                         router_send_buf, router_send_msg};
}

int64_t router_probe(const liveness_t *l, void *gen)
{
    return conngen_same(gen, l->fd, l->fd_gen) ? spits_tcp_quiet_ms(l->fd) : -1;
}
