/*
 * scheduler.h - the scheduler of every hop that serves Task Managers: which
 * task copies go to which TM below it, and what each record a TM sends
 * back does to its task. The JM's dispatcher (jobmanager/dispatch.c)
 * owns one for the job, and each relay one for the copies the JM sent it
 * (copies.c); it is written once here so that every
 * hop decides copies by the same rules.
 *
 * It is a plain data structure, with no sockets, threads or clock: its
 * owner calls it from its own thread, and sched_selftest drives it
 * directly, against a reference model, through random joins, losses,
 * results, failures and cancels. It knows a task by its sched_task_t and
 * a TM by its sched_peer_t (below), both embedded in its owner's own
 * structs, and hands resolved tasks back through a hook (sched_hooks_t).
 *
 * It owns every task from the hand-over (sched_add_fresh) until the task
 * is resolved (committed or given up): the fresh list (not sent yet), the
 * ring of tasks in flight (libspits/ring.h) and the retry queue (copies
 * that must run again: retryq.h).
 *
 * Pull scheduling with credits. A TM may hold credit.slots copies; the
 * scheduler keeps credit.outstanding, the copies sent to it and not yet
 * answered (serving/credit.h). It is the one owner of the rule that
 * every copy sent comes back as exactly one record (wire.h): sched_sent
 * adds the copies, sched_credit takes back one per record received,
 * sched_joined sets what a (re-)joining TM says it holds, and a lost TM
 * holds nothing.
 *
 * A TM with room gets, in this order:
 *   1. tasks whose every copy was lost (dead TM, failed run, handed back):
 *      the retry queue, preferably not on the TM where the task failed;
 *   2. fresh tasks, in the order they were added (the JM: generation
 *      order);
 *   3. when there are none (no more will come, or the source waits, as
 *      the JM's generator does for window room), a copy of the oldest
 *      late task (lateness.h: out longer than 1.5 times the median time
 *      of the finished tasks, once half of the phase's tasks finished)
 *      that it does not run already and that has fewer than max_copies
 *      copies out. A copy's time starts when it left the hop: a large
 *      task's part may wait in the hop's own send backlog first, and is
 *      not late while it waits its turn (sched_set_backlog). A TM that
 *      stops talking is declared lost by its owner (liveness.h), and its
 *      tasks go to step 1.
 * The first result of a task resolves it; its other copies are noted for
 * cancelling. A failed run counts toward max_attempts; past that the task
 * is a poison task, resolved as failed.
 *
 * A foreign record (wire.h SPITS_REC_FOREIGN: a relay passing on work a
 * TM behind it got elsewhere) answers no copy this hop holds, so it
 * touches none: a result still resolves its task if nothing has (and
 * then every copy out is cancelled, the sender's own too, as for any
 * commit), but it takes no copy from its sender, gives no credit or
 * turnaround, and a failed or handed-back one changes nothing (no attempt
 * counted, nothing requeued): the copy that ran was taken back already,
 * when the hop it came from was lost, and is accounted for where it went
 * next.
 */
#ifndef SPITS_SERVING_SCHED_H
#define SPITS_SERVING_SCHED_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "credit.h"

#define SCHED_MAX_COPIES 8     /* copies of one task out at once, at most */
#define SCHED_TURN_WINDOW 32   /* copies per round-trip estimate (turn_ms) */
/* How often a part waiting in the hop's send backlog may become stuck
 * (the JM's backlog tick, backlog.h): a scan that met one looks again
 * this much later. */
#define SCHED_STUCK_LOOK_MS 100

/* A task. Its owner allocates it (its bytes inline, in data, if it keeps
 * them there) and sets id, len, and hash and cell if it uses them; then
 * sched_task_init; from sched_add_fresh on, the scheduler owns it and
 * hands it back through the release hook once it is resolved. */
