/*
 * relay_copies.c - a relay's source and sink (see relay_int.h): the task
 * copies upstream sent, held by the scheduler every hop shares
 * (serving/scheduler.h), sent down as TASKS and answered upstream.
 *
 * In: a copy from upstream's TASKS (tm_relay_take) becomes a scheduler
 * task numbered in arrival order, its upstream id as the task's hash, its
 * bytes left in the message they came in (one reference each). The
 * scheduler sends it down, again when the TM holding it is lost or hands
 * it back, and a second copy once upstream seems out of work
 * (serving/lateness.h).
 *
 * Out: each copy goes back as exactly one record, the JM's rule: its
 * first result or failed run, or RETURNED when it is released
 * unanswered (upstream's CANCEL, given back, a new phase). Records go up
 * as one RESULTS batch per phase through the outbox; a result that came
 * as a part goes up as that frame, shared.
 *
 * A record of no copy held here is work a TM did for another hop: it
 * goes up flagged SPITS_REC_FOREIGN, which gives upstream no credit back.
 * A copy upstream sends again while one is held is counted on it and
 * answered RETURNED with it. The copies behind us told to cancel still
 * send a record each: byid counts them (serving/copymap.h), and drops
 * that many records of the id rather than pass them up as foreign.
 *
 * Down: the server sends the copies its scheduler picks (borrowed
 * tasks, serving/taskbatch.h), a large one as a part that holds a
 * reference to its message.
 *
 * The scheduler releases tasks inside its calls; they wait in a list
 * until relay_copies_settle answers and frees them, after the caller
 * marked those it answered. Each function here that calls the scheduler
 * settles before it returns; relay.c asserts it at each turn's end.
 * Tasks are made in slabs and kept for reuse until the relay ends, so
 * the per-task path does not allocate.
 *
 * libzmq's I/O thread only calls relay_copies_part_done, which drops a
 * reference with an atomic.
 */
#define _DEFAULT_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "copymap.h"
#include "log.h"
#include "relay_int.h"

#define RELAY_SLAB_TASKS 256       /* tasks made per allocation */

/* A copy, as the scheduler holds it: a sched_task_t (id: our number for
 * it; hash: upstream's id) whose data bytes are this, borrowed
 * (serving/taskbatch.h: its bytes pointer first). */
typedef struct {
    const unsigned char *bytes;  /* its bytes (the task's len of them)... */
    tm_rx_t *rx;                 /* ...in this message: one reference, the
                                    copy's */
    const tm_phase_t *phase;
    int answered;                /* its record went upstream */
    uint32_t repeats;            /* copies upstream sent again while held,
                                    answered RETURNED with it */
} rl_copy_t;

_Static_assert(offsetof(rl_copy_t, bytes) == 0, "a borrowed task's data begins with its bytes");

static inline rl_copy_t *rl_copy(sched_task_t *task)
{
    return (rl_copy_t *)(void *)task->data;
}

/* A task and its copy, as a slab lays them out. */
#define RL_TASK_BYTES ((sizeof(sched_task_t) + sizeof(rl_copy_t) + 7) & ~(size_t)7)

typedef struct rl_slab {
    struct rl_slab *next;
    _Alignas(8) unsigned char tasks[];   /* RELAY_SLAB_TASKS of RL_TASK_BYTES */
} rl_slab_t;

struct rl_copies {
    sched_t *sched;
    sched_stats_t st;            /* the scheduler's counts */
    spits_idmap_t *byid;         /* upstream id -> its task, and copies
                                    told to cancel (copymap.h) */
    uint64_t next_id;            /* the next task's own number */
    sched_task_t *released;      /* released, not yet settled */
    sched_task_t *spare;         /* settled or never made, to be made */
    rl_slab_t *slabs;            /* ...every task's memory */
    uint64_t cancelled;          /* copies behind told to cancel */
    uint64_t dropped;            /* ...records of theirs dropped */
    uint64_t repeats;            /* copies upstream sent again while held */
    late_starve_t starve;        /* refills that left a TM's room unfilled */
    int closing;                 /* the relay ends: nothing goes up */
    spits_batch_t up;            /* records of phase up_ph being gathered */
    spits_parts_t up_parts;      /* ...and the parts they name */
    const tm_phase_t *up_ph;
    size_t up_held;              /* ...of which answer copies held here */
};

