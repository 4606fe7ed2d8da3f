/*
 * scheduler.c - the JM's scheduler (see scheduler.h for what it decides).
 *
 * Per-task state lives in the task itself (jm.h jm_task_t: copies,
 * holders, attempts, in_retry, out_ms, copy_ms); per-TM credit in the
 * TM's table entry (tmtable.h: slots, outstanding). Each TM slot has a
 * list of the tasks it holds a copy of (a task knows its place in each
 * of its holders' lists: held_ix), so a lost TM costs its own copies,
 * not a scan of the ring. Whatever may make a
 * task a candidate for another copy without the clock moving (a copy
 * taken back, a TM back, a new lateness bound) bumps version, which lets
 * a TM skip the re-send scan (step 3) while nothing it could be sent has
 * changed since its last fruitless scan and no task has had time to
 * become late. A task resolved or a copy sent only ever removes
 * candidates, so they leave version alone.
 */
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "dispatch.h"
#include "lateness.h"
#include "phase.h"
#include "retryq.h"
#include "ring.h"
#include "scheduler.h"
#include "util.h"

/* The tasks TM slot holds a copy of, in no order. */
typedef struct {
    jm_task_t **tasks;
    size_t n, cap;
} held_t;

struct jm_sched {
    int max_copies, max_attempts;
    int64_t rec_start_ms;            /* the last record's task: its newest */
    uint32_t rec_len;                /* ...copy's start and its size */
    held_t *held;                    /* by TM slot */
    size_t nheld;
    jm_disp_stats_t *st;
    spits_ring_t *ring;              /* sent, not resolved: by id */
    jm_task_t *fresh, *fresh_tail;   /* from the generator, not sent yet */
    int gen_done, gen_waiting;
    jm_retryq_t retry;
    uint64_t version;
    jm_task_t **picked;              /* the last pick */
    size_t npicked, cappicked;
    jm_sched_cancel_t *cancels;      /* copies to cancel, not taken yet */
    size_t ncancel, capcancel;
    uint64_t freed_bytes;            /* of tasks resolved this phase */
    uint64_t taken_bytes;            /* of fresh tasks picked (or resolved
                                        early) this phase */
    uint64_t task_bytes_sent;        /* of every copy sent */
    int64_t now;                     /* the dispatcher's clock, ms */
    uint64_t released;               /* bytes of parts libzmq let go of */
    int send_idle;                   /* ...none over the last tick while
                                        parts waited (backlog.h) */
    jm_late_t late;                  /* when a copy is late */
    uint64_t finished;               /* results committed this phase */
    int64_t late_after;              /* the bound last seen by a scan */
    jm_sched_early_fn early;
    void *early_arg;
    int broken;
};

jm_sched_t *jm_sched_new(int max_copies, int max_attempts, jm_disp_stats_t *st)
{
    jm_sched_t *s = calloc(1, sizeof *s);
    if (!s || !(s->ring = spits_ring_new())) {
        free(s);
        return NULL;
    }
    s->max_copies = max_copies;
    s->max_attempts = max_attempts;
    s->st = st;
    return s;
}

static void free_tasks(jm_sched_t *s)
{
    for (size_t i = 0; i < s->nheld; i++)
        s->held[i].n = 0;
    if (s->ring)
        for (uint64_t id = spits_ring_low(s->ring); id < spits_ring_next(s->ring); id++)
            jm_task_free(spits_ring_take(s->ring, id));
    while (s->fresh) {
        jm_task_t *next = s->fresh->next;
        jm_task_free(s->fresh);
        s->fresh = next;
    }
    s->fresh_tail = NULL;
}

void jm_sched_destroy(jm_sched_t **sp)
{
    jm_sched_t *s = *sp;
    if (!s)
        return;
    free_tasks(s);
    spits_ring_destroy(&s->ring);
    jm_retryq_free(&s->retry);
    for (size_t i = 0; i < s->nheld; i++)
        free(s->held[i].tasks);
    free(s->held);
    free(s->picked);
    free(s->cancels);
    free(s);
    *sp = NULL;
}

int jm_sched_reset(jm_sched_t *s)
{
    free_tasks(s);
    spits_ring_destroy(&s->ring);
    jm_retryq_clear(&s->retry);
    s->gen_done = s->gen_waiting = 0;
    s->npicked = s->ncancel = 0;
    s->freed_bytes = s->taken_bytes = 0;
    s->finished = 0;
    jm_late_reset(&s->late);
    s->version++;
    s->ring = spits_ring_new();
    return s->ring ? 0 : -1;
}

int jm_sched_broken(const jm_sched_t *s)
{
    return s->broken;
}

/* --- task copies ------------------------------------------------------- */

static int held_by(const jm_task_t *task, int slot)
{
    for (int i = 0; i < JM_MAX_COPIES; i++)
        if (task->holders[i] == slot)
            return 1;
    return 0;
}

/* Slot's list, grown to take one more. NULL: no memory. */
static held_t *held_room(jm_sched_t *s, int slot)
{
    if ((size_t)slot >= s->nheld) {
        size_t n = (size_t)slot + 1 > 2 * s->nheld ? (size_t)slot + 1 : 2 * s->nheld;
        held_t *h = realloc(s->held, n * sizeof *h);
        if (!h)
            return NULL;
        memset(h + s->nheld, 0, (n - s->nheld) * sizeof *h);
        s->held = h;
        s->nheld = n;
    }
    held_t *h = &s->held[slot];
    return spits_grow((void **)&h->tasks, &h->cap, h->n + 1, sizeof *h->tasks, 16)
               ? NULL : h;
}

/* A copy on slot. Out of memory breaks the scheduler (the copy would be
 * lost with its TM), but the copy is still counted. */
static void add_holder(jm_sched_t *s, jm_task_t *task, int slot)
{
    held_t *h = held_room(s, slot);
    if (!h)
        s->broken = 1;
    for (int i = 0; i < JM_MAX_COPIES; i++)
        if (task->holders[i] < 0) {
            task->holders[i] = slot;
            task->copies++;
            if (h) {
                task->held_ix[i] = (uint32_t)h->n;
                h->tasks[h->n++] = task;
            }
            return;
        }
}

