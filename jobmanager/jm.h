/*
 * jm.h - the Job Manager/Committer's shared types.
 *
 * spits-jm runs three kinds of thread. Each owns its data; the others reach
 * it only through the queues below, each guarded by its own mutex and
 * touched once per batch, never once per task.
 *
 *   main thread     options, module, job dir; runs spits_main (or one job).
 *                   Each run() call is a phase: it starts the generator,
 *                   then is the phase's committer (phase.c, committer.c).
 *                   Owns: the committer instance, the phase's results and
 *                   failures, the final result bytes.
 *   generator       calls next_task and queues tasks (generator.c).
 *                   Owns: the job manager instance, the tasks it has made
 *                   until they enter the genq.
 *   dispatcher      the network loop (dispatch.c). Owns: the ROUTER
 *                   socket, the TM table, the ring of tasks in flight, the
 *                   retry list, and every task once taken from the genq.
 *
 *   generator --genq--> dispatcher --commitq--> committer
 *   main --ctl (dispatch.c)--> dispatcher
 *
 * The genq also carries flow control back to the generator: the
 * dispatcher publishes the oldest unresolved task id and the bytes it has
 * freed, the committer the count it has resolved. The generator stops when
 * the window of unresolved tasks is full, so JM memory is bounded by the
 * tasks in flight, not by the size of the job.
 */
#ifndef SPITS_JM_H
#define SPITS_JM_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zmq.h>

#include "journal.h"
#include "keys.h"
#include "module.h"
#include "stop.h"
#include "wire.h"

#define JM_MAX_COPIES 8
#define JM_MAX_TASK_DEFAULT (1LL << 30)
/* ZMQ_MAXMSGSIZE for a largest task or result of max_task bytes: a batch
 * is cut at a few MiB, plus at most one record that may be that large. */
#define JM_MAX_MSG(max_task) (2 * (max_task) + (16LL << 20))
/* run()'s value for a phase whose tasks failed: commit_job was not called. */
#define JM_RUN_FAILED_TASKS (-1000)

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
    double heartbeat;       /* seconds */
    long window;            /* tasks generated but not yet committed */
    long long window_bytes; /* bytes of tasks generated but not resolved */
    int journal;            /* keep DIR/journal (--journal=off: 0) */
    int insecure;           /* --insecure: no CURVE */
    long long max_task;     /* --max-task-bytes: largest task or result */
    const char *export_key; /* --export-key FILE: copy DIR/tm.key, exit */
    double progress;        /* --progress-interval: seconds between lines
                               when stderr is not a terminal (0: none) */
    int resume;             /* --resume: continue the job in DIR/journal */
    int commit_errors_ignore; /* --commit-errors=ignore: they do not make
                               the exit status non-zero */
} jm_opts_t;

/* A task as the JM holds it. Made by the generator (one allocation with the
 * bytes inline), owned by the dispatcher from the genq on, freed by the
 * dispatcher when it is resolved. */
typedef struct jm_task {
    struct jm_task *next;    /* genq link */
    uint64_t id;
    uint64_t hash;           /* spits_task_hash of data, when journaling */
    uint32_t len;
    uint8_t copies;          /* copies out on TMs now */
    uint8_t attempts;        /* failed runs so far */
    uint8_t in_retry;        /* 1 while listed in the retry list */
    uint8_t sent;            /* sent at least once */
    uint8_t last_status;     /* how its last failed run ended */
    int32_t failed_on;       /* TM slot of the last failed run, or -1 */
    int32_t holders[JM_MAX_COPIES]; /* TM slots running a copy, -1 = none */
    unsigned char data[];
} jm_task_t;

/* generator -> dispatcher, with flow control back. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t room;      /* the generator waits here for window room */
    jm_task_t *head, *tail;
    atomic_size_t queued;     /* read without the lock as a hint only */
    int done;                 /* next_task returned 0 (or gave up) */
    int waiting;              /* the generator waits for window room */
    uint64_t total;           /* tasks generated, final when done */
    uint64_t low;             /* dispatcher: oldest unresolved id */
    uint64_t freed_bytes;     /* dispatcher: bytes of resolved tasks */
    uint64_t resolved;        /* committer: tasks committed or failed */
    uint64_t made;            /* generator: ids made so far (for status) */
    int stop;                 /* main: give up generating */
    int wake_fd;              /* the dispatcher's eventfd */
} jm_genq_t;

/* One received message. RESULTS records are committed in place, so it
 * lives while any of them waits: the dispatcher holds one reference while
 * it reads the message, and each queued result holds one more. The last
 * jm_rx_release frees it, on whichever thread that is. */
typedef struct {
    zmq_msg_t msg;
    atomic_size_t refs;
} jm_rx_t;