/* --- records up --------------------------------------------------------- */

/* Hands the records gathered so far to the outbox. */
static void relay_copies_flush(tm_relay_t *r)
{
    rl_copies_t *c = r->copies;
    if (!c->up_ph)
        return;
    tm_pool_remote_done(&r->tm->pool, c->up_ph, c->up.count ? &c->up : NULL, &c->up_parts,
                        c->up_held);
    c->up_ph = NULL;
    c->up_held = 0;
}

/* relay_copies_answer's path for a record of a new phase, a part, or no
 * memory. */
static void relay_copies_answer_other(tm_relay_t *r, const tm_phase_t *ph, uint64_t id,
                                      uint32_t status, const void *data, uint32_t len,
                                      zmq_msg_t *part, int held)
{
    rl_copies_t *c = r->copies;
    unsigned char *dst = NULL;
    int rc = 0;
    if (ph != c->up_ph) {
        relay_copies_flush(r);
        c->up_ph = ph;
        spits_batch_begin(&c->up, SPITS_MSG_RESULTS, ph->wire);
    }
    if (part) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        rc = zmq_msg_copy(&m, part) == 0
                 ? spits_parts_add_record(&c->up, &c->up_parts, id, status, &m) : -1;
        zmq_msg_close(&m);
    } else if (!(dst = spits_batch_add(&c->up, id, status, len))) {
        rc = -1;
    } else if (len) {
        spits_copy(dst, data, len);
    }
    /* (unanswered, its copy would stay held upstream: the relay stops, and
     * the JM sends its copies elsewhere) */
    if (rc != 0)
        tm_pool_fail(&r->tm->pool, "out of memory queueing results");
    c->up_held += held != 0;
}

/* Adds a record of phase ph for upstream, its payload inline, or, given
 * part (the frame it came in), as that frame shared; held: it answers a
 * copy tm_relay_take took (counted running in the pool). Always inline:
 * each result comes through here, and GCC's unit-growth limit otherwise
 * decides by the size of the rest of this file. */
__attribute__((always_inline)) static inline void
relay_copies_answer(tm_relay_t *r, const tm_phase_t *ph, uint64_t id, uint32_t status,
                    const void *data, uint32_t len, zmq_msg_t *part, int held)
{
    rl_copies_t *c = r->copies;
    unsigned char *dst;
    if (ph != c->up_ph || part || !(dst = spits_batch_add(&c->up, id, status, len))) {
        relay_copies_answer_other(r, ph, id, status, data, len, part, held);
        return;
    }
    spits_copy(dst, data, len);
    c->up_held += held != 0;
}

/* --- copies held -------------------------------------------------------- */

/* The scheduler's release hook: settled later (relay_copies_settle). */
static void relay_copies_release(void *arg, sched_task_t *task)
{
    rl_copies_t *c = arg;
    task->next = c->released;
    c->released = task;
}

sched_t *relay_copies_init(tm_relay_t *r)
{
    rl_copies_t *c = r->copies = calloc(1, sizeof *c);
    if (!c || !(c->sched = sched_new(2, 1, &c->st)) || !(c->byid = spits_idmap_new()))
        return NULL;
    sched_hooks_t h = {relay_copies_release, NULL, c, NULL, NULL};
    sched_set_hooks(c->sched, &h);
    return c->sched;
}

void relay_copies_set_max(tm_relay_t *r, int max_copies)
{
    if (max_copies >= 1 && max_copies <= SCHED_MAX_COPIES)
        sched_set_max_copies(r->copies->sched, max_copies);
}

/* Answers and frees the tasks the scheduler released (RETURNED, unless
 * answered), with the repeats of each; flushes the records. */