/* Copy i of task leaves its holder's list: the list's last task takes
 * its place. */
static void held_unlink(jm_sched_t *s, jm_task_t *task, int i)
{
    if ((size_t)task->holders[i] >= s->nheld)
        return;                         /* never listed (out of memory) */
    held_t *h = &s->held[task->holders[i]];
    size_t at = task->held_ix[i];
    if (at >= h->n || h->tasks[at] != task)
        return;
    jm_task_t *last = h->tasks[--h->n];
    h->tasks[at] = last;
    for (int k = 0; k < JM_MAX_COPIES; k++)
        if (last->holders[k] == task->holders[i])
            last->held_ix[k] = (uint32_t)at;
}

static int drop_holder(jm_sched_t *s, jm_task_t *task, int slot)
{
    for (int i = 0; i < JM_MAX_COPIES; i++)
        if (task->holders[i] == slot) {
            held_unlink(s, task, i);
            task->holders[i] = -1;
            task->copies--;
            return 1;
        }
    return 0;
}

/* A task with no copy out must run again. Losing it here would leave the
 * phase unfinishable, so a failed allocation breaks the scheduler. */
static void retry_push(jm_sched_t *s, jm_task_t *task)
{
    if (task->in_retry)
        return;
    if (jm_retryq_push(&s->retry, task->id) != 0) {
        s->broken = 1;
        return;
    }
    task->in_retry = 1;
    s->version++;
}

/* The task's other copies are no longer needed. A note that cannot be
 * kept costs nothing but a duplicate result. */
static void cancel_note(jm_sched_t *s, const jm_task_t *task)
{
    for (int i = 0; i < JM_MAX_COPIES; i++) {
        if (task->holders[i] < 0)
            continue;
        if (s->ncancel == s->capcancel) {
            size_t cap = s->capcancel ? s->capcancel * 2 : 64;
            jm_sched_cancel_t *c = realloc(s->cancels, cap * sizeof *c);
            if (!c)
                return;
            s->cancels = c;
            s->capcancel = cap;
        }
        s->cancels[s->ncancel].slot = task->holders[i];
        s->cancels[s->ncancel++].id = task->id;
    }
}

/* Out of the ring, its bytes freed. */
static void resolve(jm_sched_t *s, jm_task_t *task)
{
    for (int i = 0; i < JM_MAX_COPIES; i++)
        if (task->holders[i] >= 0)
            held_unlink(s, task, i);
    spits_ring_take(s->ring, task->id);
    s->freed_bytes += task->len;
    jm_task_free(task);
}

/* --- tasks in ---------------------------------------------------------- */

void jm_sched_task_init(jm_task_t *t)
{
    t->copies = t->attempts = t->in_retry = t->sent = t->last_status = 0;
    t->failed_on = -1;
    t->out_ms = t->copy_ms = 0;
    t->stuck_at = 0;
    atomic_init(&t->left_ms, 0);
    atomic_init(&t->refs, 1);
    for (int i = 0; i < JM_MAX_COPIES; i++)
        t->holders[i] = -1;
}

void jm_sched_add_fresh(jm_sched_t *s, jm_task_t *head, jm_task_t *tail)
{
    if (!head)
        return;
    if (s->fresh_tail)
        s->fresh_tail->next = head;
    else
        s->fresh = head;
    s->fresh_tail = tail;
}

int jm_sched_has_fresh(const jm_sched_t *s)
{
    return s->fresh != NULL;
}

int jm_sched_has_retries(const jm_sched_t *s)
{
    return s->retry.count > 0;
}

void jm_sched_gen_state(jm_sched_t *s, int done, int waiting)
{
    s->gen_done = done;
    s->gen_waiting = waiting;
}

int jm_sched_exhausted(const jm_sched_t *s)
{
    return s->gen_done && !s->fresh;
}

void jm_sched_set_early(jm_sched_t *s, jm_sched_early_fn fn, void *arg)
{
    s->early = fn;
    s->early_arg = arg;
}

/* --- tasks out --------------------------------------------------------- */

static int picked_add(jm_sched_t *s, size_t n, jm_task_t *task)
{
    if (n == s->cappicked) {
        size_t cap = s->cappicked ? s->cappicked * 2 : 256;
        jm_task_t **p = realloc(s->picked, cap * sizeof *p);
        if (!p)
            return -1;
        s->picked = p;
        s->cappicked = cap;
    }
    s->picked[n] = task;
    return 0;
}

/* 1. Tasks with no copy out. */
static size_t pick_retries(jm_sched_t *s, jm_tm_t *t, size_t room, size_t *bytes,
                           size_t max_bytes, int others)
{
    size_t n = 0;
    for (size_t k = s->retry.count; k > 0 && n < room && *bytes < max_bytes; k--) {
        jm_task_t *task = spits_ring_get(s->ring, jm_retryq_pop(&s->retry));
        if (!task)
            continue;                       /* resolved meanwhile */
        task->in_retry = 0;
        if (task->copies > 0)
            continue;                       /* re-sent meanwhile */
        if ((task->failed_on == t->slot && others) || picked_add(s, n, task) != 0) {
            retry_push(s, task);            /* rather another TM */
            continue;
        }
        n++;
        *bytes += task->len;
    }
    return n;
}

/* 2. Fresh tasks, in generation order; they enter the ring as picked. */
static size_t pick_fresh(jm_sched_t *s, size_t n, size_t room, size_t *bytes,
                         size_t max_bytes)
{
    while (n < room && s->fresh && *bytes < max_bytes) {
        jm_task_t *task = s->fresh;
        int early = s->early && s->early(s->early_arg, task);
        if (!early && (picked_add(s, n, task) != 0 ||
                       spits_ring_put(s->ring, task->id, task) != 0))
            break;                          /* stays fresh */
        s->fresh = task->next;
        if (!s->fresh)
            s->fresh_tail = NULL;
        task->next = NULL;
        s->taken_bytes += task->len;
        if (early) {
            s->freed_bytes += task->len;
            jm_task_free(task);
            continue;
        }
        task->out_ms = s->now;
        n++;
        *bytes += task->len;
    }
    return n;
}

