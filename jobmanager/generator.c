/*
 * generator.c - the generator thread and the genq it fills.
 *
 * next_task is not idempotent, so it runs on exactly one thread per phase.
 * Each task is numbered in generation order (the wire's task id) and copied
 * into one allocation with its bytes inline (small ones: a cell the
 * dispatcher handed back, taskpool.h). Tasks are handed to the
 * dispatcher in chunks: the genq lock is taken once per chunk, and the
 * dispatcher's eventfd is written only when the genq was empty. A chunk is
 * flushed early when the dispatcher has run dry, so a slow generator adds
 * no latency. While next_task runs (or the generator waits for window
 * room), the unflushed chunk is lent to the dispatcher through one atomic
 * pointer: a next_task that blocks after a fast burst cannot hold the
 * burst back, because the dispatcher takes the lent chunk whenever it
 * runs dry. Lending costs two atomic operations per task, no lock and no
 * system call.
 *
 * Before each task the generator waits for room: in the window (tasks,
 * and bytes, generated but not resolved), ahead of sending (bytes made,
 * not yet sent: GEN_AHEAD_BYTES) and in --memory-limit (gen_mem_room:
 * the JM's memory and what the tasks in flight may still add to it).
 *
 * In a resumed phase, the ids already committed (p->skip) are generated
 * again but not queued: their hash must match the journal's, or the module
 * does not generate deterministically and the resume stops.
 *
 * Generation checkpoints: with a journal, the generator chains each task's
 * hash into a running hash (spits_gen_chain: one mix per task) and
 * publishes (tasks made, running hash) with each flush; the committer
 * journals it with its next sync, and asks for a sync of its own when the
 * count has doubled since the last such request and when generation ends,
 * so that the tasks sent early in a phase are covered too. A resumed
 * phase checks the running hash at each journaled checkpoint's count. An
 * early result of task i (adopt.h) may be adopted only once a checkpoint
 * past i has matched (genq.verified): the old JM's task i is then the
 * same as this one's. To have the check in time, the generator holds its
 * tasks back (no lending, no flush by size) until the next checkpoint is
 * checked, and flushes them with the new bound; tasks it cannot hold (the
 * window is full) go unverified, and their early results are dropped.
 * Holding ends at the last checkpoint or at the first mismatch.
 */
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "generator.h"
#include "committer.h"
#include "crash.h"
#include "jm.h"
#include "journal.h"
#include "log.h"
#include "mem.h"
#include "parts.h"
#include "phase.h"
#include "modcall.h"
#include "push.h"
#include "scheduler.h"
#include "taskpool.h"
#include "util.h"
#include "wake.h"

#define GEN_CHUNK_TASKS 256
#define GEN_CHUNK_BYTES (1u << 20)
/* Task bytes made and not yet sent that the generator stops at (one
 * task is always allowed). The window (--window-bytes, 1 GiB) bounds
 * the tasks in flight, which TMs' credits decide; made ahead of sending,
 * they only wait: 1 MB tasks to one TM filled the whole window, and the
 * JM's copies of them faulted in fresh pages: 3.0 GB/s and 950 MiB of RSS
 * against 3.9 GB/s and 28 MiB with the window at 16 MiB. 64 MiB is tens
 * of milliseconds of sending at the wire's speed here, made at the
 * module's speed, which is no slower. */
#define GEN_AHEAD_BYTES ((uint64_t)64 << 20)

/* --memory-limit's view of the JM (gen_mem_room). Generator thread. */
typedef struct {
    uint64_t limit;          /* bytes (0: none) */
    int curve;               /* CURVE is on */
    uint64_t encoders;       /* libzmq's I/O threads, with CURVE; else 0 */
    uint64_t max_copies;     /* --max-copies: copies of a task out at once */
    uint64_t part_min;       /* tasks this large go as parts (parts.h) */
    uint64_t max_len;        /* the largest task generated so far */
    uint64_t min_len;        /* ...and the smallest (UINT64_MAX: none yet) */
    uint64_t rss;            /* the anonymous resident size last read... */
    uint64_t rss_made;       /* ...the task bytes made by then... */
    int64_t rss_ms;          /* ...and when */
    unsigned calls;
    int64_t trim_ms;         /* when free heap memory was last given back */
    int logged;              /* the phase's first wait was logged */
} gen_mem_t;

