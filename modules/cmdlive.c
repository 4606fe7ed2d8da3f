/*
 * cmdlive.c - --line-buffer's live output channel (see cmdlive.h): the
 * worker's writer frames a command's lines into the FIFO; spits-parallel's
 * reader puts a task's frames back into whole records and prints them,
 * in task order with keep.
 *
 * The writer makes no copy of untagged lines (a frame is one writev of
 * its header and a slice of the command's buffer) and one into its own
 * staging buffer, grown as needed, of tagged ones. The reader keeps no
 * state for a task whose records come in single frames and may be
 * printed now (the common case: lines shorter than a frame, no keep);
 * the others are held in a table by task index.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cmdfile.h"
#include "cmdlive.h"

_Static_assert(CMDLIVE_FRAME <= PIPE_BUF, "a frame must be one atomic FIFO write");

#define CMDLIVE_PAYLOAD (CMDLIVE_FRAME - CMDLIVE_HEAD)
#define CMDLIVE_READ 65536

static void cmdlive_put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t cmdlive_get(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ---- the writer ---- */

int cmdlive_open(cmdlive_t *l, const char *path, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    /* Non-blocking: a FIFO without a reader fails at once (ENXIO)
     * instead of waiting; the writes then block, so that a slow reader
     * slows the commands instead of losing lines. */
    l->fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (l->fd < 0 || fcntl(l->fd, F_SETFL, 0) != 0) {
        snprintf(err, errlen, "cannot open the live output channel %s: %s", path,
                 errno == ENXIO ? "spits-parallel is not reading it" : strerror(errno));
        if (l->fd >= 0)
            close(l->fd);
        l->fd = -1;
        return -1;
    }
    return 0;
}

void cmdlive_close(cmdlive_t *l)
{
    if (l->fd >= 0)
        close(l->fd);
    free(l->buf);
    memset(l, 0, sizeof *l);
    l->fd = -1;
}

static void cmdlive_frame(cmdlive_t *l, int kind, int more, const char *p, size_t n)
{
    unsigned char h[CMDLIVE_HEAD] = {0};
    struct iovec iov[2] = {{h, CMDLIVE_HEAD}, {(void *)p, n}};
    ssize_t w;
    if (l->fd < 0)
        return;
    cmdlive_put(h, l->index, 8);
    cmdlive_put(h + 8, n, 4);
    h[12] = (unsigned char)kind;
    h[13] = (unsigned char)more;
    while ((w = writev(l->fd, iov, n ? 2 : 1)) < 0 && errno == EINTR)
        ;
    if (w != (ssize_t)(CMDLIVE_HEAD + n)) {
        close(l->fd);               /* the reader is gone: nobody to print */
        l->fd = -1;
    }
}

static void cmdlive_send(cmdlive_t *l, int kind, const char *p, size_t n)
{
    for (; n > CMDLIVE_PAYLOAD; p += CMDLIVE_PAYLOAD, n -= CMDLIVE_PAYLOAD)
        cmdlive_frame(l, kind, CMDLIVE_MORE, p, CMDLIVE_PAYLOAD);
    cmdlive_frame(l, kind, 0, p, n);
}

/* p's n bytes, each line after "TAG\t", in l's staging buffer. */
static int cmdlive_tag(cmdlive_t *l, const char *p, size_t n, size_t *out)
{
    size_t tl = strlen(l->tag), lines = 0, need;
    for (const char *q = p; (q = memchr(q, '\n', n - (size_t)(q - p))); q++)
        lines++;
    lines += p[n - 1] != '\n';
    need = n + lines * (tl + 1);
    if (need > l->cap) {
        char *b = realloc(l->buf, need);
        if (!b)
            return -1;
        l->buf = b;
        l->cap = need;
    }
    char *o = l->buf;
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t line = nl ? (size_t)(nl - p) + 1 : n;
        memcpy(o, l->tag, tl);
        o[tl] = '\t';
        memcpy(o + tl + 1, p, line);
        o += tl + 1 + line;
        p += line;
        n -= line;
    }
    *out = need;
    return 0;
}

int cmdlive_lines(cmdlive_t *l, int kind, char *p, size_t *n, int last)
{
    size_t whole = *n;
    if (!last) {
        const char *nl = memrchr(p, '\n', *n);
        whole = nl ? (size_t)(nl - p) + 1 : 0;
    }
    if (!whole)
        return 0;
    if (l->fd >= 0 && l->tag) {
        size_t tagged;
        if (cmdlive_tag(l, p, whole, &tagged) != 0)
            return -1;
        cmdlive_send(l, kind, l->buf, tagged);
    } else if (l->fd >= 0) {
        cmdlive_send(l, kind, p, whole);
    }
    memmove(p, p + whole, *n - whole);
    *n -= whole;
    return 0;
}