/* When the newest copy of a task left the JM: when libzmq let go of its
 * part (part_done sets left_ms, then drops its reference: seen here once
 * refs is 1; on libzmq's clock, which may be ahead of ours), or when it
 * was sent (an inline task, or a part still in the JM). left_ms is the
 * task's, not the copy's: a part of an older copy let go of after the
 * newest was sent (its TM's connection dropped) restarts the newest's
 * clock, and a part of an older copy still in the JM holds the newest to
 * copy_due's rule for waiting parts. Both only delay a copy. */
static int64_t copy_start(const jm_sched_t *s, jm_task_t *task)
{
    if (atomic_load_explicit(&task->refs, memory_order_acquire) > 1)
        return task->copy_ms;
    int64_t left = atomic_load_explicit(&task->left_ms, memory_order_relaxed);
    left = left < s->now ? left : s->now;
    return left > task->copy_ms ? left : task->copy_ms;
}

/* The lateness bound now; a new one may make tasks late for any TM. */
static int64_t late_bound(jm_sched_t *s)
{
    int64_t after = jm_late_after(&s->late, s->finished, spits_ring_count(s->ring));
    if (after != s->late_after) {
        s->late_after = after;
        s->version++;
    }
    return after;
}

/* A task t could be sent another copy of, but for its age. */
static int copy_candidate(const jm_sched_t *s, const jm_task_t *task, const jm_tm_t *t)
{
    return task->copies > 0 && task->copies < s->max_copies && !held_by(task, t->slot);
}

/* When the newest copy of a task is late: the bound after its clock
 * started. The clock starts when the copy left the JM: when libzmq let
 * go of its part (a large task, which may wait seconds in the JM's send
 * backlog: backlog.h), or when it was sent (a task sent inline). A part
 * still in the JM is not late while it waits its turn, only once it is
 * stuck (backlog.h; then from when it was sent); INT64_MAX until then.
 * (Any part of the task still in the JM counts: refs, jm.h.) */
static int64_t copy_due(const jm_sched_t *s, jm_task_t *task, int64_t after)
{
    if (atomic_load_explicit(&task->refs, memory_order_acquire) > 1)
        return s->released >= task->stuck_at || s->send_idle ? task->copy_ms + after
                                                             : INT64_MAX;
    return copy_start(s, task) + after;
}

/* 3. No fresh task: copies of late tasks (lateness.h), oldest first: out
 * longer than the bound since their newest copy left the JM. Tasks enter the
 * ring in id order, so the scan stops at the first one too young to be
 * late. A fruitless scan notes when the next task may become late. */
static size_t pick_copies(jm_sched_t *s, jm_tm_t *t, size_t n, size_t room,
                          size_t *bytes, size_t max_bytes)
{
    if (s->fresh || s->max_copies < 2 || !(s->gen_done || s->gen_waiting) ||
        n >= room || *bytes >= max_bytes)
        return n;
    int64_t after = late_bound(s);
    if (after == JM_LATE_NEVER ||
        (t->scan_version == s->version && s->now < t->scan_until))
        return n;
    int64_t until = s->now + after;     /* no task put from now on is late sooner */
    size_t found = 0;
    for (uint64_t id = spits_ring_low(s->ring);
         id < spits_ring_next(s->ring) && n < room && *bytes < max_bytes; id++) {
        jm_task_t *task = spits_ring_get(s->ring, id);
        if (!task)
            continue;
        if (s->now - task->out_ms < after) {
            until = task->out_ms + after < until ? task->out_ms + after : until;
            break;
        }
        if (!copy_candidate(s, task, t))
            continue;
        int64_t due = copy_due(s, task, after);
        if (s->now < due) {
            /* (a part waiting in the JM may be stuck at any tick, which
             * moves no version: look again then) */
            if (due == INT64_MAX)
                due = s->now + JM_BACKLOG_TICK_MS;
            until = due < until ? due : until;
            continue;
        }
        if (picked_add(s, n, task) != 0)
            break;
        n++;
        found++;
        *bytes += task->len;
    }
    if (!found) {                       /* nothing until something changes */
        t->scan_version = s->version;
        t->scan_until = until;
    }
    return n;
}

size_t jm_sched_pick(jm_sched_t *s, jm_tm_t *t, size_t max_bytes, int others)
{
    size_t room = t->outstanding < t->slots ? (size_t)(t->slots - t->outstanding) : 0;
    size_t bytes = 0, n = 0;

    if (!s->ring || !room)
        return s->npicked = 0;
    n = pick_retries(s, t, room, &bytes, max_bytes, others);
    n = pick_fresh(s, n, room, &bytes, max_bytes);
    n = pick_copies(s, t, n, room, &bytes, max_bytes);
    return s->npicked = n;
}

void jm_sched_clock(jm_sched_t *s, int64_t now_ms)
{
    s->now = now_ms;
}

void jm_sched_set_backlog(jm_sched_t *s, uint64_t released, int idle)
{
    s->released = released;
    s->send_idle = idle;
}

int64_t jm_sched_late_after(const jm_sched_t *s)
{
    return s->ring ? jm_late_after(&s->late, s->finished, spits_ring_count(s->ring))
                   : JM_LATE_NEVER;
}

jm_task_t *const *jm_sched_picked(const jm_sched_t *s)
{
    return s->picked;
}

void jm_sched_sent(jm_sched_t *s, jm_tm_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        jm_task_t *task = s->picked[i];
        if (task->sent)
            s->st->resent++;
        task->sent += task->sent < UINT8_MAX;
        task->copy_ms = s->now;
        task->quick = t->outstanding + (int)i < t->workers;
        add_holder(s, task, t->slot);
        s->task_bytes_sent += task->len;
    }
    s->st->sent += n;
    t->sent += n;
    t->outstanding += (int)n;
    s->npicked = 0;
}

