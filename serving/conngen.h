/*
 * conngen.h - which connection a file descriptor number stands for now.
 *
 * Part of serving/, what the JM and a relay (spits-tm --serve) share to
 * serve the TMs below them. Each hop keeps, for each TM, the descriptor
 * of the TCP connection its last message came over (libzmq's
 * ZMQ_SRCFD), to ask the kernel whether that connection still brings
 * bytes (liveness.h: a TM sending a large message is not silent).
 * libzmq closes connections on its own I/O threads, and the number is
 * then reused by the next connection it accepts, perhaps another TM's.
 * The ROUTER socket's monitor reports each close (DISCONNECTED, with the
 * descriptor; router.c reads it): each one starts a new generation of
 * that number. A TM records the generation with the descriptor; a probe
 * is only made while the generation is still the same. (libzmq closes a
 * connection it ends itself - a handover to a TM's new connection -
 * without an event; that TM's next message, over the new connection,
 * records the new fd.)
 *
 * Owned by the serving thread (the JM's dispatcher, a relay's main
 * thread); not thread-safe. O(1) per message.
 */
#ifndef SPITS_SERVING_CONNGEN_H
#define SPITS_SERVING_CONNGEN_H

#include <stdint.h>

typedef struct conngen conngen_t;

conngen_t *conngen_new(void);
void conngen_destroy(conngen_t **g);
/* The current generation of fd (0 for one never closed, or fd < 0). */
uint32_t conngen_of(const conngen_t *g, int fd);
/* fd was closed: what was recorded of it is stale. 0, or -1 when out of
 * memory (then every recorded fd counts as stale: conngen_same says
 * no until the table could grow). */
int conngen_closed(conngen_t *g, int fd);
/* 1 if fd, recorded at generation gen, is still that connection. */
int conngen_same(const conngen_t *g, int fd, uint32_t gen);

#ifdef SPITS_SELFTEST
int conngen_selftest(void);
#endif

#endif