/* Generator thread. */
typedef struct {
    jm_t *jm;
    jm_phase_t *p;
    jm_task_t *pending;      /* the bytes of the current call's last push */
    jm_task_t *spare;        /* cells to make tasks in (taskpool.h) */
    spits_modcall_t call;    /* the current call's pushes (modcall.h) */
    gen_mem_t mem;
    int chain;               /* keep the running hash (a journal, or a
                                resumed phase's checkpoints to check) */
    uint64_t run;            /* the running hash of the tasks made */
    size_t ck;               /* the next of p->checks to check */
    uint64_t verified;       /* ids below it matched a checkpoint... */
    uint64_t published;      /* ...and the bound the genq has */
    uint64_t bad;            /* a checkpoint's count that did not match */
    uint64_t asked;          /* tasks made when a sync was last asked for */
    /* Room gen_wait_room can see without the genq lock: the counts it
     * was taken from only grow within a phase, so a task below all of
     * these has room in the window whatever they are now. */
    struct {
        uint64_t queued;     /* tasks queued */
        uint64_t next_id;    /* the next id (the span) */
        uint64_t bytes;      /* bytes made (window bytes, and ahead) */
        uint64_t freed;      /* the freed bytes they were taken with */
    } room;
} gen_t;

void jm_genq_init(jm_genq_t *q, int wake_fd)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
    /* (monotonic: gen_wait_room's timed waits must not follow the wall
     * clock's steps) */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&q->room, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&q->queued, 0);
    atomic_init(&q->lent, NULL);
    atomic_init(&q->stop, 0);
    q->wake_fd = wake_fd;
}

void jm_genq_destroy(jm_genq_t *q)
{
    jm_task_t *t = q->head;
    while (t) {
        jm_task_t *next = t->next;
        jm_task_free(t);
        t = next;
    }
    q->head = q->tail = NULL;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->room);
}

/* The push callback handed to next_task: copy the bytes, keep the last
 * (gen_call counts the others). A push that cannot be kept is
 * remembered, never turned into a task: the generator stops the phase
 * with an error naming it. */
static void gen_push(const void *data, spitssize_t size, spitsctx_t ctx)
{
    gen_t *g = (gen_t *)ctx;

    if (g->pending) {    /* (a second push in one call replaces the first) */
        jm_taskpool_unmake(&g->spare, g->pending);
        g->pending = NULL;
    }
    spits_push_fault_t f = spits_push_check(data, size,
                                            (uint64_t)g->jm->opt.max_task);
    if (f == SPITS_PUSH_OK &&
        !(g->pending = jm_taskpool_make(g->jm->taskpool, &g->spare,
                                        (uint32_t)size)))
        f = SPITS_PUSH_NO_MEMORY;
    spits_modcall_pushed(&g->call, f, size);
    if (f != SPITS_PUSH_OK)
        return;
    if (size)
        memcpy(g->pending->data, data, (size_t)size);
}

jm_task_t *jm_genq_take_lent(jm_genq_t *q, jm_task_t **tail)
{
    jm_task_t *head = atomic_exchange(&q->lent, NULL);
    jm_task_t *t = head;
    while (t && t->next)
        t = t->next;
    *tail = t;
    return head;
}

/* 1 while a resumed phase holds its tasks back for the next checkpoint. */
static int gen_holding(const gen_t *g)
{
    return g->ck < g->p->nchecks;
}

/* Checks the journal's checkpoints at made tasks (g->run covers them):
 * 1 when the tasks held back may go (the verified bound moved, or
 * holding ended). */
static int gen_check(gen_t *g, uint64_t made)
{
    const jm_phase_t *p = g->p;
    int moved = 0;

    while (g->ck < p->nchecks && p->checks[g->ck].count <= made) {
        const spits_jr_check_t *c = &p->checks[g->ck++];
        if (c->count < made)
            continue;   /* (none: the counts are sorted and each is seen) */
        if (c->hash != g->run) {
            g->bad = made;
            g->ck = p->nchecks;   /* nothing past it can be vouched for */
            return 1;
        }
        g->verified = made;
        moved = 1;
    }
    return moved;
}

