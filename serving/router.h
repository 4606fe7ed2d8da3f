/*
 * router.h - a hop's ROUTER socket towards the TMs below it: sending to
 * one by routing id, and the socket's monitor.
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

#include "conngen.h"
#include "liveness.h"
#include "zap.h"

/* Sends one message to routing id rid: its first frame (more:
 * ZMQ_SNDMORE, its parts follow), without waiting. 0, or -1 with errno
 * (EHOSTUNREACH: the peer's connection is gone; EAGAIN: its pipe is
 * full). */
int router_send(void *sock, const void *rid, size_t ridlen, const void *buf,
                size_t len, int more);
/* Starts sock's monitor at inproc endpoint ep (disconnects and failed
 * handshakes) and connects *mon to it. 0, or -1 with errno. */
int router_monitor_open(void *ctx, void *sock, const char *ep, void **mon);
/* Stops it (before sock closes, while its reader still exists). */
void router_monitor_close(void *sock, void **mon);
/* Reads what the monitor said: each disconnect starts a new generation
 * of its fd in gen; a failed handshake is zap's to count (NULL: none).
 * Returns how many connections closed. */
size_t router_monitor_read(void *mon, conngen_t *gen, spits_zap_t *zap,
                           int64_t now);
/* liveness_probe_fn over a conngen_t (arg): how long l's connection has
 * been quiet, while its fd is still that connection. */
int64_t router_probe(const liveness_t *l, void *gen);

#endif
