/*
 * parallel-run.h - runs spits-parallel's job (parallel-run.c).
 */
#ifndef PARALLEL_RUN_H
#define PARALLEL_RUN_H

#include <limits.h>

#include "parallel.h"

/* The command line of spits-run, or of spits-jm with --jobdir, in a
 * (room for 64), with the buffers it points into (prog and module
 * PATH_MAX bytes, jobs and tms 32): 0, or -1 after saying why. */
int prun_command(par_t *p, char **a, char *prog, char *module, char *jobs, char *tms);
/* Runs argv and waits for it, passing on the signals that stop a job:
 * its exit status (128 + N: killed by signal N), or -1 after saying why. */
int prun_run(par_t *p, char **argv);
/* spits-parallel's exit status for the job's rc (prun_run's). */
int prun_status(par_t *p, int rc);

#endif
