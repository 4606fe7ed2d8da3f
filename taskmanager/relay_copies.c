/*
 * relay_copies.c - the task copies upstream sent a relay (see
 * relay_int.h), held by the scheduler every hop shares
 * (serving/scheduler.h), as the JM's dispatcher holds its tasks.
 *
 * A copy comes out of the pool (tm_pool_take, which counts it running
 * upstream) as a scheduler task numbered in the order they came, its
 * upstream id kept as the task's hash, its bytes left in the message
 * they came in (one reference to it, the copy's). The scheduler then
 * sends it to the TMs behind (relay_tasks.c), again when a TM holding
 * it is lost or hands it back, and, once nothing fresh is left, a second
 * copy of one that is late, as the JM does; its first result resolves
 * it, and the other copies are cancelled. The rule upstream is the JM's
 * own: each copy goes back as exactly one record: its result or failed
 * run (relay_recv.c marks it answered), or RETURNED when it is released
 * unanswered: resolved above (upstream's CANCEL), given back (no TM
 * left behind, or a drain), or at a new phase. A failed run is not run
 * again here (max_attempts 1): it goes up, and the JM counts attempts.
 *
 * A copy upstream sends again while one is held here (it lost track of
 * us across an outage) is not held twice but counted in extra, and
 * answered RETURNED with the first.
 *
 * A task resolved here (its first result) or above (upstream's CANCEL)
 * is released at once, but its other copies behind us, told to cancel,
 * each still send a record: byid keeps a count of them in its place (an
 * entry with no task), and their records are dropped as they come
 * (relay_copies_swallow), so that a late result is not passed up as
 * another hop's (foreign). A count whose TM is lost before it answers
 * stays until the phase ends.
 *
 * The scheduler releases tasks from inside its calls; they wait in a
 * list until relay_copies_settle answers and frees them, after the
 * caller has marked those it answered. Settled tasks are kept (up to
 * RELAY_SPARE_MAX) and made again, so the hot path does not allocate.
 *
 * Uses relay_records.c; called by relay.c,
 * relay_upstream.c, relay_recv.c and relay_tasks.c.
 */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "relay_int.h"

#define RELAY_SPARE_MAX 65536      /* settled tasks kept to be made again */

/* The scheduler's release hook: settled later (relay_copies_settle). */
static void relay_copies_release(void *arg, sched_task_t *task)
{
    rl_copies_t *c = arg;
    task->next = c->released;
    c->released = task;
}

int relay_copies_init(tm_relay_t *r)
{
    rl_copies_t *c = &r->copies;
    if (!(c->sched = sched_new(2, 1, &c->st)) || !(c->byid = spits_idmap_new()) ||
        !(c->extra = spits_idmap_new()))
        return -1;
    sched_hooks_t h = {relay_copies_release, NULL, c, NULL, NULL};
    sched_set_hooks(c->sched, &h);
    return 0;
}

void relay_copies_set_max(tm_relay_t *r, int max_copies)
{
    if (max_copies >= 1 && max_copies <= SCHED_MAX_COPIES)
        sched_set_max_copies(r->copies.sched, max_copies);
}

/* The copies of upstream id sent again while it was held here go back
 * unrun. */