/* Appends a chunk to the genq, with the checkpoint and the verified bound
 * (tasks made: made); wakes the dispatcher if it had run dry. With a
 * journal, asks the committer to sync the checkpoint once the count has
 * doubled since it last asked. */
static void gen_flush(gen_t *g, jm_genq_t *q, jm_task_t *head, jm_task_t *tail,
                      size_t n, uint64_t made)
{
    if (!n && g->verified == g->published)
        return;
    pthread_mutex_lock(&q->lock);
    q->made = made;
    q->verified = g->published = g->verified;
    int was_empty = q->head == NULL;
    if (n) {
        if (q->tail)
            q->tail->next = head;
        else
            q->head = head;
        q->tail = tail;
        atomic_fetch_add(&q->queued, n);
    }
    pthread_mutex_unlock(&q->lock);
    if (n && was_empty)
        spits_wake_signal(q->wake_fd);
    if (g->jm->journal) {
        int due = made >= 2 * g->asked;
        if (due)
            g->asked = made;
        jm_commitq_checkpoint(&g->p->cq, made, g->run, due);
    }
}

/* Reads the anonymous resident size (about 5 us: /proc/self/statm). */
static void gen_mem_read(gen_mem_t *m, uint64_t bytes_made, int64_t now)
{
    m->rss = spits_mem_rss_anon();
    m->rss_made = bytes_made;
    m->rss_ms = now;
}

/* What the JM's memory may come to with one more task (gen_mem_room says how). */
static uint64_t gen_mem_ahead(const gen_mem_t *m, uint64_t live_bytes,
                              uint64_t bytes_made)
{
    uint64_t copies = ((m->min_len < m->part_min) + m->curve) * m->max_copies;
    return m->rss + (bytes_made - m->rss_made) * (1 + copies) +
           live_bytes * copies + m->max_len * (2 + copies + 2 * m->encoders);
}

/* Says once that --memory-limit holds new tasks back, by how far the
 * JM's memory (resident and in flight) is from it: "near" only within
 * 10%; well under it, it is the next task (and its copies) that would
 * not fit. */
static void gen_mem_log(const gen_t *g, const gen_mem_t *m, uint64_t live_bytes)
{
    double used = (double)(m->rss + live_bytes), limit = (double)m->limit;
    char how[96];

    if (used > 1.1 * limit)
        snprintf(how, sizeof how, "is %.1f times", used / limit);
    else if (used >= 0.9 * limit)
        snprintf(how, sizeof how, "is near");
    else
        snprintf(how, sizeof how, "and the next task (up to %.0f MiB, with "
                 "the copies sending makes) would pass", m->max_len / 1048576.0);
    spits_info("phase %u: the job manager's memory (%.0f MiB, and %.0f MiB "
               "of tasks in flight) %s --memory-limit (%.0f MiB): new tasks "
               "wait for earlier ones to be committed%s",
               g->p->st.id, m->rss / 1048576.0, live_bytes / 1048576.0, how,
               limit / 1048576.0, m->rss > m->limit
               ? ", one at a time while it stays over" : "");
}

/* Room in --memory-limit for one more task: the JM's anonymous resident
 * size (mem.h), plus what the tasks in flight may still add as they are
 * sent, plus the next task at the largest size seen (the module's
 * buffer, the JM's copy, and those sending adds).
 *
 * Sending adds copies of each copy of a task out, and a task may be out
 * as --max-copies copies at once (copies of a late one): a task that
 * goes as a part (large tasks: serve.c) is not copied, but with CURVE
 * libzmq encrypts it into a new buffer, freed once written (one); one
 * that goes inline is copied into its message (one, once any task small
 * enough to go inline was seen), and with CURVE encrypted again. While it
 * encrypts a message, libzmq 4.3 holds two more copies of it (a
 * plaintext and a box): one message at a time per I/O thread. Each term
 * was found by going over the limit without it (docs/performance.md).
 *
 * Tasks made since the size was read count as if none was sent yet. The
 * size is read again after 5 ms (the clock is looked at every 16 calls,
 * or each call once tasks are 64 KiB: results and the rest count through
 * it), and before saying there is no room; then, at most once a second,
 * the heaps' free memory is given back first, which the size counts. */
