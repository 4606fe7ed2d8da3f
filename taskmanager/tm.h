/*
 * tm.h - the Task Manager's shared types.
 *
 * spits-tm runs two kinds of thread:
 *
 *   main thread   the network loop (tm.c, loop.c and the files that
 *                 tm_private.h lists). Owns: tm_t there: the DEALER
 *                 socket, the phase list, the connection state, the
 *                 results waiting to be sent.
 *   workers       run tasks (workers.c). Each owns its module worker
 *                 instance and a local result batch; with --isolate, its
 *                 child process instead of the instance (isolate.c), which
 *                 no other thread touches.
 *   signal handler  sets tm_signal (an atomic) and writes the eventfd;
 *                 the main thread acts on it (drain).
 *
 * They meet in tm_pool_t, under one mutex: the main thread appends the
 * tasks of a message in chunks (poolqueue.c, which also takes queued
 * tasks back out for a CANCEL, a phase change or a drain); a worker takes a chunk of tasks at
 * once and hands back a chunk of results at once to the outbox (outbox.c,
 * which owns every record going back to the JM), then writes the main
 * thread's eventfd if the outbox was empty. Task bytes are never copied:
 * a task points into the ZeroMQ message it came in, which is freed when
 * its last task is done (an atomic count per message). A large result is
 * copied once, from the module's push into the worker's buffer, which
 * becomes a ZeroMQ frame (a part, wire.h): the worker makes it, it moves
 * to the outbox under the lock, the main thread hands it to libzmq, and
 * libzmq's I/O thread frees it once sent (workers.c free_result).
 *
 * The main thread also sets pool.draining (an atomic) when a drain starts;
 * workers read it before each task and hand back what they have not
 * started. Workers take a chunk of tasks only while tasks are short
 * (under 0.1 ms each); a long task is taken alone, so that a task waiting
 * behind it stays in the shared queue, where a drain or a CANCEL reaches it.
 *
 * Phases are never freed before exit: a worker may still hold a pointer
 * to an old one while it finishes a task.
 *
 * Virtual workers (spits-tm --simulate, simulate.c): with
 * opts.virtual_ns set, tm_pool_start starts no thread. The main thread
 * itself takes tasks into nworkers virtual slots (tm_pool_virtual_turn);
 * a task's run takes virtual_ns of the clock, after which the main thread runs it, in the
 * pool's one module instance (a fast module: the time is the simulation's),
 * and queues its record in the outbox as a worker would. Everything else,
 * the queue, the outbox, the counts, is the same code.
 *
 * Remote slots (spits-tm --serve, a relay: relay.c): with opts.remote
 * set, no worker exists either, and the queue stays empty: the main
 * thread hands a TASKS message's tasks straight to the relay, which
 * counts them running (tm_pool_remote_taken) and puts their records
 * back in the outbox (tm_pool_remote_done), so held, drains and the
 * outbox work as for workers.
 */
#ifndef SPITS_TM_H
#define SPITS_TM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zmq.h>

#include "module.h"
#include "parts.h"
#include "wire.h"

typedef struct tm_phase {
    struct tm_phase *next;
    uint32_t wire;            /* the phase id on the wire */
    unsigned job;             /* which job (the TM's count of jobs joined) */
    int argc;
    char **argv;              /* the phase's argv, for spits_worker_new */
} tm_phase_t;

typedef struct {
    uint64_t id;
    const unsigned char *data;
    uint32_t len;
    tm_phase_t *phase;
    spits_rx_t *rx;
} tm_item_t;

/* Records of one job's phase, waiting to be sent (outbox.c): one RESULTS
 * message, its frame and the parts its records of parts name, in order. */
typedef struct {
    unsigned job;             /* tm_phase_t.job: the TM's count of jobs */
    uint32_t wire;            /* the phase id on the wire */
    spits_batch_t batch;
    spits_parts_t parts;
    size_t bytes;             /* the records' bytes, parts included */
} tm_seg_t;

typedef struct tm_virtual tm_virtual_t;

/* The shared queue of tasks. Under the pool's lock: the main thread
 * pushes, cancels and drops; workers (or the main thread, for virtual and
 * remote slots) take. */
