/*
 * parallel-feed.h - spits-parallel's task stream (parallel-feed.c): the
 * combinations of the input sources (parallel-input.h), composed into
 * command lines (parallel-compose.h) and written as task records
 * (cmdfile.h) to the FIFO that the command module's job manager reads
 * (modules/cmdstream.h), as they are made.
 *
 * The FIFO's capacity is the flow control: when the job manager has its
 * window full it reads no more, the feed's write waits, and so does the
 * reading of the input. Records are written in batches, and whenever the
 * next input might make the feed wait, so none waits in a buffer.
 *
 * The feed runs on a thread of its own (pfeed_start) while the main
 * thread waits for the job; it owns the pinput and the FIFO's write end.
 * The main thread reads f->rc (atomic) after the job ended, and reaches
 * the FIFO only through pfeed_cut (when a stop signal comes). The feed's
 * thread blocks SIGPIPE and the main thread's signals from its start. An
 * input that fails (a read error, a NUL byte) ends the stream as its end would:
 * the commands already read run, and spits-parallel's status says the
 * failure.
 */
#ifndef PARALLEL_FEED_H
#define PARALLEL_FEED_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parallel-args.h"
#include "parallel-compose.h"
#include "parallel-input.h"

typedef struct {
    pinput_t *in;                 /* opened (pinput_open) */
    const pcompose_t *compose;
    const unsigned char *skip;    /* task numbers not to run (--resume*) */
    size_t nskip;
    uint64_t seq;                 /* the next combination's task number */
    const char *path;             /* the FIFO */
    long max_args;                /* -N: combinations a task (0: none of
                                     their arguments), -1: one */
    const regex_t *colsep;        /* --colsep, or NULL */
    pargs_list_t args;            /* the next task's arguments */
    int pending;                  /* args holds the task at f->seq */
    pthread_t thread;
    atomic_int rc;                /* 0, or -1: the input failed (said); the
                                     stream still ends, with what was read */
} pfeed_t;

/* Moves in past the tasks f->skip names, from f->seq: 1 if one is left
 * (held in f->args for the next compose), 0 if none, -1 on an error.
 * A task is -N combinations (one without -N), each value split by
 * --colsep. */
int pfeed_skip(pfeed_t *f);
/* Prints each task's command line to out (--dry-run, {%} as slot 1);
 * 0 or -1. */
int pfeed_print(pfeed_t *f, FILE *out);
/* The signals the main thread takes with sigwaitinfo (the stop signals
 * and SIGCHLD) into set; the feed's thread blocks them all its life. */
void pfeed_main_signals(sigset_t *set);
/* Starts the thread that writes the stream to f->path; 0 or -1. */
int pfeed_start(pfeed_t *f);
/* Ends the stream where it is, without its end mark, so that the job
 * manager's reader stops (a cut stream is an error there). Async-signal-
 * safe. */
void pfeed_cut(void);
/* Frees what the feed holds (after its thread ended, or without one). */
void pfeed_clear(pfeed_t *f);

#endif
