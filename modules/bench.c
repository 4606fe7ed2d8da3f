/*
 * bench.c - test and benchmark module with knobs.
 *
 *   bench [-n TASKS] [-t TASKBYTES] [-T ODDBYTES] [-r RESULTBYTES] [-U ODDRESULTBYTES]
 *         [-R FINALBYTES]
 *         [-b BUSY_US] [-s SLEEP_US] [-f ID]... [-F ID:DIR]... [-G FILE]
 *         [-M DIR] [-P FILE] [-q]
 *
 * Task i is its number (u64 LE) then filler bytes (i + k) & 0xff; the
 * worker checks them, spins or sleeps, and answers i, splitmix64(i) and
 * filler. The committer checks every result and keeps a bitmap: a task
 * committed twice, or missing at the end, makes the job fail. It prints
 * "bench: N tasks, checksum 0x..." (the sum of splitmix64(i), mod 2^64).
 * -f ID makes task ID fail on every run; -F ID:DIR once (a marker file).
 * -G FILE: the last task's run waits until FILE exists (at most 120 s), so
 * a test decides when the job may end, however slow the machine is.
 * -M DIR: a run of task ID creates DIR/started-ID as it starts, so a test
 * can see which tasks are running.
 * -T ODDBYTES: odd-numbered tasks have ODDBYTES bytes (8 to TASKBYTES), so
 * one job mixes two sizes.
 * -U ODDRESULTBYTES: odd-numbered tasks' results have ODDRESULTBYTES bytes
 * (16 to RESULTBYTES), the same for results.
 * -P FILE: while FILE exists, every run waits (at most 120 s) after it
 * creates FILE.waiting-ID, so a test can hold a TM's workers busy.
 * -R FINALBYTES: commit_job pushes that many bytes (the checksum, then
 * zeros) instead of the 8-byte checksum, so a test can size the final
 * result.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spits.h"

#define MAX_FAIL 16

typedef struct {
    uint64_t n, tbytes, tbytes_odd, rbytes, rbytes_odd, fbytes, busy_us, sleep_us;
    uint64_t fail[MAX_FAIL];
    int nfail;
    uint64_t flaky[MAX_FAIL];
    const char *flaky_dir[MAX_FAIL];
    int nflaky;
    const char *gate, *mark_dir, *pause;
    unsigned char *pat;      /* pat[i] = i & 0xff: filler by memcpy/memcmp */
    int quiet;
} bench_cfg_t;

typedef struct { bench_cfg_t cfg; uint64_t next; unsigned char *buf; } bench_job_t;
typedef struct { bench_cfg_t cfg; unsigned char *buf; char why[64]; } bench_worker_t;
typedef struct { bench_cfg_t cfg; unsigned char *seen; uint64_t sum, dups; } bench_co_t;

static uint64_t splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int num(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || !*s || *s == '-')
        return -1;
    *out = v;
    return 0;
}

/* Filler bytes (id + k) & 0xff for k in [from, to): a window of the
 * 256-periodic pattern, so making and checking them runs at memcpy speed
 * and the bandwidth workloads measure the runtime, not this module. */
static void fill(unsigned char *b, const bench_cfg_t *c, uint64_t id,
                 uint64_t from, uint64_t to)
{
    if (to > from)
        memcpy(b + from, c->pat + ((id + from) & 0xff), to - from);
}

static int filled(const unsigned char *b, const bench_cfg_t *c, uint64_t id,
                  uint64_t from, uint64_t to)
{
    return to <= from || memcmp(b + from, c->pat + ((id + from) & 0xff), to - from) == 0;
}

/* Task id's size: -t, or -T for odd ids. */
static uint64_t task_bytes(const bench_cfg_t *c, uint64_t id)
{
    return c->tbytes_odd && (id & 1) ? c->tbytes_odd : c->tbytes;
}

/* Task id's result size: -r, or -U for odd ids. */
static uint64_t result_bytes(const bench_cfg_t *c, uint64_t id)
{
    return c->rbytes_odd && (id & 1) ? c->rbytes_odd : c->rbytes;
}