void cmdlive_end(cmdlive_t *l)
{
    cmdlive_frame(l, CMDLIVE_END, 0, NULL, 0);
}

/* ---- the reader ---- */

struct cmdlive_job {
    uint64_t index;
    int ended;                    /* keep: its END came before its turn */
    char *buf[2];                 /* stdout, stderr records held */
    size_t len[2], cap[2];
    size_t whole[2];              /* of len: the whole records */
};

int cmdlive_reader_init(cmdlive_reader_t *r, int keep, int out, int err)
{
    memset(r, 0, sizeof *r);
    r->keep = keep;
    r->out = out;
    r->err = err;
    r->in = malloc(CMDLIVE_FRAME + CMDLIVE_READ);
    return r->in ? 0 : -1;
}

static size_t cmdlive_slot(const cmdlive_reader_t *r, uint64_t index)
{
    return (size_t)((index * 0x9E3779B97F4A7C15ull) >> 32) & (r->cap - 1);
}

/* The table's slot of index: the job's, or the empty one it would take. */
static size_t cmdlive_probe(const cmdlive_reader_t *r, uint64_t index)
{
    size_t i = cmdlive_slot(r, index);
    while (r->jobs[i] && r->jobs[i]->index != index)
        i = (i + 1) & (r->cap - 1);
    return i;
}

static cmdlive_job_t *cmdlive_find(const cmdlive_reader_t *r, uint64_t index)
{
    return r->cap ? r->jobs[cmdlive_probe(r, index)] : NULL;
}

/* Index's job, made if new; NULL out of memory. The table stays at most
 * half full. */
static cmdlive_job_t *cmdlive_get_job(cmdlive_reader_t *r, uint64_t index)
{
    cmdlive_job_t *j = cmdlive_find(r, index);
    if (j)
        return j;
    if ((r->njobs + 1) * 2 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        cmdlive_job_t **old = r->jobs, **t = calloc(cap, sizeof *t);
        size_t oldcap = r->cap;
        if (!t)
            return NULL;
        r->jobs = t;
        r->cap = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i])
                r->jobs[cmdlive_probe(r, old[i]->index)] = old[i];
        free(old);
    }
    if (!(j = calloc(1, sizeof *j)))
        return NULL;
    j->index = index;
    r->jobs[cmdlive_probe(r, index)] = j;
    r->njobs++;
    return j;
}

/* Frees j and closes its gap in the table (backward shift: every job
 * stays reachable from its home slot). */
static void cmdlive_drop(cmdlive_reader_t *r, cmdlive_job_t *j)
{
    size_t i = cmdlive_probe(r, j->index), mask = r->cap - 1;
    r->jobs[i] = NULL;
    for (size_t k = (i + 1) & mask; r->jobs[k]; k = (k + 1) & mask) {
        size_t home = cmdlive_slot(r, r->jobs[k]->index);
        /* k's job may fill the gap at i when its home is not in (i, k] */
        if ((k > i && (home <= i || home > k)) || (k < i && home <= i && home > k)) {
            r->jobs[i] = r->jobs[k];
            r->jobs[k] = NULL;
            i = k;
        }
    }
    for (int s = 0; s < 2; s++)
        free(j->buf[s]);
    free(j);
    r->njobs--;
}

static void cmdlive_emit(cmdlive_reader_t *r, int s, const char *p, size_t n)
{
    if (n && !r->failed && cmdfile_write_all(s ? r->err : r->out, p, n) != 0) {
        r->failed = 1;
        r->fail_errno = errno;
    }
}

/* Prints j's whole records (all of what it holds, with all set). */
static void cmdlive_print(cmdlive_reader_t *r, cmdlive_job_t *j, int all)
{
    for (int s = 0; s < 2; s++) {
        size_t n = all ? j->len[s] : j->whole[s];
        j->whole[s] = 0;
        if (!n)
            continue;               /* (buf may be NULL) */
        cmdlive_emit(r, s, j->buf[s], n);
        memmove(j->buf[s], j->buf[s] + n, j->len[s] - n);
        j->len[s] -= n;
    }
}

/* Whether index's records print as they come: without keep, always;
 * with it, the oldest task's (and a late copy's of an ended one). */