typedef struct sched_task {
    struct sched_task *next; /* the owner's list, then the fresh list */
    uint64_t id;             /* added in increasing order */
    uint64_t hash;           /* the owner's (the JM: spits_task_hash of
                                data, when journaling); given back with
                                a commit */
    uint32_t len;            /* its bytes (byte caps, the window) */
    uint8_t copies;          /* copies out on TMs now */
    uint8_t attempts;        /* failed runs so far */
    uint8_t in_retry;        /* 1 while listed in the retry list */
    uint8_t sent;            /* copies sent so far (stops at 255) */
    uint8_t last_status;     /* how its last failed run ended */
    uint8_t quick;           /* its newest copy went to a TM holding fewer
                                tasks than workers: it ran on arrival */
    uint8_t cell;            /* the owner's (the JM: made in a cell of its
                                task pool, taskpool.h) */
    int32_t failed_on;       /* TM slot of the last failed run, or -1 */
    int32_t holders[SCHED_MAX_COPIES]; /* TM slots running a copy, -1 = none */
    uint32_t held_ix[SCHED_MAX_COPIES];  /* each copy's place in its TM's
                                            list of copies (scheduler.c) */
    int64_t out_ms;          /* when it entered the scheduler's ring */
    int64_t copy_ms;         /* when its newest copy was sent */
    _Atomic int64_t left_ms; /* when the transport last let go of a part
                                of it (0: never; set by the owner, on any
                                thread) */
    uint64_t stuck_at;       /* its newest part, if it has not left the
                                hop once this many bytes of parts did, is
                                stuck (sched_set_backlog; the owner's) */
    atomic_uint refs;        /* the owner's 1 + parts in flight (the
                                owner's; more than 1: a part still waits
                                in the hop) */
    _Alignas(8) unsigned char data[];  /* the owner's bytes, if it keeps them
                                          here (8-aligned: a relay keeps a
                                          struct there) */
} sched_task_t;

/* A TM below the hop, as the scheduler sees it: embedded in the owner's
 * table entry. slot (its stable index in the owner's table, peertab.h)
 * and the credit's workers and slots are the owner's to set; the rest is
 * the scheduler's (the owner reads it). */
typedef struct {
    int slot;
    credit_t credit;         /* what it may hold, and holds (credit.h) */
    uint64_t scan_version;   /* ring version of its last fruitless resend
                                scan */
    int64_t scan_until;      /* ...which holds until then (sched's ms) */
    int64_t turn_ms;         /* round trip + one run: the least time a copy
                                that ran on arrival took to come back, over
                                the last SCHED_TURN_WINDOW such copies */
    int64_t turn_win;        /* ...the least of the window so far */
    int turn_n;              /* ...and how many it has seen */
    uint64_t sent, done, failed;  /* copies sent to it, results and failed
                                     runs from it */
} sched_peer_t;

/* What the scheduler counts as things happen, in a struct its owner
 * keeps (and may add to: duplicates it finds itself). */
typedef struct {
    uint64_t sent;            /* task copies sent */
    uint64_t resent;          /* copies sent beyond a task's first */
    uint64_t duplicates;      /* results of already resolved tasks */
    uint64_t requeued;        /* copies taken back from lost TMs */
    uint64_t returned;        /* copies handed back unrun (a drain, a
                                 TM out of room) of unresolved tasks */
    uint64_t retried;         /* failed runs to be run again */
    uint64_t crashed;         /* runs that killed their worker process */
    uint64_t timed_out;       /* runs stopped by --task-timeout */
    uint64_t poison;          /* tasks given up after max_attempts runs */
    uint64_t done_evicted;    /* results from a TM the owner no longer
                                 knows (NULL peer) */
} sched_stats_t;

/* The owner's hooks, all called on the scheduler's thread. */
typedef struct {
    /* A task the scheduler is done with (resolved, resolved early, or
     * left at a reset): the owner's again. NULL: free(). Called once per
     * task: keep it cheap. */
    void (*release)(void *arg, sched_task_t *task);
    /* The releases so far are all made (after a reset's; NULL: none). */
    void (*flush)(void *arg);
    void *release_arg;       /* ...the argument of both */
    /* May resolve a fresh task before it is sent (the JM: a result that
     * came early, after --resume): 1 if it did; the scheduler then
     * releases the task. NULL: never. */
    int (*early)(void *arg, const sched_task_t *task);
    void *early_arg;
} sched_hooks_t;

typedef struct sched sched_t;

/* A copy to cancel: task id on TM slot (hash: the task's, its owner's
 * tag). */
