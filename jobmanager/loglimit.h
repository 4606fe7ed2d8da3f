/*
 * loglimit.h - one line per event while events are few, a count when
 * they are many: the JM's "TM joined/lost/left" lines at 10,000 TMs.
 *
 * Each kind of event may log JM_LOGLIMIT_LINES lines per
 * JM_LOGLIMIT_MS; past that its events are counted, and once the
 * interval is over one line says how many went unlogged. A small job
 * logs every event, as before.
 */
#ifndef SPITS_JM_LOGLIMIT_H
#define SPITS_JM_LOGLIMIT_H

#include <stdint.h>

#define JM_LOGLIMIT_LINES 20
#define JM_LOGLIMIT_MS 10000

typedef struct {
    const char *what;        /* "TM joins", for the summary line */
    int64_t since;           /* the interval's start, ms */
    uint32_t logged;         /* lines in this interval */
    uint64_t quiet;          /* events not logged in it */
} jm_loglimit_t;

/* 1 if an event at now_ms may be logged on its own line. */
int jm_loglimit_allow(jm_loglimit_t *l, int64_t now_ms);
/* Says, once the interval is over (or now, with force: the job ends),
 * how many events went unlogged. */
void jm_loglimit_flush(jm_loglimit_t *l, int64_t now_ms, int force);

#endif
