/*
 * phase.h - one phase of a job: what run() sets up and keeps for the report
 * (phase.c).
 */
#ifndef SPITS_JM_PHASE_H
#define SPITS_JM_PHASE_H

#include <pthread.h>
#include <stdint.h>

#include "committer.h"
#include "failure.h"
#include "generator.h"
#include "jm.h"

/* Per-phase counters kept by their owning threads, read after the phase. */
typedef struct jm_phase_stats {
    uint32_t id;
    int argc;
    char **argv;
    double started, finished; /* wall clock */
    uint64_t generated;       /* generator: task ids made, skipped included */
    uint64_t replayed;        /* main: results replayed from the journal */
    int resumed;              /* main: 1 continued, 2 replayed whole */
    uint64_t committed;       /* committer (replayed results included) */
    uint64_t commit_errors;   /* committer: commit_pit returned non-zero */
    jm_failure_t *failed;     /* committer: the poison tasks */
    size_t nfailed, capfailed;
    int commit_job_rc;
    int commit_job_called;
    uint64_t extra_pushes;    /* generator: next_task's pushes replaced by
                                 a later one in the same call */
    uint64_t final_extra_pushes;  /* main: the same of commit_job */
    json_t *metrics;          /* main: a 2.0 module's metrics of the job
                                 manager and committer instances, or NULL */
} jm_phase_stats_t;

struct jm_phase {
    jm_phase_stats_t st;
    const void *jobinfo;
    spitssize_t jobinfosz;
    jm_genq_t genq;
    jm_commitq_t cq;
    spits_inst_t manager;     /* job manager instance: generator's */
    spits_inst_t committer;   /* committer instance: main thread's */
    pthread_t gen_thread;
    json_t *argv_json;        /* main: the arguments as the TMs get them
                                 (WELCOME, PHASE); the dispatcher reads it
                                 between jm_disp_phase_begin and _end */
    char gen_error[256];      /* generator: why it stopped early */
    /* A resumed phase: the ids (and task hashes) already committed, sorted
     * by id. Read-only once the generator starts; the generator skips
     * them, the dispatcher adopts early results of the others. */
    struct jm_skip { uint64_t id, hash; } *skip;
    size_t nskip;
    /* ...and its generation checkpoints, sorted by count (generator.c
     * checks them). Read-only once the generator starts. */
    spits_jr_check_t *checks;
    size_t nchecks;
};

/* The spitsrun_t handed to spits_main */
int jm_run_phase(int argc, const char **argv, const void *jobinfo,
                 spitssize_t jobinfosz, const void **final,
                 spitssize_t *finalsz);
void jm_phase_set_job(jm_t *jm);

#endif
