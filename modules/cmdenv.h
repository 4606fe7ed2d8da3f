/*
 * cmdenv.h - where a command of spits-parallel runs: the directory and
 * environment the job carries from its submitter to every TM.
 *
 * spits-parallel writes them to the env file in the job dir (private:
 * the dir is 0700, the file 0600; an environment may hold secrets, so
 * it never goes on a command line). Each worker of the command module
 * reads the file once and runs every command there, as sbatch's
 * --export=ALL does:
 *
 *   "spits-env 1\n", then NUL-terminated strings: the directory, then
 *   the carried NAME=VALUE entries.
 *
 * A command's environment is the TM's, with the carried entries set
 * over it (and PWD the directory): the TM's own variables (SLURM_*,
 * for one) stay, and the submitter's win where both have one. SLURM_*
 * and PARALLEL_SEQ are never carried: they describe where and which
 * command runs, which the TM knows and the submitter does not. For the
 * same reason a worker's own resources (taskmanager/plan.c) win over
 * carried ones: its GPU ids when the TM set SPITS_GPUS, its thread counts
 * (OMP_, MKL_, OPENBLAS_NUM_THREADS) when it set SPITS_CPUS_PER_TASK.
 */
#ifndef CMDENV_H
#define CMDENV_H

#include <stddef.h>

#define CMDENV_MAGIC "spits-env 1\n"
#define CMDENV_FILE "parallel.env"

typedef struct {
    char *buf;               /* the file's strings */
    char **env;              /* the merged environment, NULL-terminated */
    const char *cwd;         /* into buf */
} cmdenv_t;

/* Writes the env file at path (mode 0600): cwd, and environ's entries
 * (only those named in names, when nnames > 0). 0, or -1 with errno. */
int cmdenv_write(const char *path, const char *cwd, char *const *environ_in,
                 const char *const *names, size_t nnames);

/* Reads path and merges its entries over base (the TM's environment).
 * 0, or -1 with a reason in err. */
int cmdenv_load(cmdenv_t *e, const char *path, char *const *base, char *err,
                size_t errlen);
void cmdenv_clear(cmdenv_t *e);

int cmdenv_selftest(void);

#endif
