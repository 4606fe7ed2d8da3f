/*
 * scheduler.h - the JM's scheduler: which task copies go to which Task
 * Manager, and what each record a TM sends back does to its task.
 *
 * It is a plain data structure, with no sockets, threads or clock: the
 * dispatcher (dispatch.c) owns one for the job and calls it from its own
 * thread, and jm_sched_selftest drives it directly, against a reference
 * model, through random joins, losses, results, failures and cancels.
 *
 * It owns every task from the generator's hand-over until the task is
 * resolved (committed or given up): the fresh list (not sent yet), the
 * ring of tasks in flight (libspits/ring.h) and the retry queue (copies
 * that must run again: retryq.h).
 *
 * Pull scheduling with credits. A TM may hold t->slots copies; the
 * scheduler keeps t->outstanding, the copies sent to it and not yet
 * answered. It is the one owner of the rule that every copy sent comes
 * back as exactly one record (wire.h): jm_sched_sent adds the copies,
 * jm_sched_credit takes back one per record received, jm_sched_joined
 * sets what a (re-)joining TM says it holds, and a lost TM holds nothing.
 *
 * A TM with room gets, in this order:
 *   1. tasks whose every copy was lost (dead TM, failed run, handed back):
 *      the retry queue, preferably not on the TM where the task failed;
 *   2. fresh tasks, in generation order;
 *   3. when there are none (the generator is done, or waits for window
 *      room), a copy of the oldest late task (lateness.h: out longer than
 *      1.5 times the median time of the finished tasks, once half of the
 *      phase's tasks finished) that it does not run already and that has
 *      fewer than max_copies copies out. A copy's time starts when it
 *      left the JM: a large task's part may wait in the JM's own send
 *      backlog first, and is not late while it waits its turn
 *      (backlog.h). A TM that stops talking is declared lost
 *      (dispatch.c), and its tasks go to step 1.
 * The first result of a task resolves it; its other copies are noted for
 * cancelling. A failed run counts toward max_attempts; past that the task
 * is a poison task, resolved as failed.
 *
 * A foreign record (wire.h SPITS_REC_FOREIGN: a relay passing on work a
 * TM behind it got elsewhere) answers no copy the JM holds, so it touches
 * none: a result still resolves its task if nothing has (and then every
 * copy out is cancelled, the sender's own too, as for any commit), but
 * it takes no copy from its sender, gives no credit or turnaround, and a
 * failed or handed-back one changes nothing (no attempt counted, nothing
 * requeued): the copy that ran was taken back already, when the hop it
 * came from was lost, and is accounted for where it went next.
 */
#ifndef SPITS_JM_SCHED_H
#define SPITS_JM_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "jm.h"
#include "lateness.h"
#include "tmtable.h"

typedef struct jm_sched jm_sched_t;

/* A copy to cancel: task id on TM slot. */
typedef struct {
    int slot;
    uint64_t id;
} jm_sched_cancel_t;

/* What a record did (jm_sched_record). */
typedef enum {
    JM_REC_COMMIT,      /* the task's first result: commit it */
    JM_REC_POISON,      /* failed max_attempts times: given up */
    JM_REC_RETRY,       /* failed: it runs again */
    JM_REC_RETURNED,    /* handed back unrun */
    JM_REC_DUPLICATE,   /* a result of a task resolved already */
    JM_REC_LATE,        /* any other record of a resolved task */
    JM_REC_FOREIGN,     /* a foreign failure or hand-back: nothing done */
    JM_REC_UNKNOWN      /* a task not generated yet, or never */
} jm_rec_outcome_t;

/* max_copies (1..JM_MAX_COPIES) and max_attempts bound every task; the
 * counters in st are updated as things happen (the dispatcher's, shared
 * with its own). NULL when out of memory. */
jm_sched_t *jm_sched_new(int max_copies, int max_attempts, jm_disp_stats_t *st);
/* Frees the scheduler and every task it holds. */
void jm_sched_destroy(jm_sched_t **s);
/* A new phase: every task left is freed. -1 when out of memory (then the
 * scheduler holds nothing and must not be used until a reset succeeds). */
int jm_sched_reset(jm_sched_t *s);
/* 1 once an allocation failed and a task may have been lost: the job
 * cannot finish and must stop. */
int jm_sched_broken(const jm_sched_t *s);

/* --- tasks in ---------------------------------------------------------- */

/* Sets a new task's scheduling state (no copy out, no attempt, no
 * holder), which only the scheduler reads and changes from then on. */
void jm_sched_task_init(jm_task_t *t);

/* Tasks from the generator, linked by next, ids increasing. */
void jm_sched_add_fresh(jm_sched_t *s, jm_task_t *head, jm_task_t *tail);
int jm_sched_has_fresh(const jm_sched_t *s);
/* Copies to send again are queued (failed, handed back, or not sent). */
int jm_sched_has_retries(const jm_sched_t *s);
/* The generator's state: done (no more fresh tasks will come) or waiting
 * for window room. Either allows copies of unfinished tasks. */
