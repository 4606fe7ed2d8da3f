/*
 * jm.h - the Job Manager/Committer's job-wide types: its options, a task,
 * and the job itself. Each unit has a header of its own for the rest.
 *
 * spits-jm runs three kinds of thread. Each owns its data; the others reach
 * it only through two queues, each guarded by its own mutex and touched
 * once per batch, never once per task.
 *
 *   main thread     options, module, job dir (jm.c); runs spits_main (or
 *                   one job). Each run() call is a phase (phase.c): it
 *                   starts the generator, then is the phase's committer
 *                   (committer.c). Owns: the committer instance, the
 *                   phase's results and failures, the final result bytes,
 *                   the journal (recovery.c).
 *   generator       calls next_task and queues tasks (generator.c).
 *                   Owns: the job manager instance, the tasks it has made
 *                   until they enter the genq.
 *   dispatcher      the network loop (dispatch.c, serve.c, members.c).
 *                   Owns: the ROUTER socket, the TM table (tmtable.c), the
 *                   scheduler (serving/scheduler.c) and with it every task once
 *                   taken from the genq.
 *
 *   generator --genq (generator.h)--> dispatcher --commitq (committer.h)--> committer
 *   main --control requests (dispatch.h)--> dispatcher
 *   any thread --jm_fatal, signals (stop.h)--> dispatcher
 *
 * The genq also carries flow control back to the generator: the
 * dispatcher publishes the oldest unresolved task id and the bytes it has
 * freed, the committer the count it has resolved. The generator stops when
 * the window of unresolved tasks is full, so JM memory is bounded by the
 * tasks in flight, not by the size of the job.
 */
#ifndef SPITS_JM_H
#define SPITS_JM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "image.h"
#include "journal.h"
#include "keys.h"
#include "module.h"
#include "resources.h"
#include "scheduler.h"
#include "wire.h"

#define JM_MAX_COPIES SCHED_MAX_COPIES
#define JM_IO_THREADS_MAX 64   /* (--io-threads's error message says 64) */
#define JM_MAX_TASK_DEFAULT (1LL << 30)
#define JM_MEMORY_LIMIT_MIN (64LL << 20)   /* --memory-limit, unless 0 */
/* run()'s value for a phase that failed or was stopped: commit_job was
 * not called (spits.h). */
#define JM_RUN_FAILED_TASKS SPITS_RUN_FAILED

/* Exit statuses of spits-jm. */
#define JM_EXIT_OK 0
#define JM_EXIT_ERROR 1
#define JM_EXIT_USAGE 2
#define JM_EXIT_FAILED_TASKS 3
#define JM_EXIT_COMMIT_ERRORS 4   /* commit_pit failed for some results */

typedef struct {
    const char *jobdir;
    const char *bind;
    int max_copies;
    int max_attempts;
    double tm_timeout;      /* seconds */
    size_t keep_dead;       /* dead TMs kept one by one (tmtable.h) */
    double heartbeat;       /* seconds */
    long window;            /* tasks generated but not yet committed */
    long long window_bytes; /* bytes of tasks generated but not resolved */
    long long memory_limit; /* --memory-limit: resident bytes the generator
                               keeps under (0: none; -1: not given, three
                               quarters of spits_mem_available) */
    int journal;            /* keep DIR/journal (--journal=off: 0) */
    int insecure;           /* --insecure: no CURVE */
    int io_threads;         /* --io-threads: libzmq's I/O threads */
    long long max_task;     /* --max-task-bytes: largest task or result */
    spits_res_req_t res;    /* --cpus/--gpus/--mem-per-task: what each task
                               needs (resources.h), sent in WELCOME */
    const char *export_key; /* --export-key FILE: copy DIR/tm.key, exit */
    double progress;        /* --progress-interval: seconds between lines
                               when stderr is not a terminal (0: none) */
    int resume;             /* --resume: continue the job in DIR/journal */
    int module_changed;     /* --module-changed: resume with a new module */
    int keep_going;         /* --keep-going: commit_job despite failed tasks */
    int commit_errors_ignore; /* --commit-errors=ignore: they do not make
                               the exit status non-zero */
    int relay_fd;           /* --relay-fd: other processes' stderr (-1) */
    const char *joblog;     /* --joblog FILE (joblog.h), or NULL */
} jm_opts_t;

/* A task as the JM holds it: the scheduler's task (serving/scheduler.h) with
 * its bytes inline, in data. Made by the generator (one allocation),
 * owned by the dispatcher from the genq on, freed by the dispatcher when
 * it is resolved (jm_task_free). A task of SPITS_PART_MIN bytes or more
 * is sent without a copy (serve.c): each ZeroMQ part that carries its
 * bytes holds a reference (refs), dropped by a libzmq I/O thread when
 * the part is gone (left_ms set first), and the memory goes with the
 * last reference. */
typedef sched_task_t jm_task_t;

/* Drops a reference to a task (the dispatcher's, or a part's): the last
 * one frees it. Small tasks never go as parts: no atomic operation. */
static inline void jm_task_free(jm_task_t *t)
{
    if (t && (t->len < SPITS_PART_MIN ||
              atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1))
        free(t);
}

typedef struct jm_disp jm_disp_t;    /* dispatch.h */
typedef struct jm_phase jm_phase_t;  /* phase.h */
struct jm_phase_stats;

/* The whole job: owned by the main thread. */
typedef struct {
    jm_opts_t opt;
    spits_module_t *mod;
    char module_path[4096];
    char module_hash[65];     /* BLAKE2b of the module image, hex */
    char module_hash_was[65]; /* --module-changed: the journal's ("" same) */
    spits_image_t *image;     /* the module's bytes until mod takes them */
    char job_id[33];
    spits_keys_t keys;        /* CURVE keys (unless --insecure) */
    double started;
    jm_disp_t *disp;
    uint32_t nphases;
    struct jm_phase_stats *phases; /* finished phases, for the report */
    spits_buf_t final;        /* bytes pushed by the last commit_job */
    int failed_tasks;         /* some phase had failed tasks */
    int runtime_error;        /* some phase could not run (module, limits) */
    int interrupted;          /* the signal that stopped the job, or 0 */
    int module_exit;          /* the module called exit() (modexit.c) */
    int resumable;            /* at the end: --resume can continue it */
    spits_journal_t *journal; /* NULL with --journal=off; main thread's */
    spits_jr_t replay;        /* --resume: the journal as loaded */
    int resuming;
    int lock_fd;              /* DIR/jm.pid, locked while the JM lives */
    struct jm_joblog *joblog; /* --joblog (joblog.h), or NULL */
    struct jm_taskpool *taskpool; /* small tasks' cells (taskpool.h), or NULL */
} jm_t;

#endif
