/*
 * zap.h - who may connect to a job's ROUTER socket: the ZAP handler (RFC
 * 27) that admits only the job's client key, and the log of who was
 * refused. The JM's ROUTER uses it, and so does a relay's (spits-tm
 * --serve), which admits the same TMs the JM would.
 *
 * With CURVE on, libzmq asks the ZAP handler about every peer that
 * completes the CurveZMQ handshake; a peer that fails the handshake
 * itself (no CURVE, wrong server key, garbage) never gets that far and is
 * reported through the socket monitor instead (spits_zap_handshake_failed).
 * Refusals are logged by address once, and then as counts at most every
 * 10 s, so no peer can flood the log. Owned by the thread that polls the
 * ROUTER (the JM's dispatcher, a relay's loop): it polls spits_zap_socket
 * too and calls spits_zap_handle when it is readable. One per ZeroMQ
 * context: the ZAP endpoint's name is fixed by the spec.
 */
#ifndef SPITS_ZAP_H
#define SPITS_ZAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct spits_zap spits_zap_t;

/* Binds the ZAP endpoint in zctx (before any socket of zctx may start a
 * handshake) for the client key client_public (Z85). NULL, with err. */
spits_zap_t *spits_zap_new(void *zctx, const char *client_public, char *err,
                           size_t errlen);
void spits_zap_destroy(spits_zap_t **z);
void *spits_zap_socket(const spits_zap_t *z);
/* Answers the ZAP requests waiting; now: monotonic ms, for the log. */
void spits_zap_handle(spits_zap_t *z, int64_t now);
/* The socket monitor saw a handshake fail. */
void spits_zap_handshake_failed(spits_zap_t *z, int64_t now);

#endif
