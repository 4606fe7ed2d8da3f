/*
 * bursty.c - a module whose next_task makes tasks in fast bursts of 10,
 * then blocks: a task that exists must reach a TM at once, whatever
 * next_task does next (the generator must not hold a burst back).
 *
 *   bursty N SLEEP_MS GATE
 *
 * next_task waits for the file GATE (at most 120 s) before the first
 * task, so the test starts the clock once a TM is there; then it makes N
 * tasks and sleeps SLEEP_MS before each task that follows a 10th. A task
 * carries its number and the time it was made (CLOCK_MONOTONIC: the JM's
 * generator and committer share the clock); the worker echoes it, and the
 * committer counts the tasks committed more than SLEEP_MS / 2 after they
 * were made. commit_job prints "bursty: N tasks, L late (slowest X ms)".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spits.h"

typedef struct { uint64_t id; int64_t made_ns; } bursty_task_t;
typedef struct { int64_t n, next, sleep_ms; const char *gate; } bursty_job_t;
typedef struct { int64_t n, seen, late, slowest_ns, bound_ns; } bursty_co_t;

static int64_t bursty_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void bursty_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    if (argc < 4)
        return NULL;
    bursty_job_t *j = calloc(1, sizeof *j);
    if (j) {
        j->n = atoll(argv[1]);
        j->sleep_ms = atoll(argv[2]);
        j->gate = argv[3];
    }
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    bursty_job_t *j = jm;
    if (j->next >= j->n)
        return 0;
    if (j->next == 0)
        for (int i = 0; i < 12000 && access(j->gate, F_OK) != 0; i++)
            bursty_sleep_ms(10);
    if (j->next > 0 && j->next % 10 == 0)
        bursty_sleep_ms(j->sleep_ms);
    bursty_task_t t = {(uint64_t)j->next++, bursty_now_ns()};
    push(&t, sizeof t, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[])
{
    (void)argc; (void)argv;
    return calloc(1, 1);
}

int spits_worker_run(void *w, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    (void)w;
    if (sz != sizeof(bursty_task_t))
        return 1;
    push(task, sz, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    if (argc < 3)
        return NULL;
    bursty_co_t *c = calloc(1, sizeof *c);
    if (c) {
        c->n = atoll(argv[1]);
        c->bound_ns = atoll(argv[2]) * 1000000 / 2;
    }
    return c;
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    bursty_co_t *c = co;
    bursty_task_t t;
    if (sz != sizeof t)
        return 1;
    memcpy(&t, result, sizeof t);
    int64_t waited = bursty_now_ns() - t.made_ns;
    c->seen++;
    c->late += waited > c->bound_ns;
    if (waited > c->slowest_ns)
        c->slowest_ns = waited;
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    bursty_co_t *c = co;
    (void)push; (void)ctx;
    printf("bursty: %lld tasks, %lld late (slowest %lld ms)\n",
           (long long)c->seen, (long long)c->late,
           (long long)(c->slowest_ns / 1000000));
    return c->seen == c->n ? 0 : 1;
}

void spits_committer_finalize(void *co) { free(co); }
