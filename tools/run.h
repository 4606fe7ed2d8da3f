/*
 * run.h - spits-run's state (run_t), shared by its files: spits-run.c,
 * the top (options, the JM and TMs started and waited for, signals, the
 * TMs' stderr pipe), and run-jobdir.c below it (what the job dir says
 * and keeps); serial.c (--serial) needs none of it.
 */
#ifndef RUN_H
#define RUN_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define MAX_TMS 1024

typedef struct {
    const char *jobdir;
    char tmpdir[PATH_MAX];
    int keep;
    int no_keep;            /* --no-keep: a failed job's dir goes too */
    int jm_crashed;         /* the signal the JM died of, unsent (or 0) */
    int failed;             /* the job's exit status, when it failed (or 0) */
    int tm_crashed;         /* a TM died of a signal (its crash file) */
    long workers, tms;
    const char *max_copies, *max_attempts, *bind, *commit_errors, *progress;
    const char *joblog, *journal;   /* passed to spits-jm */
    const char *cpus_per_task, *gpus_per_task, *mem_per_task;   /* ...too */
    int workers_given;      /* --workers: passed on (else a TM's own) */
    const char *prefetch, *task_timeout;   /* passed to spits-tm */
    int isolate;
    int resume;             /* --resume: spits-jm --resume on --jobdir */
    int module_changed;     /* --module-changed: passed with --resume */
    int keep_going;         /* --keep-going: spits-jm's, or serial.c's */
    int serial;             /* --serial: serial.c, in this process */
    const char *not_serial; /* an option given that --serial has no use for */
    int verbosity;          /* -1 quiet, 0 default, >0 verbose */
    char jm_path[PATH_MAX], tm_path[PATH_MAX];
    pid_t jm;
    pid_t tm[MAX_TMS];
    int tm_status[MAX_TMS];
    int errpipe[2];         /* the TMs' stderr: the JM reads [0] (-1: none) */
    char errpipe_arg[16];   /* [0] as --relay-fd's argument */
    char left[4096];        /* an unfinished line read after the JM ended */
    size_t nleft;
} run_t;

#endif
