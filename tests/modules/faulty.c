/*
 * faulty.c - a job whose workers misbehave on chosen tasks, for the
 * --isolate and poison-task tests.
 *
 *   faulty N [segv=ID] [abort=ID] [exit=ID] [hang=ID] [once=ID:DIR] [sleep=US]
 *            [jm-exit] [commitfail=K] [fail=ID] [jmsegv=FN:ID]
 *            [exit-on-fail=CODE] [jmexit=ID:CODE] [exitcode=CODE]
 *
 * Tasks are 0..N-1. The worker segfaults, aborts, calls exit(3) or hangs
 * forever on the named task; "once" crashes only the first run of its task
 * (a marker file in DIR remembers it); sleep=US makes every task take US
 * microseconds; exitcode=CODE makes the worker's exit() exit(CODE).
 * jmexit=ID:CODE makes next_task call exit(CODE) while it makes task ID.
 * jm-exit makes spits_job_manager_new exit(1), as modules
 * that check their arguments there do. commitfail=K makes commit_pit return
 * 1 for every Kth task (ids K-1, 2K-1, ...), which it then does not count.
 * The committer sums id+1 of every committed task, fails
 * commit_job on a task seen twice, and commit_job prints
 * "faulty: C tasks, sum S". fail=ID makes the worker return 1 on task ID.
 *
 * Built as crashy.so (-DFAULTY_MAIN, for tests/crash-names.sh), it is a
 * two-phase job (spits_main, the same arguments in each phase) that may
 * crash in the JM: jmsegv=next_task:ID segfaults (a real invalid write)
 * in next_task while it makes task ID, jmsegv=commit_pit:ID in commit_pit
 * of task ID, jmsegv=commit_job:0 in commit_job. When run() returns
 * SPITS_RUN_FAILED and exit-on-fail is given, spits_main prints "faulty:
 * phase P failed" and calls exit(CODE), as the published PY-PITS and
 * SPITS 2.0 two-phase examples do.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spits.h"

typedef struct {
    long long n, segv, abrt, ex, hang, once, sleep_us, commitfail, fail, jmsegv;
    long long jmexit;
    int jm_exit, exit_code, jmexit_code, worker_exit;
    char dir[512], jmsegv_fn[32];
} faulty_cfg_t;

typedef struct { faulty_cfg_t c; long long next; } faulty_job_t;
typedef struct { faulty_cfg_t c; long long count, sum; unsigned char *seen; int dup; } faulty_co_t;

static int faulty_args(int argc, const char **argv, faulty_cfg_t *c)
{
    memset(c, 0, sizeof *c);
    c->segv = c->abrt = c->ex = c->hang = c->once = c->fail = c->jmsegv = -1;
    c->exit_code = -1;
    c->jmexit = -1;
    c->worker_exit = 3;
    if (argc < 2 || (c->n = atoll(argv[1])) <= 0)
        return -1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "segv=", 5)) c->segv = atoll(a + 5);
        else if (!strncmp(a, "abort=", 6)) c->abrt = atoll(a + 6);
        else if (!strncmp(a, "exit=", 5)) c->ex = atoll(a + 5);
        else if (!strncmp(a, "hang=", 5)) c->hang = atoll(a + 5);
        else if (!strncmp(a, "sleep=", 6)) c->sleep_us = atoll(a + 6);
        else if (!strcmp(a, "jm-exit")) c->jm_exit = 1;
        else if (!strncmp(a, "commitfail=", 11)) c->commitfail = atoll(a + 11);
        else if (!strncmp(a, "fail=", 5)) c->fail = atoll(a + 5);
        else if (!strncmp(a, "exit-on-fail=", 13)) c->exit_code = atoi(a + 13);
        else if (!strncmp(a, "exitcode=", 9)) c->worker_exit = atoi(a + 9);
        else if (!strncmp(a, "jmexit=", 7) && strchr(a, ':')) {
            c->jmexit = atoll(a + 7);
            c->jmexit_code = atoi(strchr(a, ':') + 1);
        }
        else if (!strncmp(a, "jmsegv=", 7) && strchr(a, ':')) {
            const char *colon = strchr(a, ':');
            snprintf(c->jmsegv_fn, sizeof c->jmsegv_fn, "%.*s", (int)(colon - a - 7), a + 7);
            c->jmsegv = atoll(colon + 1);
        }
        else if (!strncmp(a, "once=", 5)) {
            const char *colon = strchr(a, ':');
            if (!colon)
                return -1;
            c->once = atoll(a + 5);
            snprintf(c->dir, sizeof c->dir, "%s", colon + 1);
        } else
            return -1;
    }
    return 0;
}

/* A real fault, not raise(): the kernel's SIGSEGV, as a module bug gives
 * (volatile: the compiler cannot see where it points). Not NULL itself:
 * UBSan would report a null store and exit before the fault; the first
 * page is mapped by no process. */
