/*
 * alloc.h - spits-alloc's state, shared by its main loop (spits-alloc.c)
 * and its command line (alloc-options.c).
 */
#ifndef SPITS_TOOLS_ALLOC_H
#define SPITS_TOOLS_ALLOC_H

#include <limits.h>
#include <stdint.h>

#include "alloc-policy.h"

#define ALLOC_STATE_FILE "alloc.json"
#define ALLOC_LOCK_FILE "alloc.lock"
#define ALLOC_STATUS_MAX (16u << 20)     /* the status document's bound */
#define ALLOC_QUEUE_MAX 100000           /* jobs of ours squeue lists */
#define ALLOC_BACKOFF_MAX_MS 300000
#define ALLOC_QUEUE_TRIES 3              /* squeue failures before it first answers */

enum { JOB_QUEUED, JOB_RUNNING, JOB_ENDED, JOB_CANCELLED };

typedef struct {
    long id;
    int state;
    double submitted;         /* wall clock */
    int time_min;
} alloc_job_t;

typedef struct {
    /* options */
    const char *dir, *script;
    const char *gres;         /* --gres NAME: GPUs as --gres=NAME:N */
    char status_exe[PATH_MAX];
    char **sbatch_args;
    int nsbatch;
    alloc_limits_t lim;
    double interval;
    int dry_run;
    int print_options;        /* --sbatch-options: print them, and exit */
    /* the state kept in DIR/alloc.json */
    char name[64];            /* its jobs' name in the queue */
    char real_dir[PATH_MAX];  /* the job dir, absolute (for sbatch) */
    char state_path[PATH_MAX];
    double created;
    char job_id[64];          /* the spits job seen running */
    alloc_job_t *jobs;
    size_t njobs, capjobs;
    long submitted, cancelled;
    char last[512];           /* the last decision (logged or not) */
    /* the loop's own */
    int64_t retry_at, backoff_ms; /* after a failed sbatch or squeue */
    alloc_log_t log;          /* when the decision was last logged */
    int jm_silent_logged;
    int queue_answered, queue_fails;  /* squeue answered once; failures before */
    int dry_noted;
    const char *stop_why;     /* why alloc_round gave up */
    char *status_buf;
} alloc_t;

/* Reads the command line into a's options: 0, or the exit status of a
 * usage error, said in one line. --help and --version print and exit. */
int alloc_options(alloc_t *a, int argc, char **argv);

#endif
