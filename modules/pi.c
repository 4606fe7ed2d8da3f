/*
 * pi.c - example module: pi by the midpoint rule on 4/(1+x^2) over [0,1].
 *
 *   pi [STEPS [TASKS]]     (100000000 steps in 1000 tasks)
 *
 * A task is a range of steps; its result the range's partial sum. The
 * committer keeps the partial sums by task number and adds them in task
 * order, so the answer does not depend on the order results arrive in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spits.h"

typedef struct { int64_t steps, tasks, next; } pi_job_t;
typedef struct { int64_t steps, tasks; double *sums; } pi_co_t;
typedef struct { int64_t task, steps, tasks; } pi_task_t;

static int pi_args(int argc, const char **argv, int64_t *steps, int64_t *tasks)
{
    char *end;
    *steps = 100000000;
    *tasks = 1000;
    if (argc > 1 && ((*steps = strtoll(argv[1], &end, 10)) < 1 || *end)) {
        fprintf(stderr, "pi: bad STEPS '%s'\n", argv[1]);
        return -1;
    }
    if (argc > 2 && ((*tasks = strtoll(argv[2], &end, 10)) < 1 || *end ||
                     *tasks > *steps)) {
        fprintf(stderr, "pi: bad TASKS '%s'\n", argv[2]);
        return -1;
    }
    return 0;
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    pi_job_t *j = calloc(1, sizeof *j);
    if (j && pi_args(argc, argv, &j->steps, &j->tasks) != 0) {
        free(j);
        return NULL;
    }
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    pi_job_t *j = jm;
    if (j->next >= j->tasks)
        return 0;
    pi_task_t t = {j->next++, j->steps, j->tasks};
    push(&t, sizeof t, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[])
{
    (void)argc; (void)argv;
    return malloc(1);
}

int spits_worker_run(void *w, const void *task, spitssize_t tasksz,
                     spitspush_t push, spitsctx_t ctx)
{
    (void)w;
    pi_task_t t;
    if (tasksz != sizeof t)
        return 1;
    memcpy(&t, task, sizeof t);
    int64_t lo = t.steps * t.task / t.tasks, hi = t.steps * (t.task + 1) / t.tasks;
    double h = 1.0 / (double)t.steps, sum = 0;
    for (int64_t i = lo; i < hi; i++) {
        double x = h * ((double)i + 0.5);
        sum += 4.0 / (1.0 + x * x);
    }
    double r[2] = {(double)t.task, sum * h};
    push(r, sizeof r, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    pi_co_t *c = calloc(1, sizeof *c);
    if (!c || pi_args(argc, argv, &c->steps, &c->tasks) != 0 ||
        !(c->sums = calloc((size_t)c->tasks, sizeof *c->sums))) {
        free(c);
        return NULL;
    }
    return c;
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    pi_co_t *c = co;
    double r[2];
    if (sz != sizeof r)
        return 1;
    memcpy(r, result, sizeof r);
    if (r[0] < 0 || r[0] >= (double)c->tasks)
        return 1;
    c->sums[(size_t)r[0]] = r[1];
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    pi_co_t *c = co;
    double pi = 0;
    for (int64_t i = 0; i < c->tasks; i++)
        pi += c->sums[i];
    printf("pi = %.15f\n", pi);
    push(&pi, sizeof pi, ctx);
    return 0;
}

void spits_committer_finalize(void *co)
{
    pi_co_t *c = co;
    free(c->sums);
    free(c);
}
