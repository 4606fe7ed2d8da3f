/*
 * scheduler.c - the scheduler of a hop that serves TMs (see scheduler.h for what
 * it decides). Its state is struct sched (scheduler_int.h); the third pick
 * step, copies of late tasks, is schedlate.c's.
 *
 * Per-task state lives in the task itself (sched_task_t: copies,
 * holders, attempts, in_retry, out_ms, copy_ms); per-TM credit in the
 * TM's sched_peer_t, in its owner's table entry (slots, outstanding). Each TM slot has a
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
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "lateness.h"
#include "retryq.h"
#include "ring.h"
#include "scheduler.h"
#include "scheduler_int.h"
#include "schedlate.h"
#include "util.h"
#include "wire.h"

sched_t *sched_new(int max_copies, int max_attempts, sched_stats_t *st)
{
    sched_t *s = calloc(1, sizeof *s);
    if (!s || !(s->ring = spits_ring_new())) {
        free(s);
        return NULL;
    }
    s->max_copies = max_copies;
    s->max_attempts = max_attempts;
    s->st = st;
    return s;
}

/* A task goes back to its owner (NULL: nothing). */
static void release(sched_t *s, sched_task_t *task)
{
    if (!task)
        return;
    if (s->hooks.release)
        s->hooks.release(s->hooks.release_arg, task);
    else
        free(task);
}

static void free_tasks(sched_t *s)
{
    for (size_t i = 0; i < s->nheld; i++)
        s->held[i].n = 0;
    if (s->ring)
        for (uint64_t id = spits_ring_low(s->ring); id < spits_ring_next(s->ring); id++)
            release(s, spits_ring_take(s->ring, id));
    while (s->fresh) {
        sched_task_t *next = s->fresh->next;
        release(s, s->fresh);
        s->fresh = next;
    }
    s->fresh_tail = NULL;
    if (s->hooks.flush)
        s->hooks.flush(s->hooks.release_arg);
}

void sched_destroy(sched_t **sp)
{
    sched_t *s = *sp;
    if (!s)
        return;
    free_tasks(s);
    spits_ring_destroy(&s->ring);
    retryq_free(&s->retry);
    for (size_t i = 0; i < s->nheld; i++)
        free(s->held[i].tasks);
    free(s->held);
    free(s->picked);
    free(s->cancels);
    free(s);
    *sp = NULL;
}

int sched_reset(sched_t *s)
{
    free_tasks(s);
    spits_ring_destroy(&s->ring);
    retryq_clear(&s->retry);
    s->gen_done = s->gen_waiting = 0;
    s->npicked = s->ncancel = 0;
    s->freed_bytes = s->taken_bytes = 0;
    s->fresh_next = 0;
    s->finished = 0;
    s->quiet = 0;
    late_reset(&s->late);
    s->version++;
    s->ring = spits_ring_new();
    return s->ring ? 0 : -1;
}

void sched_set_max_copies(sched_t *s, int max_copies)
{
    s->max_copies = max_copies;
    s->version++;   /* (more copies may make more candidates) */
}

int sched_broken(const sched_t *s)
{
    return s->broken;
}

/* --- task copies ------------------------------------------------------- */