static int cmdlive_now(const cmdlive_reader_t *r, uint64_t index)
{
    return !r->keep || index <= r->next;
}

/* keep: the oldest task ended; the ones after it print what they hold,
 * up to the first that has not ended. */
static void cmdlive_advance(cmdlive_reader_t *r)
{
    cmdlive_job_t *j;
    r->next++;
    while ((j = cmdlive_find(r, r->next))) {
        cmdlive_print(r, j, j->ended);
        if (!j->ended)
            return;
        cmdlive_drop(r, j);
        r->next++;
    }
}

static int cmdlive_take(cmdlive_reader_t *r, uint64_t index, int kind, int more,
                        const char *p, size_t n)
{
    cmdlive_job_t *j = cmdlive_find(r, index);
    if (kind == CMDLIVE_END) {
        if (cmdlive_now(r, index)) {
            if (j) {
                cmdlive_print(r, j, 1);
                cmdlive_drop(r, j);
            }
            if (r->keep && index == r->next)
                cmdlive_advance(r);
            return 0;
        }
        if (!(j = cmdlive_get_job(r, index)))
            return -1;
        j->ended = 1;
        return 0;
    }
    int s = kind == CMDLIVE_ERR;
    if (cmdlive_now(r, index) && !more && (!j || !j->len[s])) {
        cmdlive_emit(r, s, p, n);   /* the common case: no copy */
        return 0;
    }
    if (!j && !(j = cmdlive_get_job(r, index)))
        return -1;
    if (j->len[s] + n > j->cap[s]) {
        size_t cap = j->cap[s] ? j->cap[s] : 4096;
        while (cap < j->len[s] + n)
            cap *= 2;
        char *b = realloc(j->buf[s], cap);
        if (!b)
            return -1;
        j->buf[s] = b;
        j->cap[s] = cap;
    }
    if (n)
        memcpy(j->buf[s] + j->len[s], p, n);
    j->len[s] += n;
    if (!more)
        j->whole[s] = j->len[s];
    if (cmdlive_now(r, index)) {
        cmdlive_print(r, j, 0);
        if (!j->len[0] && !j->len[1])
            cmdlive_drop(r, j);
    }
    return 0;
}

/* Takes the whole frames r->in holds; keeps the part of one at its end. */
static int cmdlive_parse(cmdlive_reader_t *r)
{
    size_t at = 0;
    int rc = 0;
    while (r->inlen - at >= CMDLIVE_HEAD) {
        const unsigned char *h = r->in + at;
        size_t len = (size_t)cmdlive_get(h + 8, 4);
        if (len > CMDLIVE_PAYLOAD || h[12] < CMDLIVE_OUT || h[12] > CMDLIVE_END ||
            h[13] > CMDLIVE_MORE) {
            errno = EBADMSG;
            rc = -1;
            break;
        }
        if (r->inlen - at < CMDLIVE_HEAD + len)
            break;
        if (cmdlive_take(r, cmdlive_get(h, 8), h[12], h[13], (const char *)h + CMDLIVE_HEAD,
                         len) != 0) {
            errno = ENOMEM;
            rc = -1;
            break;
        }
        at += CMDLIVE_HEAD + len;
    }
    memmove(r->in, r->in + at, r->inlen - at);
    r->inlen -= at;
    return rc;
}

int cmdlive_reader_feed(cmdlive_reader_t *r, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n) {
        size_t take = CMDLIVE_FRAME + CMDLIVE_READ - r->inlen;
        if (take > n)
            take = n;
        memcpy(r->in + r->inlen, p, take);
        r->inlen += take;
        p += take;
        n -= take;
        if (cmdlive_parse(r) != 0)
            return -1;
    }
    return 0;
}