void jm_sched_gen_state(jm_sched_t *s, int done, int waiting);
/* No fresh task now and none to come. */
int jm_sched_exhausted(const jm_sched_t *s);
/* A hook that may resolve a fresh task before it is sent (a result that
 * came early, after --resume): return 1 if it did; the scheduler then
 * frees the task. */
typedef int (*jm_sched_early_fn)(void *arg, const jm_task_t *task);
void jm_sched_set_early(jm_sched_t *s, jm_sched_early_fn fn, void *arg);

/* Where the cells of resolved tasks go back (taskpool.h; NULL: none,
 * the default, and every task is freed). The pool must outlive s. */
void jm_sched_set_pool(jm_sched_t *s, struct jm_taskpool *pool);

/* --- tasks out --------------------------------------------------------- */

/* The time now, in ms of the caller's monotonic clock (the scheduler has
 * none): set it before picking and before records, which it times. */
void jm_sched_clock(jm_sched_t *s, int64_t now_ms);
/* The bytes of parts libzmq has let go of so far, and whether the JM is
 * idle with parts waiting (backlog.h): a task whose part waits in the JM
 * is a candidate for another copy only once released passes its
 * stuck_at (jm.h), or while idle. Set it before picking. */
void jm_sched_set_backlog(jm_sched_t *s, uint64_t released, int idle);
/* How long a copy must be out to be late now, in ms (JM_LATE_NEVER: no
 * copy is, too few tasks finished). */
int64_t jm_sched_late_after(const jm_sched_t *s);

/* Picks copies for TM t: as many as it has room for, up to max_bytes of
 * task bytes (one task always fits). others: other TMs are alive, so a
 * failed task may wait for one of them. The picked tasks are
 * jm_sched_picked()[0..n-1]; then exactly one of jm_sched_sent (they went
 * out) or jm_sched_unsent (they did not) must follow. */
size_t jm_sched_pick(jm_sched_t *s, jm_tm_t *t, size_t max_bytes, int others);
jm_task_t *const *jm_sched_picked(const jm_sched_t *s);
void jm_sched_sent(jm_sched_t *s, jm_tm_t *t, size_t n);
void jm_sched_unsent(jm_sched_t *s, size_t n);

/* --- records back ------------------------------------------------------ */

/* A message with count records came from TM t: its credit back. */
void jm_sched_credit(jm_sched_t *s, jm_tm_t *t, uint64_t count);
/* One record, from TM t (NULL: from a TM this JM does not know);
 * foreign: it had SPITS_REC_FOREIGN (see the top). For JM_REC_COMMIT,
 * *hash is the task's hash (for the journal); for JM_REC_POISON, *hash
 * is 0. The task is freed by then. */
jm_rec_outcome_t jm_sched_record(jm_sched_t *s, jm_tm_t *t, uint64_t id,
                                 uint32_t status, int foreign, uint64_t *hash);
/* The task of the last record that was not UNKNOWN, DUPLICATE or LATE:
 * when its newest copy was sent (the caller's clock) and its bytes. */
void jm_sched_recorded(const jm_sched_t *s, int64_t *start_ms, uint32_t *len);
/* The copies to cancel, noted since the last call: *n of them, valid
 * until the next call into the scheduler. */
jm_sched_cancel_t *jm_sched_take_cancels(jm_sched_t *s, size_t *n);

/* --- TMs --------------------------------------------------------------- */

/* TM t (re-)joined holding held copies. */
void jm_sched_joined(jm_sched_t *s, jm_tm_t *t, long held);
/* TM t is gone: its copies are taken back (those left with no copy go to
 * the retry queue). Returns how many. */
size_t jm_sched_lost(jm_sched_t *s, jm_tm_t *t);

/* --- the window -------------------------------------------------------- */

/* The oldest task id not yet resolved (fresh ones included). */
uint64_t jm_sched_low(const jm_sched_t *s);
/* Bytes of tasks resolved since the last reset. */
uint64_t jm_sched_freed_bytes(const jm_sched_t *s);
/* Bytes of fresh tasks picked to be sent (or resolved before being sent)
 * since the last reset: the generator's bytes made, less this, are the
 * bytes made and not yet sent. */
uint64_t jm_sched_taken_bytes(const jm_sched_t *s);
/* Mean size of the task copies sent so far (0 before any). */
uint64_t jm_sched_mean_task_bytes(const jm_sched_t *s);
/* Tasks in flight (sent, not resolved). */
size_t jm_sched_in_flight(const jm_sched_t *s);
/* A task in flight, or NULL (tests and diagnostics). */
const jm_task_t *jm_sched_task(const jm_sched_t *s, uint64_t id);

#ifdef SPITS_SELFTEST
int jm_sched_selftest(void);
#endif

#endif