static void relay_copies_settle_extra(tm_relay_t *r, uint64_t id)
{
    int more;
    void *ph;
    if (!spits_idmap_count(r->copies.extra) ||
        !spits_idmap_get(r->copies.extra, id, &more, &ph))
        return;
    spits_idmap_del(r->copies.extra, id);
    for (int k = 0; k < more; k++)
        relay_records_add(r, ph, id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
}

void relay_copies_settle(tm_relay_t *r)
{
    rl_copies_t *c = &r->copies;
    while (c->released) {
        sched_task_t *task = c->released;
        rl_copy_t *cp = rl_copy(task);
        c->released = task->next;
        if (!c->closing) {
            if (!cp->answered)
                relay_records_add(r, cp->phase, task->hash, SPITS_ST_RETURNED, NULL,
                                  0, NULL, 1);
            relay_copies_settle_extra(r, task->hash);
        }
        /* (its entry, unless a count of cancelled copies took its place;
         * one probe: tasks' entries have owner 0, counts 1 or more) */
        void *held;
        if (spits_idmap_take(c->byid, task->hash, 0, &held) && held != task)
            spits_idmap_put(c->byid, task->hash, 0, held);   /* (not ours) */
        tm_rx_release(cp->rx, 1);
        if (c->nspare < RELAY_SPARE_MAX) {
            task->next = c->spare;
            c->spare = task;
            c->nspare++;
        } else {
            free(task);
        }
    }
    relay_records_flush(r);
    /* (a copy the scheduler could not keep would never be answered: the
     * relay stops, and the JM sends its copies elsewhere) */
    if (c->sched && sched_broken(c->sched))
        tm_pool_fail(&r->tm->pool, "out of memory in the relay's scheduler");
}

void relay_copies_free(tm_relay_t *r)
{
    rl_copies_t *c = &r->copies;
    if (c->st.sent)   /* (a relay that served) */
        spits_info("relay: %llu task copies sent down, %llu sent again, %llu "
                   "cancelled", (unsigned long long)c->st.sent,
                   (unsigned long long)c->st.resent, (unsigned long long)c->cancelled);
    c->closing = 1;
    sched_destroy(&c->sched);
    relay_copies_settle(r);
    while (c->spare) {
        sched_task_t *next = c->spare->next;
        free(c->spare);
        c->spare = next;
    }
    spits_idmap_destroy(&c->byid);
    spits_idmap_destroy(&c->extra);
}

sched_task_t *relay_copies_find(tm_relay_t *r, uint64_t id, uint32_t wire)
{
    void *task;
    if (!spits_idmap_get(r->copies.byid, id, NULL, &task) || !task ||
        rl_copy(task)->phase->wire != wire)
        return NULL;
    return task;
}

int relay_copies_swallow(tm_relay_t *r, uint64_t id)
{
    int more;
    void *task;
    if (!spits_idmap_get(r->copies.byid, id, &more, &task) || task)
        return 0;
    if (more > 1)
        spits_idmap_put(r->copies.byid, id, more - 1, NULL);   /* (no growth) */
    else
        spits_idmap_del(r->copies.byid, id);
    return 1;
}

/* A copy of upstream id behind us was told to cancel: its record is to
 * be dropped (see the top). Out of memory: it may then pass up as
 * foreign, which the JM takes as a duplicate. */
static void relay_copies_tomb(rl_copies_t *c, uint64_t id)
{
    int more;
    void *task;
    if (!spits_idmap_get(c->byid, id, &more, &task) || task)
        more = 0;
    spits_idmap_put(c->byid, id, more + 1, NULL);
}

/* A task for item (its reference moves in), from the spare ones first;
 * NULL when out of memory. */
static sched_task_t *relay_copies_make(rl_copies_t *c, const tm_item_t *item)
{
    sched_task_t *task = c->spare;
    if (task) {
        c->spare = task->next;
        c->nspare--;
    } else if (!(task = malloc(sizeof *task + sizeof(rl_copy_t)))) {
        return NULL;
    }
    task->next = NULL;
    task->id = c->next_id++;
    task->hash = item->id;
    task->len = item->len;
    task->cell = 0;
    sched_task_init(task);
    *rl_copy(task) = (rl_copy_t){item->phase, item->rx, item->data, 0};
    return task;
}

/* A task made and not used goes back to the spare ones. */
static void relay_copies_unmake(rl_copies_t *c, sched_task_t *task)
{
    task->next = c->spare;
    c->spare = task;
    c->nspare++;
}

/* Out of memory holding a copy: it goes back upstream unrun. */
static void relay_copies_refuse(tm_relay_t *r, const tm_item_t *item)
{
    relay_records_add(r, item->phase, item->id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
    tm_rx_release(item->rx, 1);
}

size_t relay_copies_take(tm_relay_t *r, size_t want)
{
    rl_copies_t *c = &r->copies;
    tm_item_t items[64];
    sched_task_t *head = NULL, *tail = NULL;
    size_t took = 0;

    while (took < want) {
        size_t k = want - took < 64 ? want - took : 64;
        size_t n = tm_pool_take(&r->tm->pool, items, k);
        for (size_t i = 0; i < n; i++) {
            const tm_item_t *it = &items[i];
            int more, rc;
            void *ph;
            sched_task_t *task = relay_copies_make(c, it);
            /* (one probe: mapped already, it is held, or a count) */
            if (task && (rc = spits_idmap_add(c->byid, it->id, 0, task)) == 1) {
                if (relay_copies_find(r, it->id, it->phase->wire)) {
                    /* held already: answered with the one held */
                    relay_copies_unmake(c, task);
                    if (!spits_idmap_get(c->extra, it->id, &more, &ph))
                        more = 0;
                    if (spits_idmap_put(c->extra, it->id, more + 1, (void *)it->phase) != 0)
                        relay_copies_refuse(r, it);
                    else
                        tm_rx_release(it->rx, 1);
                    continue;
                }
                rc = spits_idmap_put(c->byid, it->id, 0, task);
            }
            if (!task || rc < 0) {
                spits_error("relay: out of memory holding a task; handing it back "
                            "upstream");
                if (task)
                    relay_copies_release(c, task);   /* (settled: RETURNED) */
                else
                    relay_copies_refuse(r, it);
                continue;
            }
            *(tail ? &tail->next : &head) = task;
            tail = task;
        }
        took += n;
        if (n < k)
            break;
    }
    sched_add_fresh(c->sched, head, tail);
    if (took)   /* (upstream still feeds us: lateness.h) */
        late_starve_fed(&c->starve);
    if (c->released || r->rec.ph)
        relay_copies_settle(r);
    return took;
}

void relay_copies_cancels(tm_relay_t *r)
{
    size_t n;
    sched_cancel_t *cv = sched_take_cancels(r->copies.sched, &n);
    const tm_phase_t *ph = r->tm->job.current;
    if (n && ph) {
        r->copies.cancelled += server_cancels(r->srv, ph->wire, cv, n, 1);
    }
    /* (before the task's entry is settled: settling then leaves these) */
    for (size_t i = 0; i < n; i++)
        relay_copies_tomb(&r->copies, cv[i].hash);
}

void relay_copies_drop(tm_relay_t *r, const tm_phase_t *ph, const uint64_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sched_task_t *task = relay_copies_find(r, ids[i], ph->wire);
        if (task)
            sched_drop(r->copies.sched, task->id);
    }
    relay_copies_cancels(r);
    relay_copies_settle(r);
}

void relay_copies_give_back(tm_relay_t *r)
{
    if (sched_give_back(r->copies.sched))
        relay_copies_settle(r);
}

void relay_copies_orphans(tm_relay_t *r)
{
    if (peertab_live_count(r->peers.tab))
        return;
    while (relay_copies_take(r, SERVE_BATCH_TASKS))
        relay_copies_give_back(r);
}

void relay_copies_reset(tm_relay_t *r)
{
    size_t n;
    if (sched_reset(r->copies.sched) != 0) {
        tm_pool_fail(&r->tm->pool, "out of memory starting a phase");
        return;
    }
    (void)sched_take_cancels(r->copies.sched, &n);   /* (the TMs drop the
                                                         old phase's own) */
    late_starve_fed(&r->copies.starve);   /* (a new phase's work is to come) */
    relay_copies_settle(r);
    /* (every task is settled: what is left are counts of the old phase's
     * cancelled copies, which must not drop the new phase's records) */
    spits_idmap_t *fresh = spits_idmap_new();
    if (!fresh) {
        tm_pool_fail(&r->tm->pool, "out of memory starting a phase");
        return;
    }
    spits_idmap_destroy(&r->copies.byid);
    r->copies.byid = fresh;
}

void relay_copies_cancel_queued(tm_relay_t *r)
{
    const tm_phase_t *ph = r->tm->job.current;
    rl_peers_t *p = &r->peers;
    if (!ph)
        return;
    for (size_t i = peertab_live_count(p->tab); i-- > 0;) {
        rl_tm_t *t = peertab_live_at(p->tab, i);
        size_t n;
        sched_task_t *const *held = sched_held(r->copies.sched, &t->sv.sched, &n);
        sched_cancel_t *cv = malloc((n ? n : 1) * sizeof *cv);
        if (!cv)
            continue;   /* (its copies run on; the drain waits for them) */
        for (size_t k = 0; k < n; k++)
            cv[k] = (sched_cancel_t){t->sv.peer.slot, held[k]->id, held[k]->hash};
        if (n)
            server_cancels(r->srv, ph->wire, cv, n, 1);
        free(cv);
    }
}

void relay_copies_gone(tm_relay_t *r, rl_tm_t *t, const char *why, size_t n)
{
    if (loglimit_allow(&r->log.events, r->tm->now))
        spits_info("relay: %s %s:%ld %s; %zu task(s) to run again",
                   t->sv.proc.relay ? "relay" : "TM", t->sv.proc.host, t->sv.proc.pid, why, n);
    /* (with no TM left behind, nothing would run them here) */
    if (!peertab_live_count(r->peers.tab))
        relay_copies_give_back(r);
}
