/*
 * workers.c - the Task Manager's worker threads and the pool they share
 * with the network loop (see tm.h for who owns what).
 *
 * A worker takes a chunk of tasks under one lock, runs them, and hands
 * the chunk's results back under one lock, to the outbox (outbox.c, which
 * makes every record that goes back to the JM, RETURNED ones too). Each worker keeps one module
 * worker instance, made with the argv of the phase of the task at hand;
 * when a task of another phase comes, the instance is finalized and made
 * anew, so workers always see their phase's argv. With --isolate, the
 * instance lives in the worker's child process instead (isolate.c) and
 * the thread only ships tasks to it and results back.
 *
 * Virtual workers (tm.h) reuse one worker_t, driven by the main thread
 * instead of a thread of its own (tm_pool_virtual_turn, at the end).
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "crash.h"
#include "log.h"
#include "modcall.h"
#include "push.h"
#include "tm.h"
#include "wake.h"

#define WORKER_CHUNK_MAX 256
/* Tasks longer than this are taken one at a time: a chunk then buys
 * nothing, and a task held unstarted in one worker's chunk is a task
 * another worker (or a drain, or a cancel) cannot reach. */
#define WORKER_LONG_TASK_NS 100000

typedef struct {
    tm_pool_t *pool;
    int index;
    spits_inst_t inst;
    const tm_phase_t *phase;  /* the phase inst was made for */
    int inst_ok;
    spits_buf_t result;       /* bytes of the current task's last push */
    spits_modcall_t call;     /* the current task's pushes (modcall.h) */
    spits_batch_t local;      /* this chunk's results */
    spits_parts_t local_parts;  /* ...and the large ones' bytes */
    const tm_phase_t *local_phase;  /* the phase of those results */
    tm_item_t *chunk;
    tm_child_t *child;        /* --isolate: this worker's process */
    /* The current task failed by returning a code: its record's payload
     * (wire.h: the code, the module's words on it), or failed_len 0. */
    unsigned char failed[4 + SPITS_FAIL_TEXT_MAX];
    size_t failed_len;
    int64_t task_ns;          /* mean task time of its last chunk */
} worker_t;

/* Hands the worker's local results to the network loop and counts the
 * chunk's first done tasks as no longer running; wakes the loop if the
 * outbox was empty. */
static void worker_flush(worker_t *w, size_t done)
{
    tm_pool_t *p = w->pool;
    int was_empty;

    /* (the put may move the records out: what it had is read first) */
    uint64_t had = w->local.count;
    pthread_mutex_lock(&p->lock);
    was_empty = p->outbox.n == 0;
    int lost = had && tm_outbox_put(p, w->local_phase, &w->local, &w->local_parts) != 0;
    p->queue.running -= done;
    /* (only for a while after the TM moved to another job) */
    for (size_t i = 0; i < done && p->queue.running_other; i++)
        p->queue.running_other -= w->chunk[i].phase->job != p->queue.job;
    pthread_mutex_unlock(&p->lock);
    if (lost)
        tm_pool_fail(p, "out of memory queueing results");
    else if (was_empty && had)
        spits_wake_signal(p->wake_fd);
    spits_batch_begin(&w->local, SPITS_MSG_RESULTS, 0);
    spits_parts_free(&w->local_parts);   /* (moved out, or lost with them) */
}

/* The push callback handed to spits_worker_run: keeps the last push; one
 * that cannot be kept fails the run (worker_run_here). */
static void push_result(const void *data, spitssize_t size, spitsctx_t ctx)
{
    worker_t *w = (worker_t *)ctx;
    w->call.pushes++;
    spits_push_keep(&w->result, data, size, w->pool->opts.max_result, &w->call.fault,
                    &w->call.bad_size);
}

static void worker_set_phase(worker_t *w, const tm_phase_t *ph)
{
    if (w->phase == ph)
        return;
    if (w->inst_ok)
        spits_module_worker_free(w->pool->opts.mod, &w->inst);
    w->phase = ph;
    w->inst_ok = spits_module_worker_new(w->pool->opts.mod, &w->inst, ph->argc,
                                         (const char **)ph->argv) == 0;
    if (!w->inst_ok)
        spits_error("worker %d: spits_worker_new returned NULL (phase %u); "
                    "its tasks fail", w->index, ph->wire);
}