int cmdlive_reader_read(cmdlive_reader_t *r, int fd)
{
    ssize_t n;
    /* (what parse leaves is less than a frame: a read always fits) */
    while ((n = read(fd, r->in + r->inlen, CMDLIVE_READ)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return errno == EAGAIN ? 0 : -1;
    if (n == 0)
        return 0;
    r->inlen += (size_t)n;
    return cmdlive_parse(r) == 0 ? 1 : -1;
}

static int cmdlive_by_index(const void *a, const void *b)
{
    uint64_t x = (*(cmdlive_job_t *const *)a)->index, y = (*(cmdlive_job_t *const *)b)->index;
    return x < y ? -1 : x > y;
}

/* Empties the table (its drops shift entries back into slot i). */
static void cmdlive_drop_all(cmdlive_reader_t *r)
{
    for (size_t i = 0; i < r->cap; i++)
        while (r->jobs[i])
            cmdlive_drop(r, r->jobs[i]);
}

void cmdlive_reader_finish(cmdlive_reader_t *r)
{
    if (!r->njobs)
        return;
    cmdlive_job_t **all = malloc(r->njobs * sizeof *all);
    size_t n = 0;
    for (size_t i = 0; i < r->cap; i++)
        if (r->jobs[i]) {
            if (all)
                all[n++] = r->jobs[i];
            else                        /* (no memory to sort: as they are) */
                cmdlive_print(r, r->jobs[i], 1);
        }
    if (all) {
        qsort(all, n, sizeof *all, cmdlive_by_index);
        for (size_t i = 0; i < n; i++)
            cmdlive_print(r, all[i], 1);
    }
    free(all);
    cmdlive_drop_all(r);
}

void cmdlive_reader_clear(cmdlive_reader_t *r)
{
    cmdlive_drop_all(r);
    free(r->jobs);
    free(r->in);
    memset(r, 0, sizeof *r);
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "cmdlive: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

/* What a writer sent: the frames a pipe holds (at most 64 KiB). */
static size_t cmdlive_drain(int fd, unsigned char *buf, size_t cap)
{
    ssize_t n = read(fd, buf, cap);
    return n > 0 ? (size_t)n : 0;
}

/* Whether the file f holds exactly want. */
static int cmdlive_holds(FILE *f, const char *want)
{
    static char got[65536];
    size_t n = (size_t)pread(fileno(f), got, sizeof got, 0);
    return n == strlen(want) && !memcmp(got, want, n);
}

static int cmdlive_empty(FILE *f)
{
    return ftruncate(fileno(f), 0) == 0 && lseek(fileno(f), 0, SEEK_SET) == 0 ? 0 : -1;
}

/* Feeds the frames of a and b (na, nb bytes) alternately, one frame of
 * each in turn, as two writers' frames mix in the FIFO. */
static int cmdlive_mix(cmdlive_reader_t *r, const unsigned char *a, size_t na,
                       const unsigned char *b, size_t nb)
{
    while (na || nb) {
        for (int w = 0; w < 2; w++) {
            const unsigned char **p = w ? &b : &a;
            size_t *n = w ? &nb : &na;
            if (!*n)
                continue;
            size_t f = CMDLIVE_HEAD + (size_t)cmdlive_get(*p + 8, 4);
            if (cmdlive_reader_feed(r, *p, f) != 0)
                return -1;
            *p += f;
            *n -= f;
        }
    }
    return 0;
}

/* Lines split and tagged by the writer; two tasks' frames mixed, a
 * record three frames long, bytes fed one at a time: the reader prints
 * whole records only, each task's in its order, and with keep the
 * oldest task's first. */
int cmdlive_selftest(void)
{
    static unsigned char fa[65536], fb[65536];
    static char longline[10001];
    int pa[2] = {-1, -1}, pb[2] = {-1, -1};
    FILE *out = tmpfile(), *err = tmpfile();
    cmdlive_t a = {.fd = -1}, b = {.fd = -1};
    cmdlive_reader_t r;
    memset(&r, 0, sizeof r);
    CHECK(out && err && pipe(pa) == 0 && pipe(pb) == 0);
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 2] = '\n';
    a.fd = pa[1];
    b.fd = pb[1];
    a.index = 0;
    b.index = 1;

    /* the writer: complete lines go, the rest stays at the front */
    char p[64] = "a1\na2\na", q[64] = "b1\n";
    size_t n = strlen(p), m = strlen(q);
    CHECK(cmdlive_lines(&a, CMDLIVE_OUT, p, &n, 0) == 0 && n == 1 && p[0] == 'a');
    CHECK(cmdlive_lines(&b, CMDLIVE_OUT, q, &m, 0) == 0 && m == 0);
    strcpy(p + 1, "3");
    n = 2;
    CHECK(cmdlive_lines(&a, CMDLIVE_OUT, p, &n, 0) == 0 && n == 2);   /* no newline yet */
    size_t ll = strlen(longline);
    char *lp = longline;
    CHECK(cmdlive_lines(&b, CMDLIVE_ERR, lp, &ll, 0) == 0 && ll == 0);
    CHECK(cmdlive_lines(&a, CMDLIVE_OUT, p, &n, 1) == 0 && n == 0);   /* its end: all */
    cmdlive_end(&a);
    cmdlive_end(&b);
    size_t na = cmdlive_drain(pa[0], fa, sizeof fa), nb = cmdlive_drain(pb[0], fb, sizeof fb);
    CHECK(na == 3 * CMDLIVE_HEAD + 6 + 2 && nb == 5 * CMDLIVE_HEAD + 3 + 10000);

    /* without keep: as they come, the long line whole */
    CHECK(cmdlive_reader_init(&r, 0, fileno(out), fileno(err)) == 0);
    CHECK(cmdlive_mix(&r, fa, na, fb, nb) == 0 && r.njobs == 0);
    CHECK(cmdlive_holds(out, "a1\na2\nb1\na3"));
    CHECK(cmdlive_holds(err, longline));
    cmdlive_reader_clear(&r);

    /* keep, task 1's frames first: all of task 0, then task 1 */
    CHECK(cmdlive_empty(out) == 0 && cmdlive_empty(err) == 0);
    CHECK(cmdlive_reader_init(&r, 1, fileno(out), fileno(err)) == 0);
    CHECK(cmdlive_reader_feed(&r, fb, nb) == 0 && r.njobs == 1);
    CHECK(cmdlive_holds(out, "") && cmdlive_holds(err, ""));
    for (size_t i = 0; i < na; i++)       /* (a byte at a time) */
        CHECK(cmdlive_reader_feed(&r, fa + i, 1) == 0);
    CHECK(cmdlive_holds(out, "a1\na2\na3b1\n") && cmdlive_holds(err, longline));
    CHECK(r.njobs == 0 && r.next == 2);
    cmdlive_reader_clear(&r);

    /* keep: a later task's lines wait for the end; a task that never
     * ended is printed, in order, by finish */
    CHECK(cmdlive_empty(out) == 0 && cmdlive_empty(err) == 0);
    CHECK(cmdlive_reader_init(&r, 1, fileno(out), fileno(err)) == 0);
    a.tag = "t 1";
    b.index = 2;
    strcpy(p, "x\ny");
    n = 3;
    CHECK(cmdlive_lines(&b, CMDLIVE_OUT, strcpy(q, "late\n"), &(size_t){5}, 0) == 0);
    CHECK(cmdlive_lines(&a, CMDLIVE_OUT, p, &n, 1) == 0 && n == 0);
    nb = cmdlive_drain(pb[0], fb, sizeof fb);
    na = cmdlive_drain(pa[0], fa, sizeof fa);
    CHECK(cmdlive_reader_feed(&r, fb, nb) == 0 && cmdlive_reader_feed(&r, fa, na) == 0);
    CHECK(cmdlive_holds(out, "t 1\tx\nt 1\ty"));
    cmdlive_reader_finish(&r);
    CHECK(cmdlive_holds(out, "t 1\tx\nt 1\tylate\n") && r.njobs == 0);

    /* a damaged frame is refused */
    unsigned char bad[CMDLIVE_HEAD] = {0};
    bad[12] = 9;
    CHECK(cmdlive_reader_feed(&r, bad, sizeof bad) == -1 && errno == EBADMSG);

    /* the table: many held tasks, dropped in a scrambled order */
    cmdlive_reader_clear(&r);
    CHECK(cmdlive_reader_init(&r, 1, fileno(out), fileno(err)) == 0);
    for (uint64_t i = 1; i <= 5000; i++)
        CHECK(cmdlive_get_job(&r, i * 7919 % 5003 + 1) != NULL);
    CHECK(r.njobs == 5000);
    for (uint64_t i = 1; i <= 5000; i += 2)
        cmdlive_drop(&r, cmdlive_find(&r, i * 7919 % 5003 + 1));
    for (uint64_t i = 1; i <= 5000; i++)
        CHECK((cmdlive_find(&r, i * 7919 % 5003 + 1) != NULL) == (i % 2 == 0));
    CHECK(r.njobs == 2500);
    cmdlive_reader_clear(&r);

    a.fd = b.fd = -1;
    cmdlive_close(&a);
    cmdlive_close(&b);
    for (int i = 0; i < 2; i++)
        close(pa[i]), close(pb[i]);
    fclose(out);
    fclose(err);
    return 0;
fail:
    cmdlive_reader_clear(&r);
    for (int i = 0; i < 2; i++) {
        if (pa[i] >= 0) close(pa[i]);
        if (pb[i] >= 0) close(pb[i]);
    }
    if (out) fclose(out);
    if (err) fclose(err);
    return -1;
}
#endif
