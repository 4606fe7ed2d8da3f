/*
 * run-jobdir.h - spits-run and its job dir (run-jobdir.c).
 */
#ifndef RUN_JOBDIR_H
#define RUN_JOBDIR_H

#include <signal.h>
#include <stdint.h>

#include "run.h"

/* Whether dir holds a report.json (the job there ended). */
int rundir_has_report(const char *dir);
/* The temporary job dir goes, unless --keep, or the job failed or a
 * process of it crashed: then it is kept, with one line saying why. */
void rundir_cleanup(run_t *r);
/* The JM crashed: its crash.json gets the source line. */
void rundir_resolve_crash(const run_t *r);
/* Waits (a minute at most) until the JM has removed a past run's
 * report.json, has exited, or a signal of stops is pending. */
void rundir_wait_replaced(run_t *r, const sigset_t *stops);
/* 1 once the JM has written jm.json (its signal handlers are set). */
int rundir_jm_announced(const run_t *r);
/* 1 once every TM has been gone a while with work left and no TM joined
 * from elsewhere: the job is to be stopped (said in one line). *since:
 * when the last one left (0: some still run). */
int rundir_orphaned(run_t *r, int64_t *since);

#endif
