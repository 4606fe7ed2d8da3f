/*
 * alloc-policy.h - how many Task Manager queue jobs one spits job wants
 * now (alloc-policy.c): spits-alloc's decision, a pure function of what
 * the JM measured and what the queue holds, so that it can be tested
 * without a cluster.
 *
 * The rule, from the PY-PITS model max(N*T/W, N*S/BW): ask for workers
 * while the remaining tasks would take longer than the target with the
 * workers there are (R*T/W > target), but never past the worker count at
 * which the JM's bandwidth becomes the bound (W = T*BW/S: more workers no
 * longer shorten the job), and never past the limits. Jobs still queued
 * beyond what is wanted are cancelled; running ones are never touched
 * (they drain on their own). A job's --time is cut to what is left near
 * the end, so late jobs are short ones.
 */
#ifndef SPITS_ALLOC_POLICY_H
#define SPITS_ALLOC_POLICY_H

#include <stddef.h>

/* The job (spits-status --json) and its queue jobs (squeue), now. */
typedef struct {
    int gen_done;             /* every task is generated */
    double remaining;         /* tasks generated and not yet resolved (a floor
                                 of those left while !gen_done) */
    double task_s;            /* T: mean task time; < 0 while unknown */
    double bw_bytes_s;        /* BW: bytes the JM moves per CPU second; < 0 unknown */
    double bytes_per_task;    /* S: bytes moved per task (in + out) */
    int workers;              /* W: workers of the TMs alive */
    int tms;                  /* TMs alive */
    int queued, running;      /* this spits-alloc's jobs in the queue, by state */
    long submitted;           /* this spits-alloc's jobs ever submitted */
} alloc_in_t;

typedef struct {
    double target_s;          /* the remaining time wanted */
    int max_queued;           /* jobs pending at once */
    int max_running;          /* jobs pending or running at once */
    long max_total;           /* jobs submitted in all */
    int workers_per_job;      /* workers one job brings; 0: learn from the TMs */
    int time_min;             /* a job's --time, minutes */
    int min_time_min;         /* the shortest --time near the end, minutes */
} alloc_limits_t;

typedef struct {
    int submit;               /* jobs to submit now */
    int cancel;               /* queued jobs to cancel now (the newest first) */
    int time_min;             /* --time of the jobs submitted now */
    int want_jobs;            /* jobs this spits-alloc should have queued or running */
    double estimate_s;        /* remaining time with the workers alive; < 0 unknown */
    double max_workers;       /* W where N*S/BW becomes the bound; < 0 none known */
    char why[200];            /* the reason, one line */
    const char *kind;         /* the reason without its figures (a static
                                 string): what a change of reason means */
    const char *limit;        /* the limit that held jobs back, or NULL */
} alloc_plan_t;

void alloc_decide(const alloc_in_t *in, const alloc_limits_t *lim, alloc_plan_t *out);

/* When a plan is logged: when it acts (submits or cancels), when its
 * reason (kind and limit) is not the last one logged, and when the last
 * line is ALLOC_LOG_EVERY_MS old; not at every look, as the figures in
 * its why change at each. */
#define ALLOC_LOG_EVERY_MS 60000
typedef struct {
    const char *kind, *limit; /* the last logged plan's */
    long long at_ms;          /* when it was logged */
    int any;                  /* a plan was logged */
} alloc_log_t;

/* 1 if p is to be logged at now_ms (then it is noted in log as the last
 * one logged), else 0. */
int alloc_log_due(alloc_log_t *log, const alloc_plan_t *p, long long now_ms);

#ifdef SPITS_SELFTEST
int alloc_policy_selftest(void);
#endif

#endif