static void relay_copies_settle(tm_relay_t *r)
{
    rl_copies_t *c = r->copies;
    tm_rx_t *rx = NULL;   /* (references to drop: n of rx, for a run of
                             copies of one message) */
    size_t n = 0;
    while (c->released) {
        sched_task_t *task = c->released;
        rl_copy_t *cp = rl_copy(task);
        c->released = task->next;
        if (!c->closing && !cp->answered)
            relay_copies_answer(r, cp->phase, task->hash, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
        for (uint32_t k = 0; !c->closing && k < cp->repeats; k++)
            relay_copies_answer(r, cp->phase, task->hash, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
        copymap_release(c->byid, task->hash, task);
        if (cp->rx != rx) {
            if (n)
                tm_rx_release(rx, n);
            rx = cp->rx;
            n = 0;
        }
        n++;
        task->next = c->spare;
        c->spare = task;
    }
    if (n)
        tm_rx_release(rx, n);
    relay_copies_flush(r);
    /* (a copy the scheduler could not keep would never be answered) */
    if (c->sched && sched_broken(c->sched))
        tm_pool_fail(&r->tm->pool, "out of memory in the relay's scheduler");
}

int relay_copies_unsettled(const tm_relay_t *r)
{
    return r->copies->released != NULL;
}

void relay_copies_free(tm_relay_t *r)
{
    rl_copies_t *c = r->copies;
    if (!c)
        return;
    if (c->st.sent)
        spits_info("relay: %llu task copies sent down, %llu sent again, %llu "
                   "cancelled (%llu of their records dropped), %llu duplicate record(s), "
                   "%llu repeated by upstream",
                   (unsigned long long)c->st.sent, (unsigned long long)c->st.resent,
                   (unsigned long long)c->cancelled, (unsigned long long)c->dropped,
                   (unsigned long long)c->st.duplicates, (unsigned long long)c->repeats);
    c->closing = 1;
    sched_destroy(&c->sched);
    relay_copies_settle(r);
    while (c->slabs) {
        rl_slab_t *next = c->slabs->next;
        free(c->slabs);
        c->slabs = next;
    }
    spits_idmap_destroy(&c->byid);
    spits_batch_free(&c->up);
    spits_parts_free(&c->up_parts);
    free(c);
    r->copies = NULL;
}

/* The copy held of upstream id, of phase wire, or NULL. */
static sched_task_t *relay_copies_find(rl_copies_t *c, uint64_t id, uint32_t wire)
{
    sched_task_t *task = copymap_task(c->byid, id);
    return task && rl_copy(task)->phase->wire == wire ? task : NULL;
}

/* A task for item (its reference moves in), a spare one, or one of a new
 * slab; NULL when out of memory. */
static sched_task_t *relay_copies_make(rl_copies_t *c, const tm_item_t *item)
{
    if (!c->spare) {
        rl_slab_t *s = malloc(sizeof *s + RELAY_SLAB_TASKS * RL_TASK_BYTES);
        if (!s)
            return NULL;
        s->next = c->slabs;
        c->slabs = s;
        for (size_t k = RELAY_SLAB_TASKS; k-- > 0;) {
            sched_task_t *t = (sched_task_t *)(void *)(s->tasks + k * RL_TASK_BYTES);
            t->next = c->spare;
            c->spare = t;
        }
    }
    sched_task_t *task = c->spare;
    c->spare = task->next;
    task->next = NULL;
    task->id = c->next_id++;
    task->hash = item->id;
    task->len = item->len;
    task->cell = 0;
    sched_task_init(task);
    *rl_copy(task) = (rl_copy_t){item->data, item->rx, item->phase, 0, 0};
    return task;
}

void tm_relay_take(tm_t *tm, const tm_item_t *items, size_t n)
{
    tm_relay_t *r = tm->relay;
    rl_copies_t *c = r->copies;
    sched_task_t *head = NULL, *tail = NULL;
    uint32_t wire = 0;
    /* The server sends every copy as of its phase (a new phase gives back
     * the old one's: relay_copies_reset), so a copy of another goes back
     * (a WELCOME that said phase 0 leaves the TM in its last one). */
    int has_job = server_job(r->srv, &wire) != NULL;
    size_t other = 0;

    tm_pool_remote_taken(&tm->pool, n);
    for (size_t i = 0; i < n; i++) {
        const tm_item_t *it = &items[i];
        int rc = -1;
        if (!has_job || it->phase->wire != wire) {
            relay_copies_answer(r, it->phase, it->id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
            tm_rx_release(it->rx, 1);
            other++;
            continue;
        }
        sched_task_t *task = relay_copies_make(c, it);
        void *held;
        if (task && (rc = copymap_hold(c->byid, it->id, task, &held)) == 1) {
            if (rl_copy(held)->phase->wire == it->phase->wire) {
                /* (a repeat: answered with the copy held) */
                task->next = c->spare;   /* (unmade) */
                c->spare = task;
                rl_copy(held)->repeats++;
                c->repeats++;
                tm_rx_release(it->rx, 1);
                continue;
            }
            rc = copymap_replace(c->byid, it->id, task);   /* (an old phase's) */
        }
        if (rc < 0) {
            spits_error("relay: out of memory holding a task; handing it back upstream");
            if (task) {
                relay_copies_release(c, task);   /* (settled: RETURNED) */
            } else {
                relay_copies_answer(r, it->phase, it->id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
                tm_rx_release(it->rx, 1);
            }
            continue;
        }
        *(tail ? &tail->next : &head) = task;
        tail = task;
    }
    if (other)
        spits_warn("relay: handed back %zu task(s) of phase %u: it serves phase %u", other,
                   items[0].phase->wire, wire);
    sched_add_fresh(c->sched, head, tail);
    /* (new work: upstream is not out of it, whatever a refill found) */
    late_starve_fed(&c->starve);
    sched_gen_state(c->sched, 0, 0);
    /* (upstream sent them before it heard that the last TM left) */
    if (!peertab_live_count(r->peers.tab))
        sched_give_back(c->sched);
    relay_copies_settle(r);
}

/* The copies the scheduler noted for cancelling go to the TMs holding
 * them, their records to be dropped (before the task's entry is settled:
 * settling then leaves these). */
static void relay_copies_cancels(tm_relay_t *r)
{
    rl_copies_t *c = r->copies;
    size_t n;
    sched_cancel_t *cv = sched_take_cancels(c->sched, &n);
    const tm_phase_t *ph = r->tm->job.current;
    if (n && ph) {
        size_t told = server_cancels(r->srv, ph->wire, cv, n, 1);
        c->cancelled += told;
        spits_debug("relay: %zu task copies behind told to cancel", told);
    }
    /* (out of memory, a record may pass up as foreign: to the JM, a
     * duplicate) */
    for (size_t i = 0; i < n; i++)
        copymap_tomb(c->byid, cv[i].hash);
}

void relay_copies_drop(tm_relay_t *r, const tm_phase_t *ph, const uint64_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sched_task_t *task = relay_copies_find(r->copies, ids[i], ph->wire);
        if (task)
            sched_drop(r->copies->sched, task->id);
    }
    relay_copies_cancels(r);
    relay_copies_settle(r);
}

void relay_copies_give_back(tm_relay_t *r)
{
    if (sched_give_back(r->copies->sched))
        relay_copies_settle(r);
}

void relay_copies_reset(tm_relay_t *r)
{
    rl_copies_t *c = r->copies;
    size_t n;
    int reset = sched_reset(c->sched) == 0;   /* (released all, even failing) */
    if (reset) {
        (void)sched_take_cancels(c->sched, &n);   /* (the TMs drop the old
                                                     phase's own) */
        late_starve_fed(&c->starve);
    }
    relay_copies_settle(r);
    spits_idmap_t *fresh = reset ? spits_idmap_new() : NULL;
    if (!fresh) {
        tm_pool_fail(&r->tm->pool, "out of memory starting a phase");
        return;
    }
    /* (what is left are counts of the old phase's cancelled copies, which
     * must not drop the new phase's records) */
    spits_idmap_destroy(&c->byid);
    c->byid = fresh;
}

void relay_copies_gone(tm_relay_t *r, rl_tm_t *t, const char *why, size_t n)
{
    if (loglimit_allow(&r->log.events, r->tm->now))
        spits_info("relay: %s %s:%ld %s; %zu task(s) to run again",
                   t->sv.proc.relay ? "relay" : "TM", t->sv.proc.host, t->sv.proc.pid, why, n);
    if (!peertab_live_count(r->peers.tab))   /* (nothing would run them here) */
        relay_copies_give_back(r);
}

/* --- tasks down (the server's source and sink) -------------------------- */

/* Copies come as upstream sends them (tm_relay_take), so the server asks
 * only once the scheduler has none fresh: late copies may go once
 * upstream seems out of work, as the JM's once its generator has nothing;
 * a wait for upstream's next copies is not that (late_starve). */
size_t relay_copies_refill(void *arg, size_t want)
{
    tm_relay_t *r = arg;
    rl_copies_t *c = r->copies;
    (void)want;
    late_starve_note(&c->starve, r->tm->now);
    sched_gen_state(c->sched, 0, late_starve_out(&c->starve, r->tm->now));
    return 0;
}

/* A copy goes down as a part: a reference to its message for it, which
 * goes once libzmq is done with it (on libzmq's I/O thread: the count is
 * atomic). */
void *relay_copies_part_hold(void *arg, sched_task_t *task)
{
    (void)arg;
    tm_rx_hold(rl_copy(task)->rx, 1);
    return rl_copy(task)->rx;
}

void relay_copies_part_done(void *data, void *rx)
{
    (void)data;
    tm_rx_release(rx, 1);
}

void relay_copies_serve(tm_relay_t *r)
{
    tm_t *tm = r->tm;
    if (server_job(r->srv, NULL) && tm->pool_started && !tm->drain.active)
        server_serve(r->srv);
}

/* --- records in (the server's RESULTS) ---------------------------------- */

/* A record of no copy held here (see the top). */
static void relay_copies_other(tm_relay_t *r, const spits_hdr_t *h, const spits_rec_t *rec,
                               zmq_msg_t *part)
{
    const tm_phase_t *cur = r->tm->job.current;
    /* (an old phase's record is nothing to anyone now; the counts of
     * copies told to cancel are this phase's) */
    if (!cur || h->phase != cur->wire)
        return;
    if (!rec->foreign && copymap_swallow(r->copies->byid, rec->id)) {
        r->copies->dropped++;
        spits_debug("relay: dropped the record of a cancelled copy of task %llu",
                    (unsigned long long)rec->id);
        return;
    }
    /* (a result may still be the first; a copy handed back is nothing to
     * anyone) */
    if (rec->status == SPITS_ST_RETURNED)
        return;
    relay_copies_answer(r, cur, rec->id, rec->status | SPITS_REC_FOREIGN, rec->data, rec->len,
                        part, 0);
}

void relay_copies_results(void *arg, server_peer_t *p, server_recs_t *it)
{
    tm_relay_t *r = arg;
    uint64_t hash;
    (void)p;
    while (server_recs_next(it)) {
        const spits_rec_t *rec = &it->rec;
        sched_task_t *task =
            rec->foreign ? NULL : relay_copies_find(r->copies, rec->id, it->m->h.phase);
        if (!task) {
            relay_copies_other(r, &it->m->h, rec, it->frame);
            continue;
        }
        sched_outcome_t o = server_recs_record(it, task->id, &hash);
        if (o == SCHED_REC_UNKNOWN) {
            /* (our copy, not sent down yet: a result answers it, and it
             * is never sent; any other record is another hop's, as
             * above) */
            if (rec->status != SPITS_ST_OK) {
                relay_copies_other(r, &it->m->h, rec, it->frame);
                continue;
            }
            /* (dropped already: an earlier result in this message answered
             * it, and it waits to be settled) */
            if (!sched_drop(r->copies->sched, task->id)) {
                r->copies->st.duplicates++;
                continue;
            }
            o = SCHED_REC_COMMIT;
        }
        if (o == SCHED_REC_COMMIT || o == SCHED_REC_POISON) {
            /* (released, not yet settled) */
            relay_copies_answer(r, rl_copy(task)->phase, rec->id, rec->status, rec->data,
                                rec->len, it->frame, 1);
            rl_copy(task)->answered = 1;
        }
    }
    relay_copies_cancels(r);
    relay_copies_settle(r);
}
