/*
 * relay_send.c - a relay's messages down to the TMs behind it (see
 * relay_int.h): a buffer to one TM on the relay's ROUTER socket (which
 * notes when we last sent to it, for its heartbeats), an empty message,
 * WHO to a peer we do not know, the job's WELCOME or PHASE as upstream
 * sent it. A message to a known TM goes through the server (serving/
 * server.h), which marks it stalled or gone as the send says.
 *
 * The lowest of the relay's files: it uses the socket (serving/router.h)
 * and nothing of the other relay files.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "log.h"
#include "relay_int.h"
#include "router.h"

/* The server's send (server_hop_t.send). */
int relay_send_hop(void *arg, server_peer_t *p, const void *buf, size_t len, int more)
{
    tm_relay_t *r = arg;
    return router_send(r->sock.l.sock, p->peer.rid, p->peer.ridlen, buf, len, more);
}

/* (server_hop_t.reply) */
void relay_send_reply(void *arg, const void *rid, size_t ridlen, int type)
{
    tm_relay_t *r = arg;
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, r->job.phase);
    router_send(r->sock.l.sock, rid, ridlen, hdr, sizeof hdr, 0);
}
