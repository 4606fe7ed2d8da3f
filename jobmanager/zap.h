/*
 * zap.h - who may connect to the JM: the ZAP handler (RFC 27) that admits
 * only the job's client key, and the log of who was refused.
 *
 * With CURVE on, libzmq asks the ZAP handler about every peer that
 * completes the CurveZMQ handshake; a peer that fails the handshake
 * itself (no CURVE, wrong server key, garbage) never gets that far and is
 * reported through the socket monitor instead (jm_zap_handshake_failed).
 * Refusals are logged by address once, and then as counts at most every
 * 10 s, so no peer can flood the log. Owned by the dispatcher thread,
 * which polls jm_zap_socket and calls jm_zap_handle when it is readable.
 */
#ifndef SPITS_JM_ZAP_H
#define SPITS_JM_ZAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct jm_zap jm_zap_t;

/* Binds the ZAP endpoint in zctx (before any socket of zctx may start a
 * handshake) for the client key client_public (Z85). NULL, with err. */
jm_zap_t *jm_zap_new(void *zctx, const char *client_public, char *err,
                     size_t errlen);
void jm_zap_destroy(jm_zap_t **z);
void *jm_zap_socket(const jm_zap_t *z);
/* Answers the ZAP requests waiting; now: monotonic ms, for the log. */
void jm_zap_handle(jm_zap_t *z, int64_t now);
/* The socket monitor saw a handshake fail. */
void jm_zap_handshake_failed(jm_zap_t *z, int64_t now);

#endif