/* committer.c: an empty message holding the caller's one reference. */
jm_rx_t *jm_rx_new(void);
void jm_rx_hold(jm_rx_t *rx, size_t n);
/* Drops n references (rx may be NULL); the last one frees it. */
void jm_rx_release(jm_rx_t *rx, size_t n);

typedef struct {
    uint64_t id;
    uint64_t hash;            /* the task's hash, for the journal */
    const unsigned char *data;
    uint32_t len;
    uint32_t status;          /* SPITS_ST_OK, or how a poison task failed */
    jm_rx_t *rx;              /* the message data points into, or NULL */
    unsigned char *owned;     /* or data's own allocation (adopted result) */
} jm_commit_t;

/* dispatcher -> committer. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    jm_commit_t *items;
    size_t n, cap;
    int abort;                /* dispatcher: the job is being stopped */
    int gen_done;             /* generator: set with gen_total at its end */
    uint64_t gen_total;
} jm_commitq_t;

/* A task given up after --max-attempts runs, and how its last run ended
 * (SPITS_ST_FAILED, _CRASHED or _TIMEOUT). */
typedef struct {
    uint64_t id;
    uint32_t status;
} jm_failure_t;

/* Per-phase counters kept by their owning threads, read after the phase. */
typedef struct {
    uint32_t id;
    int argc;
    char **argv;
    double started, finished; /* wall clock */
    uint64_t generated;       /* generator: task ids made, skipped included */
    uint64_t replayed;        /* main: results replayed from the journal */
    int resumed;              /* main: 1 continued, 2 replayed whole */
    uint64_t committed;       /* committer (replayed results included) */
    uint64_t commit_errors;   /* committer: commit_pit returned non-zero */
    jm_failure_t *failed;     /* committer: the poison tasks */
    size_t nfailed, capfailed;
    int commit_job_rc;
    int commit_job_called;
    json_t *metrics;          /* main: a 2.0 module's metrics of the job
                                 manager and committer instances, or NULL */
} jm_phase_stats_t;

typedef struct jm_phase {
    jm_phase_stats_t st;
    const void *jobinfo;
    spitssize_t jobinfosz;
    jm_genq_t genq;
    jm_commitq_t cq;
    spits_inst_t jmi;         /* job manager instance: generator's */
    spits_inst_t coi;         /* committer instance: main thread's */
    pthread_t gen_thread;
    char gen_error[256];      /* generator: why it stopped early */
    /* A resumed phase: the ids (and task hashes) already committed, sorted
     * by id. Read-only once the generator starts; the generator skips
     * them, the dispatcher adopts early results of the others. */
    struct jm_skip { uint64_t id, hash; } *skip;
    size_t nskip;
} jm_phase_t;

typedef struct jm_disp jm_disp_t;

/* The whole job: owned by the main thread. */
typedef struct {
    jm_opts_t opt;
    spits_module_t *mod;
    char module_path[4096];
    char module_hash[65];     /* BLAKE2b of the module image, hex */
    spits_image_t *image;     /* the module's bytes until mod takes them */
    char job_id[33];
    spits_keys_t keys;        /* CURVE keys (unless --insecure) */
    double started;
    jm_disp_t *disp;
    uint32_t nphases;
    jm_phase_stats_t *phases; /* finished phases, for the report */
    spits_buf_t final;        /* bytes pushed by the last commit_job */
    int failed_tasks;         /* some phase had failed tasks */
    int runtime_error;        /* some phase could not run (module, limits) */
    int interrupted;          /* the signal that stopped the job, or 0 */
    int resumable;            /* at the end: --resume can continue it */
    spits_journal_t *journal; /* NULL with --journal=off; main thread's */
    spits_jr_t replay;        /* --resume: the journal as loaded */
    int resuming;
    int lock_fd;              /* DIR/jm.pid, locked while the JM lives */
} jm_t;

/* generator.c */
void jm_genq_init(jm_genq_t *q, int wake_fd);
void jm_genq_destroy(jm_genq_t *q);
int jm_generator_start(jm_t *jm, jm_phase_t *p);
void jm_generator_join(jm_phase_t *p);

/* committer.c */
void jm_commitq_init(jm_commitq_t *q);
void jm_commitq_destroy(jm_commitq_t *q);
/* dispatcher side: publish a batch of resolutions; -1 when out of memory
 * (nothing queued: the caller still owns the items) */
int jm_commitq_push(jm_commitq_t *q, const jm_commit_t *items, size_t n);
/* Frees what a resolution owns: its reference to a message, or its bytes. */
void jm_commit_release(jm_commit_t *c);
/* generator side: no more tasks, total generated */
void jm_commitq_gen_done(jm_commitq_t *q, uint64_t total);
/* main thread: commit until every generated task is resolved */
void jm_committer_run(jm_t *jm, jm_phase_t *p);
/* main thread, before the generator starts: commit a resumed phase's
 * journaled results again, in their original order */
