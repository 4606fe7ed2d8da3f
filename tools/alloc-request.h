/*
 * alloc-request.h - what a Task Manager queue job asks Slurm for, from
 * the job's resource request (jm.json's "resources", resources.h): the
 * sbatch options spits-alloc puts before the user's (alloc-request.c).
 *
 * A TM job runs one spits-tm per node (tools/slurm/spits-tm.sbatch, one
 * Slurm task a node), which cuts what Slurm gives it into workers. So a
 * job that is to bring W workers asks, for its one task, W times what a
 * spits task needs: --cpus-per-task=W*CPUS (CPUS = 1 when the job asks
 * no cores: a worker per core), --gres=gpu:W*GPUS (or NAME:W*GPUS, for a
 * type such as gpu:a100), and --mem=W*MEM (megabytes, rounded up). GPUs
 * and memory are asked per node, which is per task here: --gres works
 * with every select plugin, and sbatch refuses --gpus-per-task without
 * a task count (--ntasks), which a job of several nodes cannot fix.
 * A resource the user's own sbatch options already ask for (or
 * --exclusive, whole nodes) is left to them: sbatch refuses some pairs
 * (--mem with --mem-per-cpu) and the user knows the site better.
 */
#ifndef SPITS_ALLOC_REQUEST_H
#define SPITS_ALLOC_REQUEST_H

#include "resources.h"

#define ALLOC_REQ_MAX 3          /* options at most: cores, GPUs, memory */
#define ALLOC_REQ_LEN 160        /* one option's length, with its NUL */

/* Writes into out the options that ask for `workers` workers of r,
 * skipping those args (the user's sbatch options, as given after --)
 * ask for already; GPUs as --gres=GRES:COUNT (gres NULL: "gpu"). Their
 * count (0 when r asks for nothing). */
int alloc_request_args(const spits_res_req_t *r, int workers, const char *gres,
                       char *const args[], int nargs, char out[][ALLOC_REQ_LEN]);

#ifdef SPITS_SELFTEST
int alloc_request_selftest(void);
#endif

#endif
