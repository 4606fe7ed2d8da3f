/*
 * resources.h - what a task needs and what a Task Manager has: a job's
 * resource request (--cpus-per-task, --gpus-per-task, --mem-per-task, as
 * Slurm names them), its form on the wire and in jm.json/report.json, the
 * cores, GPUs and memory a TM finds, how many workers they allow, and
 * which of them each worker owns.
 *
 * The JM parses the request (jobmanager/jm.c) and sends it in WELCOME;
 * a TM plans its workers from it once, as it joins (taskmanager/
 * resources.c). Everything here is a plain function of its arguments
 * (the GPU lookup takes the environment and the device names as lists),
 * so the self-test runs it on made-up machines; only spits_res_have_*
 * read this machine.
 */
#ifndef SPITS_RESOURCES_H
#define SPITS_RESOURCES_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define SPITS_RES_CPUS_MAX 4096   /* --cpus-per-task's largest, and a TM's cores */
#define SPITS_RES_GPUS_MAX 64     /* --gpus-per-task's largest, and a TM's GPUs */
#define SPITS_RES_GPU_ID_MAX 96   /* one GPU's id (a number, a GPU- or MIG- UUID), with NUL */

/* A job's request per task; 0: not asked (that resource limits nothing). */
typedef struct {
    int cpus;                 /* --cpus-per-task */
    int gpus;                 /* --gpus-per-task */
    uint64_t mem;             /* --mem-per-task, bytes */
} spits_res_req_t;

/* What the GPU ids are for: which variable a worker's ids go in. */
typedef enum {
    SPITS_GPU_ANY = 0,        /* a --gpus list or Slurm's: CUDA's and ROCm's */
    SPITS_GPU_NVIDIA,         /* CUDA_VISIBLE_DEVICES */
    SPITS_GPU_AMD             /* ROCR_VISIBLE_DEVICES */
} spits_gpu_kind_t;

/* What a TM has. */
typedef struct {
    int ncpus;
    int cpus[SPITS_RES_CPUS_MAX];        /* the cores of its affinity mask */
    int ngpus;
    char gpus[SPITS_RES_GPUS_MAX][SPITS_RES_GPU_ID_MAX];
    spits_gpu_kind_t gpu_kind;
    const char *gpu_from;     /* where the ids came from ("--gpus",
                                 "CUDA_VISIBLE_DEVICES", "/dev/nvidia*"...) */
    uint64_t mem;             /* bytes (0: unknown) */
} spits_res_have_t;

/* --cpus-per-task / --gpus-per-task: a whole number from 1 to max.
 * 0, or -1 (err says why, naming opt). */
int spits_res_parse_count(const char *opt, const char *arg, int max, int *out,
                          char *err, size_t errlen);
/* --mem-per-task SIZE as Slurm reads it: a whole number with an optional
 * K, M, G or T suffix (powers of 1024), megabytes when it has none. */
int spits_res_parse_size(const char *opt, const char *arg, uint64_t *out,
                         char *err, size_t errlen);
/* Whether anything is asked. */
int spits_res_req_any(const spits_res_req_t *r);
/* {"cpus_per_task": N, "gpus_per_task": N, "mem_per_task": BYTES}, only
 * the keys asked; NULL when nothing is asked (or out of memory). */
json_t *spits_res_req_json(const spits_res_req_t *r);
/* The reverse (j NULL: nothing asked). 0, or -1 with *why set. */
int spits_res_req_parse(const json_t *j, spits_res_req_t *r, const char **why);
/* A size in --mem-per-task's units: "512M", "3G"; "1000B" when not a
 * whole number of K. */
void spits_res_size_text(uint64_t b, char *out, size_t len);
/* "--cpus-per-task 2 --gpus-per-task 1", or "none". */
void spits_res_req_describe(const spits_res_req_t *r, char *out, size_t len);

/* --gpus LIST: ids separated by commas (each 1-39 characters of
 * [A-Za-z0-9_-:], no repeats), or "none" for no GPU. 0, or -1 with err. */
int spits_res_gpus_list(const char *list, spits_res_have_t *h, char *err,
                        size_t errlen);
/* --gpus auto: the first of these that names any GPU, in order:
 * CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, SLURM_STEP_GPUS,
 * SLURM_JOB_GPUS, GPU_DEVICE_ORDINAL (env: "NAME=VALUE" strings, NULL
 * ended), then the devices (devs: paths, NULL ended, as /dev lists them):
 * /dev/nvidia<N>, whose ids are the Ns, then /dev/dri/renderD<N>, whose
 * ids are their ranks in number order. A variable that is set but empty
 * (or "-1", or "NoDevFiles") means no GPU and ends the search. */
void spits_res_gpus_auto(const char *const *env, const char *const *devs,
                         spits_res_have_t *h);
/* This machine's: cores from sched_getaffinity, memory from the cgroup
 * limit or else /proc/meminfo's MemAvailable. 0, or -1 with err. */
int spits_res_have_host(spits_res_have_t *h, char *err, size_t errlen);
/* This process's environment and /dev, through spits_res_gpus_auto. */
void spits_res_have_gpus_auto(spits_res_have_t *h);
/* The memory a TM has: its cgroup's limit when one is below the machine's
 * RAM (limit < total), or else what is available now. */
uint64_t spits_res_mem_pick(uint64_t limit, uint64_t total, uint64_t avail);

/* How many workers r allows on h: the least over the resources asked,
 * and at most cap (cap <= 0: no cap; cap_what names it in why). why gets
 * the reason, naming the
 * resource that decides first and what the others would allow: "4
 * workers: 4 GPUs at 1 per task (64 cores at 8 per task would allow 8)",
 * or why none can run. */
int spits_res_plan(const spits_res_req_t *r, const spits_res_have_t *h, int cap,
                   const char *cap_what, char *why, size_t whylen);
/* Worker i's GPUs (of a plan that allows it): "0,1". */
void spits_res_worker_gpus(const spits_res_req_t *r, const spits_res_have_t *h,
                           int i, char *out, size_t len);
/* Worker i's cores: h->cpus[first .. first + r->cpus). */
int spits_res_worker_first_cpu(const spits_res_req_t *r, int i);

/* The cores of a cpu_set_t of size bytes (below SPITS_RES_CPUS_MAX) as a
 * cpulist ("0-3,8": the form wire.h's worker_res takes) in out; its
 * length, or 0 (out "") when it does not fit len. */
size_t spits_res_cpulist(const void *set, size_t size, char *out, size_t len);

int spits_res_selftest(void);

#endif