int jm_committer_replay(jm_t *jm, jm_phase_t *p, const spits_jr_phase_t *rp);

/* phase.c: the spitsrun_t handed to spits_main */
int jm_run_phase(int argc, const char **argv, const void *jobinfo,
                 spitssize_t jobinfosz, const void **final,
                 spitssize_t *finalsz);
void jm_phase_set_job(jm_t *jm);
/* A phase's arguments as a JSON array of strings (new reference), as the
 * journal keeps them and the TMs get them; NULL if one is not UTF-8. */
json_t *jm_phase_argv_json(const jm_phase_t *p);

/* recovery.c: the journal for a new job (after any old journal's check),
 * for --resume (1: the job already finished, err says so), and at the end */
int jm_recovery_start(jm_t *jm, int margc, const char **margv, char *err,
                      size_t errlen);
int jm_recovery_resume(jm_t *jm, const char *modarg, char ***margv_out,
                       int *margc_out, char *err, size_t errlen);
void jm_recovery_finish(jm_t *jm, int status, int finished);
/* A job that failed before it ran: a new job's journal is removed. */
void jm_recovery_abandon(jm_t *jm);
/* Main thread: the journal could not be written (why: the journal's
 * error); says so in one line and stops the job, which stays resumable. */
void jm_recovery_failed(jm_t *jm, const char *why);

/* status.c: a snapshot the dispatcher takes of a running phase */
typedef struct {
    uint32_t phase;
    uint64_t generated;       /* task ids the generator has made */
    uint64_t total;           /* the phase's tasks, once gen_done */
    int gen_done;
    uint64_t resolved;        /* committed or failed since the JM started */
    uint64_t replayed;        /* committed from the journal (--resume) */
    uint64_t failed;          /* poison tasks */
    uint64_t sent, resent, duplicates, requeued, running;
    double rate;              /* resolutions per second, recent */
    size_t tms_alive;
} jm_live_t;
struct jm_tmtab;
json_t *jm_status_json(const jm_t *jm, const jm_live_t *l,
                       const struct jm_tmtab *tms, int64_t now_ms);
void jm_progress_print(const jm_live_t *l, int tty);
/* The JM's own cost now: rss_bytes, max_rss_bytes, cpu_user_s,
 * cpu_system_s (spits-status and report.json). */
json_t *jm_usage_json(void);

/* report.c */
int jm_report_write(jm_t *jm, int exit_code, double finished);
/* Results whose commit_pit returned non-zero, over every phase. */
uint64_t jm_commit_errors(const jm_t *jm);

/* dispatch.c */
typedef struct {
    uint64_t sent;            /* task copies sent */
    uint64_t resent;          /* copies sent beyond a task's first */
    uint64_t duplicates;      /* results of already resolved tasks */
    uint64_t requeued;        /* copies taken back from lost TMs */
    uint64_t retried;         /* failed runs to be run again */
    uint64_t crashed;         /* runs that killed their worker process */
    uint64_t timed_out;       /* runs stopped by --task-timeout */
    uint64_t cancelled;       /* copies cancelled after another committed */
    uint64_t poison;          /* tasks given up after --max-attempts runs */
    uint64_t adopted;         /* results a re-attached TM computed for tasks
                                 this JM had not sent yet (after --resume) */
    uint64_t stale;           /* results of an earlier phase */
    uint64_t bogus;           /* results for tasks never sent */
    uint64_t bad_messages;    /* malformed messages dropped */
    uint64_t bytes_in, bytes_out;
    uint64_t tms_joined, tms_lost;
    int peak_workers;         /* most workers alive at once */
} jm_disp_stats_t;

jm_disp_t *jm_disp_new(jm_t *jm, char *err, size_t errlen);
const char *jm_disp_endpoint(const jm_disp_t *d);
int jm_disp_start(jm_disp_t *d);
int jm_disp_wake_fd(const jm_disp_t *d);
void jm_disp_phase_begin(jm_disp_t *d, jm_phase_t *p);
void jm_disp_phase_end(jm_disp_t *d);
void jm_disp_finish(jm_disp_t *d);
void jm_disp_destroy(jm_disp_t **d);
const jm_disp_stats_t *jm_disp_stats(const jm_disp_t *d);
/* After jm_disp_finish: per-TM totals as a JSON array (new reference). */
json_t *jm_disp_tms_json(const jm_disp_t *d);
/* After jm_disp_finish: tasks resolved over time (points [seconds since
 * the job started, resolved]) and the TMs' joins and leaves. */
json_t *jm_disp_timeline_json(const jm_disp_t *d);

#endif