typedef struct {
    int slot;
    uint64_t id;
    uint64_t hash;
} sched_cancel_t;

/* What a record did (sched_record). */
typedef enum {
    SCHED_REC_COMMIT,      /* the task's first result: commit it */
    SCHED_REC_POISON,      /* failed max_attempts times: given up */
    SCHED_REC_RETRY,       /* failed: it runs again */
    SCHED_REC_RETURNED,    /* handed back unrun */
    SCHED_REC_DUPLICATE,   /* a result of a task resolved already */
    SCHED_REC_LATE,        /* any other record of a resolved task */
    SCHED_REC_FOREIGN,     /* a foreign failure or hand-back: nothing done */
    SCHED_REC_UNKNOWN      /* a task not generated yet, or never */
} sched_outcome_t;

/* max_copies (1..SCHED_MAX_COPIES) and max_attempts bound every task; the
 * counters in st are updated as things happen (the owner's, shared with
 * its own). NULL when out of memory. */
sched_t *sched_new(int max_copies, int max_attempts, sched_stats_t *st);
/* max_copies from now on (1..SCHED_MAX_COPIES; a relay learns the job's
 * from its WELCOME). */
void sched_set_max_copies(sched_t *s, int max_copies);
/* Frees the scheduler; every task it holds is released. */
void sched_destroy(sched_t **s);
/* A new phase: every task left is released. -1 when out of memory (then the
 * scheduler holds nothing and must not be used until a reset succeeds). */
int sched_reset(sched_t *s);
/* 1 once an allocation failed and a task may have been lost: the job
 * cannot finish and must stop. */
int sched_broken(const sched_t *s);

/* --- tasks in ---------------------------------------------------------- */

/* Sets a new task's scheduling state (no copy out, no attempt, no
 * holder), which only the scheduler reads and changes from then on.
 * Inline: once per task. */
static inline void sched_task_init(sched_task_t *t)
{
    t->copies = t->attempts = t->in_retry = t->sent = t->last_status = 0;
    t->failed_on = -1;
    t->out_ms = t->copy_ms = 0;
    t->stuck_at = 0;
    atomic_init(&t->left_ms, 0);
    atomic_init(&t->refs, 1);
    for (int i = 0; i < SCHED_MAX_COPIES; i++)
        t->holders[i] = -1;
}

/* Fresh tasks (the JM: from the generator), linked by next, ids
 * increasing. */
void sched_add_fresh(sched_t *s, sched_task_t *head, sched_task_t *tail);
int sched_has_fresh(const sched_t *s);
/* Copies to send again are queued (failed, handed back, or not sent). */
int sched_has_retries(const sched_t *s);
/* Whether TM slot holds a copy of task id: 1 it does, 0 it does not
 * (the task is sent and unresolved), -1 the task is not in the ring. */
int sched_holds(const sched_t *s, int slot, uint64_t id);
/* The generator's state: done (no more fresh tasks will come) or waiting
 * for window room. Either allows copies of unfinished tasks. */
void sched_gen_state(sched_t *s, int done, int waiting);
/* No fresh task now and none to come. */
int sched_exhausted(const sched_t *s);
/* The owner's hooks (copied; a zeroed set is the default). */
void sched_set_hooks(sched_t *s, const sched_hooks_t *hooks);

/* --- tasks out --------------------------------------------------------- */

/* The time now, in ms of the caller's monotonic clock (the scheduler has
 * none): set it before picking and before records, which it times. */
void sched_clock(sched_t *s, int64_t now_ms);
/* The bytes of parts the transport has let go of so far, and whether
 * the hop is idle with parts waiting (the JM's backlog.h): a task whose
 * part waits in the hop is a candidate for another copy only once
 * released passes its stuck_at, or while idle. Set it before picking. */
void sched_set_backlog(sched_t *s, uint64_t released, int idle);
/* How long a copy must be out to be late now, in ms (LATE_NEVER: no
 * copy is, too few tasks finished). */
int64_t sched_late_after(const sched_t *s);
/* Which TMs went quiet (is_quiet: the owner's judgement, liveness_quiet;
 * asked once for each TM slot that holds a copy): a task whose every
 * copy out is on a quiet TM counts as stalled, not running, in the
 * lateness gate (once half of the tasks out or finished have finished),
 * so that a stopped TM that holds most of the tasks does not keep every
 * copy of them from going. Call it each tick. */