typedef struct {
    tm_item_t *q;             /* circular queue of tasks */
    size_t head, n, cap;
    size_t running;           /* tasks taken by workers, not yet handed back */
    unsigned job;             /* the job held tasks are counted for */
    size_t running_other;     /* ...and those of running of another job */
    int quit;                 /* main: workers stop (tm_pool_stop) */
} tm_pool_queue_t;

/* The outbox (outbox.c): record segments. Under the pool's lock: workers
 * (and the main thread) put, the main thread takes. */
typedef struct {
    tm_seg_t *segs;
    size_t n, cap;
} tm_pool_outbox_t;

/* One worker's own resources (plan.c), set before its thread starts and
 * never changed while it lives: its cores, which its thread (and so its
 * --isolate process, forked from it) is bound to, and the variables its
 * process gets on top of the TM's (the thread counts, its GPUs' ids);
 * thread workers have the thread counts in the TM's own environment. */
typedef struct {
    void *cpus;               /* a cpu_set_t of cpus_size bytes; NULL: the
                                 TM's cores, shared */
    size_t cpus_size;
    char **env;               /* "NAME=VALUE"..., NULL ended; NULL: none */
} tm_worker_res_t;

/* Limits and options, written by the main thread before any task is
 * queued (isolate, task_timeout_ms, start_wait_ms, virtual_ns and remote
 * before tm_pool_spawn; max_result and part_min before tm_pool_start,
 * and again at the first WELCOME of a pool started before HELLO, when no
 * task was queued yet: workers read them only for a task, taken under
 * the lock; mod by tm_pool_start, under the lock); read by the
 * workers. */
typedef struct {
    spits_module_t *mod;
    int isolate;              /* --isolate: run tasks in child processes */
    int64_t task_timeout_ms;  /* --task-timeout (0: none); isolate only */
    uint64_t max_result;      /* the JM's --max-task-bytes */
    uint64_t part_min;        /* results this large go as parts */
    int64_t virtual_ns;       /* virtual workers' task time (0: threads) */
    int remote;               /* a relay (--serve): no workers; the main
                                 thread takes tasks out for the TMs behind
                                 it and hands their records back */
    const tm_worker_res_t *res;  /* worker i's: res[i] (NULL: none); set
                                    by tm_pool_reshape */
    int64_t start_wait_ms;    /* how long a worker waits for its process
                                 to be ready before its first task comes
                                 (isolate only; tm.c sets it) */
    uint64_t mem_limit;       /* --mem-per-task: each worker process's peak
                                 resident bytes (0: none); isolate only;
                                 set by tm_pool_reshape */
} tm_pool_opts_t;

/* The workers: made, started and stopped by the main thread, which alone
 * reads and writes these but alive (each thread counts itself down as it
 * ends). */
typedef struct {
    int n;
    pthread_t *threads;
    atomic_int alive;
    atomic_int ready;         /* --isolate: workers whose process start is
                                 over, ready or not (tm_pool_ready_count) */
    int spawned;              /* the threads were started */
    tm_virtual_t *virt;       /* virtual workers' slots (workers.c) */
} tm_pool_workers_t;

/* One worker's share of the counters below. */
typedef struct {
    atomic_llong busy_ns, runs;
} tm_worker_count_t;

/* Counters: added by the workers (once per chunk), read by the main
 * thread (STATS, --end-time). worker is made by tm_pool_reshape for a
 * pool whose workers own resources (one entry each; else NULL), and
 * each worker adds to its own entry only. */
typedef struct {
    atomic_llong task_ns;     /* a recent task's run time (0: none yet) */
    atomic_llong busy_ns;     /* time spent running tasks, and */
    atomic_llong runs;        /* how many ran */
    tm_worker_count_t *worker;
} tm_pool_stats_t;

typedef struct {
    pthread_mutex_t lock;     /* guards queue, outbox and queue.quit */
    pthread_cond_t work;      /* workers wait here for tasks */
    tm_pool_queue_t queue;
    tm_pool_outbox_t outbox;
    _Atomic(const char *) failed;  /* why the pool cannot go on (tm_pool_fail):
                                      any thread sets it, main reads */
    int wake_fd;              /* the main thread's eventfd; set at init */
    tm_pool_opts_t opts;
    tm_pool_workers_t workers;
    atomic_int draining;      /* main sets it: workers hand back
                                 unstarted tasks */
    tm_pool_stats_t stats;
} tm_pool_t;

