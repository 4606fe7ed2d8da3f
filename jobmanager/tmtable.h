/*
 * tmtable.h - the JM's registry of Task Managers, keyed by routing id.
 *
 * Every TM that ever said HELLO keeps its entry (and its slot number) for
 * the job's life, alive or not: tasks name the TMs running them by slot,
 * and the report lists per-TM totals. Owned by the dispatcher thread.
 */
#ifndef SPITS_TMTABLE_H
#define SPITS_TMTABLE_H

#include <stddef.h>
#include <stdint.h>

#define JM_RID_MAX 64

typedef struct {
    unsigned char rid[JM_RID_MAX];
    size_t ridlen;
    int slot;
    int alive;
    int stalled;             /* its pipe was full: wait until it speaks */
    int draining;            /* said DRAIN: it gets no more tasks */
    int lost;                /* declared lost and not back (members.c) */
    uint32_t reattaches;     /* its HELLOs after its first */
    long attach;             /* the highest "attach" (outage number) of
                                its HELLOs welcomed (members.c) */
    char host[128];
    long pid;
    int workers;
    int slots;               /* tasks it may hold: workers + prefetch, grown
                                while it runs dry (dispatch.c) */
    int slots_asked;         /* what its HELLO said */
    int outstanding;         /* tasks sent minus records returned */
    int64_t last_heard, last_sent;  /* monotonic ms */
    int fd;                  /* the connection its last message came over:
                                how long it has brought no bytes tells a
                                slow transfer from a dead TM (dispatch.c) */
    double joined;           /* wall clock */
    uint64_t sent, done, failed;
    uint64_t sent_at_hello;  /* sent as of its last HELLO */
    double busy_s;           /* its workers' time on tasks, from STATS */
    uint64_t runs;           /* task runs, from STATS */
    uint64_t scan_version;   /* ring version of its last fruitless resend scan */
    int64_t scan_until;      /* ...which holds until then (scheduler's ms) */
    int64_t settle_until;    /* re-attached with results: serve it only
                                once they are in (or by this time) */
    int64_t settle_records;  /* results it said it holds, not yet in */
} jm_tm_t;

typedef struct jm_tmtab jm_tmtab_t;

jm_tmtab_t *jm_tmtab_new(void);
void jm_tmtab_destroy(jm_tmtab_t **tab);
jm_tm_t *jm_tmtab_find(const jm_tmtab_t *tab, const void *rid, size_t len);
/* Adds a TM (rid must not be present). NULL: no memory or rid too long. */
jm_tm_t *jm_tmtab_add(jm_tmtab_t *tab, const void *rid, size_t len);
size_t jm_tmtab_count(const jm_tmtab_t *tab);
jm_tm_t *jm_tmtab_at(const jm_tmtab_t *tab, size_t slot);

#endif
