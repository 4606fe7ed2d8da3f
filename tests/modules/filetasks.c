/*
 * filetasks.c - a two-phase job whose tasks come from a file, for the
 * resume tests.
 *
 *   filetasks FILE SLEEP_US
 *
 * Each line of FILE is a number k, one task per line. Phase 1 sums k*k,
 * phase 2 sums k*k*k starting from phase 1's sum (its jobinfo); a worker
 * sleeps SLEEP_US per task, so a test can kill the JM mid-phase. Editing
 * FILE between a crash and a resume changes the generated tasks: the
 * resume must notice. The committer also fails commit_job if it saw one
 * task twice, so a result replayed twice cannot hide.
 *
 * With FILETASKS_MARKS=DIR in its environment, a worker creates
 * DIR/start.P.LINE as it starts a task of phase P and DIR/end.P.LINE as
 * it ends it: a test can see what a TM really runs, whatever the JM
 * believes it sent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spits.h"

typedef struct { FILE *f; int64_t line; } ft_job_t;
typedef struct { int cube; long sleep_us; } ft_worker_t;
typedef struct { int64_t sum; unsigned char *seen; size_t nseen; int dup; } ft_co_t;
typedef struct { int64_t line, k; } ft_task_t;
typedef struct { int64_t line, v; } ft_result_t;

/* DIR/WHAT.P.LINE, when FILETASKS_MARKS=DIR */
static void ft_mark(const char *what, const ft_worker_t *w, int64_t line)
{
    const char *dir = getenv("FILETASKS_MARKS");
    char path[4096];
    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/%s.%d.%lld", dir, what, w->cube ? 2 : 1,
             (long long)line);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    if (argc != 3) {
        fprintf(stderr, "usage: filetasks FILE SLEEP_US\n");
        return 2;
    }
    const char *a1[] = {argv[0], "square", argv[1], argv[2]};
    const char *a2[] = {argv[0], "cube", argv[1], argv[2]};
    const void *final;
    spitssize_t finalsz;
    int64_t squares, total;

    if (run(4, a1, NULL, 0, &final, &finalsz) != 0 || finalsz != sizeof squares)
        return 1;
    memcpy(&squares, final, sizeof squares);
    if (run(4, a2, &squares, sizeof squares, &final, &finalsz) != 0 ||
        finalsz != sizeof total)
        return 1;
    memcpy(&total, final, sizeof total);
    printf("filetasks: squares=%lld total=%lld\n", (long long)squares,
           (long long)total);
    return 0;
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    ft_job_t *j = calloc(1, sizeof *j);
    if (!j || argc < 3 || !(j->f = fopen(argv[2], "r"))) {
        free(j);
        return NULL;
    }
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    ft_job_t *j = jm;
    long long k;
    if (fscanf(j->f, "%lld", &k) != 1)
        return 0;
    ft_task_t t = {j->line++, k};
    push(&t, sizeof t, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm)
{
    ft_job_t *j = jm;
    fclose(j->f);
    free(j);
}

void *spits_worker_new(int argc, const char *argv[])
{
    ft_worker_t *w = calloc(1, sizeof *w);
    if (w && argc > 3) {
        w->cube = strcmp(argv[1], "cube") == 0;
        w->sleep_us = atol(argv[3]);
    }
    return w;
}

int spits_worker_run(void *wp, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    ft_worker_t *w = wp;
    ft_task_t t;
    if (sz != sizeof t)
        return 1;
    memcpy(&t, task, sizeof t);
    ft_mark("start", w, t.line);
    if (w->sleep_us > 0) {
        struct timespec ts = {w->sleep_us / 1000000, (w->sleep_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    ft_mark("end", w, t.line);
    ft_result_t r = {t.line, t.k * t.k * (w->cube ? t.k : 1)};
    push(&r, sizeof r, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)argc; (void)argv;
    ft_co_t *c = calloc(1, sizeof *c);
    if (c && ji && jisz == sizeof c->sum)
        memcpy(&c->sum, ji, sizeof c->sum);
    return c;
}

int spits_committer_commit_pit(void *co, const void *r, spitssize_t sz)
{
    ft_co_t *c = co;
    ft_result_t res;
    if (sz != sizeof res)
        return 1;
    memcpy(&res, r, sizeof res);
    if (res.line < 0 || res.line > 100000000)
        return 1;
    size_t byte = (size_t)res.line / 8;
    if (byte >= c->nseen) {
        size_t n = (byte + 1) * 2;
        unsigned char *s = realloc(c->seen, n);
        if (!s)
            return 1;
        memset(s + c->nseen, 0, n - c->nseen);
        c->seen = s;
        c->nseen = n;
    }
    if (c->seen[byte] & (1u << (res.line % 8))) {
        fprintf(stderr, "filetasks: line %lld committed twice\n", (long long)res.line);
        c->dup = 1;
    }
    c->seen[byte] |= (unsigned char)(1u << (res.line % 8));
    c->sum += res.v;
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    ft_co_t *c = co;
    if (c->dup)
        return 1;
    push(&c->sum, sizeof c->sum, ctx);
    return 0;
}

void spits_committer_finalize(void *co)
{
    ft_co_t *c = co;
    free(c->seen);
    free(c);
}