void jm_sched_unsent(jm_sched_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s->picked[i]->copies == 0)
            retry_push(s, s->picked[i]);
    s->npicked = 0;
}

/* --- records back ------------------------------------------------------ */

void jm_sched_credit(jm_sched_t *s, jm_tm_t *t, uint64_t count)
{
    (void)s;
    if (t && t->alive)
        t->outstanding -= (int)(count < (uint64_t)t->outstanding
                                    ? count : (uint64_t)t->outstanding);
}

/* A failed, crashed or timed-out run: retried, or past max_attempts given
 * up (the task is freed). */
static jm_rec_outcome_t on_failed_run(jm_sched_t *s, jm_tm_t *t, jm_task_t *task,
                                      uint32_t status)
{
    if (t) {
        t->failed++;
        task->failed_on = t->slot;
    }
    s->st->crashed += status == SPITS_ST_CRASHED;
    s->st->timed_out += status == SPITS_ST_TIMEOUT;
    task->last_status = (uint8_t)status;
    if (++task->attempts < s->max_attempts) {
        s->st->retried++;
        if (task->copies == 0)
            retry_push(s, task);
        return JM_REC_RETRY;
    }
    s->st->poison++;
    resolve(s, task);
    return JM_REC_POISON;
}

/* A copy that ran on arrival came back after one round trip and one run:
 * the least such time over a window of them is the TM's RTT + T, which
 * sizes its slots (serve.c). A window, not all time: a route that got
 * longer is seen within JM_TURN_WINDOW copies. */
static void note_turnaround(jm_tm_t *t, int64_t ms)
{
    if (t->turn_n == 0 || ms < t->turn_win)
        t->turn_win = ms;
    if (++t->turn_n >= JM_TURN_WINDOW) {
        t->turn_ms = t->turn_win;
        t->turn_n = 0;
    } else if (t->turn_ms == 0 || t->turn_win < t->turn_ms) {
        t->turn_ms = t->turn_win;
    }
}

jm_rec_outcome_t jm_sched_record(jm_sched_t *s, jm_tm_t *t, uint64_t id,
                                 uint32_t status, uint64_t *hash)
{
    jm_task_t *task = s->ring ? spits_ring_get(s->ring, id) : NULL;

    *hash = 0;
    if (!task) {
        if (!s->ring || id >= spits_ring_next(s->ring))
            return JM_REC_UNKNOWN;
        if (status != SPITS_ST_OK)
            return JM_REC_LATE;
        s->st->duplicates++;
        return JM_REC_DUPLICATE;
    }
    if (t)
        drop_holder(s, task, t->slot);
    s->rec_start_ms = task->copy_ms;
    s->rec_len = task->len;
    if (status == SPITS_ST_OK) {
        *hash = task->hash;
        s->finished++;
        if (t && task->sent == 1) {     /* one copy ever: its time is clean */
            /* (from when it left the JM: a wait in the JM's own send
             * backlog is neither the TM's lateness nor its round trip) */
            int64_t took = s->now - copy_start(s, task);
            took = took > 0 ? took : 0;
            jm_late_sample(&s->late, took);
            if (task->quick)
                note_turnaround(t, took);
        }
        if (t)
            t->done++;
        else
            s->st->done_evicted++;   /* its sender's entry is gone */
        if (task->copies)
            cancel_note(s, task);
        resolve(s, task);
        return JM_REC_COMMIT;
    }
    s->version++;                       /* a copy fewer: a candidate again */
    if (status != SPITS_ST_RETURNED)
        return on_failed_run(s, t, task, status);
    if (task->copies == 0)
        retry_push(s, task);
    return JM_REC_RETURNED;
}

void jm_sched_recorded(const jm_sched_t *s, int64_t *start_ms, uint32_t *len)
{
    *start_ms = s->rec_start_ms;
    *len = s->rec_len;
}

jm_sched_cancel_t *jm_sched_take_cancels(jm_sched_t *s, size_t *n)
{
    *n = s->ncancel;
    s->ncancel = 0;
    return s->cancels;
}

/* --- TMs --------------------------------------------------------------- */

void jm_sched_joined(jm_sched_t *s, jm_tm_t *t, long held)
{
    t->outstanding = (int)(held < t->slots ? held : t->slots);
    t->scan_version = 0;
    t->scan_until = 0;
    s->version++;
}

size_t jm_sched_lost(jm_sched_t *s, jm_tm_t *t)
{
    size_t n = 0;
    held_t *h = (size_t)t->slot < s->nheld ? &s->held[t->slot] : NULL;

    t->outstanding = 0;
    while (h && h->n) {
        jm_task_t *task = h->tasks[h->n - 1];
        if (!drop_holder(s, task, t->slot)) {
            h->n--;                     /* (cannot happen: listed, so held) */
            continue;
        }
        n++;
        if (task->copies == 0)
            retry_push(s, task);
    }
    s->st->requeued += n;
    s->version++;
    return n;
}

/* --- the window -------------------------------------------------------- */

uint64_t jm_sched_low(const jm_sched_t *s)
{
    if (!s->ring)
        return 0;
    return spits_ring_count(s->ring) ? spits_ring_low(s->ring)
           : s->fresh ? s->fresh->id : spits_ring_next(s->ring);
}

uint64_t jm_sched_freed_bytes(const jm_sched_t *s)
{
    return s->freed_bytes;
}

uint64_t jm_sched_taken_bytes(const jm_sched_t *s)
{
    return s->taken_bytes;
}

uint64_t jm_sched_mean_task_bytes(const jm_sched_t *s)
{
    return s->st->sent ? s->task_bytes_sent / s->st->sent : 0;
}

size_t jm_sched_in_flight(const jm_sched_t *s)
{
    return s->ring ? spits_ring_count(s->ring) : 0;
}

const jm_task_t *jm_sched_task(const jm_sched_t *s, uint64_t id)
{
    return s->ring ? spits_ring_get(s->ring, id) : NULL;
}