/* --isolate: the task runs in the worker's child process. */
static uint32_t worker_run_isolated(worker_t *w, const tm_item_t *it)
{
    char why[160];
    const tm_pool_opts_t *o = &w->pool->opts;
    uint32_t status = tm_child_run(w->child, o->mod, it, o->task_timeout_ms,
                                   o->max_result, &w->result, why, sizeof why);
    if (status == SPITS_ST_CRASHED)
        spits_warn("task %llu crashed its worker process (%s); a new one "
                   "takes over", (unsigned long long)it->id, why);
    else if (status == SPITS_ST_TIMEOUT)
        spits_warn("task %llu %s; its worker process was killed",
                   (unsigned long long)it->id, why);
    else if (why[0])
        spits_error("task %llu: %s", (unsigned long long)it->id, why);
    /* (the child sends a returned failure's payload as its result; so
     * does tm_child_run for one over --mem-per-task) */
    if (status == SPITS_ST_FAILED && w->result.len >= 4 &&
        w->result.len <= sizeof w->failed) {
        memcpy(w->failed, w->result.data, w->result.len);
        w->failed_len = w->result.len;
    }
    return status;
}

/* Threads: the task runs here, in the worker's own module instance. */
static uint32_t worker_run_here(worker_t *w, const tm_item_t *it)
{
    worker_set_phase(w, it->phase);
    if (!w->inst_ok)
        return SPITS_ST_FAILED;
    spits_crash_task(it->id);
    int rc = spits_module_worker_run(w->pool->opts.mod, &w->inst, it->data,
                                     (spitssize_t)it->len, push_result, w);
    if (spits_modcall_worker_run(&w->call, it->id, w->pool->opts.max_result,
                                 "--max-task-bytes") != 0)
        return SPITS_ST_FAILED;
    if (rc != 0) {
        spits_debug("task %llu: worker returned %d", (unsigned long long)it->id, rc);
        w->failed_len = spits_fail_payload(w->failed, rc,
                            spits_module_worker_error(w->pool->opts.mod, &w->inst));
        return SPITS_ST_FAILED;
    }
    return SPITS_ST_OK;
}

