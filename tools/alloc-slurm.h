/*
 * alloc-slurm.h - the commands spits-alloc runs (alloc-slurm.c): sbatch,
 * squeue, scancel and spits-status, each a child process bounded in time,
 * its output captured. Nothing here retries or decides: spits-alloc.c
 * does.
 */
#ifndef SPITS_ALLOC_SLURM_H
#define SPITS_ALLOC_SLURM_H

#include <stddef.h>

/* Runs argv[0] (looked up on PATH) with stdin from /dev/null and stdout
 * and stderr into out (NUL-terminated, cut to outlen), killed after
 * timeout_s seconds. Its exit status; 124 when it was killed for time;
 * -1 when it could not run (out says why). The caller's blocked signals
 * are unblocked in the child. */
int alloc_run(char *const argv[], char *out, size_t outlen, int timeout_s);

/* One of this spits-alloc's queue jobs, as squeue shows it. */
typedef struct {
    long id;
    int pending;              /* PENDING (or held): not started yet */
} alloc_qjob_t;

/* The jobs named name in the queue (squeue -h -n NAME -o "%i %T"), at
 * most max into jobs. Their count, or -1 with err set. */
int alloc_squeue(const char *name, alloc_qjob_t *jobs, size_t max, char *err,
                 size_t errlen);

/* Submits one job: sbatch --parsable --job-name=NAME [args...]
 * --time=MIN SCRIPT JOBDIR. The job id; 0 when sbatch failed for a reason
 * that may pass (err says it); -1 when sbatch refused the request itself
 * (a bad partition, account or option: err has sbatch's words). */
long alloc_sbatch(const char *name, char *const args[], int nargs, int time_min,
                  const char *script, const char *jobdir, char *err, size_t errlen);

/* Cancels the jobs (scancel ID...). 0, or -1 with err set. */
int alloc_scancel(const long *ids, size_t n, char *err, size_t errlen);

#endif
