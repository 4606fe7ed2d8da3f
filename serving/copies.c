/*
 * copies.c - a relay's source and sink: the copies upstream sent, held,
 * sent down and answered (copies.h says how).
 */
#define _DEFAULT_SOURCE
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "copies.h"
#include "copymap.h"
#include "lateness.h"
#include "log.h"

#define COPIES_SLAB 256            /* tasks made per allocation */

/* A copy, as the scheduler holds it: a sched_task_t (id: our number for
 * it; hash: upstream's id) whose data is this, borrowed (taskbatch.h:
 * its bytes pointer first). */
typedef struct {
    const unsigned char *bytes;  /* its bytes (the task's len of them)... */
    spits_rx_t *rx;              /* ...in this message: one reference, the
                                    copy's */
    const void *phase;
    uint32_t wire;               /* ...its wire id */
    uint32_t repeats;            /* copies upstream sent again while held,
                                    answered RETURNED with it */
    int answered;                /* its record went up */
} cp_copy_t;

_Static_assert(offsetof(cp_copy_t, bytes) == 0, "a borrowed task's data begins with its bytes");

static inline cp_copy_t *cp_copy(sched_task_t *task)
{
    return (cp_copy_t *)(void *)task->data;
}

/* A task and its copy, as a slab lays them out. */
#define CP_TASK_BYTES ((sizeof(sched_task_t) + sizeof(cp_copy_t) + 7) & ~(size_t)7)

typedef struct cp_slab {
    struct cp_slab *next;
    _Alignas(8) unsigned char tasks[];   /* COPIES_SLAB of CP_TASK_BYTES */
} cp_slab_t;

struct copies {
    copies_hop_t hop;
    peertab_t *tab;              /* the TMs behind (live ones run copies) */
    server_t *srv;
    const void *phase;           /* the relay's now (copies_phase) */
    uint32_t wire;
    sched_t *sched;
    sched_stats_t st;            /* the scheduler's counts */
    spits_idmap_t *byid;         /* upstream id -> its task, and copies
                                    told to cancel (copymap.h) */
    uint64_t next_id;            /* the next task's own number */
    sched_task_t *released;      /* released, not yet settled */
    sched_task_t *spare;         /* settled or never made, to be made */
    cp_slab_t *slabs;            /* ...every task's memory */
    uint64_t cancelled;          /* copies behind told to cancel */
    uint64_t dropped;            /* ...records of theirs dropped */
    uint64_t repeats;            /* copies upstream sent again while held */
    late_starve_t starve;        /* refills that left a TM's room unfilled */
    int closing;                 /* the end: nothing goes up */
    spits_batch_t up;            /* records of phase up_ph being gathered */
    spits_parts_t up_parts;      /* ...and the parts they name */
    const void *up_ph;
    size_t up_held;              /* ...of which answer copies held here */
};

/* --- records up --------------------------------------------------------- */

/* Hands the records gathered so far up. */
static void copies_flush(copies_t *c)
{
    if (!c->up_ph)
        return;
    c->hop.up(c->hop.arg, c->up_ph, c->up.count ? &c->up : NULL, &c->up_parts, c->up_held);
    c->up_ph = NULL;
    c->up_held = 0;
}

/* copies_answer's path for a record of a new phase, a part, or no
 * memory. */
