/*
 * constants.h - the numbers every hop serves its TMs by: the JM's
 * dispatcher and a relay alike.
 */
#ifndef SPITS_SERVING_CONSTANTS_H
#define SPITS_SERVING_CONSTANTS_H

/* A TASKS message's soft cap in task bytes (a larger task still goes,
 * alone): one TM's batch must not hold the others' for long. */
#define SERVE_BATCH_BYTES (4u << 20)
/* ...and its cap in copies: the most slots a TM is given, so a batch is
 * one message whatever the TM's room (each message costs the hop as much
 * as hundreds of empty tasks under CURVE). */
#define SERVE_BATCH_TASKS 65536
/* Messages read per poll wake-up before the turn's other work (serving,
 * ticks), so a flood of results never starves the sends. */
#define SERVE_RECV_BURST 256
/* Entries of TMs gone kept, so that a return is a re-attach (its results
 * and runs count once), before the oldest is evicted and its slot reused
 * (peertab.h). A relay's entry holds its "below" list, 1.5 KB, so at
 * most 15 MB at a relay that saw that many TMs leave. */
#define SERVE_KEEP_DEAD 10000
/* A TM whose send found its connection gone: the messages waiting are
 * read first (a drained TM's last BYE), this long at most, before it is
 * lost (server_reap). */
#define SERVE_REAP_WAIT_MS 250
/* How often a hop judges its peers (server_tick): heartbeats to the
 * quiet, the silent lost. */
#define SERVE_TICK_MS 100
/* ...and how often at most while a connection's close is probed: each
 * turn ticks then, so the poll sleeps no longer (server_sleep_ms). */
#define SERVE_PROBE_POLL_MS 50
/* The most a hop waits for its peers' BYEs after the job's END. */
#define SERVE_END_WAIT_MS 2000

#endif
