/*
 * primes.c - example module: counts the primes below N.
 *
 *   primes [N [TASKS]]     (N = 10000000 in 100 tasks)
 *
 * Each task sieves one range with the primes up to sqrt(N); the committer
 * adds the counts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spits.h"

typedef struct { int64_t n, tasks, next; } pr_job_t;
typedef struct { int64_t lo, hi; } pr_task_t;
typedef struct { int64_t n, count; } pr_co_t;

static int pr_args(int argc, const char **argv, int64_t *n, int64_t *tasks)
{
    char *end;
    *n = 10000000;
    *tasks = 100;
    if (argc > 1 && ((*n = strtoll(argv[1], &end, 10)) < 2 || *end)) {
        fprintf(stderr, "primes: bad N '%s'\n", argv[1]);
        return -1;
    }
    if (argc > 2 && ((*tasks = strtoll(argv[2], &end, 10)) < 1 || *end)) {
        fprintf(stderr, "primes: bad TASKS '%s'\n", argv[2]);
        return -1;
    }
    return 0;
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    pr_job_t *j = calloc(1, sizeof *j);
    if (j && pr_args(argc, argv, &j->n, &j->tasks) != 0) {
        free(j);
        return NULL;
    }
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    pr_job_t *j = jm;
    if (j->next >= j->tasks)
        return 0;
    pr_task_t t = {j->n * j->next / j->tasks, j->n * (j->next + 1) / j->tasks};
    j->next++;
    push(&t, sizeof t, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[])
{
    (void)argc; (void)argv;
    return malloc(1);
}

/* Counts primes p with lo <= p < hi by a segmented sieve. */
int spits_worker_run(void *w, const void *task, spitssize_t tasksz,
                     spitspush_t push, spitsctx_t ctx)
{
    (void)w;
    pr_task_t t;
    if (tasksz != sizeof t)
        return 1;
    memcpy(&t, task, sizeof t);
    int64_t count = 0, len = t.hi - t.lo;
    if (len > 0) {
        unsigned char *comp = calloc((size_t)len, 1);
        if (!comp)
            return 1;
        for (int64_t p = 2; p * p < t.hi; p++) {
            int prime = 1;
            for (int64_t d = 2; d * d <= p; d++)
                if (p % d == 0) { prime = 0; break; }
            if (!prime)
                continue;
            int64_t start = (t.lo + p - 1) / p * p;
            if (start < p * p)
                start = p * p;
            for (int64_t m = start; m < t.hi; m += p)
                comp[m - t.lo] = 1;
        }
        for (int64_t i = 0; i < len; i++)
            if (!comp[i] && t.lo + i >= 2)
                count++;
        free(comp);
    }
    push(&count, sizeof count, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    pr_co_t *c = calloc(1, sizeof *c);
    int64_t tasks;
    if (c && pr_args(argc, argv, &c->n, &tasks) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    int64_t n;
    if (sz != sizeof n)
        return 1;
    memcpy(&n, result, sizeof n);
    ((pr_co_t *)co)->count += n;
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    pr_co_t *c = co;
    printf("primes below %lld: %lld\n", (long long)c->n, (long long)c->count);
    push(&c->count, sizeof c->count, ctx);
    return 0;
}

void spits_committer_finalize(void *co) { free(co); }