static void copies_answer_other(copies_t *c, const void *ph, uint32_t wire, uint64_t id,
                                uint32_t status, const void *data, uint32_t len,
                                zmq_msg_t *part, int held)
{
    unsigned char *dst = NULL;
    int rc = 0;
    if (ph != c->up_ph) {
        copies_flush(c);
        c->up_ph = ph;
        spits_batch_begin(&c->up, SPITS_MSG_RESULTS, wire);
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
        c->hop.fail(c->hop.arg, "out of memory queueing results");
    c->up_held += held != 0;
}

/* Adds a record of phase ph (wire) for upstream, its payload inline, or,
 * given part (the frame it came in), as that frame shared; held: it
 * answers a copy copies_take took. Always inline: each result comes
 * through here, and GCC's unit-growth limit otherwise decides by the size
 * of the rest of this file. */
__attribute__((always_inline)) static inline void
copies_answer(copies_t *c, const void *ph, uint32_t wire, uint64_t id, uint32_t status,
              const void *data, uint32_t len, zmq_msg_t *part, int held)
{
    unsigned char *dst;
    if (ph != c->up_ph || part || !(dst = spits_batch_add(&c->up, id, status, len))) {
        copies_answer_other(c, ph, wire, id, status, data, len, part, held);
        return;
    }
    spits_copy(dst, data, len);
    c->up_held += held != 0;
}

/* RETURNED for a copy copies_take took. */
static void copies_return(copies_t *c, const void *ph, uint32_t wire, uint64_t id)
{
    copies_answer(c, ph, wire, id, SPITS_ST_RETURNED, NULL, 0, NULL, 1);
}

/* --- copies held -------------------------------------------------------- */

/* The scheduler's release hook: settled later (copies_settle). */
static void copies_release(void *arg, sched_task_t *task)
{
    copies_t *c = arg;
    task->next = c->released;
    c->released = task;
}

copies_t *copies_new(const copies_hop_t *hop, peertab_t *tab, sched_t **sched)
{
    copies_t *c = calloc(1, sizeof *c);
    assert(hop->up && hop->fail);
    if (!c || !(c->sched = sched_new(2, 1, &c->st)) || !(c->byid = spits_idmap_new())) {
        copies_destroy(&c);
        return NULL;
    }
    c->hop = *hop;
    c->tab = tab;
    sched_hooks_t h = {copies_release, NULL, c, NULL, NULL};
    sched_set_hooks(c->sched, &h);
    *sched = c->sched;
    return c;
}

void copies_set_server(copies_t *c, server_t *s)
{
    c->srv = s;
}

void copies_phase(copies_t *c, const void *phase, uint32_t wire)
{
    c->phase = phase;
    c->wire = wire;
}

/* Answers and frees the tasks the scheduler released (RETURNED, unless
 * answered), with the repeats of each; flushes the records. */
static void copies_settle(copies_t *c)
{
    spits_rx_t *rx = NULL;   /* (references to drop: n of rx, for a run of
                                copies of one message) */
    size_t n = 0;
    while (c->released) {
        sched_task_t *task = c->released;
        cp_copy_t *cp = cp_copy(task);
        c->released = task->next;
        /* (its RETURNED, unless answered, and one for each repeat) */
        for (uint32_t k = cp->answered; !c->closing && k <= cp->repeats; k++)
            copies_return(c, cp->phase, cp->wire, task->hash);
        copymap_release(c->byid, task->hash, task);
        if (cp->rx != rx) {
            if (n)
                spits_rx_release(rx, n);
            rx = cp->rx;
            n = 0;
        }
        n++;
        task->next = c->spare;
        c->spare = task;
    }
    if (n)
        spits_rx_release(rx, n);
    copies_flush(c);
    /* (a copy the scheduler could not keep would never be answered) */
    if (c->sched && sched_broken(c->sched))
        c->hop.fail(c->hop.arg, "out of memory in the relay's scheduler");
}

int copies_unsettled(const copies_t *c)
{
    return c->released != NULL;
}

void copies_destroy(copies_t **cp)
{
    copies_t *c = *cp;
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
    copies_settle(c);
    while (c->slabs) {
        cp_slab_t *next = c->slabs->next;
        free(c->slabs);
        c->slabs = next;
    }
    spits_idmap_destroy(&c->byid);
    spits_batch_free(&c->up);
    spits_parts_free(&c->up_parts);
    free(c);
    *cp = NULL;
}

/* The copy held of upstream id, of phase wire, or NULL. */
static sched_task_t *copies_find(copies_t *c, uint64_t id, uint32_t wire)
{
    sched_task_t *task = copymap_task(c->byid, id);
    return task && cp_copy(task)->wire == wire ? task : NULL;
}

/* A task for upstream's copy rec of phase (wire) in rx, a spare one, or
 * one of a new slab; NULL when out of memory. */
static sched_task_t *copies_make(copies_t *c, const spits_rec_t *rec, const void *phase,
                                 uint32_t wire, spits_rx_t *rx)
{
    if (!c->spare) {
        cp_slab_t *s = malloc(sizeof *s + COPIES_SLAB * CP_TASK_BYTES);
        if (!s)
            return NULL;
        s->next = c->slabs;
        c->slabs = s;
        for (size_t k = COPIES_SLAB; k-- > 0;) {
            sched_task_t *t = (sched_task_t *)(void *)(s->tasks + k * CP_TASK_BYTES);
            t->next = c->spare;
            c->spare = t;
        }
    }
    sched_task_t *task = c->spare;
    c->spare = task->next;
    task->next = NULL;
    task->id = c->next_id++;
    task->hash = rec->id;
    task->len = rec->len;
    sched_task_init(task);
    *cp_copy(task) = (cp_copy_t){rec->data, rx, phase, wire, 0, 0};
    return task;
}

/* Holds the copy rec (its reference is the task's): its task, or NULL
 * (a repeat, counted on the copy held, which is of this phase: a new one
 * releases every copy; or, out of memory, settled as RETURNED). */
static sched_task_t *copies_hold(copies_t *c, const spits_rec_t *rec, const void *phase,
                                 uint32_t wire, spits_rx_t *rx)
{
    void *held;
    sched_task_t *task = copies_make(c, rec, phase, wire, rx);
    int rc = task ? copymap_hold(c->byid, rec->id, task, &held) : -1;
    if (rc == 0)
        return task;
    if (rc == 1) {
        task->next = c->spare;   /* (unmade) */
        c->spare = task;
        cp_copy(held)->repeats++;
        c->repeats++;
        spits_rx_release(rx, 1);
        return NULL;
    }
    spits_error("relay: out of memory holding a task; handing it back upstream");
    if (task) {
        copies_release(c, task);   /* (settled: RETURNED) */
    } else {
        copies_return(c, phase, wire, rec->id);
        spits_rx_release(rx, 1);
    }
    return NULL;
}

size_t copies_take(copies_t *c, const void *phase, uint32_t wire, spits_reader_t *reader,
                   spits_rx_t *rx)
{
    sched_task_t *head = NULL, *tail = NULL, *task;
    spits_rec_t rec;
    uint32_t serving;
    size_t n = 0;
    /* The server sends every copy as of its phase (a new phase gives back
     * the old one's: copies_reset), so a copy of another goes back. */
    if (!server_job(c->srv, &serving) || wire != serving) {
        for (; spits_reader_next(reader, &rec); n++)
            copies_return(c, phase, wire, rec.id);
        if (n) {
            spits_rx_release(rx, n);
            spits_warn("relay: handed back %zu task(s) of phase %u: it serves phase %u", n,
                       wire, serving);
        }
        copies_flush(c);
        return n;
    }
    for (; spits_reader_next(reader, &rec); n++) {
        if (!(task = copies_hold(c, &rec, phase, wire, rx)))
            continue;
        *(tail ? &tail->next : &head) = task;
        tail = task;
    }
    sched_add_fresh(c->sched, head, tail);
    /* (new work: upstream is not out of it, whatever a refill found; a
     * serve that finds these fresh does not ask the refill) */
    late_starve_fed(&c->starve);
    sched_gen_state(c->sched, 0, 0);
    /* (upstream sent them before it heard that the last TM left) */
    copies_peer_gone(c);
    copies_settle(c);
    return n;
}

/* The copies the scheduler noted for cancelling go to the TMs holding
 * them, their records to be dropped (before the task's entry is settled:
 * settling then leaves these). */
static void copies_cancels(copies_t *c)
{
    size_t n;
    sched_cancel_t *cv = sched_take_cancels(c->sched, &n);
    if (n && c->phase) {
        size_t told = server_cancels(c->srv, c->wire, cv, n, 1);
        c->cancelled += told;
        spits_debug("relay: %zu task copies behind told to cancel", told);
    }
    /* (out of memory, a record may pass up as foreign: to the JM, a
     * duplicate) */
    for (size_t i = 0; i < n; i++)
        copymap_tomb(c->byid, cv[i].hash);
}

void copies_drop(copies_t *c, const uint64_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sched_task_t *task = copies_find(c, ids[i], c->wire);
        if (task)
            sched_drop(c->sched, task->id);
    }
    copies_cancels(c);
    copies_settle(c);
}