/* --- self-test --------------------------------------------------------- */
#ifdef SPITS_SELFTEST
#include <stdio.h>

/* The scheduler against a reference model: a few hundred tasks, TMs that
 * join, take copies, answer with results, failures and hand-backs, get
 * lost (dead, or back later with what they held), under several
 * max_copies/max_attempts and seeds. After every step: each task is
 * committed at most once, none is lost (every unresolved task in flight
 * has a copy out or waits in the retry queue), no task has more copies
 * than max_copies, and each live TM's credit is exactly the copies it
 * holds (every copy sent comes back as exactly one record). At the end
 * every task is committed or given up, exactly once.
 *
 * The clock moves at random, and the model keeps its own task times: a
 * copy of a task already out is picked only when the task is late by the
 * model's reckoning (its newest copy out at least the bound, the bound
 * within a bucket of 1.5 x the exact median of the clean times, and only
 * once half of the tasks in the ring finished), and every late task a TM
 * could take is picked when it has room left. */

#define M_TASKS 300
#define M_TMS 5
#define M_HOLD 64

typedef struct {
    uint64_t id;
    int known;            /* sent to this incarnation: a holder to the JM */
} mcopy_t;

typedef struct {
    jm_tm_t tm;
    mcopy_t held[2 * M_HOLD];
    int nheld;
    int zombie;           /* lost to the JM, may come back with its copies */
} mtm_t;

typedef struct {
    jm_sched_t *s;
    jm_disp_stats_t st;
    mtm_t tms[M_TMS];
    int ntms;
    int committed[M_TASKS], poisoned[M_TASKS], fails[M_TASKS];
    int nsent[M_TASKS], in_ring[M_TASKS];
    int64_t last_send[M_TASKS];
    int64_t now, times[M_TASKS];  /* the clean task times, in order */
    int ntimes, gen_done, gen_waiting;
    uint64_t generated, sent, finished;
    int max_copies, max_attempts;
    uint32_t rng;
    unsigned seed;
    int step;
} model_t;

#define MCHECK(m, c) do { if (!(c)) { fprintf(stderr, "scheduler selftest: " \
    "seed %u, copies %d, attempts %d, step %d: %s:%d: %s\n", (m)->seed, \
    (m)->max_copies, (m)->max_attempts, (m)->step, __FILE__, __LINE__, #c); \
    return -1; } } while (0)

static uint32_t m_rand(model_t *m, uint32_t n)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 17;
    m->rng ^= m->rng << 5;
    return m->rng % n;
}

static uint64_t m_hash(uint64_t id)
{
    return id * 2654435761u + 1;
}

static int m_resolved(const model_t *m, uint64_t id)
{
    return m->committed[id] || m->poisoned[id];
}

static int m_generate(model_t *m)
{
    jm_task_t *head = NULL, *tail = NULL;
    uint32_t k = 1 + m_rand(m, 20);
    for (uint32_t i = 0; i < k && m->generated < M_TASKS; i++) {
        uint64_t id = m->generated++;
        jm_task_t *t = calloc(1, sizeof *t + id % 7);
        MCHECK(m, t);
        t->id = id;
        t->len = (uint32_t)(id % 7);
        t->hash = m_hash(id);
        jm_sched_task_init(t);
        if (tail)
            tail->next = t;
        else
            head = t;
        tail = t;
    }
    jm_sched_add_fresh(m->s, head, tail);
    m->gen_done = m->generated == M_TASKS;
    m->gen_waiting = (int)m_rand(m, 2);
    jm_sched_gen_state(m->s, m->gen_done, m->gen_waiting);
    return 0;
}

static int m_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The lateness bound by the model's own reckoning: [*lo, *hi], or both
 * JM_LATE_NEVER. */
static void m_bound(model_t *m, int64_t *lo, int64_t *hi)
{
    int64_t v[JM_LATE_WINDOW];
    uint64_t ring = 0;
    int n = m->ntimes < JM_LATE_WINDOW ? m->ntimes : JM_LATE_WINDOW;
    for (uint64_t id = 0; id < m->generated; id++)
        ring += m->in_ring[id] && !m_resolved(m, id);
    *lo = *hi = JM_LATE_NEVER;
    if (!n || (double)m->finished < JM_LATE_QUANTILE * (double)(m->finished + ring))
        return;
    memcpy(v, m->times + m->ntimes - n, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, m_cmp);
    int64_t med = v[(n - 1) / 2];
    *lo = (int64_t)(JM_LATE_MULTIPLIER * (double)med);
    *hi = (int64_t)(JM_LATE_MULTIPLIER * (double)(med + med / 8 + 1));
    *lo = *lo > JM_LATE_FLOOR_MS ? *lo : JM_LATE_FLOOR_MS;
    *hi = *hi > JM_LATE_FLOOR_MS ? *hi : JM_LATE_FLOOR_MS;
}

/* Whether x holds a copy of id the JM knows of. */
static int m_holds(const mtm_t *x, uint64_t id)
{
    for (int j = 0; j < x->nheld; j++)
        if (x->held[j].id == id && x->held[j].known)
            return 1;
    return 0;
}

/* The speculation rule, for a pick of n tasks with room for room: the
 * copies picked are of late tasks, and if room is left, no late task x
 * could take was left out. */
static int m_check_copies(model_t *m, mtm_t *x, jm_task_t *const *p, size_t n,
                          int room)
{
    int64_t lo, hi, after = jm_sched_late_after(m->s);
    int steps = !jm_sched_has_fresh(m->s) && (m->gen_done || m->gen_waiting) &&
                m->max_copies > 1;
    m_bound(m, &lo, &hi);
    MCHECK(m, after >= lo && after <= hi);
    for (size_t i = 0; i < n; i++)
        if (p[i]->copies > 0)          /* a copy of a task already out */
            MCHECK(m, steps && m->now - m->last_send[p[i]->id] >= after);
    if ((int)n >= room || !steps || after == JM_LATE_NEVER)
        return 0;
    for (uint64_t id = 0; id < m->generated; id++) {
        const jm_task_t *t = jm_sched_task(m->s, id);
        int picked = 0;
        if (!t || t->copies == 0 || t->copies >= m->max_copies || m_holds(x, id) ||
            m->now - m->last_send[id] < after)
            continue;
        for (size_t i = 0; i < n; i++)
            picked |= p[i]->id == id;
        MCHECK(m, picked);             /* late, and x had room for it */
    }
    return 0;
}