static int *volatile faulty_nowhere = (int *)64;

static void faulty_jm_segv(const faulty_cfg_t *c, const char *fn, long long id)
{
    if (!strcmp(c->jmsegv_fn, fn) && c->jmsegv == id)
        *faulty_nowhere = 1;
}

#ifdef FAULTY_MAIN
int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    faulty_cfg_t c;
    if (faulty_args(argc, argv, &c) != 0) {
        fprintf(stderr, "faulty: bad arguments\n");
        return 2;
    }
    for (int phase = 1; phase <= 2; phase++) {
        const void *final;
        spitssize_t finalsz;
        int rc = run(argc, argv, NULL, 0, &final, &finalsz);
        if (rc == SPITS_RUN_FAILED && c.exit_code >= 0) {
            printf("faulty: phase %d failed\n", phase);
            fflush(stdout);
            exit(c.exit_code);
        }
        if (rc != 0)
            return rc == SPITS_RUN_FAILED ? 1 : rc;
    }
    return 0;
}
#endif

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    faulty_job_t *j = calloc(1, sizeof *j);
    if (!j || faulty_args(argc, argv, &j->c) != 0) {
        fprintf(stderr, "faulty: bad arguments\n");
        free(j);
        return NULL;
    }
    if (j->c.jm_exit) {
        fprintf(stderr, "faulty: jm-exit: exit(1) in spits_job_manager_new\n");
        exit(1);
    }
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    faulty_job_t *j = jm;
    if (j->next >= j->c.n)
        return 0;
    long long id = j->next++;
    faulty_jm_segv(&j->c, "next_task", id);
    if (id == j->c.jmexit)
        exit(j->c.jmexit_code);
    push(&id, sizeof id, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[])
{
    faulty_cfg_t *c = calloc(1, sizeof *c);
    if (!c || faulty_args(argc, argv, c) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

int spits_worker_run(void *wp, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    faulty_cfg_t *c = wp;
    long long id;
    if (sz != sizeof id)
        return 1;
    memcpy(&id, task, sizeof id);
    if (c->sleep_us > 0) {
        struct timespec ts = {c->sleep_us / 1000000, (c->sleep_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    if (id == c->segv)
        raise(SIGSEGV);
    if (id == c->fail)
        return 1;
    if (id == c->abrt)
        abort();
    if (id == c->ex)
        exit(c->worker_exit);
    if (id == c->hang)
        for (;;)
            pause();
    if (id == c->once) {
        char path[600];
        snprintf(path, sizeof path, "%s/crashed-%lld", c->dir, id);
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd >= 0) {
            close(fd);
            raise(SIGSEGV);
        }
    }
    push(&id, sizeof id, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    faulty_co_t *c = calloc(1, sizeof *c);
    if (!c || faulty_args(argc, argv, &c->c) != 0 ||
        !(c->seen = calloc((size_t)c->c.n, 1))) {
        if (c)
            free(c->seen);
        free(c);
        return NULL;
    }
    return c;
}

int spits_committer_commit_pit(void *co, const void *r, spitssize_t sz)
{
    faulty_co_t *c = co;
    long long id;
    if (sz != sizeof id)
        return 1;
    memcpy(&id, r, sizeof id);
    faulty_jm_segv(&c->c, "commit_pit", id);
    if (id < 0 || id >= c->c.n)
        return 1;
    if (c->c.commitfail > 0 && id % c->c.commitfail == c->c.commitfail - 1)
        return 1;
    if (c->seen[id]++)
        c->dup = 1;
    c->count++;
    c->sum += id + 1;
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    faulty_co_t *c = co;
    (void)push; (void)ctx;
    faulty_jm_segv(&c->c, "commit_job", 0);
    if (c->dup) {
        fprintf(stderr, "faulty: a task was committed twice\n");
        return 1;
    }
    printf("faulty: %lld tasks, sum %lld\n", c->count, c->sum);
    fflush(stdout);
    return 0;
}

void spits_committer_finalize(void *co)
{
    faulty_co_t *c = co;
    free(c->seen);
    free(c);
}
