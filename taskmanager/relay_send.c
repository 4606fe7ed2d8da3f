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

int relay_send_buf(tm_relay_t *r, rl_tm_t *t, const void *buf, size_t len,
                   int more)
{
    return server_send(r->srv, &t->sv, buf, len, more);
}

/* (server_hop_t.reply) */
void relay_send_reply(void *arg, const void *rid, size_t ridlen, int type)
{
    tm_relay_t *r = arg;
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, r->job.phase);
    router_send(r->sock.l.sock, rid, ridlen, hdr, sizeof hdr, 0);
}

/* The job's WELCOME (with t's attach) or PHASE, as upstream sent it. */
void relay_send_job(tm_relay_t *r, rl_tm_t *t, int type)
{
    spits_buf_t buf = {0};
    json_t *body = json_copy(r->job.body);
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "attach", json_integer(t->sv.proc.attach));
    /* Who answers: a TM says "(relay)" by this, whatever option led it
     * here. */
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "relay", json_true());
    /* The relay takes its TMs' large results as parts (but under
     * ThreadSanitizer: spits_parts_min), whatever upstream takes (results.c sends them inline
     * to an upstream that takes none); said to each with its routing id
     * (wire.h). */
    if (body && type == SPITS_MSG_WELCOME && r->down.part_min != UINT64_MAX)
        json_object_set_new(body, "result_parts",
                            json_stringn((const char *)t->sv.peer.rid, t->sv.peer.ridlen));
    if (body && spits_wire_encode_json(&buf, type, r->job.phase, body) == 0)
        relay_send_buf(r, t, buf.data, buf.len, 0);
    else
        spits_error("relay: out of memory encoding a %s message",
                    spits_wire_type_name(type));
    json_decref(body);
    spits_buf_free(&buf);
}