static int bench_args(int argc, const char **argv, bench_cfg_t *c)
{
    memset(c, 0, sizeof *c);
    c->n = 1000;
    c->tbytes = 8;
    c->rbytes = 16;
    c->fbytes = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t *dst = NULL;
        if (strcmp(a, "-q") == 0) { c->quiet = 1; continue; }
        if (!v) goto bad;
        if (strcmp(a, "-G") == 0) { c->gate = v; i++; continue; }
        if (strcmp(a, "-M") == 0) { c->mark_dir = v; i++; continue; }
        if (strcmp(a, "-P") == 0) { c->pause = v; i++; continue; }
        if (strcmp(a, "-n") == 0) dst = &c->n;
        else if (strcmp(a, "-t") == 0) dst = &c->tbytes;
        else if (strcmp(a, "-T") == 0) dst = &c->tbytes_odd;
        else if (strcmp(a, "-r") == 0) dst = &c->rbytes;
        else if (strcmp(a, "-U") == 0) dst = &c->rbytes_odd;
        else if (strcmp(a, "-R") == 0) dst = &c->fbytes;
        else if (strcmp(a, "-b") == 0) dst = &c->busy_us;
        else if (strcmp(a, "-s") == 0) dst = &c->sleep_us;
        else if (strcmp(a, "-f") == 0 && c->nfail < MAX_FAIL) dst = &c->fail[c->nfail++];
        else if (strcmp(a, "-F") == 0 && c->nflaky < MAX_FAIL) {
            const char *colon = strchr(v, ':');
            char idbuf[32];
            if (!colon || colon == v || (size_t)(colon - v) >= sizeof idbuf)
                goto bad;
            memcpy(idbuf, v, (size_t)(colon - v));
            idbuf[colon - v] = '\0';
            if (num(idbuf, &c->flaky[c->nflaky]) != 0)
                goto bad;
            c->flaky_dir[c->nflaky++] = colon + 1;
            i++;
            continue;
        } else goto bad;
        if (num(v, dst) != 0)
            goto bad;
        i++;
    }
    if (c->tbytes < 8 || c->rbytes < 16 || c->fbytes < 8 || c->fbytes > (1ULL << 32) ||
        c->n > (1ULL << 40) ||
        c->tbytes > (1ULL << 32) || c->rbytes > (1ULL << 32) ||
        (c->tbytes_odd && (c->tbytes_odd < 8 || c->tbytes_odd > c->tbytes)) ||
        (c->rbytes_odd && (c->rbytes_odd < 16 || c->rbytes_odd > c->rbytes)))
        goto bad;
    uint64_t plen = (c->tbytes > c->rbytes ? c->tbytes : c->rbytes) + 256;
    if (!(c->pat = malloc(plen)))
        return -1;
    for (uint64_t i = 0; i < plen; i++)
        c->pat[i] = (unsigned char)i;
    return 0;
bad:
    fprintf(stderr, "bench: bad arguments (see modules/bench.c)\n");
    return -1;
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    bench_job_t *j = calloc(1, sizeof *j);
    if (!j || bench_args(argc, argv, &j->cfg) != 0 ||
        !(j->buf = malloc(j->cfg.tbytes))) {
        if (j)
            free(j->cfg.pat);
        free(j);
        return NULL;
    }
    return j;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    bench_job_t *j = jm;
    if (j->next >= j->cfg.n)
        return 0;
    uint64_t id = j->next++;
    uint64_t size = task_bytes(&j->cfg, id);
    put64(j->buf, id);
    fill(j->buf, &j->cfg, id, 8, size);
    push(j->buf, (spitssize_t)size, ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm)
{
    bench_job_t *j = jm;
    free(j->cfg.pat);
    free(j->buf);
    free(j);
}

void *spits_worker_new(int argc, const char *argv[])
{
    bench_worker_t *w = calloc(1, sizeof *w);
    if (!w || bench_args(argc, argv, &w->cfg) != 0 ||
        !(w->buf = malloc(w->cfg.rbytes))) {
        if (w)
            free(w->cfg.pat);
        free(w);
        return NULL;
    }
    return w;
}

/* Creates the marker file PREFIX SEP ID for a test to see. */
static void touch_mark(const char *prefix, const char *sep, uint64_t id)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%llu", prefix, sep, (unsigned long long)id);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0)
        close(fd);
}