void copies_give_back(copies_t *c)
{
    if (sched_give_back(c->sched))
        copies_settle(c);
}

void copies_peer_gone(copies_t *c)
{
    if (!peertab_live_count(c->tab))
        copies_give_back(c);
}

void copies_reset(copies_t *c)
{
    size_t n;
    int reset = sched_reset(c->sched) == 0;   /* (released all, even failing) */
    if (reset)   /* (the TMs drop the old phase's own) */
        (void)sched_take_cancels(c->sched, &n);
    copies_settle(c);
    spits_idmap_t *fresh = reset ? spits_idmap_new() : NULL;
    if (!fresh) {
        c->hop.fail(c->hop.arg, "out of memory starting a phase");
        return;
    }
    /* (what is left are counts of the old phase's cancelled copies, which
     * must not drop the new phase's records) */
    spits_idmap_destroy(&c->byid);
    c->byid = fresh;
}

/* (src.refill) Copies come as upstream sends them (copies_take), so the
 * server asks only once the scheduler has no fresh copy: late copies may
 * go once upstream seems out of work, as the JM's once its generator has
 * nothing; a wait for upstream's next copies is not that (late_starve). */
static size_t copies_refill(void *arg, size_t want)
{
    copies_t *c = arg;
    int64_t now = server_now(c->srv);
    (void)want;
    late_starve_note(&c->starve, now);
    sched_gen_state(c->sched, 0, late_starve_out(&c->starve, now));
    return 0;
}

/* (src.part_hold) A copy goes down as a part: a reference to its message
 * for it (spits_rx_part_free drops it). */
static void *copies_part_hold(void *arg, sched_task_t *task)
{
    (void)arg;
    spits_rx_hold(cp_copy(task)->rx, 1);
    return cp_copy(task)->rx;
}

/* --- records in (the server's RESULTS) ---------------------------------- */

/* A record of no copy held here (copies.h). */
static void copies_other(copies_t *c, const spits_hdr_t *h, const spits_rec_t *rec,
                         zmq_msg_t *part)
{
    /* (an old phase's record is nothing to anyone now; the counts of
     * copies told to cancel are this phase's) */
    if (!c->phase || h->phase != c->wire)
        return;
    if (!rec->foreign && copymap_swallow(c->byid, rec->id)) {
        c->dropped++;
        spits_debug("relay: dropped the record of a cancelled copy of task %llu",
                    (unsigned long long)rec->id);
        return;
    }
    /* (a result may still be the first; a copy handed back is nothing to
     * anyone) */
    if (rec->status == SPITS_ST_RETURNED)
        return;
    copies_answer(c, c->phase, c->wire, rec->id, rec->status | SPITS_REC_FOREIGN, rec->data,
                  rec->len, part, 0);
}