static int m_alive(const model_t *m)
{
    int n = 0;
    for (int i = 0; i < m->ntms; i++)
        n += m->tms[i].tm.alive;
    return n;
}

static void m_join(model_t *m, mtm_t *x)
{
    x->tm.alive = 1;
    x->zombie = 0;
    jm_sched_joined(m->s, &x->tm, x->nheld);
}

static int m_serve(model_t *m, mtm_t *x)
{
    int room = x->tm.slots - x->tm.outstanding;
    jm_sched_clock(m->s, m->now);
    size_t n = jm_sched_pick(m->s, &x->tm, 1 << 20, m_alive(m) > 1);
    jm_task_t *const *p = jm_sched_picked(m->s);
    MCHECK(m, (int)n <= room);
    for (size_t i = 0; i < n; i++) {
        MCHECK(m, !m_resolved(m, p[i]->id));
        MCHECK(m, p[i]->copies < m->max_copies);
        for (size_t j = 0; j < i; j++)
            MCHECK(m, p[j] != p[i]);
    }
    for (size_t i = 0; i < n; i++)
        m->in_ring[p[i]->id] = 1;
    if (m_check_copies(m, x, p, n, room) != 0)
        return -1;
    if (m_rand(m, 8) == 0) {           /* the send failed */
        jm_sched_unsent(m->s, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        MCHECK(m, x->nheld < 2 * M_HOLD);
        x->held[x->nheld].id = p[i]->id;
        x->held[x->nheld++].known = 1;
        m->nsent[p[i]->id]++;
        m->last_send[p[i]->id] = m->now;
    }
    m->sent += n;
    jm_sched_sent(m->s, &x->tm, n);
    return 0;
}

/* One record from TM x about one of its copies, checked against the
 * model. */
static int m_record(model_t *m, mtm_t *x, uint64_t id, uint32_t status)
{
    uint64_t hash;
    int was = m_resolved(m, id);
    jm_sched_clock(m->s, m->now);
    jm_rec_outcome_t o = jm_sched_record(m->s, &x->tm, id, status, &hash);
    switch (o) {
    case JM_REC_COMMIT:
        MCHECK(m, !was && status == SPITS_ST_OK && hash == m_hash(id));
        m->committed[id]++;
        m->finished++;
        if (m->nsent[id] == 1)        /* one copy ever: a clean time */
            m->times[m->ntimes++] = m->now - m->last_send[id];
        break;
    case JM_REC_DUPLICATE:
        MCHECK(m, was && status == SPITS_ST_OK);
        break;
    case JM_REC_LATE:
        MCHECK(m, was && status != SPITS_ST_OK);
        break;
    case JM_REC_RETURNED:
        MCHECK(m, !was && status == SPITS_ST_RETURNED);
        break;
    case JM_REC_RETRY:
    case JM_REC_POISON:
        MCHECK(m, !was && status != SPITS_ST_OK && status != SPITS_ST_RETURNED);
        m->fails[id]++;
        MCHECK(m, (o == JM_REC_POISON) == (m->fails[id] == m->max_attempts));
        m->poisoned[id] = o == JM_REC_POISON;
        break;
    default:
        MCHECK(m, !"a record of a copy that was sent is never unknown");
    }
    return 0;
}

/* TM x answers k of its copies, chosen at random, in one message. */
static int m_reply(model_t *m, mtm_t *x, int k, int ok_percent)
{
    jm_sched_credit(m->s, &x->tm, (uint64_t)k);
    for (int i = 0; i < k; i++) {
        int at = (int)m_rand(m, (uint32_t)x->nheld);
        uint64_t id = x->held[at].id;
        /* The JM knows which TMs hold a task, not which copy: a TM back
         * with an old copy may be sent the task again, and its first
         * record of that task ends what the JM knows of both. */
        for (int j = 0; j < x->nheld && !x->held[at].known; j++)
            if (x->held[j].id == id && x->held[j].known)
                x->held[j].known = 0;
        x->held[at] = x->held[--x->nheld];
        uint32_t r = m_rand(m, 100), status =
            (int)r < ok_percent ? SPITS_ST_OK
            : r % 3 == 0 ? SPITS_ST_RETURNED
            : r % 3 == 1 ? SPITS_ST_FAILED : SPITS_ST_CRASHED;
        if (m_record(m, x, id, status) != 0)
            return -1;
    }
    /* The cancels: each names a copy that TM holds, of a committed task
     * (the TM answers it later like any copy: one record). */
    size_t nc;
    jm_sched_cancel_t *c = jm_sched_take_cancels(m->s, &nc);
    for (size_t i = 0; i < nc; i++) {
        MCHECK(m, c[i].slot >= 0 && c[i].slot < m->ntms);
        MCHECK(m, m->committed[c[i].id] == 1);
        mtm_t *h = &m->tms[c[i].slot];
        int found = 0;
        for (int j = 0; j < h->nheld; j++)
            found |= h->held[j].id == c[i].id && h->held[j].known;
        MCHECK(m, found);
    }
    return 0;
}

/* The JM loses TM x: what it requeues is exactly the known copies of
 * unresolved tasks; the TM is dead, or a zombie that may come back. */
static int m_lose(model_t *m, mtm_t *x)
{
    size_t want = 0;
    for (int j = 0; j < x->nheld; j++)
        if (x->held[j].known && !m_resolved(m, x->held[j].id))
            want++;
    x->tm.alive = 0;
    size_t n = jm_sched_lost(m->s, &x->tm);
    MCHECK(m, n == want && x->tm.outstanding == 0);
    for (int j = 0; j < x->nheld; j++)
        x->held[j].known = 0;
    if (m_rand(m, 2))
        x->nheld = 0;                 /* dead: its copies never come back */
    else
        x->zombie = 1;
    return 0;
}

static int m_invariants(model_t *m)
{
    MCHECK(m, !jm_sched_broken(m->s));
    MCHECK(m, m->st.sent == m->sent);
    for (int i = 0; i < m->ntms; i++) {
        const mtm_t *x = &m->tms[i];
        if (x->tm.alive)
            MCHECK(m, x->tm.outstanding == x->nheld && x->nheld <= x->tm.slots);
    }
    for (uint64_t id = 0; id < m->generated; id++) {
        const jm_task_t *t = jm_sched_task(m->s, id);
        MCHECK(m, !t || !m_resolved(m, id));
        MCHECK(m, m->committed[id] <= 1);
        if (!t)
            continue;
        int known = 0;
        for (int i = 0; i < m->ntms; i++)
            for (int j = 0; j < m->tms[i].nheld; j++)
                known += m->tms[i].held[j].id == id && m->tms[i].held[j].known;
        MCHECK(m, t->copies == known && t->copies <= m->max_copies);
        MCHECK(m, t->copies > 0 || t->in_retry);    /* never lost */
    }
    return 0;
}

static mtm_t *m_any(model_t *m, int alive)
{
    if (!m->ntms)
        return NULL;
    mtm_t *x = &m->tms[m_rand(m, (uint32_t)m->ntms)];
    return x->tm.alive == alive ? x : NULL;
}

/* One random step. */
static int m_step(model_t *m)
{
    mtm_t *x;
    m->now += m_rand(m, 40);
    /* Serves outnumber answers, and answers are small, so copies pile up
     * on tasks and max_copies binds. */
    switch (m_rand(m, 16)) {
    case 0:
        return m->generated < M_TASKS ? m_generate(m) : 0;
    case 1:
        if (m->ntms < M_TMS) {
            x = &m->tms[m->ntms];
            memset(x, 0, sizeof *x);
            x->tm.slot = m->ntms++;
            x->tm.slots = 1 + (int)m_rand(m, 8);
            m_join(m, x);
        } else if ((x = m_any(m, 0)) && x->zombie) {
            m_join(m, x);             /* back, with what it held */
        }
        return 0;
    case 2:
        return (x = m_any(m, 1)) && m_rand(m, 3) == 0 ? m_lose(m, x) : 0;
    case 3: case 4: case 5: case 6: case 7: case 8: case 9:
        return (x = m_any(m, 1)) ? m_serve(m, x) : 0;
    default:
        x = &m->tms[m->ntms ? m_rand(m, (uint32_t)m->ntms) : 0];
        if (!m->ntms || !x->nheld || (!x->tm.alive && !x->zombie) ||
            (x->tm.slot == 0 && m_rand(m, 4)))   /* a slow TM: stragglers */
            return 0;
        return m_reply(m, x, 1 + (int)m_rand(m, x->nheld < 3 ? (uint32_t)x->nheld : 3), 70);
    }
}

/* After the random steps: every TM back, tasks served and answered
 * (mostly with results) until every task is resolved. */
static int m_drain(model_t *m)
{
    while (m->generated < M_TASKS)
        if (m_generate(m) != 0)
            return -1;
    for (int round = 0; round < 100000; round++) {
        int open = 0;
        for (uint64_t id = 0; id < M_TASKS; id++)
            open += !m_resolved(m, id);
        if (!open)
            return 0;
        m->now += 50;
        for (int i = 0; i < m->ntms; i++) {
            mtm_t *x = &m->tms[i];
            if (!x->tm.alive)
                m_join(m, x);
            if (m_serve(m, x) != 0 ||
                (x->nheld && m_reply(m, x, (x->nheld + 1) / 2, 90) != 0) ||
                m_invariants(m) != 0)
                return -1;
        }
    }
    MCHECK(m, !"the tasks never all resolved");
}

static int m_run(unsigned seed, int max_copies, int max_attempts)
{
    model_t *m = calloc(1, sizeof *m);
    int rc = -1;
    if (!m)
        return -1;
    m->seed = seed;
    m->rng = seed * 2654435761u + 1;
    m->max_copies = max_copies;
    m->max_attempts = max_attempts;
    m->s = jm_sched_new(max_copies, max_attempts, &m->st);
    if (!m->s)
        goto out;
    for (m->step = 0; m->step < 3000; m->step++)
        if (m_step(m) != 0 || m_invariants(m) != 0)
            goto out;
    if (m_drain(m) != 0)
        goto out;
    uint64_t poisoned = 0;
    for (uint64_t id = 0; id < M_TASKS; id++) {
        if (m->committed[id] + m->poisoned[id] != 1) {
            fprintf(stderr, "scheduler selftest: seed %u: task %llu resolved "
                    "%d times\n", seed, (unsigned long long)id,
                    m->committed[id] + m->poisoned[id]);
            goto out;
        }
        poisoned += (uint64_t)m->poisoned[id];
    }
    if (m->st.poison != poisoned || jm_sched_in_flight(m->s) != 0 ||
        jm_sched_has_fresh(m->s) || jm_sched_low(m->s) != M_TASKS ||
        !jm_sched_exhausted(m->s)) {
        fprintf(stderr, "scheduler selftest: seed %u: not empty at the end\n", seed);
        goto out;
    }
    rc = 0;
out:
    jm_sched_destroy(&m->s);
    free(m);
    return rc;
}

/* d picks at time now: exactly the tasks in want[0..nwant-1], which then
 * go out. */
static int d_pick(jm_sched_t *s, jm_tm_t *t, int64_t now, const uint64_t *want,
                  size_t nwant)
{
    jm_sched_clock(s, now);
    size_t n = jm_sched_pick(s, t, 1 << 20, 1);
    jm_task_t *const *p = jm_sched_picked(s);
    int ok = n == nwant;
    for (size_t i = 0; ok && i < n; i++)
        ok = p[i]->id == want[i];
    jm_sched_sent(s, t, n);
    if (!ok)
        fprintf(stderr, "scheduler selftest: at %lld ms, TM %d was sent %zu "
                "task(s), not %zu as the speculation rule says\n",
                (long long)now, t->slot, n, nwant);
    return ok ? 0 : -1;
}

/* The case both directed tests start from: 20 tasks of about a second;
 * a gets 19 at 0 ms and the last at 900 ms, and returns 16 at 1000 ms.
 * task[] gets the tasks. NULL if it went wrong (said). */
static jm_sched_t *directed_start(jm_disp_stats_t *st, jm_tm_t *a, jm_tm_t *b,
                                  jm_tm_t *c, jm_task_t **task)
{
    static const uint64_t last[] = {19};
    uint64_t all[19], hash;
    jm_sched_t *s = jm_sched_new(2, 3, st);
    jm_task_t *head = NULL, *tail = NULL;

    memset(st, 0, sizeof *st);
    memset(a, 0, sizeof *a), memset(b, 0, sizeof *b), memset(c, 0, sizeof *c);
    for (uint64_t id = 0; s && id < 20; id++) {
        jm_task_t *t = task[id] = calloc(1, sizeof *t);
        if (!t) {
            jm_sched_add_fresh(s, head, tail);   /* (freed with s) */
            jm_sched_destroy(&s);
            fprintf(stderr, "scheduler selftest: out of memory\n");
            return NULL;
        }
        t->id = id;
        jm_sched_task_init(t);
        *(tail ? &tail->next : &head) = t;
        tail = t;
        if (id < 19)
            all[id] = id;
    }
    if (!s)
        return NULL;
    jm_sched_add_fresh(s, head, tail);
    jm_sched_gen_state(s, 1, 0);
    a->slot = 0, b->slot = 1, c->slot = 2;
    a->slots = 19, b->slots = c->slots = 8;
    a->alive = b->alive = c->alive = 1;
    int ok = d_pick(s, a, 0, all, 19) == 0 && (a->slots = 20, d_pick(s, a, 900, last, 1)) == 0;
    jm_sched_clock(s, 1000);
    jm_sched_credit(s, a, 16);
    for (uint64_t id = 0; ok && id < 16; id++)
        ok = jm_sched_record(s, a, id, SPITS_ST_OK, &hash) == JM_REC_COMMIT;
    if (!ok)
        jm_sched_destroy(&s);
    return s;
}

/* The rule on one case (directed_start): three sent at 0 ms and one at
 * 900 ms are out. None is late (1.5 s) at 1400 ms; at 1600 ms the three
 * are, and are the ones copied; the fourth is copied only once it is
 * late too, at 2434 ms (the median, 1000 ms, counts as its bucket's top,
 * 1023 ms). */
static int sched_directed(void)
{
    static const uint64_t three[] = {16, 17, 18}, fourth[] = {19};
    jm_disp_stats_t st;
    jm_tm_t a, b, c;
    jm_task_t *task[20];
    int rc = -1;
    jm_sched_t *s = directed_start(&st, &a, &b, &c, task);

    if (s && jm_sched_late_after(s) == 1534 && d_pick(s, &b, 1400, NULL, 0) == 0 &&
        d_pick(s, &b, 1600, three, 3) == 0 && d_pick(s, &c, 1700, NULL, 0) == 0 &&
        d_pick(s, &c, 2433, NULL, 0) == 0 && d_pick(s, &c, 2434, fourth, 1) == 0)
        rc = 0;
    if (rc)
        fprintf(stderr, "scheduler selftest: the directed speculation case failed\n");
    jm_sched_destroy(&s);
    return rc;
}

/* The same with the copies' parts (backlog.h): of the three, 17's part
 * still waits in the JM and 18's left it at 1200 ms. At 1600 ms only 16
 * is late; 17 is once the JM let go of the bytes past its stuck_at (at
 * 1650 ms), picked by a TM whose fruitless scan at 1620 ms is looked at
 * again one tick after (1720 ms); 18 at 2734 ms, after 19. */
static int sched_directed_parts(void)
{
    static const uint64_t first[] = {16}, second[] = {17}, third[] = {18}, fourth[] = {19};
    jm_disp_stats_t st;
    jm_tm_t a, b, c;
    jm_task_t *task[20];
    int rc = -1;
    jm_sched_t *s = directed_start(&st, &a, &b, &c, task);

    if (s) {
        /* (17's part waits: a reference of libzmq's) */
        atomic_store(&task[17]->refs, 2);
        task[17]->stuck_at = 100;
        atomic_store(&task[18]->left_ms, 1200);
        jm_sched_set_backlog(s, 50, 0);
    }
    if (s && d_pick(s, &b, 1400, NULL, 0) == 0 && d_pick(s, &b, 1600, first, 1) == 0 &&
        d_pick(s, &c, 1620, NULL, 0) == 0) {
        jm_sched_set_backlog(s, 100, 0);
        if (d_pick(s, &c, 1650, NULL, 0) == 0 && d_pick(s, &c, 1719, NULL, 0) == 0 &&
            d_pick(s, &c, 1720, second, 1) == 0 && d_pick(s, &c, 2433, NULL, 0) == 0 &&
            d_pick(s, &c, 2434, fourth, 1) == 0 && d_pick(s, &c, 2733, NULL, 0) == 0 &&
            d_pick(s, &c, 2734, third, 1) == 0)
            rc = 0;
    }
    if (rc)
        fprintf(stderr, "scheduler selftest: the directed case with parts failed\n");
    jm_sched_destroy(&s);
    return rc;
}

int jm_sched_selftest(void)
{
    if (sched_directed() != 0 || sched_directed_parts() != 0)
        return -1;

    static const int configs[][2] = {{1, 1}, {2, 3}, {3, 2}, {JM_MAX_COPIES, 3}};
    for (size_t c = 0; c < sizeof configs / sizeof *configs; c++)
        for (unsigned seed = 1; seed <= 25; seed++)
            if (m_run(seed, configs[c][0], configs[c][1]) != 0)
                return -1;
    return 0;
}
#endif