static int gen_mem_room(gen_t *g, uint64_t live_bytes, uint64_t bytes_made)
{
    gen_mem_t *m = &g->mem;
    if (!m->limit)
        return 1;
    int fresh = 0;
    if (m->max_len >= 65536 || m->calls++ % 16 == 0) {
        int64_t now = spits_now_ms();
        if (now - m->rss_ms >= 5) {
            gen_mem_read(m, bytes_made, now);
            fresh = 1;
        }
    }
    if (gen_mem_ahead(m, live_bytes, bytes_made) <= m->limit)
        return 1;
    if (!fresh) {
        /* (no room by an older reading: a new one decides) */
        int64_t now = spits_now_ms();
        if (now - m->trim_ms >= 1000) {
            spits_malloc_release();
            m->trim_ms = now;
        }
        gen_mem_read(m, bytes_made, now);
        if (gen_mem_ahead(m, live_bytes, bytes_made) <= m->limit)
            return 1;
    }
    if (!m->logged) {
        m->logged = 1;
        gen_mem_log(g, m, live_bytes);
    }
    return 0;
}

/* gen_mem_room's answer when it needs neither the clock nor a new
 * reading of the size: 1 (room), or 0 when gen_mem_room must decide.
 * Cheap enough to run holding the genq lock. */
static int gen_mem_quick(gen_mem_t *m, uint64_t live_bytes, uint64_t bytes_made)
{
    if (!m->limit)
        return 1;
    if (m->max_len >= 65536 || m->calls % 16 == 0 ||
        gen_mem_ahead(m, live_bytes, bytes_made) > m->limit)
        return 0;
    m->calls++;   /* (the call gen_mem_room would have counted) */
    return 1;
}

/* Waits until the window, and --memory-limit, have room for more tasks.
 * 0, or -1 if told to stop, or 1 (without waiting) if it would wait while
 * the generator holds tasks back (held): they take room only their
 * flush can give back. While the room last seen lasts (g->room), without
 * the genq lock. */