int spits_worker_run(void *wp, const void *task, spitssize_t tasksz,
                     spitspush_t push, spitsctx_t ctx)
{
    bench_worker_t *w = wp;
    const unsigned char *t = task;
    w->why[0] = '\0';
    if (tasksz < 8)
        return 2;
    uint64_t id = get64(t);
    if ((uint64_t)tasksz != task_bytes(&w->cfg, id) ||
        !filled(t, &w->cfg, id, 8, (uint64_t)tasksz))
        return 2;
    if (w->cfg.mark_dir)
        touch_mark(w->cfg.mark_dir, "/started-", id);
    if (w->cfg.pause && access(w->cfg.pause, F_OK) == 0) {
        touch_mark(w->cfg.pause, ".waiting-", id);
        struct timespec ts = {0, 10 * 1000000};
        for (int i = 0; i < 12000 && access(w->cfg.pause, F_OK) == 0; i++)
            nanosleep(&ts, NULL);
    }
    if (id + 1 == w->cfg.n && w->cfg.gate) {
        struct timespec ts = {0, 10 * 1000000};
        for (int i = 0; i < 12000 && access(w->cfg.gate, F_OK) != 0; i++)
            nanosleep(&ts, NULL);
    }
    for (int i = 0; i < w->cfg.nfail; i++)
        if (w->cfg.fail[i] == id) {
            snprintf(w->why, sizeof w->why, "task %llu fails on purpose (-f)",
                     (unsigned long long)id);
            return 1;
        }
    for (int i = 0; i < w->cfg.nflaky; i++) {
        if (w->cfg.flaky[i] != id)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/flaky-%llu", w->cfg.flaky_dir[i],
                 (unsigned long long)id);
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd >= 0) {
            close(fd);
            return 1;          /* the first run fails */
        }
    }
    if (w->cfg.busy_us) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        do
            clock_gettime(CLOCK_MONOTONIC, &b);
        while ((uint64_t)((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000) <
               w->cfg.busy_us);
    }
    if (w->cfg.sleep_us) {
        struct timespec ts = {(time_t)(w->cfg.sleep_us / 1000000),
                              (long)(w->cfg.sleep_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    put64(w->buf, id);
    put64(w->buf + 8, splitmix64(id));
    fill(w->buf, &w->cfg, id, 16, result_bytes(&w->cfg, id));
    push(w->buf, (spitssize_t)result_bytes(&w->cfg, id), ctx);
    return 0;
}

/* The spits extension: why the last run failed (-f only). */
const char *spits_worker_error(void *wp)
{
    return ((bench_worker_t *)wp)->why;
}

void spits_worker_finalize(void *wp)
{
    bench_worker_t *w = wp;
    free(w->cfg.pat);
    free(w->buf);
    free(w);
}

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    bench_co_t *c = calloc(1, sizeof *c);
    if (!c || bench_args(argc, argv, &c->cfg) != 0 ||
        !(c->seen = calloc(c->cfg.n / 8 + 1, 1))) {
        if (c)
            free(c->cfg.pat);
        free(c);
        return NULL;
    }
    return c;
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    bench_co_t *c = co;
    const unsigned char *r = result;
    if (sz < 16)
        return 1;
    uint64_t id = get64(r);
    if (id >= c->cfg.n || get64(r + 8) != splitmix64(id) ||
        (uint64_t)sz != result_bytes(&c->cfg, id))
        return 1;
    if (!filled(r, &c->cfg, id, 16, (uint64_t)sz))
        return 1;
    if (c->seen[id / 8] & (1u << (id % 8))) {
        fprintf(stderr, "bench: task %llu committed twice\n", (unsigned long long)id);
        c->dups++;
        return 1;
    }
    c->seen[id / 8] |= (unsigned char)(1u << (id % 8));
    c->sum += splitmix64(id);
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    bench_co_t *c = co;
    uint64_t missing = 0;
    for (uint64_t id = 0; id < c->cfg.n; id++)
        missing += !(c->seen[id / 8] & (1u << (id % 8)));
    if (missing || c->dups) {
        fprintf(stderr, "bench: %llu missing, %llu duplicated\n",
                (unsigned long long)missing, (unsigned long long)c->dups);
        return 1;
    }
    if (!c->cfg.quiet)
        printf("bench: %llu tasks, checksum 0x%016llx\n",
               (unsigned long long)c->cfg.n, (unsigned long long)c->sum);
    if (c->cfg.fbytes == sizeof c->sum) {
        push(&c->sum, sizeof c->sum, ctx);
        return 0;
    }
    unsigned char *final = calloc(1, c->cfg.fbytes);
    if (!final)
        return 1;
    memcpy(final, &c->sum, sizeof c->sum);
    push(final, (spitssize_t)c->cfg.fbytes, ctx);
    free(final);
    return 0;
}

void spits_committer_finalize(void *co)
{
    bench_co_t *c = co;
    free(c->cfg.pat);
    free(c->seen);
    free(c);
}
