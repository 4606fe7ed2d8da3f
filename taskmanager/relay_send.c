/*
 * relay_send.c - a relay's messages down to the TMs behind it (see
 * relay_int.h): a buffer to one TM on the relay's ROUTER socket (which
 * notes when we last sent to it, for its heartbeats), an empty message,
 * WHO to a peer we do not know, the job's WELCOME or PHASE as upstream
 * sent it, and CANCELs of copies, one message per TM.
 *
 * The lowest of the relay's files: it uses the socket (serving/router.h)
 * and nothing of the other relay files.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "cancels.h"
#include "log.h"
#include "relay_int.h"
#include "router.h"

int relay_send_buf(tm_relay_t *r, rl_tm_t *t, const void *buf, size_t len,
                   int more)
{
    if (router_send(r->sock.router, t->peer.rid, t->peer.ridlen, buf, len, more) != 0) {
        if (errno == EAGAIN)
            t->status.stalled = 1;
        return -1;
    }
    t->status.live.last_sent = r->tm->now;
    return 0;
}

int relay_send_empty(tm_relay_t *r, rl_tm_t *t, int type)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hdr, type, r->job.phase);
    return relay_send_buf(r, t, hdr, sizeof hdr, 0);
}

/* A peer we do not know (we lost it, or restarted): say HELLO. */
void relay_send_who(tm_relay_t *r, const void *rid, size_t ridlen)
{
    unsigned char who[SPITS_HDR_SIZE];
    spits_wire_encode_empty(who, SPITS_MSG_WHO, r->job.phase);
    router_send(r->sock.router, rid, ridlen, who, sizeof who, 0);
}

/* The job's WELCOME (with t's attach) or PHASE, as upstream sent it. */
void relay_send_job(tm_relay_t *r, rl_tm_t *t, int type)
{
    spits_buf_t buf = {0};
    json_t *body = json_copy(r->job.body);
    if (body && type == SPITS_MSG_WELCOME)
        json_object_set_new(body, "attach", json_integer(t->status.attach));
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
                            json_stringn((const char *)t->peer.rid, t->peer.ridlen));
    if (body && spits_wire_encode_json(&buf, type, r->job.phase, body) == 0)
        relay_send_buf(r, t, buf.data, buf.len, 0);
    else
        spits_error("relay: out of memory encoding a %s message",
                    spits_wire_type_name(type));
    json_decref(body);
    spits_buf_free(&buf);
}


/* cancels.h's sink: the TMs behind us know a task by upstream's id. */
static int relay_send_cancel(void *arg, int slot, const void *buf, size_t len)
{
    tm_relay_t *r = arg;
    rl_tm_t *t = peertab_at(r->peers.tab, (size_t)slot);
    return t && t->peer.alive ? relay_send_buf(r, t, buf, len, 0) : -1;
}

size_t relay_send_cancels(tm_relay_t *r, uint32_t wire, sched_cancel_t *c, size_t m)
{
    cancels_sink_t sink = {relay_send_cancel, r, 1};
    return cancels_send(c, m, wire, &r->down.out, &sink);
}
