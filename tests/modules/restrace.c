/*
 * restrace.c - a module whose tasks record what they were given: for
 * tests/resources.sh, which checks a job's resource request against what
 * each task saw.
 *
 *   restrace N SLEEP_MS FILE
 *
 * N tasks; each appends one line to FILE (one write, O_APPEND) and sleeps
 * SLEEP_MS, so tasks on different workers overlap in time:
 *
 *   TASK START_NS END_NS CUDA=.. ROCR=.. GPUS=.. OMP=.. CPUS=0,1
 *
 * with the variables CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
 * SPITS_GPUS and OMP_NUM_THREADS ("-" when unset), the calling thread's
 * affinity (sched_getaffinity) and the start and end of the task on
 * CLOCK_MONOTONIC, which every process of the machine shares.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spits.h"

typedef struct { int64_t n, next; } rt_job_t;
typedef struct { int64_t sleep_ms; char path[4096]; } rt_worker_t;
typedef struct { int64_t n, seen; } rt_co_t;

static int64_t rt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *rt_env(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "-";
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    if (argc < 4)
        return NULL;
    rt_job_t *j = calloc(1, sizeof *j);
    if (j)
        j->n = atoll(argv[1]);
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    rt_job_t *j = jm;
    if (j->next >= j->n)
        return 0;
    int64_t i = j->next++;
    push(&i, sizeof i, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm) { free(jm); }

void *spits_worker_new(int argc, const char *argv[])
{
    if (argc < 4)
        return NULL;
    rt_worker_t *w = calloc(1, sizeof *w);
    if (w) {
        w->sleep_ms = atoll(argv[2]);
        snprintf(w->path, sizeof w->path, "%s", argv[3]);
    }
    return w;
}

int spits_worker_run(void *wp, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    rt_worker_t *w = wp;
    int64_t id;
    char line[1024], cpus[512] = "";
    cpu_set_t set;
    if (sz != sizeof id)
        return 1;
    memcpy(&id, task, sizeof id);
    int64_t start = rt_now_ns();
    struct timespec ts = {(time_t)(w->sleep_ms / 1000), (long)(w->sleep_ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    size_t n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < sizeof cpus - 8; c++)
        if (CPU_ISSET(c, &set))
            n += (size_t)snprintf(cpus + n, sizeof cpus - n, "%s%d", n ? "," : "", c);
    int len = snprintf(line, sizeof line,
                       "%lld %lld %lld CUDA=%s ROCR=%s GPUS=%s OMP=%s CPUS=%s\n",
                       (long long)id, (long long)start, (long long)rt_now_ns(),
                       rt_env("CUDA_VISIBLE_DEVICES"), rt_env("ROCR_VISIBLE_DEVICES"),
                       rt_env("SPITS_GPUS"), rt_env("OMP_NUM_THREADS"), cpus);
    int fd = open(w->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || len <= 0 || (size_t)len >= sizeof line ||
        write(fd, line, (size_t)len) != len) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);
    push(&id, sizeof id, ctx);
    return 0;
}

void spits_worker_finalize(void *w) { free(w); }

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    if (argc < 2)
        return NULL;
    rt_co_t *c = calloc(1, sizeof *c);
    if (c)
        c->n = atoll(argv[1]);
    return c;
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    rt_co_t *c = co;
    (void)result;
    if (sz != sizeof(int64_t))
        return 1;
    c->seen++;
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    rt_co_t *c = co;
    (void)push; (void)ctx;
    printf("restrace: %lld tasks\n", (long long)c->seen);
    return c->seen == c->n ? 0 : 1;
}

void spits_committer_finalize(void *co) { free(co); }