/* Slot's list, grown to take one more. NULL: no memory. */
static held_t *held_room(sched_t *s, int slot)
{
    if ((size_t)slot < s->nheld && s->held[slot].n < s->held[slot].cap)
        return &s->held[slot];
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
static void add_holder(sched_t *s, sched_task_t *task, int slot)
{
    held_t *h = held_room(s, slot);
    if (!h)
        s->broken = 1;
    for (int i = 0; i < SCHED_MAX_COPIES; i++)
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
static void held_unlink(sched_t *s, sched_task_t *task, int i)
{
    if ((size_t)task->holders[i] >= s->nheld)
        return;                         /* never listed (out of memory) */
    held_t *h = &s->held[task->holders[i]];
    size_t at = task->held_ix[i];
    if (at >= h->n || h->tasks[at] != task)
        return;
    sched_task_t *last = h->tasks[--h->n];
    h->tasks[at] = last;
    for (int k = 0; k < SCHED_MAX_COPIES; k++)
        if (last->holders[k] == task->holders[i]) {
            last->held_ix[k] = (uint32_t)at;
            break;   /* (a TM holds at most one copy of a task) */
        }
}

static int drop_holder(sched_t *s, sched_task_t *task, int slot)
{
    for (int i = 0; i < SCHED_MAX_COPIES; i++)
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
static void retry_push(sched_t *s, sched_task_t *task)
{
    if (task->in_retry)
        return;
    if (retryq_push(&s->retry, task->id) != 0) {
        s->broken = 1;
        return;
    }
    task->in_retry = 1;
    s->version++;
}

/* The task's other copies are no longer needed. A note that cannot be
 * kept costs nothing but a duplicate result. */
static void cancel_note(sched_t *s, const sched_task_t *task)
{
    for (int i = 0; i < SCHED_MAX_COPIES; i++) {
        if (task->holders[i] < 0)
            continue;
        if (s->ncancel == s->capcancel) {
            size_t cap = s->capcancel ? s->capcancel * 2 : 64;
            sched_cancel_t *c = realloc(s->cancels, cap * sizeof *c);
            if (!c)
                return;
            s->cancels = c;
            s->capcancel = cap;
        }
        s->cancels[s->ncancel++] = (sched_cancel_t){task->holders[i], task->id, task->hash};
    }
}

/* Out of the ring, its bytes freed. */
static void resolve(sched_t *s, sched_task_t *task)
{
    /* (copies counts the holders: most tasks have none left here) */
    for (int i = 0; task->copies && i < SCHED_MAX_COPIES; i++)
        if (task->holders[i] >= 0)
            held_unlink(s, task, i);
    spits_ring_take(s->ring, task->id);
    s->freed_bytes += task->len;
    release(s, task);
}

/* --- tasks in ---------------------------------------------------------- */

void sched_add_fresh(sched_t *s, sched_task_t *head, sched_task_t *tail)
{
    if (!head)
        return;
    if (s->fresh_tail)
        s->fresh_tail->next = head;
    else
        s->fresh = head;
    s->fresh_tail = tail;
}

int sched_has_fresh(const sched_t *s)
{
    return s->fresh != NULL;
}

int sched_has_retries(const sched_t *s)
{
    return s->retry.count > 0;
}

int sched_holds(const sched_t *s, int slot, uint64_t id)
{
    const sched_task_t *task = s->ring ? spits_ring_get(s->ring, id) : NULL;
    if (!task)
        return -1;
    for (int i = 0; i < SCHED_MAX_COPIES; i++)
        if (task->holders[i] == slot)
            return 1;
    return 0;
}

/* Whether every copy of task is on a quiet TM: counted at the lowest of
 * their slots, so once. */
static int stalled_at(const sched_t *s, const sched_task_t *task, int slot)
{
    int first = -1;
    for (int i = 0; i < SCHED_MAX_COPIES; i++) {
        int h = task->holders[i];
        if (h < 0)
            continue;
        if ((size_t)h >= s->nheld || !s->held[h].quiet)
            return 0;
        first = first < 0 || h < first ? h : first;
    }
    return first == slot;
}

void sched_quiet(sched_t *s, int (*is_quiet)(void *arg, int slot), void *arg)
{
    uint64_t stalled = 0;
    for (size_t k = 0; k < s->nheld; k++)
        s->held[k].quiet = s->held[k].n && is_quiet(arg, (int)k);
    for (size_t k = 0; k < s->nheld; k++)
        for (size_t j = 0; s->held[k].quiet && j < s->held[k].n; j++)
            stalled += (uint64_t)stalled_at(s, s->held[k].tasks[j], (int)k);
    s->quiet = stalled;
}

void sched_gen_state(sched_t *s, int done, int waiting)
{
    s->gen_done = done;
    s->gen_waiting = waiting;
}

int sched_exhausted(const sched_t *s)
{
    return s->gen_done && !s->fresh;
}

void sched_set_hooks(sched_t *s, const sched_hooks_t *hooks)
{
    s->hooks = *hooks;
}

/* --- tasks out --------------------------------------------------------- */

/* 1. Tasks with no copy out. */
static size_t pick_retries(sched_t *s, sched_peer_t *t, size_t room, size_t *bytes,
                           size_t max_bytes, int others)
{
    size_t n = 0;
    for (size_t k = s->retry.count; k > 0 && n < room && *bytes < max_bytes; k--) {
        sched_task_t *task = spits_ring_get(s->ring, retryq_pop(&s->retry));
        if (!task)
            continue;                       /* resolved meanwhile */
        task->in_retry = 0;
        /* (every push needs it, and only here is a listed task sent) */
        assert(task->copies == 0);
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
static size_t pick_fresh(sched_t *s, size_t n, size_t room, size_t *bytes,
                         size_t max_bytes)
{
    while (n < room && s->fresh && *bytes < max_bytes) {
        sched_task_t *task = s->fresh;
        int early = s->hooks.early && s->hooks.early(s->hooks.early_arg, task);
        if (!early && (picked_add(s, n, task) != 0 ||
                       spits_ring_put(s->ring, task->id, task) != 0))
            break;                          /* stays fresh */
        s->fresh = task->next;
        if (!s->fresh)
            s->fresh_tail = NULL;
        task->next = NULL;
        s->fresh_next = task->id + 1;
        s->taken_bytes += task->len;
        if (early) {
            s->freed_bytes += task->len;
            release(s, task);
            continue;
        }
        task->out_ms = s->now;
        n++;
        *bytes += task->len;
    }
    return n;
}

size_t sched_pick(sched_t *s, sched_peer_t *t, size_t max_n, size_t max_bytes,
                  int others)
{
    size_t room = (size_t)credit_room(&t->credit);
    room = room < max_n ? room : max_n;
    size_t bytes = 0, n = 0;

    if (!s->ring || !room)
        return s->npicked = 0;
    n = pick_retries(s, t, room, &bytes, max_bytes, others);
    n = pick_fresh(s, n, room, &bytes, max_bytes);
    /* (a copy's address goes out: bytes itself stays in a register in
     * steps 1 and 2, where it counts every task) */
    size_t late_bytes = bytes;
    n = schedlate_pick(s, t, n, room, &late_bytes, max_bytes);
    return s->npicked = n;
}

void sched_clock(sched_t *s, int64_t now_ms)
{
    s->now = now_ms;
}

void sched_set_backlog(sched_t *s, uint64_t released, int idle)
{
    s->released = released;
    s->send_idle = idle;
}

int64_t sched_late_after(const sched_t *s)
{
    return s->ring ? sched_bound(s) : LATE_NEVER;
}

sched_task_t *const *sched_picked(const sched_t *s)
{
    return s->picked;
}

void sched_sent(sched_t *s, sched_peer_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sched_task_t *task = s->picked[i];
        if (task->sent)
            s->st->resent++;
        task->sent += task->sent < UINT8_MAX;
        task->copy_ms = s->now;
        task->quick = credit_quick(&t->credit, i);
        add_holder(s, task, t->slot);
        s->task_bytes_sent += task->len;
    }
    s->st->sent += n;
    t->sent += n;
    credit_spend(&t->credit, n);
    s->npicked = 0;
}

/* Picked tasks from..n-1 did not go: those with no copy out run again. */
static void unsent_from(sched_t *s, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++)
        if (s->picked[i]->copies == 0)
            retry_push(s, s->picked[i]);
    s->npicked = 0;
}

void sched_sent_part(sched_t *s, sched_peer_t *t, size_t sent)
{
    size_t n = s->npicked;
    sched_sent(s, t, sent);
    unsent_from(s, sent, n);
}

void sched_unsent(sched_t *s, size_t n)
{
    unsent_from(s, 0, n);
}

/* --- records back ------------------------------------------------------ */

void sched_credit(sched_t *s, sched_peer_t *t, uint64_t count)
{
    (void)s;
    if (t)
        credit_back(&t->credit, count);
}

/* A failed, crashed or timed-out run: retried, or past max_attempts given
 * up (the task is freed). */
static sched_outcome_t on_failed_run(sched_t *s, sched_peer_t *t, sched_task_t *task,
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
        return SCHED_REC_RETRY;
    }
    s->st->poison++;
    resolve(s, task);
    return SCHED_REC_POISON;
}

/* A copy that ran on arrival came back after one round trip and one run:
 * the least such time over a window of them is the TM's RTT + T, which
 * sizes its slots (serve.c). A window, not all time: a route that got
 * longer is seen within SCHED_TURN_WINDOW copies. */
static void note_turnaround(sched_peer_t *t, int64_t ms)
{
    if (t->turn_n == 0 || ms < t->turn_win)
        t->turn_win = ms;
    if (++t->turn_n >= SCHED_TURN_WINDOW) {
        t->turn_ms = t->turn_win;
        t->turn_n = 0;
    } else if (t->turn_ms == 0 || t->turn_win < t->turn_ms) {
        t->turn_ms = t->turn_win;
    }
}

sched_outcome_t sched_record(sched_t *s, sched_peer_t *t, uint64_t id,
                                 uint32_t status, int foreign, uint64_t *hash)
{
    sched_task_t *task = s->ring ? spits_ring_get(s->ring, id) : NULL;

    *hash = 0;
    if (!task) {
        if (!s->ring || id >= spits_ring_next(s->ring))
            return SCHED_REC_UNKNOWN;
        if (status != SPITS_ST_OK)
            return SCHED_REC_LATE;
        s->st->duplicates++;
        return SCHED_REC_DUPLICATE;
    }
    /* A foreign record answers none of the copies out, its sender's
     * included: only a result of it counts (scheduler.h). */
    if (foreign && status != SPITS_ST_OK)
        return SCHED_REC_FOREIGN;
    /* (nor is another TM's copy taken for a record from a TM that holds
     * none, one back with a copy the hop took back when it lost it) */
    int held = !foreign && t && drop_holder(s, task, t->slot);
    s->rec_start_ms = task->copy_ms;
    s->rec_len = task->len;
    if (status == SPITS_ST_OK) {
        *hash = task->hash;
        s->finished++;
        if (t && task->sent == 1) {     /* one copy ever: its time is clean */
            /* (from when it left the hop: a wait in the hop's own send
             * backlog is neither the TM's lateness nor its round trip) */
            int64_t took = s->now - copy_start(s, task);
            took = took > 0 ? took : 0;
            late_sample(&s->late, took);
            if (task->quick && held)    /* its own copy's round trip */
                note_turnaround(t, took);
        }
        if (t)
            t->done++;
        else
            s->st->done_evicted++;   /* its sender's entry is gone */
        if (task->copies)
            cancel_note(s, task);
        resolve(s, task);
        return SCHED_REC_COMMIT;
    }
    s->version++;                       /* a copy fewer: a candidate again */
    if (status != SPITS_ST_RETURNED)
        return on_failed_run(s, t, task, status);
    s->st->returned++;
    if (task->copies == 0)
        retry_push(s, task);
    return SCHED_REC_RETURNED;
}

void sched_recorded(const sched_t *s, int64_t *start_ms, uint32_t *len)
{
    *start_ms = s->rec_start_ms;
    *len = s->rec_len;
}

sched_cancel_t *sched_take_cancels(sched_t *s, size_t *n)
{
    *n = s->ncancel;
    s->ncancel = 0;
    return s->cancels;
}

/* --- TMs --------------------------------------------------------------- */

void sched_joined(sched_t *s, sched_peer_t *t, long held)
{
    credit_hold(&t->credit, held);
    t->scan_version = 0;
    t->scan_until = 0;
    s->version++;
}

size_t sched_lost(sched_t *s, sched_peer_t *t)
{
    size_t n = 0;
    held_t *h = (size_t)t->slot < s->nheld ? &s->held[t->slot] : NULL;

    credit_gone(&t->credit);
    while (h && h->n) {
        sched_task_t *task = h->tasks[h->n - 1];
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

sched_task_t *const *sched_held(const sched_t *s, const sched_peer_t *t, size_t *n)
{
    if ((size_t)t->slot >= s->nheld) {
        *n = 0;
        return NULL;
    }
    *n = s->held[t->slot].n;
    return s->held[t->slot].tasks;
}

/* --- resolved elsewhere, given back ------------------------------------ */

/* A fresh task goes unsent: its bytes count as taken and freed. */
static void fresh_release(sched_t *s, sched_task_t *task)
{
    s->taken_bytes += task->len;
    s->freed_bytes += task->len;
    release(s, task);
}

/* Takes task out of the fresh list (NULL if it is not there). */
static sched_task_t *fresh_unlink(sched_t *s, uint64_t id)
{
    sched_task_t *prev = NULL;
    for (sched_task_t *task = s->fresh; task; prev = task, task = task->next) {
        if (task->id != id)
            continue;
        *(prev ? &prev->next : &s->fresh) = task->next;
        if (s->fresh_tail == task)
            s->fresh_tail = prev;
        task->next = NULL;
        return task;
    }
    return NULL;
}

int sched_drop(sched_t *s, uint64_t id)
{
    sched_task_t *task = s->ring ? spits_ring_get(s->ring, id) : NULL;
    if (task) {
        cancel_note(s, task);
        resolve(s, task);
        return 1;
    }
    if (!(task = fresh_unlink(s, id)))
        return 0;
    fresh_release(s, task);
    return 1;
}

size_t sched_give_back(sched_t *s)
{
    size_t n = 0;
    while (s->retry.count) {
        sched_task_t *task = s->ring ? spits_ring_get(s->ring, retryq_pop(&s->retry)) : NULL;
        if (!task || !task->in_retry)
            continue;                       /* resolved meanwhile */
        assert(task->copies == 0);          /* (as pick_retries) */
        resolve(s, task);
        n++;
    }
    while (s->fresh) {
        sched_task_t *task = s->fresh;
        s->fresh = task->next;
        task->next = NULL;
        fresh_release(s, task);
        n++;
    }
    s->fresh_tail = NULL;
    return n;
}

/* --- the window -------------------------------------------------------- */

uint64_t sched_low(const sched_t *s)
{
    if (!s->ring)
        return 0;
    /* (past the tasks resolved early too: a run of them 4 windows long
     * would otherwise hold the generator to one task at a time,
     * generator.c) */
    return spits_ring_count(s->ring) ? spits_ring_low(s->ring)
           : s->fresh ? s->fresh->id : s->fresh_next;
}

uint64_t sched_freed_bytes(const sched_t *s)
{
    return s->freed_bytes;
}

uint64_t sched_taken_bytes(const sched_t *s)
{
    return s->taken_bytes;
}

uint64_t sched_mean_task_bytes(const sched_t *s)
{
    return s->st->sent ? s->task_bytes_sent / s->st->sent : 0;
}

size_t sched_in_flight(const sched_t *s)
{
    return s->ring ? spits_ring_count(s->ring) : 0;
}

const sched_task_t *sched_task(const sched_t *s, uint64_t id)
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
 * Every record's outcome is the model's, and so are the counters
 * (sched_stats_t, and each TM's done and failed) and the cancels:
 * exactly the other known copies of each task committed. Records also
 * come from TMs that hold no copy of their task, or from no TM known
 * (they resolve, fail or hand back the task like any other, and take no
 * other TM's copy), and flagged foreign, from TMs that may hold a copy
 * themselves (only a result of them counts, which cancels every copy
 * out, the sender's too; they take no copy). A dead TM's slot is reused
 * by a new TM, which inherits none of its copies or credit. A failed task goes back to the
 * TM it failed on only when no other TM is alive. Some picks have a small
 * byte cap: no task is picked once the bytes picked reach it. The
 * early-result hook is asked once of each fresh task as it is picked,
 * and resolves those with a result kept; the window's bytes taken and
 * freed, and its low, follow.
 * Directed tests (after the model) pin one rule each on cases small
 * enough to reckon by hand. tests/mutants.sh checks that the whole
 * self-test fails for each bug in tests/mutants.list.
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
    sched_peer_t tm;
    int alive;            /* to its owner (the JM's peertab entry) */
    mcopy_t held[2 * M_HOLD];
    int nheld;
    int zombie;           /* lost to the JM, may come back with its copies */
    uint64_t sent, done, failed;  /* this incarnation's, as sched_peer_t counts */
} mtm_t;

typedef struct {
    sched_t *s;
    sched_stats_t st;
    mtm_t tms[M_TMS];
    int ntms;
    int committed[M_TASKS], poisoned[M_TASKS], fails[M_TASKS];
    int nsent[M_TASKS], in_ring[M_TASKS], failed_on[M_TASKS];
    int64_t last_send[M_TASKS];
    int64_t now, times[M_TASKS];  /* the clean task times, in order */
    int ntimes, gen_done, gen_waiting;
    int med_n;                    /* ntimes when med, their median, was taken */
    int64_t med;
    uint64_t generated, sent, finished;
    uint64_t ring_open;           /* tasks picked and not resolved */
    uint64_t resent, retried, poison, crashed, timed_out, duplicates, requeued, done_evicted;
    unsigned char early_ok[M_TASKS]; /* a result came early (after --resume) */
    unsigned char asked[M_TASKS];    /* times the early hook was asked */
    int early_bad;                   /* it was asked of a task not fresh */
    uint64_t ring_next;              /* one past the last id picked */
    uint64_t taken_bytes, freed_bytes;
    sched_cancel_t want[2 * M_HOLD * SCHED_MAX_COPIES]; /* cancels due, not taken */
    size_t nwant;
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
    sched_task_t *head = NULL, *tail = NULL;
    uint32_t k = 1 + m_rand(m, 20);
    for (uint32_t i = 0; i < k && m->generated < M_TASKS; i++) {
        uint64_t id = m->generated++;
        sched_task_t *t = calloc(1, sizeof *t + id % 7);
        MCHECK(m, t);
        t->id = id;
        t->len = (uint32_t)(id % 7);
        t->hash = m_hash(id);
        sched_task_init(t);
        m->early_ok[id] = m_rand(m, 12) == 0;
        if (tail)
            tail->next = t;
        else
            head = t;
        tail = t;
    }
    sched_add_fresh(m->s, head, tail);
    m->gen_done = m->generated == M_TASKS;
    m->gen_waiting = (int)m_rand(m, 2);
    sched_gen_state(m->s, m->gen_done, m->gen_waiting);
    return 0;
}

/* The early-result hook: asked once of each fresh task as it is picked,
 * never of one sent; the tasks with a result kept (early_ok) are
 * resolved by it, as the dispatcher commits an adopted result. */
static int m_early(void *arg, const sched_task_t *task)
{
    model_t *m = arg;
    uint64_t id = task->id;
    if (id >= M_TASKS || m->asked[id]++ || m->in_ring[id] || m->nsent[id]) {
        m->early_bad = 1;
        return 0;
    }
    if (!m->early_ok[id])
        return 0;
    m->committed[id] = 1;
    m->taken_bytes += task->len;
    m->freed_bytes += task->len;
    return 1;
}

static int m_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The lateness bound by the model's own reckoning: [*lo, *hi], or both
 * LATE_NEVER. */
static void m_bound(model_t *m, int64_t *lo, int64_t *hi)
{
    int64_t v[LATE_WINDOW];
    uint64_t ring = m->ring_open;
    int n = m->ntimes < LATE_WINDOW ? m->ntimes : LATE_WINDOW;
    *lo = *hi = LATE_NEVER;
    if (!n || (double)m->finished < LATE_QUANTILE * (double)(m->finished + ring))
        return;
    if (m->med_n != m->ntimes) {       /* (sorted again only when it grew) */
        memcpy(v, m->times + m->ntimes - n, (size_t)n * sizeof *v);
        qsort(v, (size_t)n, sizeof *v, m_cmp);
        m->med = v[(n - 1) / 2];
        m->med_n = m->ntimes;
    }
    int64_t med = m->med;
    *lo = (int64_t)(LATE_MULTIPLIER * (double)med);
    *hi = (int64_t)(LATE_MULTIPLIER * (double)(med + med / 8 + 1));
    *lo = *lo > LATE_FLOOR_MS ? *lo : LATE_FLOOR_MS;
    *hi = *hi > LATE_FLOOR_MS ? *hi : LATE_FLOOR_MS;
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
static int m_check_copies(model_t *m, mtm_t *x, sched_task_t *const *p, size_t n,
                          int room, int capped)
{
    int64_t lo, hi, after = sched_late_after(m->s);
    int steps = !sched_has_fresh(m->s) && (m->gen_done || m->gen_waiting) &&
                m->max_copies > 1;
    m_bound(m, &lo, &hi);
    MCHECK(m, after >= lo && after <= hi);
    for (size_t i = 0; i < n; i++)
        if (p[i]->copies > 0)          /* a copy of a task already out */
            MCHECK(m, steps && m->now - m->last_send[p[i]->id] >= after);
    if ((int)n >= room || capped || !steps || after == LATE_NEVER)
        return 0;
    for (uint64_t id = 0; id < m->generated; id++) {
        const sched_task_t *t = sched_task(m->s, id);
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

static mtm_t *m_any(model_t *m, int alive)
{
    if (!m->ntms)
        return NULL;
    mtm_t *x = &m->tms[m_rand(m, (uint32_t)m->ntms)];
    return x->alive == alive ? x : NULL;
}

static int m_alive(const model_t *m)
{
    int n = 0;
    for (int i = 0; i < m->ntms; i++)
        n += m->tms[i].alive;
    return n;
}

/* A new TM in slot (a dead one's, reused). */
static void m_new_tm(model_t *m, mtm_t *x, int slot)
{
    memset(x, 0, sizeof *x);
    x->tm.slot = slot;
    x->tm.credit.slots = 1 + (int)m_rand(m, 8);
    x->tm.credit.workers = (int)m_rand(m, 4);
}

static void m_join(model_t *m, mtm_t *x)
{
    x->alive = 1;
    x->zombie = 0;
    sched_joined(m->s, &x->tm, x->nheld);
}

static int m_serve(model_t *m, mtm_t *x)
{
    int room = x->tm.credit.slots - x->tm.credit.outstanding, others = m_alive(m) > 1;
    size_t max_bytes = m_rand(m, 4) ? 1 << 20 : 1 + m_rand(m, 12), bytes = 0;
    sched_clock(m->s, m->now);
    size_t n = sched_pick(m->s, &x->tm, SIZE_MAX, max_bytes, others);
    sched_task_t *const *p = sched_picked(m->s);
    MCHECK(m, (int)n <= room);
    for (size_t i = 0; i < n; i++) {
        MCHECK(m, bytes < max_bytes);  /* no pick once the cap is reached */
        bytes += p[i]->len;
        MCHECK(m, !m_resolved(m, p[i]->id));
        MCHECK(m, p[i]->copies < m->max_copies);
        /* not where it failed, unless no other TM is alive */
        MCHECK(m, p[i]->copies > 0 || !others || m->failed_on[p[i]->id] != x->tm.slot);
        for (size_t j = 0; j < i; j++)
            MCHECK(m, p[j] != p[i]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t id = p[i]->id;
        if (!m->in_ring[id]) {          /* fresh: offered to the hook first */
            MCHECK(m, m->asked[id] == 1 && !m->early_ok[id]);
            m->taken_bytes += p[i]->len;
            m->ring_next = id + 1 > m->ring_next ? id + 1 : m->ring_next;
        }
        m->ring_open += !m->in_ring[id];
        m->in_ring[id] = 1;
    }
    if (m_check_copies(m, x, p, n, room, bytes >= max_bytes) != 0)
        return -1;
    if (m_rand(m, 8) == 0) {           /* the send failed */
        sched_unsent(m->s, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        MCHECK(m, x->nheld < 2 * M_HOLD);
        x->held[x->nheld].id = p[i]->id;
        x->held[x->nheld++].known = 1;
        m->resent += m->nsent[p[i]->id] > 0;
        m->nsent[p[i]->id]++;
        m->last_send[p[i]->id] = m->now;
    }
    m->sent += n;
    x->sent += n;
    sched_sent(m->s, &x->tm, n);
    return 0;
}

/* What a record of id with status does, by the model's reckoning
 * (foreign: flagged SPITS_REC_FOREIGN). */
static sched_outcome_t m_expect(const model_t *m, uint64_t id, uint32_t status,
                                 int foreign)
{
    if (id < m->generated && !m->in_ring[id] && m->committed[id] && id < m->ring_next)
        return status == SPITS_ST_OK ? SCHED_REC_DUPLICATE : SCHED_REC_LATE;  /* early */
    if (id >= m->generated || !m->in_ring[id])
        return SCHED_REC_UNKNOWN;          /* never picked: not sent yet */
    if (m_resolved(m, id))
        return status == SPITS_ST_OK ? SCHED_REC_DUPLICATE : SCHED_REC_LATE;
    if (status == SPITS_ST_OK)
        return SCHED_REC_COMMIT;
    if (foreign)
        return SCHED_REC_FOREIGN;          /* only its result would count */
    if (status == SPITS_ST_RETURNED)
        return SCHED_REC_RETURNED;
    return m->fails[id] + 1 == m->max_attempts ? SCHED_REC_POISON : SCHED_REC_RETRY;
}

/* One record from TM x (NULL: one the JM does not know) about task id,
 * foreign or not, checked against the model. x's copy (if the record
 * answers one) is gone from its list already: the copies left to cancel
 * are the known ones still listed, a foreign record's sender's too. */
static int m_record(model_t *m, mtm_t *x, uint64_t id, uint32_t status, int foreign)
{
    uint64_t hash = 1;
    sched_outcome_t want = m_expect(m, id, status, foreign);
    sched_clock(m->s, m->now);
    sched_outcome_t o = sched_record(m->s, x ? &x->tm : NULL, id, status, foreign,
                                         &hash);
    MCHECK(m, o == want);
    MCHECK(m, hash == (o == SCHED_REC_COMMIT ? m_hash(id) : 0));
    switch (o) {
    case SCHED_REC_COMMIT:
        m->committed[id]++;
        m->finished++;
        m->ring_open--;
        m->freed_bytes += id % 7;
        if (x && m->nsent[id] == 1)   /* one copy ever: a clean time */
            m->times[m->ntimes++] = m->now - m->last_send[id];
        if (x)
            x->done++;
        else
            m->done_evicted++;
        for (int i = 0; i < m->ntms; i++)
            if (m_holds(&m->tms[i], id)) {
                MCHECK(m, m->nwant < sizeof m->want / sizeof *m->want);
                m->want[m->nwant].slot = i;
                m->want[m->nwant++].id = id;
            }
        break;
    case SCHED_REC_DUPLICATE:
        m->duplicates++;
        break;
    case SCHED_REC_RETRY:
    case SCHED_REC_POISON:
        m->fails[id]++;
        m->retried += o == SCHED_REC_RETRY;
        m->poison += o == SCHED_REC_POISON;
        m->poisoned[id] = o == SCHED_REC_POISON;
        m->ring_open -= o == SCHED_REC_POISON;
        m->freed_bytes += o == SCHED_REC_POISON ? id % 7 : 0;
        m->crashed += status == SPITS_ST_CRASHED;
        m->timed_out += status == SPITS_ST_TIMEOUT;
        if (x) {
            x->failed++;
            m->failed_on[id] = x->tm.slot;
        }
        break;
    default:
        break;
    }
    return 0;
}

/* The cancels noted since the last call: exactly the ones due. */
static int m_cancels(model_t *m)
{
    size_t nc;
    sched_cancel_t *c = sched_take_cancels(m->s, &nc);
    MCHECK(m, nc == m->nwant);
    for (size_t i = 0; i < nc; i++) {
        size_t j = 0;
        while (j < m->nwant && (m->want[j].slot != c[i].slot || m->want[j].id != c[i].id))
            j++;
        MCHECK(m, j < m->nwant);       /* due, and not named twice */
        m->want[j] = m->want[--m->nwant];
    }
    return 0;
}

/* TM x answers k of its copies, chosen at random, in one message. */
static int m_reply(model_t *m, mtm_t *x, int k, int ok_percent)
{
    sched_credit(m->s, x->alive ? &x->tm : NULL, (uint64_t)k);
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
            : r % 4 == 0 ? SPITS_ST_RETURNED
            : r % 4 == 1 ? SPITS_ST_FAILED
            : r % 4 == 2 ? SPITS_ST_CRASHED : SPITS_ST_TIMEOUT;
        if (m_record(m, x, id, status, 0) != 0)
            return -1;
    }
    return m_cancels(m);
}

/* A record of a copy the JM does not know of, of any task, sent or not:
 * flagged foreign (a relay passing on work a TM behind it got elsewhere),
 * from a live TM that may hold a copy of the task itself (often one of
 * those: a relay the JM re-sent it to), or from no TM known; or not
 * flagged, from a live TM that holds no copy of it, or from none. A
 * foreign one takes, credits and cancels nothing of its sender's copy
 * until the task is resolved, and then cancels it as any other. */
static int m_foreign(model_t *m)
{
    static const uint32_t statuses[] = {SPITS_ST_OK, SPITS_ST_OK, SPITS_ST_FAILED,
                                        SPITS_ST_CRASHED, SPITS_ST_TIMEOUT,
                                        SPITS_ST_RETURNED};
    uint64_t id = m_rand(m, (uint32_t)m->generated + 3);
    mtm_t *x = m_rand(m, 3) ? m_any(m, 1) : NULL;
    int foreign = (int)m_rand(m, 2);
    if (foreign && x && x->nheld && m_rand(m, 2))
        id = x->held[m_rand(m, (uint32_t)x->nheld)].id;
    for (int j = 0; !foreign && x && j < x->nheld; j++)
        if (x->held[j].id == id)
            x = NULL;
    if (m_record(m, x, id, statuses[m_rand(m, 6)], foreign) != 0)
        return -1;
    return m_cancels(m);
}

/* The JM loses TM x: what it requeues is exactly the known copies of
 * unresolved tasks; the TM is dead, or a zombie that may come back. */
static int m_lose(model_t *m, mtm_t *x)
{
    size_t want = 0;
    for (int j = 0; j < x->nheld; j++)
        if (x->held[j].known && !m_resolved(m, x->held[j].id))
            want++;
    x->alive = 0;
    size_t n = sched_lost(m->s, &x->tm);
    MCHECK(m, n == want && x->tm.credit.outstanding == 0);
    m->requeued += n;
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
    int known[M_TASKS] = {0};           /* copies the JM knows of, by task */
    MCHECK(m, !sched_broken(m->s));
    MCHECK(m, m->st.sent == m->sent && m->st.resent == m->resent);
    MCHECK(m, m->st.retried == m->retried && m->st.poison == m->poison);
    MCHECK(m, m->st.crashed == m->crashed && m->st.timed_out == m->timed_out);
    MCHECK(m, m->st.duplicates == m->duplicates && m->st.requeued == m->requeued);
    MCHECK(m, m->st.done_evicted == m->done_evicted && !m->early_bad);
    MCHECK(m, sched_taken_bytes(m->s) == m->taken_bytes);
    MCHECK(m, sched_freed_bytes(m->s) == m->freed_bytes);
    for (int i = 0; i < m->ntms; i++) {
        const mtm_t *x = &m->tms[i];
        MCHECK(m, x->tm.sent == x->sent && x->tm.done == x->done &&
                  x->tm.failed == x->failed);
        if (x->alive)
            MCHECK(m, x->tm.credit.outstanding == x->nheld && x->nheld <= x->tm.credit.slots);
        for (int j = 0; j < x->nheld; j++)
            known[x->held[j].id] += x->held[j].known;
    }
    /* low: the oldest task not resolved, or past the last generated */
    uint64_t low = 0;
    while (low < m->generated && m_resolved(m, low))
        low++;
    MCHECK(m, sched_low(m->s) == low);
    for (uint64_t id = low; id < m->generated; id++) {
        const sched_task_t *t = sched_task(m->s, id);
        MCHECK(m, !t || !m_resolved(m, id));
        MCHECK(m, m->committed[id] <= 1);
        if (!t)
            continue;
        MCHECK(m, t->copies == known[id] && t->copies <= m->max_copies);
        MCHECK(m, t->copies > 0 || t->in_retry);    /* never lost */
    }
    return 0;
}

/* One random step. */
static int m_step(model_t *m)
{
    mtm_t *x;
    m->now += m_rand(m, 40);
    /* Serves outnumber answers, and answers are small, so copies pile up
     * on tasks and max_copies binds. */
    switch (m_rand(m, 17)) {
    case 0:
        return m->generated < M_TASKS ? m_generate(m) : 0;
    case 1:
        if (m->ntms < M_TMS) {
            x = &m->tms[m->ntms];
            m_new_tm(m, x, m->ntms++);
            m_join(m, x);
        } else if ((x = m_any(m, 0))) {
            if (!x->zombie)           /* a new TM in a dead one's slot */
                m_new_tm(m, x, x->tm.slot);
            m_join(m, x);             /* (a zombie: back, with what it held) */
        }
        return 0;
    case 2:
        return (x = m_any(m, 1)) && m_rand(m, 3) == 0 ? m_lose(m, x) : 0;
    case 3: case 4: case 5: case 6: case 7: case 8: case 9:
        return (x = m_any(m, 1)) ? m_serve(m, x) : 0;
    case 16:
        return m_foreign(m);
    default:
        x = &m->tms[m->ntms ? m_rand(m, (uint32_t)m->ntms) : 0];
        if (!m->ntms || !x->nheld || (!x->alive && !x->zombie) ||
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
            if (!x->alive)
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
    for (uint64_t id = 0; id < M_TASKS; id++)
        m->failed_on[id] = -1;
    m->s = sched_new(max_copies, max_attempts, &m->st);
    if (!m->s)
        goto out;
    sched_set_hooks(m->s, &(sched_hooks_t){.early = m_early, .early_arg = m});
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
    if (m->st.poison != poisoned || sched_in_flight(m->s) != 0 ||
        sched_has_fresh(m->s) || sched_low(m->s) != M_TASKS ||
        !sched_exhausted(m->s)) {
        fprintf(stderr, "scheduler selftest: seed %u: not empty at the end\n", seed);
        goto out;
    }
    rc = 0;
out:
    sched_destroy(&m->s);
    free(m);
    return rc;
}

/* t picks at time now, up to max_bytes, others alive or not: exactly the
 * tasks in want[0..nwant-1], in that order, which then go out (or not:
 * unsent). */
static int d_take(sched_t *s, sched_peer_t *t, int64_t now, size_t max_bytes, int others,
                  const uint64_t *want, size_t nwant, int unsent)
{
    sched_clock(s, now);
    size_t n = sched_pick(s, t, SIZE_MAX, max_bytes, others);
    sched_task_t *const *p = sched_picked(s);
    int ok = n == nwant;
    for (size_t i = 0; ok && i < n; i++)
        ok = p[i]->id == want[i];
    if (!ok) {
        fprintf(stderr, "scheduler selftest: at %lld ms, TM %d was sent", (long long)now,
                t->slot);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %llu", (unsigned long long)p[i]->id);
        fprintf(stderr, " (%zu task(s)), not", n);
        for (size_t i = 0; i < nwant; i++)
            fprintf(stderr, " %llu", (unsigned long long)want[i]);
        fprintf(stderr, " (%zu)\n", nwant);
    }
    if (unsent)
        sched_unsent(s, n);
    else
        sched_sent(s, t, n);
    return ok ? 0 : -1;
}

/* The speculation rule's picks: no byte cap, other TMs alive. */
static int d_pick(sched_t *s, sched_peer_t *t, int64_t now, const uint64_t *want,
                  size_t nwant)
{
    return d_take(s, t, now, 1 << 20, 1, want, nwant, 0);
}

/* The case both directed tests start from: 20 tasks of about a second;
 * a gets 19 at 0 ms and the last at 900 ms, and returns 16 at 1000 ms.
 * task[] gets the tasks. NULL if it went wrong (said). */
static sched_t *directed_start(sched_stats_t *st, sched_peer_t *a, sched_peer_t *b,
                                  sched_peer_t *c, sched_task_t **task)
{
    static const uint64_t last[] = {19};
    uint64_t all[19], hash;
    sched_t *s = sched_new(2, 3, st);
    sched_task_t *head = NULL, *tail = NULL;

    memset(st, 0, sizeof *st);
    memset(a, 0, sizeof *a), memset(b, 0, sizeof *b), memset(c, 0, sizeof *c);
    for (uint64_t id = 0; s && id < 20; id++) {
        sched_task_t *t = task[id] = calloc(1, sizeof *t);
        if (!t) {
            sched_add_fresh(s, head, tail);   /* (freed with s) */
            sched_destroy(&s);
            fprintf(stderr, "scheduler selftest: out of memory\n");
            return NULL;
        }
        t->id = id;
        t->hash = m_hash(id);
        sched_task_init(t);
        *(tail ? &tail->next : &head) = t;
        tail = t;
        if (id < 19)
            all[id] = id;
    }
    if (!s)
        return NULL;
    sched_add_fresh(s, head, tail);
    sched_gen_state(s, 1, 0);
    a->slot = 0, b->slot = 1, c->slot = 2;
    a->credit.slots = 19, b->credit.slots = c->credit.slots = 8;
    int ok = d_pick(s, a, 0, all, 19) == 0 &&
             (a->credit.slots = 20, d_pick(s, a, 900, last, 1)) == 0;
    sched_clock(s, 1000);
    sched_credit(s, a, 16);
    for (uint64_t id = 0; ok && id < 16; id++)
        ok = sched_record(s, a, id, SPITS_ST_OK, 0, &hash) == SCHED_REC_COMMIT;
    if (!ok)
        sched_destroy(&s);
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
    sched_stats_t st;
    sched_peer_t a, b, c;
    sched_task_t *task[20];
    int rc = -1;
    sched_t *s = directed_start(&st, &a, &b, &c, task);

    if (s && sched_late_after(s) == 1534 && d_pick(s, &b, 1400, NULL, 0) == 0 &&
        d_pick(s, &b, 1600, three, 3) == 0 && d_pick(s, &c, 1700, NULL, 0) == 0 &&
        d_pick(s, &c, 2433, NULL, 0) == 0 && d_pick(s, &c, 2434, fourth, 1) == 0)
        rc = 0;
    if (rc)
        fprintf(stderr, "scheduler selftest: the directed speculation case failed\n");
    sched_destroy(&s);
    return rc;
}

/* The same with the copies' parts (sched_set_backlog): of the three, 17's part
 * still waits in the JM and 18's left it at 1200 ms. At 1600 ms only 16
 * is late; 17 is once the JM let go of the bytes past its stuck_at (at
 * 1650 ms), picked by a TM whose fruitless scan at 1620 ms is looked at
 * again one tick after (1720 ms); 18 at 2734 ms, after 19. */
static int sched_directed_parts(void)
{
    static const uint64_t first[] = {16}, second[] = {17}, third[] = {18}, fourth[] = {19};
    sched_stats_t st;
    sched_peer_t a, b, c;
    sched_task_t *task[20];
    int rc = -1;
    sched_t *s = directed_start(&st, &a, &b, &c, task);

    if (s) {
        /* (17's part waits: a reference of libzmq's) */
        atomic_store(&task[17]->refs, 2);
        task[17]->stuck_at = 100;
        atomic_store(&task[18]->left_ms, 1200);
        sched_set_backlog(s, 50, 0);
    }
    if (s && d_pick(s, &b, 1400, NULL, 0) == 0 && d_pick(s, &b, 1600, first, 1) == 0 &&
        d_pick(s, &c, 1620, NULL, 0) == 0) {
        sched_set_backlog(s, 100, 0);
        if (d_pick(s, &c, 1650, NULL, 0) == 0 && d_pick(s, &c, 1719, NULL, 0) == 0 &&
            d_pick(s, &c, 1720, second, 1) == 0 && d_pick(s, &c, 2433, NULL, 0) == 0 &&
            d_pick(s, &c, 2434, fourth, 1) == 0 && d_pick(s, &c, 2733, NULL, 0) == 0 &&
            d_pick(s, &c, 2734, third, 1) == 0)
            rc = 0;
    }
    if (rc)
        fprintf(stderr, "scheduler selftest: the directed case with parts failed\n");
    sched_destroy(&s);
    return rc;
}

/* --- directed tests of one rule each ----------------------------------- */

#define D_CHECK(c) do { if (!(c)) { fprintf(stderr, "scheduler selftest: " \
    "%s: %s:%d: %s\n", __func__, __FILE__, __LINE__, #c); goto out; } } while (0)
#define D_IDS(...) (const uint64_t[]){__VA_ARGS__}, \
    sizeof (const uint64_t[]){__VA_ARGS__} / sizeof (uint64_t)
#define D_NONE NULL, 0

/* n fresh tasks first.. of len bytes each (memory counted, not used). */
static int d_tasks(sched_t *s, uint64_t first, uint64_t n, uint32_t len)
{
    sched_task_t *head = NULL, *tail = NULL;
    for (uint64_t id = first; id < first + n; id++) {
        sched_task_t *t = calloc(1, sizeof *t + len);
        if (!t) {
            sched_add_fresh(s, head, tail);
            return -1;
        }
        t->id = id;
        t->len = len;
        t->hash = m_hash(id);
        sched_task_init(t);
        *(tail ? &tail->next : &head) = t;
        tail = t;
    }
    sched_add_fresh(s, head, tail);
    return 0;
}

/* One record of t's (NULL: from no TM known), foreign or not, with one
 * credit back if credit: outcome want, and the hash the outcome says. */
static int d_record(sched_t *s, sched_peer_t *t, int credit, int foreign, uint64_t id,
                    uint32_t status, sched_outcome_t want)
{
    uint64_t hash = 1;
    if (credit)
        sched_credit(s, t, 1);
    sched_outcome_t o = sched_record(s, t, id, status, foreign, &hash);
    if (o == want && hash == (o == SCHED_REC_COMMIT ? m_hash(id) : 0))
        return 0;
    fprintf(stderr, "scheduler selftest: a%s record of task %llu (status %u) from TM %d "
            "was outcome %d, not %d\n", foreign ? " foreign" : "", (unsigned long long)id,
            status, t ? t->slot : -1, (int)o, (int)want);
    return -1;
}

/* A record that is not foreign, with one credit back if t held the copy. */
static int d_rec(sched_t *s, sched_peer_t *t, int credit, uint64_t id, uint32_t status,
                 sched_outcome_t want)
{
    return d_record(s, t, credit, 0, id, status, want);
}

/* A foreign record (SPITS_REC_FOREIGN): no credit back, ever. */
static int d_frec(sched_t *s, sched_peer_t *t, uint64_t id, uint32_t status,
                  sched_outcome_t want)
{
    return d_record(s, t, 0, 1, id, status, want);
}

static int d_cancel_cmp(const void *a, const void *b)
{
    const sched_cancel_t *x = a, *y = b;
    return x->slot != y->slot ? (x->slot > y->slot) - (x->slot < y->slot)
                              : (x->id > y->id) - (x->id < y->id);
}

/* The cancels noted are exactly want[0..nwant-1] (slot, id), in any order. */
/* A cancel due: (slot, id); its hash is the task's, m_hash(id). */
typedef struct {
    int slot;
    uint64_t id;
} d_cancel_t;

static int d_cancels(sched_t *s, const d_cancel_t *want, size_t nwant)
{
    sched_cancel_t got[8];
    size_t n;
    sched_cancel_t *c = sched_take_cancels(s, &n);
    int ok = n == nwant && n <= 8;
    if (ok && n) {
        memcpy(got, c, n * sizeof *c);
        qsort(got, n, sizeof *got, d_cancel_cmp);
        for (size_t i = 0; ok && i < n; i++)
            ok = got[i].slot == want[i].slot && got[i].id == want[i].id &&
                 got[i].hash == m_hash(got[i].id);
    }
    if (!ok)
        fprintf(stderr, "scheduler selftest: %zu cancel(s) noted, not the %zu due\n",
                n, nwant);
    return ok ? 0 : -1;
}
#define D_CANCELS(...) (const d_cancel_t[]){__VA_ARGS__}, \
    sizeof (const d_cancel_t[]){__VA_ARGS__} / sizeof (d_cancel_t)

/* A new scheduler (2 copies, 3 attempts) with fresh tasks 0..n-1 of len
 * bytes, the generator still busy (no copies of late tasks), and TMs
 * tm[0..ntm-1] in slots 0.., alive, with slots room each. */
static sched_t *d_start(sched_stats_t *st, sched_peer_t *tm, int ntm, int slots,
                           uint64_t n, uint32_t len)
{
    sched_t *s = sched_new(2, 3, st);
    memset(st, 0, sizeof *st);
    memset(tm, 0, (size_t)ntm * sizeof *tm);
    if (!s || d_tasks(s, 0, n, len) != 0) {
        fprintf(stderr, "scheduler selftest: out of memory\n");
        sched_destroy(&s);
        return NULL;
    }
    for (int i = 0; i < ntm; i++) {
        tm[i].slot = i;
        tm[i].credit.slots = slots;
        sched_joined(s, &tm[i], 0);
    }
    return s;
}

/* The release hook of sched_directed_drop: counts, then frees. */
static void d_release(void *arg, sched_task_t *task)
{
    (*(int *)arg)++;
    free(task);
}

/* A pick takes at most max_n; a task resolved elsewhere (a relay's
 * upstream committed it) has each copy out cancelled and is released,
 * sent or fresh, and its records after are late; the tasks no copy of
 * which is out (fresh, or to run again) are given back; a TM's list of
 * copies. */
static int sched_directed_drop(void)
{
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1];
    int rc = -1, released = 0;
    sched_t *s = d_start(&st, tm, 2, 4, 8, 10);
    size_t n;

    D_CHECK(s);
    sched_set_hooks(s, &(sched_hooks_t){.release = d_release, .release_arg = &released});
    sched_clock(s, 0);
    D_CHECK(sched_pick(s, a, 2, 1 << 20, 1) == 2);
    sched_sent(s, a, 2);
    D_CHECK(a->credit.outstanding == 2);
    D_CHECK(d_take(s, b, 0, 1 << 20, 1, D_IDS(2, 3, 4, 5), 0) == 0);
    sched_task_t *const *h = sched_held(s, b, &n);
    D_CHECK(n == 4 && h[0]->id + h[1]->id + h[2]->id + h[3]->id == 14);
    /* 2 is resolved above: b's copy is cancelled, and its record is late */
    D_CHECK(sched_drop(s, 2) == 1 && released == 1 && sched_in_flight(s) == 5);
    D_CHECK(d_cancels(s, D_CANCELS({1, 2})) == 0);
    D_CHECK(sched_held(s, b, &n) && n == 3 && !sched_task(s, 2));
    D_CHECK(d_rec(s, b, 1, 2, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0);
    D_CHECK(b->credit.outstanding == 3);
    /* a fresh one (7) is released unsent; one never held (99) is not */
    D_CHECK(sched_drop(s, 7) == 1 && released == 2 && sched_drop(s, 99) == 0);
    D_CHECK(d_take(s, a, 10, 1 << 20, 1, D_IDS(6), 0) == 0);
    D_CHECK(d_cancels(s, D_NONE) == 0 && !sched_has_fresh(s));
    /* b is lost: 3, 4, 5 wait to run again, until given back */
    D_CHECK(sched_lost(s, b) == 3 && sched_has_retries(s));
    D_CHECK(sched_give_back(s) == 3 && released == 5 && !sched_has_retries(s));
    D_CHECK(sched_in_flight(s) == 3 && sched_low(s) == 0 && sched_give_back(s) == 0);
    D_CHECK(d_take(s, b, 20, 1 << 20, 1, D_NONE, 0) == 0);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0 && released == 6);
    /* of two picked, the first went out and the second did not: it runs
     * again, first */
    D_CHECK(d_tasks(s, 8, 2, 10) == 0 && a->credit.outstanding == 2);
    sched_clock(s, 30);
    D_CHECK(sched_pick(s, a, 2, 1 << 20, 1) == 2 && sched_picked(s)[0]->id == 8);
    sched_sent_part(s, a, 1);
    D_CHECK(a->credit.outstanding == 3 && sched_has_retries(s) && a->sent == 4);
    D_CHECK(d_take(s, a, 40, 1 << 20, 1, D_IDS(9), 0) == 0 && sched_in_flight(s) == 4);
    rc = 0;
out:
    sched_destroy(&s);
    return rc || released != 10 ? -1 : 0;
}

/* Retries: first in, first out, before fresh tasks; not on the TM where
 * the task failed while another TM is alive, on it when none is; a
 * copy handed back or not sent runs again; max_attempts failed runs make
 * a poison task. And the counters of all that. */
static int sched_directed_retries(void)
{
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 2, 4, 6, 10);

    D_CHECK(s);
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    D_CHECK(d_take(s, b, 0, 1 << 20, 1, D_IDS(4, 5), 0) == 0);
    D_CHECK(d_rec(s, b, 1, 4, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_CRASHED, SCHED_REC_RETRY) == 0);
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_TIMEOUT, SCHED_REC_RETRY) == 0);
    D_CHECK(st.retried == 3 && st.crashed == 1 && st.timed_out == 1);
    D_CHECK(a->failed == 2 && b->failed == 1 && sched_has_retries(s));
    D_CHECK(d_tasks(s, 6, 2, 10) == 0);
    /* b: 4 failed there, so 0 and 1 (and no fresh task: room for 3) */
    D_CHECK(d_take(s, b, 10, 1 << 20, 1, D_IDS(0, 1, 6), 0) == 0);
    /* a: 4, then fresh 7 */
    D_CHECK(d_take(s, a, 20, 1 << 20, 1, D_IDS(4, 7), 0) == 0);
    D_CHECK(st.resent == 3 && st.sent == 11 && a->sent == 6 && b->sent == 5);
    D_CHECK(a->credit.outstanding == 4 && b->credit.outstanding == 4);
    /* 4 fails on a again; a alone may take it; its third failure is its last */
    D_CHECK(d_rec(s, a, 1, 4, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(d_take(s, a, 30, 1 << 20, 1, D_NONE, 0) == 0);
    D_CHECK(d_take(s, a, 30, 1 << 20, 0, D_IDS(4), 0) == 0);
    D_CHECK(d_rec(s, a, 1, 4, SPITS_ST_FAILED, SCHED_REC_POISON) == 0);
    D_CHECK(st.poison == 1 && st.retried == 4 && !sched_task(s, 4));
    D_CHECK(d_rec(s, b, 0, 4, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0 && st.duplicates == 1);
    /* handed back, then picked and not sent: it runs again */
    D_CHECK(d_rec(s, a, 1, 2, SPITS_ST_RETURNED, SCHED_REC_RETURNED) == 0);
    D_CHECK(d_take(s, b, 40, 1 << 20, 1, D_NONE, 0) == 0);     /* (b is full) */
    D_CHECK(d_take(s, a, 40, 1 << 20, 1, D_IDS(2), 1) == 0);
    D_CHECK(d_take(s, a, 50, 1 << 20, 1, D_IDS(2), 0) == 0);
    D_CHECK(st.resent == 5 && st.retried == 4 && st.requeued == 0);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* The byte cap: picks stop once the bytes picked reach max_bytes, and one
 * task always fits; retries, fresh tasks and copies of late tasks alike. */
static int sched_directed_bytes(void)
{
    static const uint64_t late[] = {16, 17}, more[] = {18};
    sched_stats_t st;
    sched_peer_t tm[1], *a = &tm[0], b, c, d;
    sched_task_t *task[20];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 1, 10, 10, 10);

    D_CHECK(s);
    D_CHECK(d_take(s, a, 0, 25, 1, D_IDS(0, 1, 2), 1) == 0);   /* not sent */
    D_CHECK(sched_taken_bytes(s) == 30);
    D_CHECK(d_take(s, a, 0, 20, 1, D_IDS(0, 1), 0) == 0);
    D_CHECK(d_take(s, a, 0, 5, 1, D_IDS(2), 0) == 0);
    D_CHECK(d_take(s, a, 0, 20, 1, D_IDS(3, 4), 0) == 0);
    D_CHECK(d_take(s, a, 0, 1, 1, D_IDS(5), 0) == 0);
    D_CHECK(sched_taken_bytes(s) == 60 && sched_mean_task_bytes(s) == 10);
    sched_destroy(&s);

    /* Copies of late tasks (sched_directed's case), 10 bytes each. */
    s = directed_start(&st, a, &b, &c, task);
    D_CHECK(s);
    task[16]->len = task[17]->len = task[18]->len = 10;
    D_CHECK(d_take(s, &b, 1600, 20, 1, late, 2, 0) == 0);
    d = c;
    d.slot = 3;
    D_CHECK(d_take(s, &c, 1600, 5, 1, more, 1, 0) == 0);
    D_CHECK(d_take(s, &d, 1600, 5, 1, D_NONE, 0) == 0);        /* two copies each */
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* The early-result hook: the fresh tasks it resolves are freed, never
 * sent, and their bytes count as taken and freed. */
static int d_early(void *arg, const sched_task_t *task)
{
    unsigned *asked = arg;
    asked[task->id]++;
    return task->id == 0 || task->id == 2 || task->id == 3;
}

static int sched_directed_early(void)
{
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1];
    unsigned asked[6] = {0};
    int rc = -1;
    sched_t *s = d_start(&st, tm, 2, 2, 6, 10);

    D_CHECK(s);
    sched_set_hooks(s, &(sched_hooks_t){.early = d_early, .early_arg = asked});
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(1, 4), 0) == 0);
    D_CHECK(sched_taken_bytes(s) == 50 && sched_freed_bytes(s) == 30);
    D_CHECK(asked[0] == 1 && asked[2] == 1 && asked[3] == 1 && asked[5] == 0);
    D_CHECK(sched_low(s) == 1 && sched_in_flight(s) == 2 && !sched_task(s, 2));
    D_CHECK(d_take(s, b, 0, 1 << 20, 1, D_IDS(5), 0) == 0);
    D_CHECK(st.sent == 3 && sched_taken_bytes(s) == 60 && asked[5] == 1);
    D_CHECK(sched_exhausted(s) == 0 && !sched_has_fresh(s));
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(sched_low(s) == 4 && sched_freed_bytes(s) == 40);
    D_CHECK(d_rec(s, a, 0, 3, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0 && st.duplicates == 1);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* Tasks resolved early at the end of what was generated: the window's
 * low moves past them (scheduler.h: the oldest task not resolved). */
static int sched_directed_early_tail(void)
{
    sched_stats_t st;
    sched_peer_t tm[1], *a = &tm[0];
    unsigned asked[4] = {0};
    int rc = -1;
    sched_t *s = d_start(&st, tm, 1, 4, 4, 10);

    D_CHECK(s);
    sched_set_hooks(s, &(sched_hooks_t){.early = d_early, .early_arg = asked});
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(1), 0) == 0);
    D_CHECK(asked[0] == 1 && asked[1] == 1 && asked[2] == 1 && asked[3] == 1);
    D_CHECK(sched_low(s) == 1 && !sched_has_fresh(s));
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(sched_in_flight(s) == 0 && sched_low(s) == 4);
    D_CHECK(sched_freed_bytes(s) == 40 && sched_taken_bytes(s) == 40);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* Records, not flagged foreign, from a TM that holds no copy of the
 * task (c: one back with a copy the JM took back), or from no TM known
 * (NULL). They resolve, fail or hand back the task, and are counted for
 * their sender, but take no other TM's copy or credit, and are not their
 * sender's turnaround. */
static int sched_directed_unheld(void)
{
    sched_stats_t st;
    sched_peer_t tm[3], *a = &tm[0], *c = &tm[2];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 3, 4, 4, 10);

    D_CHECK(s);
    a->credit.workers = 4;
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    sched_clock(s, 100);
    D_CHECK(d_rec(s, c, 0, 0, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(sched_task(s, 0)->copies == 1 && !sched_has_retries(s));
    D_CHECK(c->failed == 1 && a->failed == 0 && a->credit.outstanding == 4);
    D_CHECK(d_rec(s, NULL, 0, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(st.done_evicted == 1 && a->done == 0);
    D_CHECK(d_cancels(s, D_CANCELS({0, 1})) == 0);
    D_CHECK(d_rec(s, c, 0, 2, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(c->done == 1 && c->turn_ms == 0 && st.done_evicted == 1);
    D_CHECK(d_cancels(s, D_CANCELS({0, 2})) == 0);
    D_CHECK(d_rec(s, NULL, 0, 0, SPITS_ST_RETURNED, SCHED_REC_RETURNED) == 0);
    D_CHECK(sched_task(s, 0)->copies == 1 && !sched_has_retries(s));
    /* never sent (4 is one past the last), or resolved */
    D_CHECK(d_rec(s, c, 0, 4, SPITS_ST_OK, SCHED_REC_UNKNOWN) == 0);
    D_CHECK(d_rec(s, NULL, 0, 4, SPITS_ST_FAILED, SCHED_REC_UNKNOWN) == 0);
    D_CHECK(d_rec(s, c, 0, 9, SPITS_ST_OK, SCHED_REC_UNKNOWN) == 0);
    D_CHECK(d_rec(s, c, 0, 1, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0);
    D_CHECK(d_rec(s, NULL, 0, 1, SPITS_ST_FAILED, SCHED_REC_LATE) == 0);
    D_CHECK(st.duplicates == 1 && st.retried == 1 && c->failed == 1);
    /* a's own records: its copies of 1 and 2 were answered by others */
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0 && st.duplicates == 2);
    D_CHECK(d_rec(s, a, 1, 3, SPITS_ST_OK, SCHED_REC_COMMIT) == 0 && a->done == 1);
    D_CHECK(a->turn_ms == 100 && a->credit.outstanding == 2);
    D_CHECK(d_cancels(s, D_NONE) == 0);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A TM falls back from relay a, lost, to relay b, which passes up its
 * records flagged foreign, while b holds copies of the same tasks (the
 * JM re-sent a's). A foreign result commits its task once and cancels
 * every copy out, b's own too; it takes none of b's copies, credit or
 * turnaround, and a foreign failure or hand-back changes nothing: no
 * attempt, no failure counted, nothing requeued. b's own records of its
 * copies then come back as usual. */
static int sched_directed_foreign(void)
{
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 2, 4, 6, 10);

    D_CHECK(s);
    a->credit.workers = b->credit.workers = 4;
    a->credit.slots = 3;
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2), 0) == 0);
    D_CHECK(sched_lost(s, a) == 3 && st.requeued == 3);
    D_CHECK(d_take(s, b, 10, 1 << 20, 0, D_IDS(2, 1, 0, 3), 0) == 0);
    D_CHECK(st.resent == 3 && b->credit.outstanding == 4);
    sched_clock(s, 100);
    D_CHECK(d_frec(s, b, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_CANCELS({1, 0})) == 0);
    D_CHECK(b->done == 1 && b->credit.outstanding == 4 && !sched_has_retries(s));
    /* b's one copy of 3, run on arrival: a foreign result is no round trip */
    D_CHECK(d_frec(s, b, 3, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_CANCELS({1, 3})) == 0 && b->turn_ms == 0);
    D_CHECK(d_frec(s, b, 1, SPITS_ST_FAILED, SCHED_REC_FOREIGN) == 0);
    D_CHECK(d_frec(s, NULL, 2, SPITS_ST_CRASHED, SCHED_REC_FOREIGN) == 0);
    D_CHECK(d_frec(s, b, 2, SPITS_ST_TIMEOUT, SCHED_REC_FOREIGN) == 0);
    D_CHECK(d_frec(s, b, 2, SPITS_ST_RETURNED, SCHED_REC_FOREIGN) == 0);
    D_CHECK(sched_task(s, 1)->copies == 1 && sched_task(s, 2)->copies == 1);
    D_CHECK(sched_task(s, 1)->attempts == 0 && !sched_has_retries(s));
    D_CHECK(b->failed == 0 && st.retried == 0 && st.crashed == 0 && st.timed_out == 0);
    D_CHECK(d_cancels(s, D_NONE) == 0);
    /* b's own records: of the copies cancelled, then its failure of 1,
     * whose foreign result comes after */
    D_CHECK(d_rec(s, b, 1, 0, SPITS_ST_RETURNED, SCHED_REC_LATE) == 0);
    D_CHECK(d_rec(s, b, 1, 3, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0 && st.duplicates == 1);
    D_CHECK(d_rec(s, b, 1, 1, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(b->failed == 1 && st.retried == 1 && sched_has_retries(s));
    D_CHECK(d_frec(s, NULL, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_NONE) == 0 && st.done_evicted == 1);
    D_CHECK(d_rec(s, b, 1, 2, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(b->done == 3 && b->credit.outstanding == 0 && sched_in_flight(s) == 0);
    /* not sent yet, or resolved */
    D_CHECK(d_frec(s, b, 4, SPITS_ST_OK, SCHED_REC_UNKNOWN) == 0);
    D_CHECK(d_frec(s, b, 2, SPITS_ST_OK, SCHED_REC_DUPLICATE) == 0 && st.duplicates == 2);
    D_CHECK(d_frec(s, b, 2, SPITS_ST_FAILED, SCHED_REC_LATE) == 0);
    D_CHECK(st.requeued == 3 && st.resent == 3 && st.sent == 7);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* Cancels: every other copy of a task committed, whichever TM holds the
 * committing copy or none; and the gap a copy handed back leaves in the
 * task's holders is no end of them. */
static int sched_directed_cancels(void)
{
    static const uint64_t three[] = {16, 17, 18};
    sched_stats_t st;
    sched_peer_t a, b, c;
    sched_task_t *task[20];
    int rc = -1;
    sched_t *s = directed_start(&st, &a, &b, &c, task);

    D_CHECK(s && d_pick(s, &b, 1600, three, 3) == 0);
    sched_clock(s, 1700);
    D_CHECK(d_rec(s, &a, 1, 16, SPITS_ST_RETURNED, SCHED_REC_RETURNED) == 0);
    D_CHECK(d_rec(s, &c, 0, 16, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_CANCELS({1, 16})) == 0);
    D_CHECK(d_rec(s, NULL, 0, 17, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, &b, 1, 18, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_CANCELS({0, 17}, {0, 18}, {1, 17})) == 0);
    D_CHECK(d_cancels(s, D_NONE) == 0);
    D_CHECK(b.done == 1 && c.done == 1 && st.done_evicted == 1);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A TM in a lost TM's slot: the lost one's copies were taken back and run
 * again, and the new one starts with no copy and no credit spent. */
static int sched_directed_slot_reuse(void)
{
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1], a2;
    int rc = -1;
    sched_t *s = d_start(&st, tm, 2, 3, 4, 10);

    D_CHECK(s);
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2), 0) == 0);
    D_CHECK(d_take(s, b, 0, 1 << 20, 1, D_IDS(3), 0) == 0);
    D_CHECK(sched_lost(s, a) == 3 && st.requeued == 3 && a->credit.outstanding == 0);
    memset(&a2, 0, sizeof a2);
    a2.slot = 0;
    a2.credit.slots = 2;
    sched_joined(s, &a2, 0);
    D_CHECK(a2.credit.outstanding == 0);
    /* two of the lost TM's three copies, run again (in no set order) */
    sched_clock(s, 10);
    size_t n = sched_pick(s, &a2, SIZE_MAX, 1 << 20, 1);
    sched_task_t *const *p = sched_picked(s);
    D_CHECK(n == 2 && p[0]->copies == 0 && p[1]->copies == 0);
    D_CHECK(p[0]->id < 3 && p[1]->id < 3 && p[0]->id != p[1]->id);
    uint64_t left = 3 - p[0]->id - p[1]->id, x = p[0]->id;
    sched_sent(s, &a2, n);
    D_CHECK(d_take(s, b, 20, 1 << 20, 1, &left, 1, 0) == 0);
    /* a2's record of the copy b holds is foreign: b's copy stays */
    D_CHECK(d_rec(s, &a2, 0, left, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(sched_task(s, left)->copies == 1 && b->credit.outstanding == 2);
    D_CHECK(d_rec(s, &a2, 1, x, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_NONE) == 0 && a2.done == 1 && a2.credit.outstanding == 1);
    D_CHECK(st.requeued == 3 && st.resent == 3);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* Turnaround (note_turnaround): the least time of the copies a TM ran on
 * arrival (sent while it held fewer copies than workers), over windows of
 * SCHED_TURN_WINDOW: lower at once, higher only at a window's end. */
static int sched_directed_turnaround(void)
{
    sched_stats_t st;
    sched_peer_t tm[1], *a = &tm[0];
    int rc = -1;
    uint64_t id = 0;
    sched_t *s = d_start(&st, tm, 1, 1, 2 * SCHED_TURN_WINDOW + 3, 10);

    D_CHECK(s);
    a->credit.workers = 2;
    for (int k = 0; k < 2 * SCHED_TURN_WINDOW; k++, id++) {
        int64_t t0 = 1000 * k, ms = k == 0 ? 150 : k == 1 ? 120
                                   : k < SCHED_TURN_WINDOW ? 180 : 300;
        D_CHECK(d_take(s, a, t0, 1 << 20, 1, &id, 1, 0) == 0);
        sched_clock(s, t0 + ms);
        D_CHECK(d_rec(s, a, 1, id, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
        D_CHECK(a->turn_ms == (k == 0 ? 150 : k < 2 * SCHED_TURN_WINDOW - 1 ? 120 : 300));
    }
    /* three at once: the third waits for a worker, and is no sample */
    a->credit.slots = 3;
    D_CHECK(d_take(s, a, 100000, 1 << 20, 1, D_IDS(id, id + 1, id + 2), 0) == 0);
    sched_clock(s, 100050);
    D_CHECK(d_rec(s, a, 1, id + 2, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(a->turn_ms == 300);
    sched_clock(s, 100250);
    D_CHECK(d_rec(s, a, 1, id, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(a->turn_ms == 250);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* The fresh list's tail follows the tasks taken out of it: the last one
 * dropped (a relay's CANCEL), the only one, or all given back; tasks
 * added after each are sent, none lost. */
static int sched_directed_fresh_tail(void)
{
    sched_stats_t st;
    sched_peer_t a;
    int rc = -1;
    sched_t *s = d_start(&st, &a, 1, 16, 4, 10);

    D_CHECK(s);
    D_CHECK(sched_drop(s, 3) == 1 && d_tasks(s, 4, 2, 10) == 0);
    D_CHECK(d_take(s, &a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 4, 5), 0) == 0);
    D_CHECK(d_tasks(s, 6, 1, 10) == 0 && sched_drop(s, 6) == 1 && !sched_has_fresh(s));
    D_CHECK(d_tasks(s, 7, 1, 10) == 0);
    D_CHECK(d_take(s, &a, 0, 1 << 20, 1, D_IDS(7), 0) == 0);
    D_CHECK(d_tasks(s, 8, 2, 10) == 0 && sched_give_back(s) == 2 && d_tasks(s, 10, 1, 10) == 0);
    D_CHECK(d_take(s, &a, 0, 1 << 20, 1, D_IDS(10), 0) == 0);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A new phase (sched_reset) starts from nothing: no results, task times,
 * window or generator state of the last one, and the last one's unsent
 * tasks gone. Phase 1: tasks of 100 ms, two left unsent; phase 2: tasks
 * of 1 to 1.6 s, so copies start only once half of them finished, at
 * 1.5 x phase 2's median. */
static int sched_directed_new_phase(void)
{
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 2, 4, 6, 10);

    D_CHECK(s);
    sched_gen_state(s, 1, 0);
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    sched_clock(s, 100);
    for (uint64_t id = 0; id < 4; id++)
        D_CHECK(d_rec(s, a, 1, id, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(sched_reset(s) == 0);
    D_CHECK(sched_low(s) == 0 && sched_in_flight(s) == 0 && !sched_has_fresh(s));
    D_CHECK(sched_freed_bytes(s) == 0 && sched_taken_bytes(s) == 0);
    D_CHECK(!sched_exhausted(s) && sched_late_after(s) == LATE_NEVER);
    D_CHECK(d_tasks(s, 0, 4, 10) == 0);
    sched_gen_state(s, 1, 0);
    D_CHECK(d_take(s, a, 1000, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    sched_clock(s, 2000);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(sched_late_after(s) == LATE_NEVER);
    D_CHECK(d_pick(s, b, 2600, D_NONE) == 0);
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(sched_late_after(s) == 1534);
    D_CHECK(d_pick(s, b, 2600, D_IDS(2, 3)) == 0);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A fruitless scan is looked at again once more copies may go: max_copies
 * raised (lost 0), or a TM holding copies lost (lost 1). a runs 0..3 from
 * 0 ms and ends 0 and 1 at 1000 ms; b gets copies of 2 and 3 at 1600 ms
 * (the bound: 1534 ms); c, at 1700 ms, none (2 copies each already),
 * nothing until 3234 ms by that scan. Then c gets copies of 2 and 3 as
 * soon as they are late again, at 3134 ms. d joins again rejoins times
 * before, so that no count of bumps brings back the version c's scan
 * noted. */
static int sched_directed_rescan(int lost, int rejoins)
{
    sched_stats_t st;
    sched_peer_t tm[4], *a = &tm[0], *b = &tm[1], *c = &tm[2], *d = &tm[3];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 4, 4, 4, 10);

    D_CHECK(s);
    sched_gen_state(s, 1, 0);
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    sched_clock(s, 1000);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_pick(s, b, 1600, D_IDS(2, 3)) == 0 && d_pick(s, c, 1700, D_NONE) == 0);
    for (int k = 0; k < rejoins; k++)
        sched_joined(s, d, 0);
    if (lost)
        D_CHECK(sched_lost(s, b) == 2);
    else
        sched_set_max_copies(s, 3);
    D_CHECK(d_pick(s, c, 3133, D_NONE) == 0 && d_pick(s, c, 3134, D_IDS(2, 3)) == 0);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A lateness bound that changes calls for a new scan: c finds nothing
 * late at 1100 ms (the bound 1534 ms, from three runs of a second); then
 * four runs of 10 ms bring the median down, and c gets copies of the
 * tasks out since 0 ms at once. The bound changed twice meanwhile (none
 * while the four were unfinished); d joins again rejoins times, so that
 * no count of bumps brings back the version c's scan noted. */
static int sched_directed_bound_shrinks(int rejoins)
{
    sched_stats_t st;
    sched_peer_t tm[4], *a = &tm[0], *b = &tm[1], *c = &tm[2], *d = &tm[3];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 4, 8, 6, 10);

    D_CHECK(s);
    sched_gen_state(s, 0, 1);
    a->credit.slots = 4;
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    D_CHECK(d_take(s, b, 0, 1 << 20, 1, D_IDS(4, 5), 0) == 0);
    sched_clock(s, 1000);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, b, 1, 4, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_pick(s, c, 1100, D_NONE) == 0 && sched_late_after(s) == 1534);
    D_CHECK(d_tasks(s, 6, 4, 10) == 0);
    D_CHECK(d_take(s, b, 1100, 1 << 20, 1, D_IDS(6, 7, 8, 9), 0) == 0);
    sched_clock(s, 1110);
    for (uint64_t id = 6; id < 10; id++)
        D_CHECK(d_rec(s, b, 1, id, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    for (int k = 0; k < rejoins; k++)
        sched_joined(s, d, 0);
    D_CHECK(d_pick(s, c, 1150, D_IDS(2, 3, 5)) == 0 && sched_late_after(s) == LATE_FLOOR_MS);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A copy whose part waits in the hop is late by its newest copy's clock
 * once the part is stuck, or the hop's send is idle: a runs 0..3 from
 * 0 ms and ends 0 and 1 at 1000 ms (the bound: 1534 ms); b gets copies
 * of 2 and 3 at 1600 ms. With 2's new part stuck, c gets nothing at
 * 1700 ms (late at 3134 ms); with 3's not stuck, only the idle send
 * makes it late, and c gets both at 3200 ms. */
static int sched_directed_parts_due(void)
{
    sched_stats_t st;
    sched_peer_t tm[3], *a = &tm[0], *b = &tm[1], *c = &tm[2];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 3, 4, 4, 10);

    D_CHECK(s);
    sched_gen_state(s, 1, 0);
    sched_set_max_copies(s, 3);
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3), 0) == 0);
    sched_clock(s, 1000);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_pick(s, b, 1600, D_IDS(2, 3)) == 0 && sched_late_after(s) == 1534);
    sched_task_t *t2 = spits_ring_get(s->ring, 2), *t3 = spits_ring_get(s->ring, 3);
    D_CHECK(t2 && t3);
    atomic_store(&t2->refs, 2);   /* (a reference of libzmq's: the part waits) */
    atomic_store(&t3->refs, 2);
    t2->stuck_at = 100;
    t3->stuck_at = 500;
    sched_set_backlog(s, 200, 0);
    D_CHECK(d_pick(s, c, 1700, D_NONE) == 0);
    sched_set_backlog(s, 200, 1);
    D_CHECK(d_pick(s, c, 3133, D_NONE) == 0 && d_pick(s, c, 3200, D_IDS(2, 3)) == 0);
    atomic_store(&t2->refs, 1);
    atomic_store(&t3->refs, 1);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* A task with every holder entry used: 2 fails on tm 0 and runs again on
 * tm 1 (at 1000 ms, the bound 1534 ms); the other six, then tm 0, get a
 * late copy each, each once the one before is late. The last one's
 * result cancels the other seven, and every list is empty after. */
static int sched_directed_all_copies(void)
{
    sched_stats_t st;
    sched_peer_t tm[SCHED_MAX_COPIES];
    size_t n;
    int rc = -1;
    sched_t *s = d_start(&st, tm, SCHED_MAX_COPIES, 4, 3, 10);

    D_CHECK(s);
    sched_gen_state(s, 1, 0);
    sched_set_max_copies(s, SCHED_MAX_COPIES);
    D_CHECK(d_take(s, &tm[0], 0, 1 << 20, 1, D_IDS(0, 1, 2), 0) == 0);
    sched_clock(s, 1000);
    D_CHECK(d_rec(s, &tm[0], 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, &tm[0], 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, &tm[0], 1, 2, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(d_pick(s, &tm[1], 1000, D_IDS(2)) == 0 && sched_late_after(s) == 1534);
    for (int k = 2; k <= SCHED_MAX_COPIES; k++)
        D_CHECK(d_pick(s, &tm[k % SCHED_MAX_COPIES], 1000 + 1534 * (k - 1), D_IDS(2)) == 0);
    sched_task_t *t2 = spits_ring_get(s->ring, 2);
    D_CHECK(t2 && t2->copies == SCHED_MAX_COPIES && t2->failed_on == 0);
    for (int k = 0; k < SCHED_MAX_COPIES; k++)
        D_CHECK(sched_held(s, &tm[k], &n)[0] == t2 && n == 1);
    D_CHECK(d_rec(s, &tm[7], 1, 2, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_cancels(s, D_CANCELS({0, 2}, {1, 2}, {2, 2}, {3, 2}, {4, 2}, {5, 2},
                                   {6, 2})) == 0);
    for (int k = 0; k < SCHED_MAX_COPIES; k++) {
        sched_held(s, &tm[k], &n);
        D_CHECK(n == 0);
    }
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* sched_quiet's judge in sched_directed_quiet: the slots set in *arg. */
static int d_quiet(void *arg, int slot)
{
    return (*(const unsigned *)arg >> slot) & 1;
}

/* The gate and quiet TMs: a holds 8 of 10 tasks and b finished the other
 * 2 (a second each). 2 finished of 10 is short of half: no copy goes.
 * With a quiet, its 8 are stalled: 2 of 2 is half, and c gets copies of
 * them, all late. Then a task copied on c (not quiet) is running again;
 * with c quiet too, each task counts once; with b alone quiet (it holds
 * none), none do. Last, a's copy of 0 fails and a is lost: c alone holds
 * 0, 1 and 2, which c quiet stalls. */
static int sched_directed_quiet(void)
{
    unsigned quiet = 0;
    sched_stats_t st;
    sched_peer_t tm[3], *a = &tm[0], *b = &tm[1], *c = &tm[2];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 3, 8, 10, 10);

    D_CHECK(s);
    sched_gen_state(s, 1, 0);
    D_CHECK(d_take(s, a, 0, 1 << 20, 1, D_IDS(0, 1, 2, 3, 4, 5, 6, 7), 0) == 0);
    D_CHECK(d_take(s, b, 0, 1 << 20, 1, D_IDS(8, 9), 0) == 0);
    sched_clock(s, 1000);
    D_CHECK(d_rec(s, b, 1, 8, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(d_rec(s, b, 1, 9, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    sched_quiet(s, d_quiet, &quiet);
    D_CHECK(s->quiet == 0 && sched_late_after(s) == LATE_NEVER);
    D_CHECK(d_pick(s, c, 5000, D_NONE) == 0);
    quiet = 1u << a->slot;
    sched_quiet(s, d_quiet, &quiet);
    D_CHECK(s->quiet == 8 && sched_late_after(s) == 1534);
    c->credit.slots = 3;
    D_CHECK(d_pick(s, c, 5000, D_IDS(0, 1, 2)) == 0);
    sched_quiet(s, d_quiet, &quiet);
    D_CHECK(s->quiet == 5 && sched_late_after(s) == LATE_NEVER);
    quiet |= 1u << c->slot;
    sched_quiet(s, d_quiet, &quiet);
    D_CHECK(s->quiet == 8);
    quiet = 1u << b->slot;
    sched_quiet(s, d_quiet, &quiet);
    D_CHECK(s->quiet == 0);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_FAILED, SCHED_REC_RETRY) == 0);
    D_CHECK(sched_lost(s, a) == 7);
    quiet = 1u << c->slot;
    sched_quiet(s, d_quiet, &quiet);
    D_CHECK(s->quiet == 3 && s->finished == 2);
    /* A new phase starts with none quiet and none finished. */
    D_CHECK(sched_reset(s) == 0 && s->quiet == 0 && s->finished == 0);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

/* The release hook of sched_directed_lifecycle: counts, notes a task
 * released still linked to another (next), then frees. */
typedef struct {
    int released, linked;
} l_release_t;

static void l_release(void *arg, sched_task_t *task)
{
    l_release_t *r = arg;
    r->released++;
    r->linked += task->next != NULL;
    free(task);
}

static int l_early(void *arg, const sched_task_t *task)
{
    (void)arg;
    return task->id == 0;
}

/* A task's fresh state; what sched_holds, sched_held and sched_recorded
 * say; a TM joining forgets its last scan; picks and cancels of more
 * than their arrays' first sizes; every task released once, unlinked,
 * with its bytes taken and freed; a reset keeps nothing of the phase; a
 * task's sent count stops at 255; a failed run's status is kept. */
static int sched_directed_lifecycle(void)
{
    enum { NT = 700, NP = 600 };
    sched_stats_t st;
    sched_peer_t tm[2], *a = &tm[0], *b = &tm[1], far;
    l_release_t rel = {0, 0};
    sched_task_t x;
    int rc = -1;
    size_t n;
    sched_t *s = d_start(&st, tm, 2, NP, NT, 3);

    memset(&x, 0xa5, sizeof x);
    sched_task_init(&x);
    D_CHECK(x.copies == 0 && x.attempts == 0 && x.in_retry == 0 && x.sent == 0 &&
            x.last_status == 0 && x.failed_on == -1 && x.out_ms == 0 && x.copy_ms == 0 &&
            x.stuck_at == 0 && atomic_load(&x.left_ms) == 0 && atomic_load(&x.refs) == 1);
    for (int i = 0; i < SCHED_MAX_COPIES; i++)
        D_CHECK(x.holders[i] == -1 && x.held_ix[i] == 0xa5a5a5a5u);
    D_CHECK(s);
    sched_set_hooks(s, &(sched_hooks_t){.release = l_release, .release_arg = &rel,
                                        .early = l_early});
    D_CHECK(sched_mean_task_bytes(s) == 0);
    a->scan_version = 77, a->scan_until = 99;
    sched_joined(s, a, 0);
    D_CHECK(a->scan_version == 0 && a->scan_until == 0);

    /* 0 resolves early; a takes 1..600 in one pick, b the next 3 */
    sched_clock(s, 5);
    D_CHECK(sched_pick(s, a, SIZE_MAX, 1 << 20, 1) == NP && rel.released == 1);
    for (size_t i = 0; i < NP; i++)
        D_CHECK(sched_picked(s)[i]->id == i + 1 && !sched_picked(s)[i]->next &&
                sched_picked(s)[i]->out_ms == 5);
    sched_sent(s, a, NP);
    b->credit.slots = 3;
    D_CHECK(d_take(s, b, 5, 1 << 20, 1, D_IDS(601, 602, 603), 0) == 0);
    D_CHECK(sched_holds(s, 0, 1) == 1 && sched_holds(s, 1, 1) == 0 &&
            sched_holds(s, 1, 601) == 1 && sched_holds(s, 0, 999) == -1);
    /* (601 is b's first: its place in b's list is 0, a's slot) */
    D_CHECK(sched_holds(s, 0, 601) == 0);
    far.slot = 1000;
    n = 7;
    D_CHECK(!sched_held(s, &far, &n) && n == 0);
    far.slot = 2;           /* (one past the lists of slots 0 and 1) */
    n = 7;
    D_CHECK(!sched_held(s, &far, &n) && n == 0);
    D_CHECK(sched_taken_bytes(s) == 3 * 604 && sched_freed_bytes(s) == 3);

    /* records: the copy's start and size; a hand-back counted */
    sched_clock(s, 9);
    D_CHECK(d_rec(s, a, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    int64_t start = -1;
    uint32_t len = 0;
    sched_recorded(s, &start, &len);
    D_CHECK(start == 5 && len == 3);
    D_CHECK(d_rec(s, b, 1, 601, SPITS_ST_RETURNED, SCHED_REC_RETURNED) == 0);
    D_CHECK(st.returned == 1);

    /* 601 goes to b and back 300 times: its sent count stops at 255; a
     * crash is kept */
    for (int i = 0; i < 300; i++) {
        D_CHECK(d_take(s, b, 10, 1 << 20, 1, D_IDS(601), 0) == 0);
        D_CHECK(d_rec(s, b, 1, 601, SPITS_ST_RETURNED, SCHED_REC_RETURNED) == 0);
    }
    D_CHECK(sched_task(s, 601)->sent == 255);
    D_CHECK(d_rec(s, a, 1, 2, SPITS_ST_CRASHED, SCHED_REC_RETRY) == 0);
    D_CHECK(sched_task(s, 2)->last_status == SPITS_ST_CRASHED && sched_holds(s, 0, 2) == 0);

    /* 3..600 resolved elsewhere: a cancel for each copy, in order */
    for (uint64_t id = 3; id <= NP; id++)
        D_CHECK(sched_drop(s, id) == 1);
    sched_cancel_t *c = sched_take_cancels(s, &n);
    D_CHECK(n == NP - 2);
    for (size_t i = 0; i < n; i++)
        D_CHECK(c[i].slot == 0 && c[i].id == i + 3 && c[i].hash == m_hash(i + 3));
    D_CHECK(rel.released == NP && rel.linked == 0);
    /* a fresh one dropped: released unlinked */
    D_CHECK(sched_drop(s, 650) == 1 && rel.released == NP + 1 && rel.linked == 0);
    D_CHECK(sched_drop(s, 602) == 1);     /* (a cancel left for the reset) */

    /* a new phase: nothing of the last one is left (the fresh tasks are
     * released as they are linked) */
    D_CHECK(sched_pick(s, a, 1, 1 << 20, 1) == 1 && sched_picked(s)[0]->id == 601);
    sched_sent(s, a, 1);
    D_CHECK(sched_has_retries(s) && sched_held(s, b, &n) && n == 1);
    D_CHECK(sched_held(s, a, &n) && n == 1);
    D_CHECK(sched_reset(s) == 0);
    D_CHECK(!sched_has_retries(s) && !sched_has_fresh(s) && sched_in_flight(s) == 0);
    D_CHECK(sched_take_cancels(s, &n) && n == 0);
    D_CHECK(!sched_held(s, a, &n) || n == 0);
    D_CHECK(!sched_held(s, b, &n) || n == 0);
    D_CHECK(rel.released == NT);
    int linked = rel.linked;
    D_CHECK(sched_taken_bytes(s) == 0 && sched_freed_bytes(s) == 0);

    /* fresh tasks given back: released unlinked, their bytes taken and freed */
    D_CHECK(d_tasks(s, 0, 5, 4) == 0 && sched_give_back(s) == 5);
    D_CHECK(rel.released == NT + 5 && rel.linked == linked);
    D_CHECK(sched_taken_bytes(s) == 20 && sched_freed_bytes(s) == 20);
    rc = 0;
out:
    sched_destroy(&s);
    return rc || s ? -1 : 0;
}

/* The time a quick copy took, at its edges: 0 ms (back within the ms it
 * left), 1 ms, and from its send while a part of it is still in the hop
 * (refs 2), however late the transport let go of another part. */
static int sched_directed_turn_edges(void)
{
    sched_stats_t st;
    sched_peer_t tm[3], *a = &tm[0], *b = &tm[1], *c = &tm[2];
    int rc = -1;
    sched_t *s = d_start(&st, tm, 3, 1, 3, 1);

    D_CHECK(s);
    a->credit.workers = b->credit.workers = c->credit.workers = 1;
    D_CHECK(d_take(s, a, 10, 1 << 20, 1, D_IDS(0), 0) == 0);
    D_CHECK(d_take(s, b, 10, 1 << 20, 1, D_IDS(1), 0) == 0);
    D_CHECK(d_take(s, c, 10, 1 << 20, 1, D_IDS(2), 0) == 0);
    D_CHECK(d_rec(s, b, 1, 1, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(b->turn_n == 1 && b->turn_win == 0 && b->turn_ms == 0);
    sched_clock(s, 11);
    D_CHECK(d_rec(s, a, 1, 0, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(a->turn_n == 1 && a->turn_win == 1 && a->turn_ms == 1);
    sched_task_t *t = (sched_task_t *)sched_task(s, 2);
    atomic_store(&t->refs, 2);
    atomic_store(&t->left_ms, 15);
    sched_clock(s, 20);
    D_CHECK(d_rec(s, c, 1, 2, SPITS_ST_OK, SCHED_REC_COMMIT) == 0);
    D_CHECK(c->turn_n == 1 && c->turn_win == 10 && c->turn_ms == 10);
    rc = 0;
out:
    sched_destroy(&s);
    return rc;
}

int sched_selftest(void)
{
    if (sched_directed() != 0 || sched_directed_parts() != 0 ||
        sched_directed_retries() != 0 || sched_directed_bytes() != 0 ||
        sched_directed_early() != 0 || sched_directed_early_tail() != 0 ||
        sched_directed_unheld() != 0 ||
        sched_directed_foreign() != 0 ||
        sched_directed_cancels() != 0 || sched_directed_slot_reuse() != 0 ||
        sched_directed_turnaround() != 0 || sched_directed_drop() != 0 ||
        sched_directed_fresh_tail() != 0 || sched_directed_new_phase() != 0 ||
        sched_directed_rescan(0, 0) != 0 || sched_directed_rescan(0, 1) != 0 ||
        sched_directed_rescan(1, 0) != 0 || sched_directed_rescan(1, 1) != 0 ||
        sched_directed_bound_shrinks(0) != 0 || sched_directed_bound_shrinks(2) != 0 || sched_directed_parts_due() != 0 ||
        sched_directed_all_copies() != 0 ||
        sched_directed_lifecycle() != 0 || sched_directed_turn_edges() != 0 ||
        sched_directed_quiet() != 0)
        return -1;

    static const int configs[][2] = {{1, 1}, {2, 3}, {3, 2}, {SCHED_MAX_COPIES, 3}};
    for (size_t c = 0; c < sizeof configs / sizeof *configs; c++)
        for (unsigned seed = 1; seed <= 25; seed++)
            if (m_run(seed, configs[c][0], configs[c][1]) != 0)
                return -1;
    return 0;
}
#endif
