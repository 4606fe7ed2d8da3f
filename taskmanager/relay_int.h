/*
 * relay_int.h - a relay's state (spits-tm --serve), shared by its two
 * files; each uses only those below it:
 *
 *   relay.c         set-up, the server's hop (serving/server.h, which
 *                   serves, ticks and loses the TMs by the JM's rules),
 *                   its source and sink (serving/copies.h: the copies
 *                   upstream sent), the turn, and the job as upstream
 *                   tells it (WELCOME, PHASE, TASKS, CANCEL, drain)
 *   relay_peers.c   who is behind: joins, loops of relays, and what
 *                   upstream is told of them (peers)
 *
 * All of it is spits-tm's main thread's (tm_private.h).
 */
#ifndef SPITS_TM_RELAY_INT_H
#define SPITS_TM_RELAY_INT_H

#include "conngen.h"
#include "constants.h"
#include "copies.h"
#include "hopchain.h"
#include "loglimit.h"
#include "peertab.h"
#include "router.h"
#include "server.h"
#include "tm_private.h"

/* A TM behind the relay (or a relay), an entry of peers.tab. */
typedef struct {
    server_peer_t sv;            /* the server's; first (peertab.h) */
    hopchain_place_t place;      /* a relay's id and those behind it (id
                                    "": a TM), set as it joins */
    json_t *worker_res;          /* a planned TM's, as its STATS said, passed
                                    up in behind; NULL: none */
    size_t worker_res_bytes;     /* ...its size as JSON text */
} rl_tm_t;

/* relay_peers.c's. */
typedef struct {
    peertab_t *tab;              /* of rl_tm_t */
    int told_workers, told_slots;    /* capacity as the last STATS said
                                        (-1: upstream's is unknown) */
    hopchain_t chain;            /* relays heard, loops */
    hopchain_place_t hello;      /* the place the HELLO being taken said
                                    (accept's, for joined) */
} rl_peers_t;

struct tm_relay {
    tm_t *tm;
    server_t *srv;
    rl_peers_t peers;
    copies_t *copies;
    /* The rest is relay.c's; the others read it. */
    struct {
        router_listen_t l;       /* the TMs' socket (serving/router.h) */
        conngen_t *conngen;      /* ...which connection each fd is now */
        long long max_task;      /* ...its message bound, the job's */
    } sock;
    loglimit_t events;           /* TM joins, leaves, losses, loops */
};

/* relay_peers.c */
int relay_peers_init(rl_peers_t *p);   /* (peertab_destroy frees it) */
/* The server's hop: joins, STATS, drains. */
int relay_peers_hop_accept(void *r, server_peer_t *p, const spits_hello_t *h, void **ctx,
                           const char **why);
void relay_peers_hop_joined(void *r, server_peer_t *p, const server_join_t *j);
void relay_peers_hop_stats(void *r, server_peer_t *p, json_t *body, const spits_stats_t *st,
                           json_t *parsed, int changed, int before);
void relay_peers_hop_drain(void *r, server_peer_t *p);

#endif
