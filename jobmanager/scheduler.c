/*
 * scheduler.c - the JM's scheduler (see scheduler.h for what it decides).
 *
 * Per-task state lives in the task itself (jm.h jm_task_t: copies,
 * holders, attempts, in_retry); per-TM credit in the TM's table entry
 * (tmtable.h: slots, outstanding). Every change to a task's copies bumps
 * version, which lets a TM skip the re-send scan (step 3) while nothing
 * it could be sent has changed since its last fruitless scan.
 */
#include <stdlib.h>
#include <string.h>

#include "retryq.h"
#include "ring.h"
#include "scheduler.h"

struct jm_sched {
    int max_copies, max_attempts;
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
    uint64_t task_bytes_sent;        /* of every copy sent */
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
    if (s->ring)
        for (uint64_t id = spits_ring_low(s->ring); id < spits_ring_next(s->ring); id++)
            free(spits_ring_take(s->ring, id));
    while (s->fresh) {
        jm_task_t *next = s->fresh->next;
        free(s->fresh);
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
    s->freed_bytes = 0;
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

static void add_holder(jm_task_t *task, int slot)
{
    for (int i = 0; i < JM_MAX_COPIES; i++)
        if (task->holders[i] < 0) {
            task->holders[i] = slot;
            task->copies++;
            return;
        }
}

static int drop_holder(jm_task_t *task, int slot)
{
    for (int i = 0; i < JM_MAX_COPIES; i++)
        if (task->holders[i] == slot) {
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
    spits_ring_take(s->ring, task->id);
    s->freed_bytes += task->len;
    free(task);
    s->version++;
}

/* --- tasks in ---------------------------------------------------------- */

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
        if (early) {
            s->freed_bytes += task->len;
            free(task);
            s->version++;
            continue;
        }
        n++;
        *bytes += task->len;
    }
    return n;
}

/* 3. No fresh task: copies of the oldest unfinished ones. */
static size_t pick_copies(jm_sched_t *s, jm_tm_t *t, size_t n, size_t room,
                          size_t *bytes, size_t max_bytes)
{
    size_t found = 0;
    if (s->fresh || s->max_copies < 2 || !(s->gen_done || s->gen_waiting) ||
        t->scan_version == s->version)
        return n;
    for (uint64_t id = spits_ring_low(s->ring);
         id < spits_ring_next(s->ring) && n < room && *bytes < max_bytes; id++) {
        jm_task_t *task = spits_ring_get(s->ring, id);
        if (!task || task->copies >= s->max_copies || task->copies == 0 ||
            held_by(task, t->slot))
            continue;
        if (picked_add(s, n, task) != 0)
            break;
        n++;
        found++;
        *bytes += task->len;
    }
    if (!found)
        t->scan_version = s->version;   /* nothing until something changes */
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
        task->sent = 1;
        add_holder(task, t->slot);
        s->task_bytes_sent += task->len;
    }
    s->st->sent += n;
    t->sent += n;
    t->outstanding += (int)n;
    s->npicked = 0;
    s->version++;
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
        drop_holder(task, t->slot);
    s->version++;
    if (status == SPITS_ST_OK) {
        *hash = task->hash;
        if (t)
            t->done++;
        if (task->copies)
            cancel_note(s, task);
        resolve(s, task);
        return JM_REC_COMMIT;
    }
    if (status != SPITS_ST_RETURNED)
        return on_failed_run(s, t, task, status);
    if (task->copies == 0)
        retry_push(s, task);
    return JM_REC_RETURNED;
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
    s->version++;
}

size_t jm_sched_lost(jm_sched_t *s, jm_tm_t *t)
{
    size_t n = 0;

    t->outstanding = 0;
    if (s->ring)
        for (uint64_t id = spits_ring_low(s->ring); id < spits_ring_next(s->ring); id++) {
            jm_task_t *task = spits_ring_get(s->ring, id);
            if (task && drop_holder(task, t->slot)) {
                n++;
                if (task->copies == 0)
                    retry_push(s, task);
            }
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
