/*
 * committer.h - the commit queue (dispatcher -> committer) and the committer loop
 * (committer.c); the received messages results are committed from.
 */
#ifndef SPITS_JM_COMMITTER_H
#define SPITS_JM_COMMITTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zmq.h>

#include "jm.h"
#include "parts.h"


/* One received message, its first frame and its parts (wire.h: large
 * results). RESULTS records are committed in place, so it lives while
 * any of them waits: the dispatcher holds one reference while it reads
 * the message, and each queued result holds one more. The last
 * jm_rx_release frees it, on whichever thread that is. */
typedef struct {
    zmq_msg_t msg;
    spits_parts_t parts;
    atomic_size_t refs;
} jm_rx_t;

/* committer.c: an empty message holding the caller's one reference. */
jm_rx_t *jm_rx_new(void);
void jm_rx_hold(jm_rx_t *rx, size_t n);
/* Drops n references (rx may be NULL); the last one frees it. */
void jm_rx_release(jm_rx_t *rx, size_t n);

typedef struct {
    uint64_t id;
    uint64_t hash;            /* the task's hash, for the journal */
    const unsigned char *data;
    uint32_t len;
    uint32_t status;          /* SPITS_ST_OK, or how a poison task failed */
    jm_rx_t *rx;              /* the message data points into, or NULL */
    unsigned char *owned;     /* or data's own allocation (adopted result);
                                 a poison task's: the failure's details
                                 (jm_failure_t, failure.h), or NULL */
    /* --joblog only (joblog.h): ms from its epoch to the copy's sending,
     * then to the result; the TM's host number; the task's bytes */
    uint32_t log_start, log_run, log_host, log_in;
} jm_commit_t;

/* dispatcher -> committer. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    jm_commit_t *items;
    size_t n, cap;
    int abort;                /* dispatcher: the job is being stopped */
    int gen_done;             /* generator: set with gen_total at its end */
    uint64_t gen_total;
    int ck_due;               /* generator: a generation checkpoint is worth
                                 journaling even with no result to sync */
    uint64_t ck_count;        /* generator: the latest checkpoint, for the
                                 committer to journal: ids made by a flush
                                 (0: none yet)... */
    uint64_t ck_hash;         /* ...and their running hash (journal.h) */
    uint64_t pushed;          /* dispatcher: resolutions queued this phase;
                                 less genq.resolved, those not committed yet */
    atomic_int syncing;       /* committer: 1 while it writes and syncs the
                                 journal (the dispatcher reads it per tick) */
} jm_commitq_t;

void jm_commitq_init(jm_commitq_t *q);
void jm_commitq_destroy(jm_commitq_t *q);
/* dispatcher side: publish a batch of resolutions; -1 when out of memory
 * (nothing queued: the caller still owns the items) */
int jm_commitq_push(jm_commitq_t *q, const jm_commit_t *items, size_t n);
/* The same for the n resolutions of *items, a malloc'd array with room
 * for cap: when the queue is empty and its own array has room for cap,
 * the arrays are swapped, not copied, and *items is then the queue's old
 * array for the caller to refill. */
int jm_commitq_hand(jm_commitq_t *q, jm_commit_t **items, size_t n, size_t cap);
/* Frees what a resolution owns: its reference to a message, or its bytes. */
void jm_commit_release(jm_commit_t *c);
/* generator side: no more tasks, total generated (its last checkpoint
 * is then due too) */
void jm_commitq_gen_done(jm_commitq_t *q, uint64_t total);
/* generator side: the checkpoint (count ids made, their running hash),
 * journaled with the next sync; due: now, results or not */
void jm_commitq_checkpoint(jm_commitq_t *q, uint64_t count, uint64_t hash,
                           int due);
/* main thread: commit until every generated task is resolved */
void jm_committer_run(jm_t *jm, jm_phase_t *p);
/* main thread, before the generator starts: commit a resumed phase's
 * journaled results again, in their original order */
int jm_committer_replay(jm_t *jm, jm_phase_t *p, const spits_jr_phase_t *rp);

#endif