/* (src.results) */
static void copies_results(void *arg, server_peer_t *p, server_recs_t *it)
{
    copies_t *c = arg;
    uint64_t hash;
    (void)p;
    while (server_recs_next(it)) {
        const spits_rec_t *rec = &it->rec;
        sched_task_t *task = rec->foreign ? NULL : copies_find(c, rec->id, it->m->h.phase);
        if (!task) {
            copies_other(c, &it->m->h, rec, it->frame);
            continue;
        }
        sched_outcome_t o = server_recs_record(it, task->id, &hash);
        if (o == SCHED_REC_UNKNOWN) {
            /* (our copy, not sent down yet: a result answers it, and it
             * is never sent; any other record is another hop's, as
             * above) */
            if (rec->status != SPITS_ST_OK) {
                copies_other(c, &it->m->h, rec, it->frame);
                continue;
            }
            /* (dropped already: an earlier result in this message answered
             * it, and it waits to be settled) */
            if (!sched_drop(c->sched, task->id)) {
                c->st.duplicates++;
                continue;
            }
            o = SCHED_REC_COMMIT;
        }
        if (o == SCHED_REC_COMMIT || o == SCHED_REC_POISON) {
            /* (released, not yet settled) */
            cp_copy_t *cp = cp_copy(task);
            copies_answer(c, cp->phase, cp->wire, rec->id, rec->status, rec->data, rec->len,
                          it->frame, 1);
            cp->answered = 1;
        }
    }
    copies_cancels(c);
    copies_settle(c);
}

