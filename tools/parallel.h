/*
 * parallel.h - spits-parallel's state (par_t), shared by its files, each
 * of which depends only on those listed below it:
 *
 *   spits-parallel.c    the top: main, the job dir, the joblog, the
 *                       environment file, the reaper
 *   parallel-run.c      runs the job: spits-run's or spits-jm's command
 *                       line, the child, its signals, --line-buffer's
 *                       lines, and its exit status
 *   parallel-options.c  the command line: options, the command and the
 *                       input sources
 *
 * and below them the task stream (parallel-feed.c, parallel-compose.c,
 * parallel-input.c, parallel-args.c) and modules/cmd*.
 */
#ifndef PARALLEL_H
#define PARALLEL_H

#include <limits.h>
#include <regex.h>
#include <stddef.h>
#include <sys/types.h>

#include "cmdlive.h"
#include "parallel-compose.h"
#include "parallel-feed.h"
#include "parallel-input.h"

#define PAR_ERROR 255              /* GNU parallel's "other error" */
/* The largest --output-cap: a result (its header, the output and a line
 * about the cap) fits the job manager's largest task (1 GiB). */
#define PAR_CAP_MAX ((1L << 30) - 4096)
#define PAR_CAP_MAX_S "1073737728"
#define PAR_JOBLOG_HEADER "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

typedef struct {
    char **vals;
    size_t n, cap;
    const char *path;             /* a file's lines (read by parallel-input.c) */
    unsigned char linked;         /* :::+ : steps with the source before */
} par_source_t;

typedef struct {
    int keep, tag, quote, resume, resume_failed, dry_run, verbosity;
    const char *joblog, *results, *halt, *timeout, *jobdir, *bind, *max_copies, *cap;
    const char *cpus_per_task, *gpus_per_task, *mem_per_task;   /* to spits-jm */
    long jobs, tms;
    const char *argfiles[64];
    size_t nargfiles;
    char **words;                 /* the command */
    size_t nwords;
    par_source_t *src;
    size_t nsrc;
    unsigned char *skip;          /* --resume*: by task number */
    size_t nskip;
    char dir[PATH_MAX];           /* where the task file goes */
    int tmpdir;                   /* dir is ours, removed at the end */
    char tasks[PATH_MAX], status[PATH_MAX], halt_path[PATH_MAX];
    char joblog_abs[PATH_MAX], results_abs[PATH_MAX];
    pid_t child;
    /* the task stream: its feed thread owns these once started */
    pinput_t *in;
    pcompose_t compose;
    pfeed_t feed;
    int feeding;                  /* the feed thread was started */
    const char *envnames[64];     /* --env: what the job carries (all) */
    size_t nenv;
    const char *workdir;          /* --workdir: where commands run (.) */
    char envfile[PATH_MAX];
    int reaper;                   /* the pipe that keeps the reaper waiting */
    long max_args;                /* -N: tuples per command; -1: one, unset */
    int null;                     /* -0: records end with NUL, not newline */
    int stdin_left;               /* stdin sources still to read (:::: - -) */
    const char *colsep, *header, *retries, *delay;
    int slots;                    /* the command has {%} */
    const char *progress;         /* --bar, --eta, --progress: "bar"... */
    regex_t colsep_re;
    char **names;                 /* --header: position names */
    size_t nnames;
    char **hwords;                /* --header: the words, {NAME} as {N} */
    int lb;                       /* --line-buffer */
    char lines[PATH_MAX];         /* --line-buffer: its FIFO (cmdlive.h) */
    int linesfd;                  /* its read end (the main thread's), or -1 */
    cmdlive_reader_t live;        /* the main thread's */
    int live_failed;              /* the channel failed: said, status 255 */
    int live_closed;              /* stdout was closed (| head): status 141 */
} par_t;

#endif