/* The code in a FAILED record of a task the TM ended, not the worker:
 * one over --mem-per-task (joblog's Exitval, as for a crash). */
#define TM_FAIL_RC_LIMIT (-1)

/* isolate.c: one worker's child process (spits-tm --isolate). */
typedef struct tm_child tm_child_t;
/* env: what its process gets on top of the TM's environment (NULL:
 * none; borrowed: it must outlive the child); mem_limit: the most
 * resident memory it may reach (0: no limit). */
tm_child_t *tm_child_new(char *const *env, uint64_t mem_limit);
void tm_child_destroy(tm_child_t **c);
/* Runs a task in the child (started, or restarted, as needed). Returns the
 * record status: OK or FAILED as the worker said, CRASHED if the child
 * died (why says how), TIMEOUT past timeout_ms (0: none). A child whose
 * resident memory went over mem_limit, as the task ran or by its end, is
 * killed and the task FAILED: why says so, and result holds the record's
 * payload (wire.h) with the code TM_FAIL_RC_LIMIT and those words. */
uint32_t tm_child_run(tm_child_t *c, const spits_module_t *mod,
                      const tm_item_t *it, int64_t timeout_ms,
                      uint64_t max_result, spits_buf_t *result, char *why,
                      size_t whylen);
/* Starts the child now, if it is not running, and waits up to wait_ms
 * for it to be ready (its module loaded, its spits_worker_prepare run: a
 * .py job's interpreter), so that this start is no task's. 0; -1 and
 * why: it could not start, or ended (reaped: tm_child_run starts
 * another); -2: not ready yet (left to start: tm_child_run waits). */
int tm_child_prestart(tm_child_t *c, const spits_module_t *mod, int64_t wait_ms,
                      char *why, size_t whylen);
/* The child's side: spits-tm --worker-child MODULE, with the TM's private
 * copy of the module (spits_module_fd) as fd 4. */
int tm_child_main(int argc, char **argv);

int tm_pool_init(tm_pool_t *p, int nworkers, int wake_fd);
/* Starts the worker threads, which wait for tasks (none for virtual or
 * remote slots). The TM calls it before its first HELLO, so a TM that
 * joins can run what it is sent at once: 500 threads take 15-30 ms, far
 * more when many TMs start on one machine. Returns 0, or -1 with errno
 * set (none then runs). */
int tm_pool_spawn(tm_pool_t *p);
/* Before tm_pool_start, with no task queued yet: the pool has n workers
 * from now on, worker i owning res[i] (borrowed, or NULL), in processes
 * of their own if isolate. Threads spawned already are stopped first:
 * they hold nothing yet. Returns 0, or -1 with errno set. */
int tm_pool_reshape(tm_pool_t *p, int n, const tm_worker_res_t *res, int isolate,
                    uint64_t mem_limit);
/* The TM joined a job: its workers run mod's tasks (virtual slots are
 * made; threads are spawned if they were not). Once only. Returns 0, or
 * -1 with errno set (none then runs). */
int tm_pool_start(tm_pool_t *p, spits_module_t *mod);
/* Virtual workers (opts.virtual_ns set): finishes the slots whose time
 * is up by now_ns (their records go to the outbox) and starts queued
 * tasks in the free ones. Main thread only. Returns when the next slot
 * is due (INT64_MAX: none runs). */
int64_t tm_pool_virtual_turn(tm_pool_t *p, int64_t now_ns);
/* Remote slots (pool.opts.remote, relay.c), main thread: n tasks of a
 * TASKS message went to the relay, and count as running (held) until
 * their records come back through tm_pool_remote_done. */
void tm_pool_remote_taken(tm_pool_t *p, size_t n);
/* done copies of phase ph the relay took are answered: their
 * records (b, may be NULL when the caller has none to queue) and the
 * parts they name go to the outbox, unless ph is of a job the TM left
 * (parts is empty after, either way; b is to be begun again, as after
 * tm_outbox_put). 0, or -1 when out of memory (the pool then fails, and
 * the TM stops). */
