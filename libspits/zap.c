/*
 * zap.c - the ZAP handler of a job's ROUTER (the JM's, a relay's) and its
 * refusal log (see zap.h).
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "log.h"
#include "zap.h"
#include "zmqutil.h"

#define ZAP_EP "inproc://zeromq.zap.01"   /* fixed by the ZAP spec */
#define ZAP_LOGGED_MAX 256                /* addresses logged by name */
#define ZAP_LOG_EVERY_MS 10000

struct spits_zap {
    void *sock;                       /* REP, bound to ZAP_EP */
    unsigned char client_key[32];     /* the only key admitted */
    char (*logged)[64];               /* addresses already logged */
    size_t nlogged;
    uint64_t refused, handshakes_failed;
    int64_t refused_logged_at, handshakes_logged_at;
};

spits_zap_t *spits_zap_new(void *zctx, const char *client_public, char *err,
                           size_t errlen)
{
    spits_zap_t *z = calloc(1, sizeof *z);
    int linger = 0;

    if (!z || !(z->logged = calloc(ZAP_LOGGED_MAX, sizeof *z->logged)) ||
        !zmq_z85_decode(z->client_key, client_public) ||
        !(z->sock = zmq_socket(zctx, ZMQ_REP)) ||
        zmq_setsockopt(z->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        spits_zmq_bind(z->sock, ZAP_EP) != 0) {
        snprintf(err, errlen, "cannot set up the ZAP handler: %s",
                 z ? zmq_strerror(errno) : "out of memory");
        spits_zap_destroy(&z);
        return NULL;
    }
    return z;
}

void spits_zap_destroy(spits_zap_t **zp)
{
    spits_zap_t *z = *zp;
    if (!z)
        return;
    if (z->sock)
        zmq_close(z->sock);
    free(z->logged);
    free(z);
    *zp = NULL;
}

void *spits_zap_socket(const spits_zap_t *z)
{
    return z->sock;
}

/* Logs a refused peer: by address the first time (up to a bound), after
 * that as a count now and then. */
static void log_refusal(spits_zap_t *z, const char *addr, const char *why,
                        int64_t now)
{
    z->refused++;
    for (size_t i = 0; i < z->nlogged; i++)
        if (strcmp(z->logged[i], addr) == 0)
            return;
    if (z->nlogged < ZAP_LOGGED_MAX) {
        snprintf(z->logged[z->nlogged++], sizeof *z->logged, "%s", addr);
        spits_warn("refused a connection from %s: %s (logged once per address)",
                   addr, why);
    } else if (now - z->refused_logged_at >= ZAP_LOG_EVERY_MS) {
        spits_warn("refused %llu connections in all (%s)",
                   (unsigned long long)z->refused, why);
        z->refused_logged_at = now;
    }
}

/* A reply: version, request id, status code, status text, user id,
 * metadata. */
static void reply(spits_zap_t *z, zmq_msg_t *request_id, int ok, const char *why)
{
    const char *text = ok ? "OK" : why;
    if (zmq_send(z->sock, "1.0", 3, ZMQ_SNDMORE) < 0 ||
        zmq_send(z->sock, request_id ? zmq_msg_data(request_id) : "",
                 request_id ? zmq_msg_size(request_id) : 0, ZMQ_SNDMORE) < 0 ||
        zmq_send(z->sock, ok ? "200" : "400", 3, ZMQ_SNDMORE) < 0 ||
        zmq_send(z->sock, text, strlen(text), ZMQ_SNDMORE) < 0 ||
        zmq_send(z->sock, "", 0, ZMQ_SNDMORE) < 0 ||
        zmq_send(z->sock, "", 0, 0) < 0)
        spits_warn("cannot answer a ZAP request: %s", zmq_strerror(errno));
}

/* One request. The socket is a REP: every request read gets a reply, a
 * malformed one included, or the socket would refuse to read the next. A
 * CURVE request has exactly 7 frames: version, request id, domain,
 * address, identity, mechanism, client key. Returns 0 when none waited. */
static int handle_one(spits_zap_t *z, int64_t now)
{
    zmq_msg_t f[7];
    int n = 0, more = 1;

    while (more && n < 7) {
        zmq_msg_init(&f[n]);
        if (zmq_msg_recv(&f[n], z->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&f[n]);
            break;
        }
        more = zmq_msg_more(&f[n]);
        n++;
    }
    if (n == 0)
        return 0;
    if (more)
        spits_zmq_drop_frames(z->sock);
    char addr[64] = "?";
    int ok = 0;
    const char *why = "malformed ZAP request";
    if (n == 7 && !more && zmq_msg_size(&f[5]) == 5 &&
        memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0) {
        size_t alen = zmq_msg_size(&f[3]) < sizeof addr - 1 ? zmq_msg_size(&f[3])
                                                            : sizeof addr - 1;
        memcpy(addr, zmq_msg_data(&f[3]), alen);
        addr[alen] = '\0';
        ok = zmq_msg_size(&f[6]) == 32 &&
             sodium_memcmp(zmq_msg_data(&f[6]), z->client_key, 32) == 0;
        why = "not this job's client key";
    }
    reply(z, n >= 2 ? &f[1] : NULL, ok, why);
    if (!ok)
        log_refusal(z, addr, why, now);
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
    return 1;
}

void spits_zap_handle(spits_zap_t *z, int64_t now)
{
    /* Bounded: a burst of handshakes cannot starve the dispatcher. */
    for (int i = 0; i < 64 && handle_one(z, now); i++)
        ;
}

void spits_zap_handshake_failed(spits_zap_t *z, int64_t now)
{
    z->handshakes_failed++;
    if (z->handshakes_logged_at == 0 ||
        now - z->handshakes_logged_at >= ZAP_LOG_EVERY_MS) {
        /* (a client that timed out, say against a JM that was stopped,
         * fails it too, as it closes mid-handshake) */
        spits_warn("refused a connection that failed the CurveZMQ handshake: "
                   "no or a wrong server key, or a client that gave up "
                   "waiting (%llu so far)",
                   (unsigned long long)z->handshakes_failed);
        z->handshakes_logged_at = now;
    }
}