void sched_quiet(sched_t *s, int (*is_quiet)(void *arg, int slot), void *arg);

/* Picks copies for TM t: as many as it has room for, and at most max_n,
 * up to max_bytes of task bytes (one task always fits). others: other TMs are alive, so a
 * failed task may wait for one of them. The picked tasks are
 * sched_picked()[0..n-1]; then exactly one of sched_sent (they went
 * out) or sched_unsent (they did not) must follow. */
size_t sched_pick(sched_t *s, sched_peer_t *t, size_t max_n, size_t max_bytes,
                  int others);
sched_task_t *const *sched_picked(const sched_t *s);
void sched_sent(sched_t *s, sched_peer_t *t, size_t n);
void sched_unsent(sched_t *s, size_t n);
/* (Or, of the copies picked, the first sent went out, the rest not.) */
void sched_sent_part(sched_t *s, sched_peer_t *t, size_t sent);

/* --- records back ------------------------------------------------------ */

/* A message with count records came from TM t: its credit back (NULL:
 * nothing; the owner passes NULL for a TM it does not know alive). */
void sched_credit(sched_t *s, sched_peer_t *t, uint64_t count);
/* One record, from TM t (NULL: from a TM this hop does not know);
 * foreign: it had SPITS_REC_FOREIGN (see the top). For SCHED_REC_COMMIT,
 * *hash is the task's hash (for the journal); for SCHED_REC_POISON, *hash
 * is 0. The task is released by then. */
sched_outcome_t sched_record(sched_t *s, sched_peer_t *t, uint64_t id,
                                 uint32_t status, int foreign, uint64_t *hash);
/* The task of the last record that was not UNKNOWN, DUPLICATE or LATE:
 * when its newest copy was sent (the caller's clock) and its bytes. */
void sched_recorded(const sched_t *s, int64_t *start_ms, uint32_t *len);
/* The copies to cancel, noted since the last call: *n of them, valid
 * until the next call into the scheduler. */
sched_cancel_t *sched_take_cancels(sched_t *s, size_t *n);

/* Task id was resolved elsewhere (a relay's: by the hop above): its
 * copies out are noted for cancelling (sched_take_cancels) and it is
 * released, sent or not. 1 if it was held, else 0. */
int sched_drop(sched_t *s, uint64_t id);
/* Every task no copy of which is out (fresh ones, and those waiting to
 * run again) is released: nothing runs them here (a relay with no TM
 * left, or draining). Returns how many. */
size_t sched_give_back(sched_t *s);

/* --- TMs --------------------------------------------------------------- */

/* TM t (re-)joined holding held copies. */
void sched_joined(sched_t *s, sched_peer_t *t, long held);
/* TM t is gone: its copies are taken back (those left with no copy go to
 * the retry queue). Returns how many. */
size_t sched_lost(sched_t *s, sched_peer_t *t);
/* The tasks TM t holds a copy of (*n of them, in no order), valid until
 * the next call that changes the scheduler. */
sched_task_t *const *sched_held(const sched_t *s, const sched_peer_t *t, size_t *n);

/* --- the window -------------------------------------------------------- */

/* The oldest task id not yet resolved (fresh ones included). */
uint64_t sched_low(const sched_t *s);
/* Bytes of tasks resolved since the last reset. */
uint64_t sched_freed_bytes(const sched_t *s);
/* Bytes of fresh tasks picked to be sent (or resolved before being sent)
 * since the last reset: the generator's bytes made, less this, are the
 * bytes made and not yet sent. */
uint64_t sched_taken_bytes(const sched_t *s);
/* Mean size of the task copies sent so far (0 before any). */
uint64_t sched_mean_task_bytes(const sched_t *s);
/* Tasks in flight (sent, not resolved). */
size_t sched_in_flight(const sched_t *s);
/* A task in flight, or NULL (tests and diagnostics). */
const sched_task_t *sched_task(const sched_t *s, uint64_t id);

#ifdef SPITS_SELFTEST
int sched_selftest(void);
#endif

#endif
