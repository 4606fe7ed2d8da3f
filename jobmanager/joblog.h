/*
 * joblog.h - spits-jm --joblog FILE: one line per resolved task in GNU
 * parallel's joblog format (joblog.c).
 *
 *   Seq Host Starttime JobRuntime Send Receive Exitval Signal Command
 *
 * Seq is the task id, Host the TM that sent the result (a relay's host
 * for TMs behind a relay), Starttime when the JM sent the task's newest
 * copy (epoch seconds), JobRuntime from then to its result's arrival
 * (the wait in the TM's queue included), Send and Receive the task's and
 * the result's bytes, Exitval 0, or commit_pit's value when it failed,
 * or for a task given up (poison) the worker's return code (-1 when it
 * crashed or timed out), Signal 0, Command "phase N", and for a poison
 * task whose module said why its last run failed (failure.h), ": " and
 * those words, escaped (no tab or newline).
 *
 * The dispatcher names TM hosts (jm_joblog_host, at a TM's join); the
 * committer adds lines and flushes them with one write per batch. Results
 * replayed on --resume are not logged again.
 */
#ifndef SPITS_JM_JOBLOG_H
#define SPITS_JM_JOBLOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct jm_joblog jm_joblog_t;

/* Opens path for appending; a new or empty file gets the header line.
 * NULL with a one-line reason in err. */
jm_joblog_t *jm_joblog_new(const char *path, char *err, size_t errlen);
/* Flushes and closes. */
void jm_joblog_destroy(jm_joblog_t **jl);
/* The number of host (dispatcher: at a TM's join); 0 when out of memory
 * (logged as ":", GNU parallel's local host). */
uint32_t jm_joblog_host(jm_joblog_t *jl, const char *host);
/* Monotonic ms of the JM's start, which commits count their times from. */
int64_t jm_joblog_epoch_ms(const jm_joblog_t *jl);
/* Committer: one task's line, buffered. start_ms: ms after the epoch;
 * why: a poison task's words (escaped), or NULL. */
void jm_joblog_add(jm_joblog_t *jl, uint32_t phase, uint64_t id, uint32_t host,
                   uint32_t start_ms, uint32_t run_ms, uint32_t in, uint32_t out,
                   int exitval, const char *why);
/* Committer, after each batch: one write of the buffered lines. -1 (once
 * said) when the file cannot be written; lines are dropped then. */
int jm_joblog_flush(jm_joblog_t *jl);

#endif
