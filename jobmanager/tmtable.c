/*
 * tmtable.c - the JM's registry of Task Managers (see tmtable.h): its
 * entries in a peertab (serving/peertab.c), and what an entry's creation,
 * eviction and destruction mean to the JM.
 */
#include <stddef.h>

#include "tmtable.h"

/* (peertab hands out entries as their header: it must come first) */
_Static_assert(offsetof(jm_tm_t, sv) == 0, "jm_tm_t begins with its server_peer_t");

/* An evicted TM: its counters go into the totals; its fingerprint is
 * kept if it was lost (peertab_evict_fn). */
static int jm_tmtab_evict(peertab_entry_t *e, void *arg)
{
    jm_tm_t *tm = (jm_tm_t *)e;
    jm_tm_totals_t *sum = arg;
    sum->tms++;
    sum->reattaches += tm->id.reattaches;
    sum->sent += tm->sv.sched.sent;
    sum->done += tm->sv.sched.done;
    sum->failed += tm->sv.sched.failed;
    return tm->life.lost;
}

/* A TM's entry goes, evicted or with the table: its relay's list and its
 * workers' (peertab_free_fn). */
static void jm_tmtab_free(peertab_entry_t *e)
{
    jm_tm_t *tm = (jm_tm_t *)e;
    json_decref(tm->id.behind);
    json_decref(tm->stats.workers);
}

peertab_t *jm_tmtab_new(size_t keep_dead, jm_tm_totals_t *evicted)
{
    return peertab_new(sizeof(jm_tm_t), keep_dead, JM_TMTAB_LOST_MAX, jm_tmtab_evict,
                       jm_tmtab_free, evicted);
}

jm_tm_t *jm_tmtab_add(peertab_t *tab, const void *rid, size_t len)
{
    jm_tm_t *tm = peertab_add(tab, rid, len);
    if (tm) {
        tm->stats.running = tm->stats.queued = -1;
        server_peer_init(&tm->sv);
    }
    return tm;
}

/* --- orders -------------------------------------------------------------- */

int jm_tm_cmp_done_desc(const void *a, const void *b)
{
    const jm_tm_t *x = *(jm_tm_t *const *)a, *y = *(jm_tm_t *const *)b;
    uint64_t xd = x->sv.sched.done, yd = y->sv.sched.done;
    return xd < yd ? 1 : xd > yd ? -1 : x->sv.peer.slot - y->sv.peer.slot;
}

int jm_tm_cmp_joined(const void *a, const void *b)
{
    const jm_tm_t *x = *(jm_tm_t *const *)a, *y = *(jm_tm_t *const *)b;
    double xj = x->id.joined, yj = y->id.joined;
    return xj < yj ? -1 : xj > yj ? 1 : x->sv.peer.slot - y->sv.peer.slot;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define T_KEEP 7
#define T_TMS 500

/* Every live TM is in the live set exactly once, and nothing else is. */
static int check_live(const peertab_t *t, const unsigned char *alive)
{
    size_t want = 0;
    for (int k = 0; k < T_TMS; k++)
        want += alive[k];
    if (peertab_live_count(t) != want)
        return -1;
    for (size_t i = 0; i < want; i++) {
        jm_tm_t *tm = peertab_live_at(t, i);
        if (!tm->sv.peer.alive || tm->sv.peer.live_ix != i ||
            !alive[tm->sv.peer.rid[0] | tm->sv.peer.rid[1] << 8])
            return -1;
    }
    return 0;
}

/* Churn of T_TMS TMs (two-byte routing ids) joining, dying (lost or
 * left) and coming back, at random: the dead kept never exceed T_KEEP,
 * the live set is exactly the live TMs, a dead TM still held is found,
 * an evicted lost one is recognised once, the evicted totals add up, and
 * the relay lists the entries held are freed with them. (The table's
 * own cases are peertab_selftest's.) */
int jm_tmtab_selftest(void)
{
    jm_tm_totals_t evicted = {0};
    peertab_t *t = jm_tmtab_new(T_KEEP, &evicted);
    unsigned char alive[T_TMS] = {0}, lost[T_TMS] = {0}, seen[T_TMS] = {0};
    uint64_t sent = 0, back = 0;
    unsigned seed = 12345;
    int rc = t ? 0 : -1;
    /* Every TM that dies holds a reference to this as its relay's list:
     * the table frees it with the entry (evicted or destroyed). */
    json_t *behind = json_object();

    for (int step = 0; step < 20000 && rc == 0; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % T_TMS);
        unsigned char rid[2] = {(unsigned char)(k & 0xff), (unsigned char)(k >> 8)};
        jm_tm_t *tm = peertab_find(t, rid, 2);
        if (alive[k]) {
            lost[k] = (seed >> 20) & 1;
            tm->life.lost = lost[k];
            tm->sv.sched.sent++;
            sent++;
            if (!tm->id.behind)
                tm->id.behind = json_incref(behind);
            peertab_set_alive(t, tm, 0);
            alive[k] = 0;
        } else {
            /* An evicted TM is recognised as lost exactly when it was. */
            int was_lost = !tm && peertab_take_lost(t, rid, 2);
            if (was_lost != (!tm && seen[k] && lost[k]))
                rc = -1;
            if (!tm && (!(tm = jm_tmtab_add(t, rid, 2)) || tm->stats.running != -1 ||
                        tm->stats.queued != -1 || tm->sv.sched.slot != tm->sv.peer.slot)) {
                rc = -1;
                break;
            }
            back += was_lost;
            seen[k] = 1;
            lost[k] = 0;
            tm->life.lost = 0;
            peertab_set_alive(t, tm, 1);
            alive[k] = 1;
        }
        if (rc == 0 && (peertab_count(t) - peertab_live_count(t) > T_KEEP ||
                        check_live(t, alive) != 0))
            rc = -1;
    }
    uint64_t held = 0;
    size_t holding = 0;
    for (size_t s = 0; rc == 0 && s < peertab_slots(t); s++) {
        jm_tm_t *tm = peertab_at(t, s);
        held += tm ? tm->sv.sched.sent : 0;
        holding += tm && tm->id.behind;
    }
    if (rc == 0 && (held + evicted.sent != sent || back == 0 ||
                    evicted.tms == 0 || peertab_slots(t) > T_TMS + T_KEEP ||
                    !behind || behind->refcount != 1 + holding))
        rc = -1;
    peertab_destroy(&t);
    if (rc == 0 && (t || behind->refcount != 1))
        rc = -1;
    json_decref(behind);
    if (rc)
        fprintf(stderr, "tmtable selftest failed\n");
    return rc;
}
#endif