int tm_pool_remote_done(tm_pool_t *p, const tm_phase_t *ph,
                        spits_batch_t *b, spits_parts_t *parts, size_t done);
/* Queues tasks of one message (the pool then holds one reference to rx
 * per task). Returns 0, or -1 when out of memory: nothing was queued. */
int tm_pool_push(tm_pool_t *p, tm_item_t *items, size_t n);
/* Removes queued tasks of other phases than keep (all, if keep is NULL).
 * With hand_back, each goes to the outbox as a RETURNED record, so the JM
 * counts its slot free again. Returns how many. */
size_t tm_pool_drop_others(tm_pool_t *p, const tm_phase_t *keep, int hand_back);
/* Starts a drain: every queued task, and each task a worker took but has
 * not started, goes back as a RETURNED record. Returns how many queued. */
size_t tm_pool_drain(tm_pool_t *p);
/* Tasks of the current job held: queued + running (the JM counts them
 * against this TM's slots). */
size_t tm_pool_held(tm_pool_t *p);
/* The TM now runs job number job (tm_phase_t.job): the tasks of the old
 * one still running no longer count as held (their results are dropped,
 * and the new JM never sent them). Call after dropping the queued ones. */
void tm_pool_set_job(tm_pool_t *p, unsigned job);
/* Removes queued tasks of phase ph whose ids are in ids (which it sorts):
 * each goes to the outbox as a RETURNED record. Returns how many. */
size_t tm_pool_cancel(tm_pool_t *p, const tm_phase_t *ph, uint64_t *ids,
                      size_t n);
/* --isolate: how many workers are done starting their process (ready,
 * or given up on: tm_child_prestart), from tm_pool_start on; each wakes
 * the main thread as it counts itself. */
int tm_pool_ready_count(tm_pool_t *p);
/* Tasks running now (taken by workers, not yet handed back). */
size_t tm_pool_running(tm_pool_t *p);
/* The held tasks (tm_pool_held) split: *running in the workers' hands
 * now, *queued waiting for one (a worker's chunk beyond the task it runs
 * counts as queued). Main thread, once a second (STATS). */
void tm_pool_counts(tm_pool_t *p, size_t *running, size_t *queued);
/* Asks workers to stop after their current task; waits up to ms for them.
 * Returns the number still running (0 at once when none was started). */
int tm_pool_stop(tm_pool_t *p, int ms);
void tm_pool_destroy(tm_pool_t *p);

/* A worker cannot keep the rule (its records could not be queued): the
 * main thread stops the TM. Keeps the first why; wakes the main thread. */
void tm_pool_fail(tm_pool_t *p, const char *why);
/* The first tm_pool_fail's why, or NULL. */
const char *tm_pool_failed(tm_pool_t *p);


/* outbox.c: every record going back to the JM is queued there (see its
 * header). Each returns 0, or -1 when out of memory. */
/* A worker's results: its batch's records, and the parts they name
 * (moved in, *parts is then empty; NULL: none). b is to be begun again
 * after (large records that start a segment move in without a copy).
 * Caller holds p->lock. */
int tm_outbox_put(tm_pool_t *p, const tm_phase_t *ph, spits_batch_t *b,
                  spits_parts_t *parts);
/* A RETURNED record for task id of (job, wire). Caller holds p->lock. */
int tm_outbox_return_locked(tm_pool_t *p, unsigned job, uint32_t wire, uint64_t id);
/* RETURNED records for n tasks of (job, wire); takes the lock. On -1 some
 * may have been queued: the caller stops the TM. */
int tm_outbox_return(tm_pool_t *p, unsigned job, uint32_t wire,
                     const tm_item_t *items, size_t n);
/* Takes the outbox's segments (the caller sends and frees them). */
tm_seg_t *tm_outbox_take(tm_pool_t *p, size_t *n);
/* Frees a segment's records and parts. */
void tm_seg_free(tm_seg_t *seg);
void tm_outbox_free(tm_pool_t *p);

#endif
