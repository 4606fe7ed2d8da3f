/*
 * loglimit.h - how often a hop may log the same kind of event.
 *
 * Part of serving/ (shared by the JM and a relay). Two rules:
 * - loglimit_allow: one line per event while events are few, a count
 *   when they are many (TM joins, losses, leaves at 10,000 TMs). Each
 *   kind of event may log LOGLIMIT_LINES lines per LOGLIMIT_MS; past
 *   that its events are counted, and once the interval is over one line
 *   says how many went unlogged. A small job logs every event.
 * - loglimit_every: a line at most every so often (malformed messages,
 *   records of copies never sent, a busy connection): a hostile or
 *   broken peer must not flood the log; the caller's line carries the
 *   count so far.
 * The JM's dispatcher (dispatch.c, members.c, tmio.c) and a relay
 * (relay.c, relay_peers.c) keep their own counters; now
 * is passed in.
 */
#ifndef SPITS_SERVING_LOGLIMIT_H
#define SPITS_SERVING_LOGLIMIT_H

#include <stdint.h>

#define LOGLIMIT_LINES 20
#define LOGLIMIT_MS 10000

typedef struct {
    const char *what;        /* "TM joins", for the summary line */
    int64_t since;           /* the interval's start, ms */
    uint32_t logged;         /* lines in this interval */
    uint64_t quiet;          /* events not logged in it */
} loglimit_t;

/* 1 if an event at now_ms may be logged on its own line. */
int loglimit_allow(loglimit_t *l, int64_t now_ms);
/* Says, once the interval is over (or now, with force: the job ends),
 * how many events went unlogged. */
void loglimit_flush(loglimit_t *l, int64_t now_ms, int force);
/* 1 (and *logged_at = now_ms) if nothing was logged yet (*logged_at 0)
 * or the last line is every_ms old. */
int loglimit_every(int64_t *logged_at, int64_t now_ms, int64_t every_ms);

#endif
