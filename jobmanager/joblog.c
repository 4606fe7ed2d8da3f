/*
 * joblog.c - spits-jm --joblog FILE (see joblog.h).
 *
 * Off the hot path: the dispatcher only notes four numbers per commit
 * (when it sent the copy, how long the result took, the TM's host
 * number, the task's size) when a joblog is open; the committer formats
 * lines into a buffer and writes it once per batch. Formatting is by
 * hand (snprintf's %f alone cost more than the rest of an empty task).
 *
 * The host names are the one thing both threads touch. Only the
 * dispatcher adds them, and never moves one: a full table is copied to
 * a larger one, published before the count that covers the new name,
 * and the old one is kept until the end. So the committer reads without
 * a lock: the count (acquire), then a table at least that new.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "joblog.h"
#include "log.h"
#include "util.h"

#define JOBLOG_HEADER "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"
#define JOBLOG_LINE_MAX 512   /* more than a line can take */
#define JOBLOG_HOST_MAX 127

typedef struct {
    char *name;
    size_t len;
} joblog_host_t;

typedef struct joblog_table {
    struct joblog_table *older;   /* the table it replaced (freed at the end) */
    size_t cap;
    joblog_host_t hosts[];
} joblog_table_t;

struct jm_joblog {
    int fd;
    char *path;
    int64_t epoch_ms;             /* monotonic ms of the start... */
    uint64_t epoch_wall_ms;       /* ...and the wall clock then */
    _Atomic(joblog_table_t *) table;
    atomic_size_t nhosts;         /* [0] is ":" */
    char *buf;                    /* the committer's lines not yet written */
    size_t len, cap;
    uint64_t sec;                 /* the last start's seconds, as... */
    char secstr[24];              /* ...text (secstr_len bytes) */
    size_t secstr_len;
    int failed;                   /* a write failed (said once) */
};

/* Adds name to the host table (dispatcher only); -1 out of memory. */
static int joblog_host_add(jm_joblog_t *jl, const char *name)
{
    joblog_table_t *t = atomic_load_explicit(&jl->table, memory_order_relaxed);
    size_t n = atomic_load_explicit(&jl->nhosts, memory_order_relaxed);
    /* (each name takes JOBLOG_HOST_MAX + 1 bytes: lines copy that many) */
    char *copy = calloc(1, JOBLOG_HOST_MAX + 1);
    if (!copy)
        return -1;
    strncpy(copy, name, JOBLOG_HOST_MAX);
    if (!t || n == t->cap) {
        size_t cap = t ? t->cap * 2 : 16;
        joblog_table_t *b = malloc(sizeof *b + cap * sizeof b->hosts[0]);
        if (!b) {
            free(copy);
            return -1;
        }
        b->older = t;
        b->cap = cap;
        if (n)
            memcpy(b->hosts, t->hosts, n * sizeof b->hosts[0]);
        atomic_store_explicit(&jl->table, b, memory_order_release);
        t = b;
    }
    t->hosts[n].name = copy;
    t->hosts[n].len = strlen(copy);
    atomic_store_explicit(&jl->nhosts, n + 1, memory_order_release);
    return 0;
}

jm_joblog_t *jm_joblog_new(const char *path, char *err, size_t errlen)
{
    struct stat st;
    jm_joblog_t *jl = calloc(1, sizeof *jl);
    if (jl)
        jl->fd = -1;
    if (!jl || !(jl->path = strdup(path)) || joblog_host_add(jl, ":") != 0) {
        snprintf(err, errlen, "out of memory opening the joblog");
        goto fail;
    }
    jl->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (jl->fd < 0 || fstat(jl->fd, &st) != 0) {
        snprintf(err, errlen, "cannot open the joblog %s: %s", path, strerror(errno));
        goto fail;
    }
    if (st.st_size == 0 &&
        spits_write_all(jl->fd, JOBLOG_HEADER, strlen(JOBLOG_HEADER)) != 0) {
        snprintf(err, errlen, "cannot write the joblog %s: %s", path, strerror(errno));
        goto fail;
    }
    jl->epoch_ms = spits_now_ms();
    jl->epoch_wall_ms = (uint64_t)(spits_wall_time() * 1000);
    jl->sec = UINT64_MAX;
    return jl;
fail:
    jm_joblog_destroy(&jl);
    return NULL;
}

void jm_joblog_destroy(jm_joblog_t **jlp)
{
    jm_joblog_t *jl = *jlp;
    if (!jl)
        return;
    if (jl->fd >= 0) {
        jm_joblog_flush(jl);
        close(jl->fd);
    }
    joblog_table_t *t = atomic_load(&jl->table);
    size_t n = atomic_load(&jl->nhosts);
    for (size_t i = 0; t && i < n; i++)
        free(t->hosts[i].name);
    while (t) {
        joblog_table_t *older = t->older;
        free(t);
        t = older;
    }
    free(jl->buf);
    free(jl->path);
    free(jl);
    *jlp = NULL;
}