static void free_result(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* A large result goes as a part (wire.h): its buffer becomes the frame
 * libzmq sends and frees, with no copy (the worker takes a new one for
 * its next result). 0, or -1 when out of memory. */
static int worker_add_part(worker_t *w, uint64_t id, uint32_t status)
{
    zmq_msg_t m;
    uint32_t len = (uint32_t)w->result.len;
    if (zmq_msg_init_data(&m, w->result.data, len, free_result, NULL) != 0)
        return -1;
    memset(&w->result, 0, sizeof w->result);   /* (m owns the bytes now) */
    /* (results already in the batch are still sent: the TM stops after
     * them) */
    int rc = spits_parts_add_record(&w->local, &w->local_parts, id, status, &m);
    zmq_msg_close(&m);   /* (empty once added; else it frees the bytes) */
    return rc;
}

static void worker_run_one(worker_t *w, const tm_item_t *it)
{
    if (it->phase != w->local_phase) {
        /* Records of one batch share a phase: ship what we have first. */
        worker_flush(w, 0);
        w->local_phase = it->phase;
    }
    w->result.len = 0;
    spits_modcall_begin(&w->call);
    w->failed_len = 0;
    uint32_t status = w->pool->opts.isolate ? worker_run_isolated(w, it)
                                       : worker_run_here(w, it);
    uint32_t len = status == SPITS_ST_OK ? (uint32_t)w->result.len : 0;
    if (status == SPITS_ST_FAILED && w->failed_len) {
        /* A failure's record carries the code the worker returned and
         * why (wire.h), for the report. */
        unsigned char *dst = spits_batch_add(&w->local, it->id, status,
                                             (uint32_t)w->failed_len);
        if (!dst)
            tm_pool_fail(w->pool, "out of memory building results");
        else
            memcpy(dst, w->failed, w->failed_len);
        return;
    }
    if (len >= w->pool->opts.part_min) {
        if (worker_add_part(w, it->id, status) != 0)
            tm_pool_fail(w->pool, "out of memory building results");
        return;
    }
    unsigned char *dst = spits_batch_add(&w->local, it->id, status, len);
    if (!dst)
        tm_pool_fail(w->pool, "out of memory building results");
    else if (len)
        memcpy(dst, w->result.data, len);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A drain started: a task taken but not started goes back unrun. */
static void worker_hand_back(worker_t *w, const tm_item_t *it)
{
    if (tm_outbox_return(w->pool, it->phase->job, it->phase->wire, it, 1) != 0)
        tm_pool_fail(w->pool, "out of memory handing back tasks");
}

/* Frees a worker and what it holds: its module instance, its --isolate
 * child, its buffers. */
static void worker_free(worker_t *w)
{
    if (w->inst_ok)
        spits_module_worker_free(w->pool->opts.mod, &w->inst);
    tm_child_destroy(&w->child);
    spits_buf_free(&w->result);
    spits_batch_free(&w->local);
    spits_parts_free(&w->local_parts);
    free(w->chunk);
    free(w);
}

/* The queue's oldest task, now running; caller holds the lock, queue.n > 0. */
static tm_item_t pool_pop_locked(tm_pool_t *p)
{
    tm_item_t it = p->queue.q[p->queue.head];
    p->queue.head = (p->queue.head + 1) % p->queue.cap;
    p->queue.n--;
    p->queue.running++;
    return it;
}

/* The worker's thread runs on its own cores, if it has some (its
 * --isolate process inherits them at fork). */
static void worker_bind(worker_t *w)
{
    const tm_worker_res_t *r = w->pool->opts.res ? &w->pool->opts.res[w->index] : NULL;
    int err = r && r->cpus ? pthread_setaffinity_np(pthread_self(), r->cpus_size,
                                                    (cpu_set_t *)r->cpus) : 0;
    if (err != 0) {
        spits_error("worker %d: cannot bind to its cores: %s", w->index, strerror(err));
        tm_pool_fail(w->pool, "a worker cannot bind to its cores");
    }
}

/* --isolate: the worker's process starts, and is waited for (up to
 * opts.start_wait_ms), before any task comes; the main thread counts
 * the workers done with it (tm_pool_ready_count) before HELLO. */
static void worker_prestart(worker_t *w, const spits_module_t *mod)
{
    tm_pool_t *p = w->pool;
    char why[160];
    int64_t t0 = now_ns();
    int rc = tm_child_prestart(w->child, mod, p->opts.start_wait_ms, why, sizeof why);
    if (rc == -2)
        spits_warn("worker %d: its process did not start within %.1f s; its first "
                   "task waits for it", w->index, p->opts.start_wait_ms / 1000.0);
    else if (rc != 0)   /* (the process said why, as it ended) */
        spits_debug("worker %d: its process ended as it started (%s); its first "
                    "task starts another", w->index, why);
    else
        spits_debug("worker %d: its process started in %.3f s", w->index,
                    (double)(now_ns() - t0) / 1e9);
    atomic_fetch_add(&p->workers.ready, 1);
    spits_wake_signal(p->wake_fd);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    tm_pool_t *p = w->pool;

    worker_bind(w);
    spits_batch_begin(&w->local, SPITS_MSG_RESULTS, 0);
    spits_crash_worker();   /* (a crash report lists its task) */
    int prestart = w->child != NULL;
    for (;;) {
        size_t k;
        pthread_mutex_lock(&p->lock);
        while (p->queue.n == 0 && !p->queue.quit) {
            /* An --isolate child starts as soon as the module is known
             * (tm_pool_start wakes us), not with the first task. */
            if (prestart && p->opts.mod) {
                const spits_module_t *mod = p->opts.mod;
                prestart = 0;
                pthread_mutex_unlock(&p->lock);
                worker_prestart(w, mod);
                pthread_mutex_lock(&p->lock);
                continue;
            }
            pthread_cond_wait(&p->work, &p->lock);
        }
        if (p->queue.quit) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        /* A fair share of the queue, so the other workers get some; one
         * at a time when tasks are long. */
        k = p->queue.n / (size_t)p->workers.n;
        k = k < 1 || w->task_ns > WORKER_LONG_TASK_NS ? 1
            : k > WORKER_CHUNK_MAX ? WORKER_CHUNK_MAX : k;
        for (size_t i = 0; i < k; i++)
            w->chunk[i] = pool_pop_locked(p);
        pthread_mutex_unlock(&p->lock);

        int64_t t0 = now_ns();
        size_t ran = 0;
        for (size_t i = 0; i < k; i++) {
            if (atomic_load_explicit(&p->draining, memory_order_relaxed)) {
                worker_hand_back(w, &w->chunk[i]);
            } else {
                worker_run_one(w, &w->chunk[i]);
                ran++;
            }
            spits_rx_release(w->chunk[i].rx, 1);
        }
        int64_t spent = now_ns() - t0;
        w->task_ns = spent / (int64_t)k;
        atomic_store_explicit(&p->stats.task_ns, w->task_ns, memory_order_relaxed);
        if (ran) {
            atomic_fetch_add_explicit(&p->stats.busy_ns, spent, memory_order_relaxed);
            atomic_fetch_add_explicit(&p->stats.runs, (long long)ran,
                                      memory_order_relaxed);
            if (p->stats.worker) {
                tm_worker_count_t *c = &p->stats.worker[w->index];
                atomic_fetch_add_explicit(&c->busy_ns, spent, memory_order_relaxed);
                atomic_fetch_add_explicit(&c->runs, (long long)ran, memory_order_relaxed);
            }
        }
        worker_flush(w, k);
    }
    worker_free(w);
    atomic_fetch_sub(&p->workers.alive, 1);
    return NULL;
}

int tm_pool_init(tm_pool_t *p, int nworkers, int wake_fd)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    p->workers.n = nworkers;
    p->wake_fd = wake_fd;
    atomic_init(&p->workers.alive, 0);
    atomic_init(&p->workers.ready, 0);
    atomic_init(&p->draining, 0);
    atomic_init(&p->failed, NULL);
    atomic_init(&p->stats.task_ns, 0);
    atomic_init(&p->stats.busy_ns, 0);
    atomic_init(&p->stats.runs, 0);
    p->queue.cap = 1024;
    p->queue.q = malloc(p->queue.cap * sizeof *p->queue.q);
    p->workers.threads = calloc((size_t)nworkers, sizeof *p->workers.threads);
    return p->queue.q && p->workers.threads ? 0 : -1;
}

/* One worker's state, for worker_main (which frees it); NULL when out of
 * memory or when its --isolate child cannot be made. */
static worker_t *worker_new(tm_pool_t *p, int index)
{
    worker_t *w = calloc(1, sizeof *w);
    if (!w || !(w->chunk = malloc(WORKER_CHUNK_MAX * sizeof *w->chunk)) ||
        (p->opts.isolate &&
         !(w->child = tm_child_new(p->opts.res ? p->opts.res[index].env : NULL,
                                   p->opts.mem_limit)))) {
        if (w)
            free(w->chunk);
        free(w);
        return NULL;
    }
    w->pool = p;
    w->index = index;
    w->task_ns = WORKER_LONG_TASK_NS + 1;   /* one task, until measured */
    return w;
}

/* Every worker leaves once its current chunk is done. */
static void pool_tell_quit(tm_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    p->queue.quit = 1;
    pthread_mutex_unlock(&p->lock);
    pthread_cond_broadcast(&p->work);
}

static int virtual_start(tm_pool_t *p);

int tm_pool_spawn(tm_pool_t *p)
{
    if (p->opts.remote || p->opts.virtual_ns || p->workers.spawned)
        return 0;    /* (no threads: tm_pool_start sets up what runs) */
    for (int i = 0; i < p->workers.n; i++) {
        worker_t *w = worker_new(p, i);
        int err = ENOMEM;
        if (w) {
            atomic_fetch_add(&p->workers.alive, 1);
            if ((err = pthread_create(&p->workers.threads[i], NULL, worker_main, w)) == 0)
                continue;
            atomic_fetch_sub(&p->workers.alive, 1);
            worker_free(w);
        }
        /* None may outlive a failed start: tm_pool_destroy would free the
         * lock and queue under them. */
        pool_tell_quit(p);
        for (int k = 0; k < i; k++) {   /* they hold nothing: prompt */
            pthread_join(p->workers.threads[k], NULL);
            p->workers.threads[k] = 0;
        }
        errno = err;
        return -1;
    }
    p->workers.spawned = 1;
    return 0;
}

int tm_pool_reshape(tm_pool_t *p, int n, const tm_worker_res_t *res, int isolate,
                    uint64_t mem_limit)
{
    /* (tm.h: before tm_pool_start, nothing queued or running) */
    assert(!p->opts.mod && p->queue.n == 0 && p->queue.running == 0);
    if (p->workers.spawned) {
        tm_pool_stop(p, INT_MAX);
        pthread_mutex_lock(&p->lock);
        p->queue.quit = 0;
        pthread_mutex_unlock(&p->lock);
        p->workers.spawned = 0;
    }
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    tm_worker_count_t *counts = res ? calloc((size_t)n, sizeof *counts) : NULL;
    if (!threads || (res && !counts)) {
        free(threads);
        free(counts);
        return -1;
    }
    for (int i = 0; counts && i < n; i++) {
        atomic_init(&counts[i].busy_ns, 0);
        atomic_init(&counts[i].runs, 0);
    }
    free(p->stats.worker);
    p->stats.worker = counts;
    free(p->workers.threads);
    p->workers.threads = threads;
    p->workers.n = n;
    p->opts.res = res;
    p->opts.isolate = isolate;
    p->opts.mem_limit = mem_limit;
    return 0;
}

int tm_pool_start(tm_pool_t *p, spits_module_t *mod)
{
    /* (under the lock: a worker reads mod after taking a task, which
     * only comes later, under the lock too) */
    pthread_mutex_lock(&p->lock);
    p->opts.mod = mod;
    pthread_mutex_unlock(&p->lock);
    pthread_cond_broadcast(&p->work);   /* (--isolate children start now) */
    if (p->opts.virtual_ns)
        return virtual_start(p);
    return tm_pool_spawn(p);
}

int tm_pool_ready_count(tm_pool_t *p)
{
    return atomic_load(&p->workers.ready);
}

size_t tm_pool_running(tm_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->queue.running;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void tm_pool_fail(tm_pool_t *p, const char *why)
{
    const char *none = NULL;
    if (atomic_compare_exchange_strong(&p->failed, &none, why))
        spits_wake_signal(p->wake_fd);
}

const char *tm_pool_failed(tm_pool_t *p)
{
    return atomic_load(&p->failed);
}

size_t tm_pool_held(tm_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->queue.n + p->queue.running - p->queue.running_other;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void tm_pool_counts(tm_pool_t *p, size_t *running, size_t *queued)
{
    pthread_mutex_lock(&p->lock);
    size_t taken = p->queue.running - p->queue.running_other;
    size_t held = p->queue.n + taken;
    pthread_mutex_unlock(&p->lock);
    /* A worker runs one task at a time, whatever its chunk holds. */
    *running = taken < (size_t)p->workers.n ? taken : (size_t)p->workers.n;
    *queued = held - *running;
}

void tm_pool_set_job(tm_pool_t *p, unsigned job)
{
    pthread_mutex_lock(&p->lock);
    p->queue.job = job;
    p->queue.running_other = p->queue.running;   /* (none of the new job's runs yet) */
    pthread_mutex_unlock(&p->lock);
}

static void virtual_stop(tm_pool_t *p);

int tm_pool_stop(tm_pool_t *p, int ms)
{
    pool_tell_quit(p);
    if (p->workers.virt) {
        virtual_stop(p);
        return 0;
    }
    for (int waited = 0; atomic_load(&p->workers.alive) > 0 && waited < ms;
         waited += 10) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    int left = atomic_load(&p->workers.alive);
    if (left == 0)
        for (int i = 0; i < p->workers.n; i++)
            if (p->workers.threads[i]) {
                pthread_join(p->workers.threads[i], NULL);
                p->workers.threads[i] = 0;
            }
    return left;
}

/* ---- remote slots (spits-tm --serve: a relay) --------------------------- */

void tm_pool_remote_taken(tm_pool_t *p, size_t n)
{
    pthread_mutex_lock(&p->lock);
    p->queue.running += n;
    pthread_mutex_unlock(&p->lock);
}

int tm_pool_remote_done(tm_pool_t *p, const tm_phase_t *ph,
                        spits_batch_t *b, spits_parts_t *parts, size_t done)
{
    int rc = 0;
    pthread_mutex_lock(&p->lock);
    /* Records of a job the TM left are dropped, as a worker's are
     * (results.c): the JM that sent those copies is gone. */
    if (ph->job == p->queue.job && b && b->count)
        rc = tm_outbox_put(p, ph, b, parts);
    p->queue.running -= done;
    if (ph->job != p->queue.job)
        p->queue.running_other -= done < p->queue.running_other
                                      ? done : p->queue.running_other;
    pthread_mutex_unlock(&p->lock);
    spits_parts_free(parts);   /* (what was not queued: none, or dropped) */
    if (rc != 0)
        tm_pool_fail(p, "out of memory queueing results");
    return rc;
}

void tm_pool_destroy(tm_pool_t *p)
{
    /* Workers not stopped yet (a set-up that failed after tm_pool_spawn)
     * never had a task: they leave at once. */
    if (p->workers.spawned)
        tm_pool_stop(p, INT_MAX);
    for (size_t i = 0; i < p->queue.n; i++)
        spits_rx_release(p->queue.q[(p->queue.head + i) % p->queue.cap].rx, 1);
    tm_outbox_free(p);
    free(p->queue.q);
    free(p->workers.threads);
    free(p->stats.worker);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
}

/* ---- virtual workers (spits-tm --simulate) ------------------------------ */

typedef struct {
    tm_item_t it;             /* it.rx NULL: the slot is free */
    int64_t due_ns;           /* when its virtual run ends */
} vslot_t;

struct tm_virtual {
    worker_t *w;              /* runs every slot's task, in turn */
    vslot_t *slots;           /* nworkers of them */
};

static int virtual_start(tm_pool_t *p)
{
    tm_virtual_t *v = calloc(1, sizeof *v);
    if (!v || !(v->slots = calloc((size_t)p->workers.n, sizeof *v->slots)) ||
        !(v->w = worker_new(p, 0))) {
        if (v)
            free(v->slots);
        free(v);
        errno = ENOMEM;
        return -1;
    }
    spits_batch_begin(&v->w->local, SPITS_MSG_RESULTS, 0);
    atomic_store(&p->stats.task_ns, p->opts.virtual_ns);
    p->workers.virt = v;
    return 0;
}

/* Slots still running are abandoned, as a killed process's are: their
 * copies never come back, and the JM counts them lost. */
static void virtual_stop(tm_pool_t *p)
{
    tm_virtual_t *v = p->workers.virt;

    for (int i = 0; i < p->workers.n; i++)
        if (v->slots[i].it.rx)
            spits_rx_release(v->slots[i].it.rx, 1);
    worker_free(v->w);
    free(v->slots);
    free(v);
    p->workers.virt = NULL;
}

int64_t tm_pool_virtual_turn(tm_pool_t *p, int64_t now_ns)
{
    tm_virtual_t *v = p->workers.virt;
    worker_t *w;
    int64_t next = INT64_MAX;
    size_t k = 0, ran = 0;

    if (!v)
        return next;
    w = v->w;
    /* Runs finished by now: their records go out as a worker's chunk. */
    for (int i = 0; i < p->workers.n; i++) {
        vslot_t *s = &v->slots[i];
        if (!s->it.rx || s->due_ns > now_ns)
            continue;
        w->chunk[k] = s->it;
        s->it.rx = NULL;
        worker_run_one(w, &w->chunk[k]);
        spits_rx_release(w->chunk[k].rx, 1);
        ran++;
        if (++k == WORKER_CHUNK_MAX) {
            worker_flush(w, k);
            k = 0;
        }
    }
    if (ran) {
        atomic_fetch_add_explicit(&p->stats.busy_ns, (long long)ran * p->opts.virtual_ns,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&p->stats.runs, (long long)ran,
                                  memory_order_relaxed);
    }
    if (k || w->local.count)
        worker_flush(w, k);
    /* Free slots take queued tasks; a drain leaves none queued. */
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->workers.n; i++) {
        vslot_t *s = &v->slots[i];
        if (!s->it.rx && p->queue.n && !p->queue.quit) {
            s->it = pool_pop_locked(p);
            s->due_ns = now_ns + p->opts.virtual_ns;
        }
        if (s->it.rx && s->due_ns < next)
            next = s->due_ns;
    }
    pthread_mutex_unlock(&p->lock);
    return next;
}
