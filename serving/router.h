/*
 * router.h - a hop's ROUTER socket towards the TMs below it: sending to
 * one by routing id, the rest of a message's frames, and the socket's
 * monitor; router_io gives them to the hop's server (serving/server.h).
 *
 * Part of serving/: the JM's dispatcher (dispatch.c) and a relay
 * (taskmanager/relay.c) each serve their TMs on a ROUTER socket with
 * ROUTER_MANDATORY (a send to a peer whose connection is gone fails with
 * EHOSTUNREACH: how a hop finds a TM gone within a heartbeat) and watch
 * it with a monitor: each closed connection starts a new generation of
 * its descriptor (conngen.h), so that the busy-connection rule
 * (liveness.h) never probes a number libzmq gave to another connection.
 */
#ifndef SPITS_SERVING_ROUTER_H
#define SPITS_SERVING_ROUTER_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "conngen.h"
#include "liveness.h"
#include "parts.h"
#include "zap.h"

/* The largest message a TM may send a hop whose largest task or result
 * is max_task bytes (a batch is cut at a few MiB, plus at most one record
 * that may be that large): libzmq disconnects a peer sending more before
 * the hop sees it. */
#define ROUTER_MAX_MSG(max_task) (2 * (int64_t)(max_task) + (16LL << 20))

/* A hop's listening ROUTER socket, its CURVE handler and its monitor:
 * what the JM and a relay each open once. */
typedef struct {
    void *sock;
    spits_zap_t *zap;            /* NULL: no CURVE (--insecure) */
    void *mon;                   /* its monitor (router_monitor_read) */
    char endpoint[512];          /* where TMs reach it */
} router_listen_t;

/* Opens l in ctx, bound at bind. The socket is set as every hop's:
 * ROUTER_MANDATORY (a send to a vanished TM fails, which is how a lost
 * TM is found), HANDOVER (a TM re-attaching under its routing id takes
 * it over from its dead connection), a listen backlog for thousands of
 * TMs connecting at once, high water marks for large batches, and
 * ROUTER_MAX_MSG(max_task) (no bound while max_task is 0: not known
 * yet). Unless client_public is NULL, it is a CURVE server with
 * server_secret, whose ZAP handler admits only client_public: what the
 * JM and a relay both do, so a TM's key file works for both. Its
 * monitor (disconnects, failed handshakes) is at inproc endpoint
 * mon_ep. 0, or -1 (err says why; l closed). */
int router_listen(router_listen_t *l, void *ctx, const char *bind, long long max_task,
                  const char *client_public, const char *server_secret,
                  const char *mon_ep, char *err, size_t errlen);
/* Closes what router_listen opened (the monitor first, while its reader
 * still exists); l may be all zero. */
void router_listen_close(router_listen_t *l);
/* A TM's largest message follows the job's max_task (for connections
 * made from now on, as libzmq applies it). */
void router_max_msg(void *sock, long long max_task);
/* Sends one message to routing id rid: its first frame (more:
 * ZMQ_SNDMORE, its parts follow), without waiting. 0, or -1 with errno
 * (EHOSTUNREACH: the peer's connection is gone; EAGAIN: its pipe is
 * full). */
int router_send(void *sock, const void *rid, size_t ridlen, const void *buf,
                size_t len, int more);
/* As router_send, b's bytes: a large message moves into libzmq without a
 * copy (spits_zmq_send_buf), leaving b empty. */
int router_send_buf(void *sock, const void *rid, size_t ridlen, spits_buf_t *b, int more);
/* The next frame m of a message router_send* began with more (m is sent
 * and empty, or left to the caller: -1). */
int router_send_msg(void *sock, zmq_msg_t *m, int more);
/* Reads what the monitor said: each disconnect starts a new generation
 * of its fd in gen; a failed handshake is zap's to count (NULL: none).
 * Returns how many connections closed. */
size_t router_monitor_read(void *mon, conngen_t *gen, spits_zap_t *zap,
                           int64_t now);
/* The hop's TMs, for router_end: rid(arg, k) gives the routing id of
 * entry k of n (NULL: no TM alive there); bye(arg, rid, ridlen) says whether a BYE from rid is one
 * router_end still waits for (a TM of the n not heard saying it yet; it
 * notes it), 0 for anyone else. stats (NULL: none) takes the STATS a TM
 * sends before its BYE: its last counts (wire.h). */
typedef struct {
    size_t n;
    const void *(*rid)(void *arg, size_t k, size_t *ridlen);
    int (*bye)(void *arg, const void *rid, size_t ridlen);
    void *arg;
    void (*stats)(void *arg, const void *rid, size_t ridlen, zmq_msg_t *body);
} router_peers_t;

/* The job is over: END (of wire phase phase) to each TM, then, for
 * wait_ms at most, until each has said BYE. A hop that closed at once
 * could take its END with it: a TM's socket (ZMQ_IMMEDIATE) drops what
 * it has not read when the connection ends, and END and the close
 * arrive together over a long link. Anything else meanwhile, from a TM
 * or a straggler, gets END again. */
void router_end(void *sock, uint32_t phase, const router_peers_t *peers,
                int64_t wait_ms);
/* The rest of first's message on sock (server_hop_t.rest): with h (its
 * header), a RESULTS' parts into *parts (spits_parts_recv); with h NULL,
 * dropped. */
int router_rest(void *sock, const spits_hdr_t *h, zmq_msg_t *first, spits_parts_t *parts,
                const char **why);
/* Whether a message waits to be read on sock. */
int router_pending(void *sock);
/* The next frame waiting on sock, into frame (initialised): 0, with
 * *more set when another frame of its message follows, or -1 when none
 * waits. */
int router_recv(void *sock, zmq_msg_t *frame, int *more);

/* The socket side of a hop's server (serving/server.h): what it sends
 * to a routing id, the frames it reads, and whether more wait. Each gets
 * arg. */
typedef struct {
    void *arg;
    /* as router_send */
    int (*send)(void *arg, const void *rid, size_t ridlen, const void *buf, size_t len,
                int more);
    /* as router_rest */
    int (*rest)(void *arg, const spits_hdr_t *h, zmq_msg_t *first, spits_parts_t *parts,
                const char **why);
    /* as router_pending */
    int (*pending)(void *arg);
    /* as router_recv */
    int (*recv)(void *arg, zmq_msg_t *frame, int *more);
    /* as router_send_buf */
    int (*send_buf)(void *arg, const void *rid, size_t ridlen, spits_buf_t *b, int more);
    /* as router_send_msg */
    int (*send_msg)(void *arg, zmq_msg_t *m, int more);
} router_io_t;

/* A ROUTER's: router_send, router_rest, router_pending, router_recv,
 * router_send_buf and router_send_msg on sock. */
router_io_t router_io(void *sock);
/* liveness_probe_fn over a conngen_t (arg): how long l's connection has
 * been quiet, while its fd is still that connection. */
int64_t router_probe(const liveness_t *l, void *gen);

#endif
