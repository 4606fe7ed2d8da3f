/*
 * common.h - a tiny "sum of f(i) for i = 1..N" module body shared by the
 * test modules. Each includes it after defining SUM_F(argv1, i) (how a
 * worker turns task i into a value) and, for the 2.0 variant, METRICS_ARG.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spits.h"

#ifndef METRICS_PARAM
#define METRICS_PARAM
#define METRICS_CHECK(m) ((void)0)
#endif

typedef struct { int64_t n, next; } sum_job_t;
typedef struct { int64_t sum; } sum_co_t;
typedef struct { char op[16]; } sum_worker_t;

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz METRICS_PARAM)
{
    (void)ji; (void)jisz;
    METRICS_CHECK(metrics);
    sum_job_t *j = calloc(1, sizeof *j);
    if (j)
        j->n = argc > 2 ? atoll(argv[2]) : argc > 1 ? atoll(argv[1]) : 100;
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    sum_job_t *j = jm;
    if (j->next >= j->n)
        return 0;
    int64_t i = ++j->next;
    push(&i, sizeof i, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[] METRICS_PARAM)
{
    METRICS_CHECK(metrics);
    sum_worker_t *w = calloc(1, sizeof *w);
    if (w && argc > 1)
        snprintf(w->op, sizeof w->op, "%s", argv[1]);
    return w;
}

int spits_worker_run(void *wp, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    sum_worker_t *w = wp;
    int64_t i, v;
    if (sz != sizeof i)
        return 1;
    memcpy(&i, task, sizeof i);
    v = SUM_F(w->op, i);
    push(&v, sizeof v, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz METRICS_PARAM)
{
    (void)argc; (void)argv;
    METRICS_CHECK(metrics);
    sum_co_t *c = calloc(1, sizeof *c);
    /* jobinfo, when given, is a starting value (a previous phase's sum). */
    if (c && ji && jisz == sizeof c->sum)
        memcpy(&c->sum, ji, sizeof c->sum);
    return c;
}

int spits_committer_commit_pit(void *co, const void *r, spitssize_t sz)
{
    int64_t v;
    if (sz != sizeof v)
        return 1;
    memcpy(&v, r, sizeof v);
    ((sum_co_t *)co)->sum += v;
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    sum_co_t *c = co;
    push(&c->sum, sizeof c->sum, ctx);
    return 0;
}

void spits_committer_finalize(void *c) { free(c); }

/* For a spits_main: one phase with the command line's argv, its sum into
 * *sum. 0, or -1 if the phase failed. */
static inline int sum_run(int argc, const char *argv[], spitsrun_t run,
                          int64_t *sum)
{
    const void *final;
    spitssize_t finalsz;
    if (run(argc, argv, NULL, 0, &final, &finalsz) != 0 || finalsz != sizeof *sum)
        return -1;
    memcpy(sum, final, sizeof *sum);
    return 0;
}

/* With SUM_MAIN defined as a name: a spits_main that runs that one phase
 * and prints "NAME: sum=S". */
#ifdef SUM_MAIN
int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    int64_t sum;
    if (sum_run(argc, argv, run, &sum) != 0)
        return 1;
    printf(SUM_MAIN ": sum=%lld\n", (long long)sum);
    return 0;
}
#endif