server_source_t copies_source(copies_t *c)
{
    return (server_source_t){c, copies_refill, copies_part_hold, spits_rx_part_free,
                             copies_results};
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#include "credit.h"

/* A relay's copies served by a real server to peers "a", "b" and "c"
 * (slots 0 to 2), in phase 3 (the phase's pointer: &ct_ph). What goes
 * down is noted in down ("slot:T ids; " a TASKS, "slot:C ids; " a
 * CANCEL), what goes up in up ("[held: id+status ...] " a batch, the
 * status o ok, f failed, r returned, then F when foreign, =byte or Plen
 * its payload; "held?" when of another phase), and the references left
 * to each message (ct_refs); a task of CT_BIG bytes or more goes as a
 * part. */
#define CT_BIG 100
#define CT_MSGS 8

typedef struct {
    copies_t *c;
    server_t *s;
    sched_t *sc;
    peertab_t *tab;
    server_peer_t *p[3];
    char down[256], up[512];
    spits_rx_t *rx[CT_MSGS];     /* upstream's messages (ct_take's m), one
                                    reference each the test's */
    int fails;
    size_t rest_parts;           /* the next RESULTS' parts: 'P' x 300 */
} ct_t;

static const int ct_ph = 3, ct_ph4 = 4;

static void ct_note(char *log, size_t size, const char *fmt, uint64_t a, uint64_t b)
{
    size_t at = strlen(log);
    snprintf(log + at, size - at, fmt, (unsigned long long)a, (unsigned long long)b);
}

static void ct_up(void *arg, const void *phase, spits_batch_t *b, spits_parts_t *parts,
                  size_t held)
{
    ct_t *t = arg;
    spits_reader_t r;
    spits_rec_t rec;
    static const char st[] = "ofrr";
    ct_note(t->up, sizeof t->up, "[%llu", held, 0);
    strncat(t->up, phase == &ct_ph ? ":" : "?", sizeof t->up - strlen(t->up) - 1);
    if (b) {
        spits_reader_init(&r, b->buf.data, b->buf.len);
        spits_reader_parts(&r, parts->view);
        while (spits_reader_next(&r, &rec)) {
            ct_note(t->up, sizeof t->up, " %llu%c", rec.id, (uint64_t)st[rec.status & 3]);
            if (rec.foreign)
                strncat(t->up, "F", sizeof t->up - strlen(t->up) - 1);
            if (rec.part)
                ct_note(t->up, sizeof t->up, "P%llu", rec.len, 0);
            else if (rec.len)
                ct_note(t->up, sizeof t->up, "=%c", (uint64_t)rec.data[0], 0);
        }
        spits_batch_begin(b, SPITS_MSG_RESULTS, 0);
    }
    spits_parts_free(parts);
    strncat(t->up, "] ", sizeof t->up - strlen(t->up) - 1);
}

static void ct_fail(void *arg, const char *why)
{
    (void)why;
    ((ct_t *)arg)->fails++;
}

static void ct_lost(void *arg, server_peer_t *p, const char *why, int left, size_t n)
{
    (void)p, (void)why, (void)left, (void)n;
    copies_peer_gone(((ct_t *)arg)->c);
}

static int ct_stopping(void *arg)
{
    (void)arg;
    return 0;
}

static void ct_joined(void *arg, server_peer_t *p, const server_join_t *j)
{
    (void)arg, (void)p, (void)j;
}

static int ct_accept(void *arg, server_peer_t *p, const spits_hello_t *h, void **ctx,
                     const char **why)
{
    (void)arg, (void)p, (void)h, (void)ctx, (void)why;
    return 0;
}

static void ct_stats(void *arg, server_peer_t *p, json_t *body, const spits_stats_t *st,
                     json_t *parsed, int changed, int before)
{
    (void)arg, (void)p, (void)body, (void)st, (void)parsed, (void)changed, (void)before;
}

static void ct_drain(void *arg, server_peer_t *p)
{
    (void)arg, (void)p;
}

/* (io.send) TASKS and CANCEL to a peer, noted with their ids. */
static int ct_send(void *arg, const void *rid, size_t ridlen, const void *buf, size_t len,
                   int more)
{
    ct_t *t = arg;
    spits_hdr_t hd;
    const char *why;
    spits_reader_t r;
    spits_rec_t rec;
    (void)ridlen, (void)more;
    if (spits_wire_parse(buf, len, &hd, &why) != 0 ||
        (hd.type != SPITS_MSG_TASKS && hd.type != SPITS_MSG_CANCEL))
        return 0;
    ct_note(t->down, sizeof t->down, "%llu:%c", (uint64_t)(*(const char *)rid - 'a'),
            hd.type == SPITS_MSG_TASKS ? 'T' : 'C');
    spits_reader_init(&r, buf, len);
    while (spits_reader_next(&r, &rec))
        ct_note(t->down, sizeof t->down, rec.part ? " %lluP" : " %llu", rec.id, 0);
    strncat(t->down, "; ", sizeof t->down - strlen(t->down) - 1);
    return 0;
}

static int ct_send_buf(void *arg, const void *rid, size_t ridlen, spits_buf_t *b, int more)
{
    int rc = ct_send(arg, rid, ridlen, b->data, b->len, more);
    b->len = 0;
    return rc;
}

/* (io.send_msg) A part, gone at once, as libzmq would free it. */
static int ct_send_msg(void *arg, zmq_msg_t *m, int more)
{
    (void)arg, (void)more;
    zmq_msg_close(m);
    zmq_msg_init(m);
    return 0;
}

static void ct_part_bytes_free(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* (io.rest) rest_parts parts of 300 bytes to a RESULTS. */
static int ct_rest(void *arg, const spits_hdr_t *hd, zmq_msg_t *first, spits_parts_t *parts,
                   const char **why)
{
    ct_t *t = arg;
    (void)first, (void)why;
    for (size_t i = 0; hd && parts && i < t->rest_parts; i++) {
        zmq_msg_t m;
        unsigned char *b = malloc(300);
        assert(b);
        memset(b, 'P', 300);
        zmq_msg_init_data(&m, b, 300, ct_part_bytes_free, NULL);
        if (spits_parts_add(parts, &m) != 0)
            zmq_msg_close(&m);
    }
    if (parts && parts->n && (parts->view = calloc(parts->n, sizeof *parts->view)))
        for (size_t i = 0; i < parts->n; i++)
            parts->view[i] = (spits_part_t){zmq_msg_data(&parts->msgs[i]),
                                            zmq_msg_size(&parts->msgs[i])};
    return 0;
}

static int ct_pending(void *arg)
{
    (void)arg;
    return 0;
}

static int ct_recv(void *arg, zmq_msg_t *frame, int *more)
{
    (void)arg, (void)frame, (void)more;
    return -1;
}

static int64_t ct_probe(const liveness_t *l, void *arg)
{
    (void)l, (void)arg;
    return -1;
}

/* Served to n peers (up to 3) of 2 workers and slots slots, at 1000 ms. */
static int ct_world(ct_t *t, int n, int slots)
{
    copies_hop_t up = {t, ct_up, ct_fail};
    server_cfg_t cfg = {
        .hop = {t, ct_lost, ct_stopping, NULL, ct_joined, .accept = ct_accept,
                .stats = ct_stats, .drain = ct_drain},
        .io = {t, ct_send, ct_rest, ct_pending, ct_recv, ct_send_buf, ct_send_msg},
        .rules = {.prefix = "", .loop = "the test", .timeout_ms = 1000, .hb_ms = 100,
                  .tick_ms = 100},
        .probe = ct_probe, .part_min = CT_BIG, .borrowed = 1};
    memset(t, 0, sizeof *t);
    t->tab = peertab_new(sizeof(server_peer_t), 4, 16, NULL, NULL, NULL);
    if (!t->tab || !(t->c = copies_new(&up, t->tab, &t->sc)))
        return -1;
    cfg.tab = t->tab;
    cfg.sched = t->sc;
    cfg.src = copies_source(t->c);
    if (!(t->s = server_new(&cfg)))
        return -1;
    copies_set_server(t->c, t->s);
    copies_phase(t->c, &ct_ph, 3);
    json_t *job = json_pack("{s:s}", "job_id", "job");
    server_set_job(t->s, 3, job);
    json_decref(job);
    server_phase(t->s, 3);
    server_clock(t->s, 1000);
    for (int i = 0; i < n; i++) {
        char rid[2] = {(char)('a' + i), 0};
        server_peer_t *p = t->p[i] = peertab_add(t->tab, rid, 1);
        if (!p)
            return -1;
        server_peer_init(p);
        credit_set(&p->sched.credit, 2, slots);
        sched_joined(t->sc, &p->sched, 0);
        peertab_set_alive(t->tab, p, 1);
        server_peer_join(t->s, p);
        server_due(t->s, p);
    }
    return job ? 0 : -1;
}

static void ct_world_end(ct_t *t)
{
    copies_destroy(&t->c);
    server_destroy(&t->s);
    peertab_destroy(&t->tab);
    for (int m = 0; m < CT_MSGS; m++)
        if (t->rx[m])
            spits_rx_release(t->rx[m], 1);
}

/* Upstream's TASKS of phase (wire), as message m (the test's reference
 * to an earlier m dropped): the n ids from id on, each of len bytes. */
static void ct_take(ct_t *t, const int *phase, int m, uint64_t id, int n, uint32_t len)
{
    spits_batch_t b = {0};
    spits_reader_t r;
    spits_rx_t *rx = calloc(1, sizeof *rx);
    spits_batch_begin(&b, SPITS_MSG_TASKS, (uint32_t)*phase);
    for (int i = 0; i < n; i++) {
        unsigned char *at = spits_batch_add(&b, id + (uint64_t)i, 0, len);
        assert(at);
        memset(at, 'x', len);
    }
    spits_batch_seal(&b);
    assert(rx && zmq_msg_init_size(&rx->msg, b.buf.len) == 0);
    memcpy(zmq_msg_data(&rx->msg), b.buf.data, b.buf.len);
    spits_batch_free(&b);
    atomic_init(&rx->refs, (size_t)n + 1);
    if (t->rx[m])
        spits_rx_release(t->rx[m], 1);
    t->rx[m] = rx;
    spits_reader_init(&r, zmq_msg_data(&rx->msg), zmq_msg_size(&rx->msg));
    size_t took = copies_take(t->c, phase, (uint32_t)*phase, &r, rx);
    assert(took == (size_t)n && !copies_unsettled(t->c));
    (void)took;
}

/* The references to message m but the test's. */
static size_t ct_refs(const ct_t *t, int m)
{
    return atomic_load(&t->rx[m]->refs) - 1;
}

/* The clock at now, then a serve. */
static void ct_serve(ct_t *t, int64_t now)
{
    server_clock(t->s, now);
    server_due_all(t->s);
    server_serve(t->s);
}

/* A RESULTS from peer slot of n records: ids and statuses (with
 * SPITS_REC_FOREIGN), each 1 byte inline, or (part) the next of
 * rest_parts. */
static void ct_results_msg(ct_t *t, int slot, int n, const uint64_t *ids, const uint32_t *st,
                           const int *part)
{
    spits_batch_t b = {0};
    spits_parts_t parts = {0};
    zmq_msg_t msg;
    char rid[2] = {(char)('a' + slot), 0};
    spits_batch_begin(&b, SPITS_MSG_RESULTS, 3);
    t->rest_parts = 0;
    for (int i = 0; i < n; i++) {
        if (part && part[i]) {
            spits_batch_add_part(&b, ids[i], st[i], 300);
            t->rest_parts++;
        } else {
            unsigned char *at = spits_batch_add(&b, ids[i], st[i], 1);
            assert(at);
            *at = 'r';
        }
    }
    spits_batch_seal(&b);
    zmq_msg_init_size(&msg, b.buf.len);
    memcpy(zmq_msg_data(&msg), b.buf.data, b.buf.len);
    server_msg_t m = {.rid = rid, .ridlen = 1, .msg = &msg, .parts = &parts};
    server_on_frames(t->s, &m);
    spits_parts_free(&parts);
    zmq_msg_close(&msg);
    spits_batch_free(&b);
}

static int ct_is(char *log, const char *what, const char *want)
{
    int ok = strcmp(log, want) == 0;
    if (!ok)
        fprintf(stderr, "copies selftest: %s \"%s\", expected \"%s\"\n", what, log, want);
    log[0] = 0;
    return ok;
}

#define C_CHECK(c) do { if (!(c)) { fprintf(stderr, "copies selftest: " \
    "failed at line %d: %s\n", __LINE__, #c); goto out; } } while (0)

/* Copies down and records up, each answered once. */
static int ct_basic(void)
{
    ct_t t;
    int rc = -1;
    const uint32_t ok = SPITS_ST_OK, failed = SPITS_ST_FAILED, back = SPITS_ST_RETURNED;
    C_CHECK(ct_world(&t, 2, 2) == 0);
    /* Down by upstream's ids; a result goes up, its copy's reference
     * released. */
    ct_take(&t, &ct_ph, 0, 10, 4, 1);
    server_serve(t.s);
    C_CHECK(ct_is(t.down, "down", "0:T 10 11; 1:T 12 13; ") && ct_is(t.up, "up", ""));
    ct_results_msg(&t, 0, 1, (uint64_t[]){10}, &ok, NULL);
    C_CHECK(ct_is(t.up, "up", "[1: 10o=r] ") && ct_refs(&t, 0) == 3);
    /* A repeat is answered RETURNED with its copy, whose record it is;
     * a failed run goes up at once (upstream decides on runs again). */
    ct_take(&t, &ct_ph, 1, 11, 1, 1);
    C_CHECK(ct_refs(&t, 1) == 0 && ct_is(t.up, "up", ""));
    ct_results_msg(&t, 0, 1, (uint64_t[]){11}, &failed, NULL);
    C_CHECK(ct_is(t.up, "up", "[2: 11f=r 11r] ") && ct_refs(&t, 0) == 2);
    /* Upstream's CANCEL (ids past n are not read): the copies behind are
     * cancelled and ours go back; each cancelled copy's record is
     * dropped, once. */
    ct_take(&t, &ct_ph, 2, 14, 1, 1);
    copies_drop(t.c, (uint64_t[]){12, 77, 13, 14}, 3);
    C_CHECK(ct_is(t.down, "down", "1:C 12 13; ") && ct_is(t.up, "up", "[2: 13r 12r] "));
    ct_results_msg(&t, 1, 3, (uint64_t[]){12, 13, 12}, (uint32_t[]){ok, back, ok}, NULL);
    C_CHECK(ct_is(t.up, "up", "[0: 12oF=r] ") && ct_refs(&t, 0) == 0);
    /* Records of no copy: a result goes up foreign, RETURNED nowhere; a
     * foreign one stays foreign, even of a copy held; a failed run of a
     * copy not sent is another hop's. */
    ct_take(&t, &ct_ph, 3, 20, 3, 1);
    ct_results_msg(&t, 1, 4, (uint64_t[]){99, 98, 20, 21}, (uint32_t[]){ok, back,
                   failed | SPITS_REC_FOREIGN, failed}, NULL);
    C_CHECK(ct_is(t.up, "up", "[0: 99oF=r 20fF=r 21fF=r] ") && ct_refs(&t, 3) == 3);
    /* A result of a copy not sent down yet answers it (a second is a
     * duplicate); one that came as a part goes up as that part. */
    ct_results_msg(&t, 0, 2, (uint64_t[]){20, 20}, (uint32_t[]){ok, ok}, (int[]){1, 0});
    C_CHECK(ct_is(t.up, "up", "[1: 20oP300] ") && ct_refs(&t, 3) == 2);
    /* A large copy goes down as a part, its message held meanwhile (the
     * test's part is gone once sent). */
    ct_take(&t, &ct_ph, 4, 30, 1, CT_BIG);
    server_serve(t.s);
    C_CHECK(ct_is(t.down, "down", "0:T 14 21; 1:T 22 30P; ") && ct_refs(&t, 4) == 1);
    C_CHECK(t.c->repeats == 1 && t.c->cancelled == 2 && t.c->dropped == 2 &&
            t.c->st.duplicates == 1);
    /* Another phase's copies go back at once, as does everything held at
     * a new phase. */
    ct_take(&t, &ct_ph4, 5, 40, 2, 1);
    C_CHECK(ct_is(t.up, "up", "[2? 40r 41r] ") && ct_refs(&t, 5) == 0);
    copies_reset(t.c);
    C_CHECK(ct_is(t.up, "up", "[4: 30r 22r 21r 14r] "));
    C_CHECK(ct_refs(&t, 2) == 0 && ct_refs(&t, 3) == 0 && ct_refs(&t, 4) == 0 && !t.fails);
    /* With no peer alive, a copy goes back as it comes; when the last
     * one goes, so do the copies it held. */
    server_lose(t.s, t.p[0], "test", 0);
    ct_take(&t, &ct_ph, 6, 50, 1, 1);
    C_CHECK(ct_is(t.up, "up", "") && ct_refs(&t, 6) == 1);
    server_lose(t.s, t.p[1], "test", 0);
    C_CHECK(ct_is(t.up, "up", "[1: 50r] ") && ct_refs(&t, 6) == 0);
    ct_take(&t, &ct_ph, 7, 51, 1, 1);
    C_CHECK(ct_is(t.up, "up", "[1: 51r] ") && ct_refs(&t, 7) == 0);
    /* At the end, copies held are freed, and nothing goes up. */
    peertab_set_alive(t.tab, t.p[0], 1);
    ct_take(&t, &ct_ph, 0, 60, 2, 1);
    copies_destroy(&t.c);
    C_CHECK(ct_is(t.up, "up", "") && ct_refs(&t, 0) == 0 && t.fails == 0);
    rc = 0;
out:
    ct_world_end(&t);
    return rc;
}

/* Late copies, with the job's max_copies max1 then max2 (either may be
 * out of range, and kept): once half the phase is done and upstream sent
 * nothing for LATE_STARVED_MS, the slow peer's copies go elsewhere too
 * (down: what went then; down2: later); the first result cancels the
 * others (cancels), whose records are dropped. */
static int ct_late(int max1, int max2, const char *down, const char *cancel16,
                   const char *down2, const char *cancels)
{
    ct_t t;
    int rc = -1;
    const uint32_t ok = SPITS_ST_OK;
    C_CHECK(ct_world(&t, 3, 4) == 0);
    for (int i = 0; i < 2; i++) {   /* (the job says it: server_set_job) */
        json_t *job = json_pack("{s:s, s:i}", "job_id", "job", "max_copies", i ? max2 : max1);
        C_CHECK(job);
        server_set_job(t.s, 3, job);
        json_decref(job);
    }
    ct_take(&t, &ct_ph, 0, 10, 6, 1);
    ct_serve(&t, 1000);
    C_CHECK(ct_is(t.down, "down", "0:T 10 11; 1:T 12 13; 2:T 14 15; "));
    server_clock(t.s, 1010);
    ct_results_msg(&t, 0, 2, (uint64_t[]){10, 11}, (uint32_t[]){ok, ok}, NULL);
    ct_results_msg(&t, 2, 2, (uint64_t[]){14, 15}, (uint32_t[]){ok, ok}, NULL);
    C_CHECK(ct_is(t.up, "up", "[2: 10o=r 11o=r] [2: 14o=r 15o=r] "));
    /* (starved since 1000; a copy from upstream at 1050 starts it over) */
    ct_take(&t, &ct_ph, 1, 16, 1, 1);
    ct_serve(&t, 1050);
    C_CHECK(ct_is(t.down, "down", "2:T 16; "));
    ct_serve(&t, 1120);
    C_CHECK(ct_is(t.down, "down", ""));
    ct_serve(&t, 1160);
    C_CHECK(ct_is(t.down, "down", down));
    /* New work: no late copy until upstream is starved again, though
     * copies out are late by then, and c's two idle workers have room
     * for more than it (cancel16: the other copies of 16, done). */
    ct_results_msg(&t, 2, 1, (uint64_t[]){16}, &ok, NULL);
    C_CHECK(ct_is(t.up, "up", "[1: 16o=r] ") && ct_is(t.down, "down", cancel16));
    size_t cancelled = t.c->cancelled;
    ct_take(&t, &ct_ph, 2, 17, 1, 1);
    ct_serve(&t, 1280);
    C_CHECK(ct_is(t.down, "down", "2:T 17; "));
    ct_serve(&t, 1400);   /* (the newest copies are late in turn) */
    C_CHECK(ct_is(t.down, "down", down2));
    ct_results_msg(&t, 1, 2, (uint64_t[]){12, 13}, (uint32_t[]){ok, ok}, NULL);
    C_CHECK(ct_is(t.up, "up", "[2: 12o=r 13o=r] ") && ct_is(t.down, "down", cancels));
    /* (each peer's records of 12 and 13: those of cancelled copies
     * dropped, the others up as foreign) */
    ct_results_msg(&t, 0, 2, (uint64_t[]){12, 13}, (uint32_t[]){ok, ok}, NULL);
    ct_results_msg(&t, 2, 2, (uint64_t[]){12, 13}, (uint32_t[]){ok, ok}, NULL);
    size_t foreign = 0;
    for (const char *at = t.up; (at = strstr(at, "oF")); at++)
        foreign++;
    t.up[0] = 0;
    cancelled = t.c->cancelled - cancelled;
    C_CHECK(cancelled + foreign == 4 && t.c->dropped == cancelled && t.fails == 0);
    rc = 0;
out:
    ct_world_end(&t);
    return rc;
}

/* A settled task's memory is made again, a repeat's at once: a slab's
 * worth of copies held, then another, in one slab. */
static int ct_reuse(void)
{
    ct_t t;
    int rc = -1;
    uint64_t ids[COPIES_SLAB];
    C_CHECK(ct_world(&t, 1, 2) == 0);
    for (int round = 0; round < 3; round++) {
        ct_take(&t, &ct_ph, 0, 1000 * (uint64_t)round, 1, 1);
        ct_take(&t, &ct_ph, 1, 1000 * (uint64_t)round, 1, 1);
        ct_take(&t, &ct_ph, 2, 1000 * (uint64_t)round + 1, COPIES_SLAB - 1, 1);
        for (size_t i = 0; i < COPIES_SLAB; i++)
            ids[i] = 1000 * (uint64_t)round + i;
        copies_drop(t.c, ids, COPIES_SLAB);
        C_CHECK(ct_refs(&t, 0) == 0 && ct_refs(&t, 1) == 0 && ct_refs(&t, 2) == 0);
        C_CHECK(t.c->slabs && !t.c->slabs->next);
    }
    t.up[0] = 0;
    rc = 0;
out:
    ct_world_end(&t);
    return rc;
}

int copies_selftest(void)
{
    if (ct_basic() || ct_reuse() ||
        ct_late(0, 9, "0:T 12 13; 0:T 16; ", "0:C 16; ", "0:T 17; ", "0:C 12 13; ") ||
        ct_late(9, 8, "0:T 12 13; 0:T 16; ", "0:C 16; ", "2:T 12; 2:T 13; 0:T 17; ",
                "0:C 12 13; 2:C 12 13; ") ||
        ct_late(2, 1, "", "", "", ""))
        return -1;
    return 0;
}
#endif
