/*
 * behind.h - a relay's STATS "behind": the TMs behind it, as a relay
 * writes it (taskmanager/relay_peers.c) and the JM reads it
 * (jobmanager/members.c, then report.json and STATUS), written once.
 *
 *   {"alive":  its live TMs (0..2^40),
 *    "joins", "leaves", "losses": its counts (>= 0),
 *    "tms": [{"host", "pid" (0..2^40), "workers" (0..SPITS_WORKERS_MAX),
 *             "runs" (>= 0), "relay": true (a relay behind it; absent:
 *             a TM), "worker_res" (a planned TM's: wire.h)}...]}
 *
 * A relay lists SPITS_BEHIND_LISTED of its live TMs at most, with their
 * worker_res while those total SPITS_BEHIND_RES_BYTES, so a STATS stays
 * small at any number of TMs; the counts say the rest.
 */
#ifndef SPITS_BEHIND_H
#define SPITS_BEHIND_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SPITS_BEHIND_LISTED 64            /* TMs listed, at most */
#define SPITS_BEHIND_RES_BYTES (32u << 10) /* their worker_res, at most */
#define SPITS_BEHIND_HOST 128             /* a host as the reader keeps it */

/* One TM, as the relay lists it. */
typedef struct {
    const char *host;
    long pid;
    int workers;
    uint64_t runs;
    int relay;                   /* a relay itself */
    json_t *worker_res;          /* a planned TM's (checked), or NULL */
    size_t worker_res_bytes;     /* ...its size as compact JSON text */
} spits_behind_tm_t;

/* A new "behind" of these counts and no TM yet (NULL: no memory). */
json_t *spits_behind_new(uint64_t alive, uint64_t joins, uint64_t leaves, uint64_t losses);
/* Lists t in behind while it has room, with its worker_res while
 * *res_bytes (those listed so far) stays within SPITS_BEHIND_RES_BYTES.
 * Returns 1 if listed, else 0. */
int spits_behind_add(json_t *behind, const spits_behind_tm_t *t, size_t *res_bytes);
/* v, a peer's "behind" (NULL: absent), checked and rebuilt from the
 * fields above only: hosts escaped (escape.h) and cut to
 * SPITS_BEHIND_HOST bytes, the list cut at SPITS_BEHIND_LISTED and a
 * "truncated" flag added, so a peer sizes none of the reader's memory.
 * 0 with *out (a new reference; NULL when v is NULL), or -1 with *why:
 * anything out of range refuses the whole of it. */
int spits_behind_parse(const json_t *v, json_t **out, const char **why);

#ifdef SPITS_SELFTEST
int spits_behind_selftest(void);
#endif

#endif