static int gen_wait_room(gen_t *g, jm_genq_t *q, uint64_t queued,
                         uint64_t next_id, uint64_t bytes_made, size_t held)
{
    jm_t *jm = g->jm;
    int rc = 0;

    if (!atomic_load_explicit(&q->stop, memory_order_relaxed) &&
        queued < g->room.queued && next_id < g->room.next_id &&
        bytes_made < g->room.bytes &&
        gen_mem_quick(&g->mem, bytes_made - g->room.freed, bytes_made))
        return 0;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (atomic_load_explicit(&q->stop, memory_order_relaxed)) {
            rc = -1;
            break;
        }
        uint64_t window = q->window > (uint64_t)jm->opt.window
                          ? q->window : (uint64_t)jm->opt.window;
        uint64_t span_max = window * 4;
        uint64_t live = queued - q->resolved;    /* queued, not yet resolved */
        uint64_t live_bytes = bytes_made - q->freed_bytes;
        if (live == 0)
            break;   /* always allow one task, however large */
        if (bytes_made - q->taken_bytes >= GEN_AHEAD_BYTES) {
            if (held) {
                rc = 1;
                break;
            }
            /* (not q->waiting: the scheduler's late copies are for a
             * generator that waits while the tasks it made are all out) */
            pthread_cond_wait(&q->room, &q->lock);
            continue;
        }
        if (live < window &&
            live_bytes < (uint64_t)jm->opt.window_bytes &&
            next_id - q->low < span_max) {
            if (gen_mem_quick(&g->mem, live_bytes, bytes_made))
                break;
            /* (the size is read without the lock) */
            pthread_mutex_unlock(&q->lock);
            int room = gen_mem_room(g, live_bytes, bytes_made);
            pthread_mutex_lock(&q->lock);
            if (room)
                break;
            if (held) {
                rc = 1;
                break;
            }
            /* Memory comes back as tasks are resolved (a signal) and as
             * libzmq writes out encrypted copies (none): look again soon. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);   /* (q->room's clock) */
            ts.tv_nsec += 5 * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            q->waiting = 1;
            pthread_cond_timedwait(&q->room, &q->lock, &ts);
            q->waiting = 0;
            continue;
        }
        if (held) {
            rc = 1;
            break;
        }
        q->waiting = 1;
        pthread_cond_wait(&q->room, &q->lock);
        q->waiting = 0;
    }
    if (rc == 0) {
        /* (by --window itself: the window the dispatcher widens it to
         * may narrow again) */
        uint64_t w = (uint64_t)jm->opt.window;
        uint64_t by_window = q->freed_bytes + (uint64_t)jm->opt.window_bytes;
        uint64_t by_ahead = q->taken_bytes + GEN_AHEAD_BYTES;
        g->room.queued = q->resolved + w;
        g->room.next_id = q->low + 4 * w;
        g->room.bytes = by_window < by_ahead ? by_window : by_ahead;
        g->room.freed = q->freed_bytes;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* Takes back the lent chunk: 1, or 0 if the dispatcher took it (or none
 * was lent). */
static int gen_reclaim(jm_genq_t *q, jm_task_t **head)
{
    return *head && atomic_exchange(&q->lent, NULL) != NULL;
}

static void *gen_main(void *arg)
{
    gen_t *g = arg;
    jm_t *jm = g->jm;
    jm_phase_t *p = g->p;
    jm_genq_t *q = &p->genq;
    jm_task_t *head = NULL, *tail = NULL;
    size_t n = 0, chunk_bytes = 0, sk = 0;
    uint64_t id = 0, bytes_made = 0, skipped = 0;
    int queued_last = 1, stopped = 0;
    /* (the generator's own copies: the loop's hot path reads them) */
    const int chain = g->chain;
    int holding = gen_holding(g);

    for (;;) {
        /* Lend the chunk, then look: if the dispatcher ran dry meanwhile
         * it may have missed the loan, so flush (seq_cst on both sides).
         * (Tasks held back for a checkpoint are not lent.) */
        int lent = 0;
        if (head && !holding) {
            atomic_store(&q->lent, head);
            lent = 1;
            if (atomic_load(&q->queued) == 0) {
                if (gen_reclaim(q, &head))
                    gen_flush(g, q, head, tail, n, id);
                head = tail = NULL;
                n = chunk_bytes = 0;
                lent = 0;
            }
        }
        /* Skipped tasks take no room: wait only after queueing one. */
        int stop = 0;
        if (queued_last) {
            int w;
            while ((w = gen_wait_room(g, q, id - skipped, id, bytes_made,
                                      holding ? n : 0)) == 1) {
                gen_flush(g, q, head, tail, n, id);   /* (unverified) */
                head = tail = NULL;
                n = chunk_bytes = 0;
            }
            stop = w != 0;
        }
        spits_crash_task(id);   /* (the task this call makes, for crash.h) */
        /* (not "!stop && next_task()", which makes any value 0 or 1) */
        int more = stop ? 0 : spits_module_next_task(jm->mod, &p->manager,
                                                     gen_push, g);
        if (lent && !gen_reclaim(q, &head)) {
            head = tail = NULL;     /* the dispatcher took it */
            n = chunk_bytes = 0;
        }
        stopped = stop;
        if (stop || spits_modcall_next_task(&g->call, more, id,
                                            (uint64_t)jm->opt.max_task,
                                            "--max-task-bytes", p->gen_error,
                                            sizeof p->gen_error) <= 0)
            break;
        jm_task_t *t = g->pending;
        g->pending = NULL;
        if (!t) {
            /* next_task returned 1 without pushing: an empty task. */
            t = jm_taskpool_make(jm->taskpool, &g->spare, 0);
            if (!t) {
                snprintf(p->gen_error, sizeof p->gen_error,
                         "out of memory making task %llu", (unsigned long long)id);
                break;
            }
        }
        t->hash = chain || p->nskip ? spits_task_hash(t->data, t->len) : 0;
        if (sk < p->nskip && p->skip[sk].id == id) {
            if (p->skip[sk].hash != t->hash) {
                snprintf(p->gen_error, sizeof p->gen_error,
                         "task %llu is not the task the journal recorded: "
                         "next_task does not generate deterministically, so "
                         "the job cannot be resumed", (unsigned long long)id);
                jm_taskpool_unmake(&g->spare, t);
                break;
            }
            sk++;
            skipped++;
            id++;
            if (chain)
                g->run = spits_gen_chain(g->run, t->hash);
            if (holding && gen_check(g, id)) {
                holding = gen_holding(g);
                gen_flush(g, q, head, tail, n, id);
                head = tail = NULL;
                n = chunk_bytes = 0;
            }
            jm_taskpool_unmake(&g->spare, t);
            queued_last = 0;
            continue;
        }
        queued_last = 1;
        t->next = NULL;
        t->id = id++;
        sched_task_init(t);
        if (tail)
            tail->next = t;
        else
            head = t;
        tail = t;
        n++;
        chunk_bytes += t->len;
        bytes_made += t->len;
        if (t->len > g->mem.max_len)
            g->mem.max_len = t->len;
        if (t->len < g->mem.min_len)
            g->mem.min_len = t->len;
        int release = 0;
        if (chain) {
            g->run = spits_gen_chain(g->run, t->hash);
            if (holding && (release = gen_check(g, id)))
                holding = gen_holding(g);
        }
        if (release || (!holding &&
                        (n >= GEN_CHUNK_TASKS || chunk_bytes >= GEN_CHUNK_BYTES))) {
            gen_flush(g, q, head, tail, n, id);
            head = tail = NULL;
            n = chunk_bytes = 0;
        }
    }
    gen_flush(g, q, head, tail, n, id);
    jm_taskpool_unmake(&g->spare, g->pending);
    jm_taskpool_free_list(&g->spare);
    p->st.generated = id;
    p->st.extra_pushes = g->call.extra_pushes;
    if (sk < p->nskip && !p->gen_error[0] && !stopped)
        snprintf(p->gen_error, sizeof p->gen_error,
                 "the journal holds results of %zu task(s) past the last one "
                 "next_task generates now (%llu tasks): it does not generate "
                 "deterministically, so the job cannot be resumed",
                 p->nskip - sk, (unsigned long long)id);

    /* The committer waits for the tasks queued, not the ones skipped. */
    pthread_mutex_lock(&q->lock);
    q->done = 1;
    q->made = id;
    q->total = id - skipped;
    q->verified = g->verified;
    q->ck_bad = g->bad;
    pthread_mutex_unlock(&q->lock);
    spits_wake_signal(q->wake_fd);
    jm_commitq_checkpoint(&p->cq, id, g->run, 0);
    jm_commitq_gen_done(&p->cq, id - skipped);
    free(g);
    return NULL;
}

int jm_generator_start(jm_t *jm, jm_phase_t *p)
{
    gen_t *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->jm = jm;
    g->p = p;
    g->mem.limit = (uint64_t)jm->opt.memory_limit;
    g->mem.curve = !jm->opt.insecure;
    g->mem.encoders = jm->opt.insecure ? 0 : (uint64_t)jm->opt.io_threads;
    g->mem.max_copies = (uint64_t)jm->opt.max_copies;
    g->mem.min_len = UINT64_MAX;
    g->mem.rss_ms = g->mem.trim_ms = INT64_MIN / 2;
    g->mem.part_min = spits_parts_min();
    g->chain = jm->journal || p->nchecks;
    int err = pthread_create(&p->gen_thread, NULL, gen_main, g);
    if (err) {
        free(g);
        errno = err;
        return -1;
    }
    return 0;
}

void jm_generator_join(jm_phase_t *p)
{
    pthread_join(p->gen_thread, NULL);
}