uint32_t jm_joblog_host(jm_joblog_t *jl, const char *host)
{
    joblog_table_t *t = atomic_load_explicit(&jl->table, memory_order_relaxed);
    size_t n = atomic_load_explicit(&jl->nhosts, memory_order_relaxed);
    for (size_t i = 1; i < n; i++)
        if (!strncmp(t->hosts[i].name, host, JOBLOG_HOST_MAX) &&
            strlen(host) == t->hosts[i].len)
            return (uint32_t)i;
    if (n >= UINT32_MAX || joblog_host_add(jl, host) != 0)
        return 0;
    return (uint32_t)n;
}

int64_t jm_joblog_epoch_ms(const jm_joblog_t *jl)
{
    return jl->epoch_ms;
}

static const char joblog_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* How many decimal digits v has. */
static int joblog_ndigits(uint64_t v)
{
    int n = 1;
    while (v >= 10000) {
        v /= 10000;
        n += 4;
    }
    return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

/* v's digits, written backwards from end (no copy). */
static void joblog_digits(char *end, uint64_t v)
{
    while (v >= 100) {
        end -= 2;
        end[0] = joblog_pairs[v % 100 * 2];
        end[1] = joblog_pairs[v % 100 * 2 + 1];
        v /= 100;
    }
    if (v >= 10) {
        end[-2] = joblog_pairs[v * 2];
        end[-1] = joblog_pairs[v * 2 + 1];
    } else {
        end[-1] = (char)('0' + v);
    }
}

/* Appends v at out; returns the end. */
static char *joblog_uint(char *out, uint64_t v)
{
    out += joblog_ndigits(v);
    joblog_digits(out, v);
    return out;
}

/* Appends ".mmm", three digits of ms. */
static char *joblog_frac(char *out, unsigned ms)
{
    out[0] = '.';
    out[1] = (char)('0' + ms / 100);
    out[2] = joblog_pairs[ms % 100 * 2];
    out[3] = joblog_pairs[ms % 100 * 2 + 1];
    return out + 4;
}

void jm_joblog_add(jm_joblog_t *jl, uint32_t phase, uint64_t id, uint32_t host,
                   uint32_t start_ms, uint32_t run_ms, uint32_t in, uint32_t out,
                   int exitval, const char *why)
{
    size_t wl = why ? strlen(why) : 0;
    if (spits_grow((void **)&jl->buf, &jl->cap, jl->len + JOBLOG_LINE_MAX + wl, 1, 1 << 16) != 0)
        return;                       /* out of memory: the line is lost */
    char *p = jl->buf + jl->len;
    p = joblog_uint(p, id);
    *p++ = '\t';
    size_t n = atomic_load_explicit(&jl->nhosts, memory_order_acquire);
    const joblog_host_t *h = &atomic_load_explicit(&jl->table, memory_order_acquire)
                                  ->hosts[host < n ? host : 0];
    memcpy(p, h->name, JOBLOG_HOST_MAX + 1);     /* (a fixed size: no call) */
    p += h->len;
    *p++ = '\t';
    /* Start: the seconds are mostly the last line's. */
    uint64_t start = jl->epoch_wall_ms + start_ms;
    if (start / 1000 != jl->sec) {
        jl->sec = start / 1000;
        jl->secstr_len = (size_t)(joblog_uint(jl->secstr, jl->sec) - jl->secstr);
    }
    memcpy(p, jl->secstr, sizeof jl->secstr);   /* (a fixed size: no call) */
    p = joblog_frac(p + jl->secstr_len, (unsigned)(start % 1000));
    *p++ = '\t';
    /* JobRuntime: %10.3f */
    for (int pad = 6 - joblog_ndigits(run_ms / 1000); pad > 0; pad--)
        *p++ = ' ';
    p = joblog_frac(joblog_uint(p, run_ms / 1000), run_ms % 1000);
    *p++ = '\t';
    p = joblog_uint(p, in);
    *p++ = '\t';
    p = joblog_uint(p, out);
    *p++ = '\t';
    if (exitval < 0)
        *p++ = '-';
    p = joblog_uint(p, exitval < 0 ? -(uint64_t)exitval : (uint64_t)exitval);
    memcpy(p, "\t0\tphase ", 9);
    p = joblog_uint(p + 9, phase);
    if (wl) {
        memcpy(p, ": ", 2);
        memcpy(p + 2, why, wl);
        p += 2 + wl;
    }
    *p++ = '\n';
    jl->len = (size_t)(p - jl->buf);
}

int jm_joblog_flush(jm_joblog_t *jl)
{
    if (jl->len && !jl->failed && spits_write_all(jl->fd, jl->buf, jl->len) != 0) {
        spits_error("cannot write the joblog %s: %s; no more lines go to it",
                    jl->path, errno ? strerror(errno) : "nothing written");
        jl->failed = 1;
    }
    jl->len = 0;
    return jl->failed ? -1 : 0;
}
