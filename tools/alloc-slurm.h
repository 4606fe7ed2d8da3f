/*
 * alloc-slurm.h - the commands spits-alloc runs (alloc-slurm.c): sbatch,
 * squeue, scancel and spits-status, each a child process bounded in time,
 * its output captured; and the check of the options given for sbatch.
 * Nothing here retries or decides: spits-alloc.c does.
 */
#ifndef SPITS_ALLOC_SLURM_H
#define SPITS_ALLOC_SLURM_H

#include <stddef.h>

/* Runs argv[0] (looked up on PATH) with stdin from /dev/null and stdout
 * (and stderr, with_stderr, else /dev/null) into out (NUL-terminated, cut
 * to outlen; *cut set when it was), killed after timeout_s seconds. Its
 * exit status; 128 + N when a signal N ended it; 124 when it was killed
 * for time; ALLOC_NOT_FOUND when the program is not on PATH or cannot be
 * executed, -1 when it could not be started (out says why). The caller's
 * blocked signals are unblocked in the child. */
#define ALLOC_NOT_FOUND (-2)
int alloc_run(char *const argv[], int with_stderr, char *out, size_t outlen,
              int *cut, int timeout_s);

/* One of this spits-alloc's queue jobs, as squeue shows it. */
typedef struct {
    long id;
    int pending;              /* PENDING (or held): not started yet */
} alloc_qjob_t;

/* The jobs named name in the queue (squeue -h -n NAME -o "%i %T"), at
 * most max into jobs. Their count, or -1 with err set (ALLOC_NOT_FOUND
 * when there is no squeue to run). */
int alloc_squeue(const char *name, alloc_qjob_t *jobs, size_t max, char *err,
                 size_t errlen);

/* Checks the options given for sbatch (args, as passed after --): 0, or
 * -1 with err naming the first that spits-alloc cannot let through, in
 * any form sbatch would read it (an unambiguous abbreviation, =VALUE or a
 * separate value, a short option bundled after flags or with its value
 * attached), and why; or a word sbatch would take for the job script. */
int alloc_sbatch_check(char *const args[], int nargs, char *err, size_t errlen);

/* sbatch's short options that take a value (its getopt string): in a
 * word of short options, what follows one of these is its value. */
extern const char alloc_sbatch_valued[];

/* The command line that submits one job: sbatch --parsable [pre...]
 * [args...] --job-name=NAME --time=MIN SCRIPT JOBDIR. pre (options
 * spits-alloc derives) come before the user's args, which override
 * them; the name and time come last: they win. A calloc'd, NULL-ended
 * array whose strings are the arguments' and bufs'; NULL when out of
 * memory. */
char **alloc_sbatch_argv(const char *name, char *const pre[], int npre,
                        char *const args[], int nargs, int time_min, const char *script,
                        const char *jobdir, char bufs[2][256]);

/* Submits one job (alloc_sbatch_argv's command line). The job id; 0 when
 * sbatch failed for a reason that may pass (the controller busy or
 * unreachable, a QOS submit limit, a signal: err says it); -1 when sbatch
 * refused the request itself (a bad partition, account or option: err has
 * sbatch's words); ALLOC_NOT_FOUND when there is no sbatch to run. */
long alloc_sbatch(const char *name, char *const pre[], int npre, char *const args[],
                  int nargs, int time_min, const char *script, const char *jobdir,
                  char *err, size_t errlen);

/* Cancels those of the jobs still pending (scancel --state=PENDING
 * ID...): one that started meanwhile is left to run. 0, or -1 with err
 * set. */
int alloc_scancel(const long *ids, size_t n, char *err, size_t errlen);

#endif
