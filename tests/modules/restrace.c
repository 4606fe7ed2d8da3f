/*
 * restrace.c - a module whose tasks record what they were given: for
 * tests/resources.sh, which checks a job's resource request against what
 * each task saw.
 *
 *   restrace N SLEEP_MS FILE [HOG_MB]
 *
 * N tasks; each appends one line to FILE (one write, O_APPEND) and sleeps
 * SLEEP_MS, so tasks on different workers overlap in time:
 *
 *   TASK START_NS END_NS CUDA=.. ROCR=.. ZE=.. GPUS=.. OMP=.. OOM=.. CPUS=0,1
 *
 * with the variables CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
 * ZE_AFFINITY_MASK, SPITS_GPUS and OMP_NUM_THREADS ("-" when unset), the
 * process's oom_score_adj, the calling thread's affinity
 * (sched_getaffinity) and the start and end of the task on
 * CLOCK_MONOTONIC, which every process of the machine shares.
 *
 * With HOG_MB, task 0 instead allocates and touches HOG_MB megabytes,
 * sleeps SLEEP_MS with them and writes no line (a test of
 * --mem-per-task); the committer then expects N - 1 results.
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
typedef struct { int64_t sleep_ms, hog_mb; char path[4096]; } rt_worker_t;
typedef struct { int64_t n, seen; } rt_co_t;

static int64_t rt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* This process's oom_score_adj ("-" when unreadable). */
static void rt_oom(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/oom_score_adj", "re");
    if (!f || !fgets(out, (int)len, f))
        snprintf(out, len, "-");
    out[strcspn(out, "\n")] = '\0';
    if (f)
        fclose(f);
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
        w->hog_mb = argc > 4 ? atoll(argv[4]) : 0;
        snprintf(w->path, sizeof w->path, "%s", argv[3]);
    }
    return w;
}

int spits_worker_run(void *wp, const void *task, spitssize_t sz,
                     spitspush_t push, spitsctx_t ctx)
{
    rt_worker_t *w = wp;
    int64_t id;
    char line[1024], cpus[512] = "", oom[16];
    cpu_set_t set;
    if (sz != sizeof id)
        return 1;
    memcpy(&id, task, sizeof id);
    int64_t start = rt_now_ns();
    struct timespec ts = {(time_t)(w->sleep_ms / 1000), (long)(w->sleep_ms % 1000) * 1000000};
    if (id == 0 && w->hog_mb > 0) {
        size_t size = (size_t)w->hog_mb << 20;
        volatile char *hog = malloc(size);   /* (volatile: kept, and touched) */
        if (!hog)
            return 2;
        for (size_t k = 0; k < size; k += 4096)
            hog[k] = 1;
        nanosleep(&ts, NULL);
        free((void *)hog);
        push(&id, sizeof id, ctx);
        return 0;
    }
    nanosleep(&ts, NULL);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    rt_oom(oom, sizeof oom);
    size_t n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < sizeof cpus - 8; c++)
        if (CPU_ISSET(c, &set))
            n += (size_t)snprintf(cpus + n, sizeof cpus - n, "%s%d", n ? "," : "", c);
    int len = snprintf(line, sizeof line,
                       "%lld %lld %lld CUDA=%s ROCR=%s ZE=%s GPUS=%s OMP=%s OOM=%s CPUS=%s\n",
                       (long long)id, (long long)start, (long long)rt_now_ns(),
                       rt_env("CUDA_VISIBLE_DEVICES"), rt_env("ROCR_VISIBLE_DEVICES"),
                       rt_env("ZE_AFFINITY_MASK"), rt_env("SPITS_GPUS"), rt_env("OMP_NUM_THREADS"), oom, cpus);
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
        c->n = atoll(argv[1]) - (argc > 4 && atoll(argv[4]) > 0);
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
