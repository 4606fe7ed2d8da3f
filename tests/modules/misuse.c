/*
 * misuse.c - a module that breaks the push and return-value rules on
 * purpose, for tests/module-misuse.sh.
 *
 *   misuse N MODE [AT]
 *
 * Tasks are 0..N-1 (8 bytes each); a worker pushes 2*id+1 back, the
 * committer sums what it gets, and commit_job pushes and prints
 * "misuse: C tasks, sum S". MODE breaks one rule at task AT (0), or in
 * every call for the *-twice modes:
 *   ok            nothing
 *   jm-null       next_task pushes NULL with size 100
 *   jm-neg        next_task pushes a size of -5
 *   jm-big        next_task pushes a size of 2^40
 *   jm-twice      next_task pushes 1000000+id, then id (the last is the task)
 *   jm-nopush     next_task returns 1 without pushing (an empty task)
 *   jm-ret=V      next_task pushes the task, then returns V
 *   w-null, w-neg, w-big, w-twice   the same in spits_worker_run
 *   final-null, final-neg, final-twice   the same in commit_job
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spits.h"

typedef struct {
    long long n, at, next, sum, count;
    int ret;
    char mode[32];
} misuse_t;

static misuse_t *misuse_new(int argc, const char **argv)
{
    misuse_t *m = calloc(1, sizeof *m);
    if (!m || argc < 3 || (m->n = atoll(argv[1])) <= 0) {
        fprintf(stderr, "misuse: usage: misuse N MODE [AT]\n");
        free(m);
        return NULL;
    }
    snprintf(m->mode, sizeof m->mode, "%s", argv[2]);
    if (strncmp(m->mode, "jm-ret=", 7) == 0) {
        m->ret = atoi(m->mode + 7);
        m->mode[6] = '\0';
    }
    m->at = argc > 3 ? atoll(argv[3]) : 0;
    return m;
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    return misuse_new(argc, argv);
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    misuse_t *m = jm;
    if (m->next >= m->n)
        return 0;
    long long id = m->next++, other = 1000000 + id;
    int here = id == m->at;
    if (here && !strcmp(m->mode, "jm-null"))
        push(NULL, 100, ctx);
    else if (here && !strcmp(m->mode, "jm-neg"))
        push(&id, -5, ctx);
    else if (here && !strcmp(m->mode, "jm-big"))
        push(&id, 1LL << 40, ctx);
    else if (here && !strcmp(m->mode, "jm-nopush"))
        return 1;
    else {
        if (!strcmp(m->mode, "jm-twice"))
            push(&other, sizeof other, ctx);
        push(&id, sizeof id, ctx);
    }
    return here && !strcmp(m->mode, "jm-ret") ? m->ret : 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[])
{
    return misuse_new(argc, argv);
}

int spits_worker_run(void *w, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    misuse_t *m = w;
    long long id, r, other = 7;
    if (sz == 0)
        return 0;                /* jm-nopush's empty task: no result */
    if (sz != sizeof id)
        return 1;
    memcpy(&id, task, sizeof id);
    r = 2 * id + 1;
    int here = id == m->at;
    if (here && !strcmp(m->mode, "w-null"))
        push(NULL, 100, ctx);
    else if (here && !strcmp(m->mode, "w-neg"))
        push(&r, -5, ctx);
    else if (here && !strcmp(m->mode, "w-big"))
        push(&r, 1LL << 40, ctx);
    else {
        if (!strcmp(m->mode, "w-twice"))
            push(&other, sizeof other, ctx);
        push(&r, sizeof r, ctx);
    }
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    return misuse_new(argc, argv);
}

int spits_committer_commit_pit(void *c, const void *result, spitssize_t sz)
{
    misuse_t *m = c;
    long long r = 0;
    if (sz == sizeof r)
        memcpy(&r, result, sizeof r);
    m->sum += r;
    m->count++;
    return 0;
}

int spits_committer_commit_job(void *c, spitspush_t push, spitsctx_t ctx)
{
    misuse_t *m = c;
    char line[96], other[] = "misuse: dropped";
    int len = snprintf(line, sizeof line, "misuse: %lld tasks, sum %lld",
                       m->count, m->sum);
    printf("%s\n", line);
    fflush(stdout);
    if (!strcmp(m->mode, "final-null"))
        push(NULL, 100, ctx);
    else if (!strcmp(m->mode, "final-neg"))
        push(line, -5, ctx);
    else if (!strcmp(m->mode, "final-huge"))   /* (refused before a byte is read) */
        push(line, 4294967296LL, ctx);
    else {
        if (!strcmp(m->mode, "final-twice"))
            push(other, sizeof other, ctx);
        push(line, len, ctx);
    }
    return 0;
}

void spits_committer_finalize(void *c) { free(c); }
