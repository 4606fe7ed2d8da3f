/*
 * cmddone.c - TASKFILE.done, the command module's notes of what its
 * committer wrote, and the cut of output that no note covers
 * (cmddone.h says why and the file's records).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmddone.h"

enum { CMDDONE_REC = 4 * sizeof(uint64_t), CMDDONE_CHUNK = 1024 };

static int cmddone_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* What a stream is now: a regular file's identity and where this life
 * writes (its end when appending, else its offset); zeros and
 * CMDDONE_NONE otherwise. */
static cmddone_stream_t cmddone_stream_now(int fd)
{
    cmddone_stream_t s = {0, 0, CMDDONE_NONE};
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return s;
    int fl = fcntl(fd, F_GETFL);
    off_t at = fl >= 0 && (fl & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
    if (fl < 0 || at < 0)
        return s;
    s.dev = (uint64_t)st.st_dev;
    s.ino = (uint64_t)st.st_ino;
    s.end = (uint64_t)at;
    return s;
}

/* Where fd ends after this command's writes, or CMDDONE_NONE. */
static uint64_t cmddone_pos(int fd)
{
    off_t at = fd >= 0 ? lseek(fd, 0, SEEK_CUR) : -1;
    return at < 0 ? CMDDONE_NONE : (uint64_t)at;
}

/* Cuts fd back to past.end when it is the file a past life noted and
 * holds more: that tail is a command no note covers. */
static int cmddone_cut(int fd, const cmddone_stream_t *past)
{
    struct stat st;
    if (fd < 0 || !past->ino || past->end == CMDDONE_NONE || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != past->dev ||
        (uint64_t)st.st_ino != past->ino || (uint64_t)st.st_size <= past->end)
        return 0;
    if (ftruncate(fd, (off_t)past->end) != 0 || lseek(fd, (off_t)past->end, SEEK_SET) < 0)
        return -1;
    return 0;
}

static int cmddone_add(cmddone_t *d, size_t *cap, uint64_t seq)
{
    if (d->nwritten == *cap) {
        size_t n = *cap ? *cap * 2 : 1024;
        uint64_t *w = realloc(d->written, n * sizeof *w);
        if (!w)
            return -1;
        d->written = w;
        *cap = n;
    }
    d->written[d->nwritten++] = seq;
    return 0;
}

/* Reads every whole record; out and log end as the last life and notes
 * left them. 0, or -1 with err set. */
static int cmddone_read(cmddone_t *d, const char *path, cmddone_stream_t *out,
                        cmddone_stream_t *log, off_t *whole, char *err, size_t errlen)
{
    uint64_t rec[CMDDONE_CHUNK][4];
    size_t cap = 0, at = 0;
    ssize_t n;
    while ((n = pread(d->fd, rec, sizeof rec, (off_t)(at * CMDDONE_REC))) > 0) {
        size_t k = (size_t)n / CMDDONE_REC;
        for (size_t i = 0; i < k; i++, at++) {
            uint64_t *r = rec[i];
            if (at == 0 && r[0] != CMDDONE_OUT) {
                snprintf(err, errlen, "%s is not a list of written commands "
                         "(it begins with no stdout record)", path);
                return -1;
            }
            cmddone_stream_t *s = r[0] == CMDDONE_OUT ? out : r[0] == CMDDONE_LOG ? log : NULL;
            if (s) {
                s->dev = r[1], s->ino = r[2], s->end = r[3];
                continue;
            }
            if (r[1] > 1) {
                snprintf(err, errlen, "%s: record %zu is damaged (failed flag %llu)", path,
                         at, (unsigned long long)r[1]);
                return -1;
            }
            if (cmddone_add(d, &cap, r[0]) != 0) {
                snprintf(err, errlen, "out of memory reading %s", path);
                return -1;
            }
            d->failed += r[1];
            out->end = r[2];
            log->end = r[3];
        }
        if ((size_t)n % CMDDONE_REC)
            break;                /* a record cut short: the file's end */
    }
    if (n < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    *whole = (off_t)(at * CMDDONE_REC);
    return 0;
}

int cmddone_open(cmddone_t *d, const char *path, int out, int log, char *err, size_t errlen)
{
    cmddone_stream_t pout = {0, 0, CMDDONE_NONE}, plog = pout;
    struct stat st;
    off_t whole = 0;
    memset(d, 0, sizeof *d);
    d->out = out;
    d->log = log;
    d->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (d->fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (cmddone_read(d, path, &pout, &plog, &whole, err, errlen) != 0)
        goto fail;
    if (fstat(d->fd, &st) != 0 || (st.st_size > whole && ftruncate(d->fd, whole) != 0)) {
        snprintf(err, errlen, "cannot drop the cut record at the end of %s: %s", path,
                 strerror(errno));
        goto fail;
    }
    if (d->nwritten)   /* (qsort takes no NULL, even for 0 items) */
        qsort(d->written, d->nwritten, sizeof *d->written, cmddone_u64_cmp);
    if (cmddone_cut(out, &pout) != 0 || cmddone_cut(log, &plog) != 0) {
        snprintf(err, errlen, "cannot cut the output of a command that %s does not list: %s",
                 path, strerror(errno));
        goto fail;
    }
    cmddone_stream_t o = cmddone_stream_now(out), l = cmddone_stream_now(log);
    uint64_t life[2][4] = {{CMDDONE_OUT, o.dev, o.ino, o.end}, {CMDDONE_LOG, l.dev, l.ino, l.end}};
    if (write(d->fd, life, sizeof life) != (ssize_t)sizeof life) {
        snprintf(err, errlen, "cannot write %s: %s", path, errno ? strerror(errno) : "short write");
        goto fail;
    }
    return 0;
fail:
    cmddone_close(d);
    return -1;
}

int cmddone_written(const cmddone_t *d, uint64_t seq)
{
    size_t lo = 0, hi = d->nwritten;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->written[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->nwritten && d->written[lo] == seq;
}

int cmddone_note(cmddone_t *d, uint64_t seq, int failed)
{
    if (d->fd < 0)
        return 0;
    uint64_t rec[4] = {seq, failed != 0, cmddone_pos(d->out), cmddone_pos(d->log)};
    ssize_t n = write(d->fd, rec, sizeof rec);
    if (n == (ssize_t)sizeof rec)
        return 0;
    if (n >= 0)
        errno = ENOSPC;
    return -1;
}

void cmddone_close(cmddone_t *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
    free(d->written);
    d->written = NULL;
    d->nwritten = 0;
}

#ifdef SPITS_SELFTEST
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "cmddone: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

static int cmddone_put(int fd, const char *s)
{
    return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

static int cmddone_has(const char *path, const char *want)
{
    char buf[256];
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)strlen(want) && !memcmp(buf, want, (size_t)n);
}

/* Three lives over one stdout (appended to) and one joblog: a command
 * written but not noted is cut and not listed, one noted is listed and
 * kept; a record cut short drops its command; another file, a pipe and
 * a damaged list are never cut. */
int cmddone_selftest(void)
{
    char dir[] = "/tmp/cmddone.XXXXXX", done[64], out[64], log[64], other[64], err[256] = "";
    cmddone_t d = {.fd = -1};
    int o = -1, l = -1, p[2] = {-1, -1};
    if (!mkdtemp(dir))
        return -1;
    snprintf(done, sizeof done, "%s/done", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);     /* not appending */
    l = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    CHECK(o >= 0 && l >= 0 && cmddone_put(o, "head\n") == 0);
    /* Life 1: two commands noted, a third written when it is killed. */
    CHECK(cmddone_open(&d, done, o, l, err, sizeof err) == 0 && d.nwritten == 0);
    CHECK(cmddone_put(o, "a\n") == 0 && cmddone_put(l, "1\n") == 0 && cmddone_note(&d, 1, 0) == 0);
    CHECK(cmddone_put(o, "b\n") == 0 && cmddone_put(l, "2\n") == 0 && cmddone_note(&d, 2, 1) == 0);
    CHECK(cmddone_put(o, "c\n") == 0 && cmddone_put(l, "3") == 0);
    cmddone_close(&d);
    close(o);
    close(l);
    /* Life 2, stdout appended to now: "c" is cut from both. */
    o = open(out, O_WRONLY | O_APPEND);
    l = open(log, O_WRONLY | O_APPEND);
    CHECK(cmddone_open(&d, done, o, l, err, sizeof err) == 0);
    CHECK(d.nwritten == 2 && d.failed == 1 && cmddone_written(&d, 1) && cmddone_written(&d, 2) &&
          !cmddone_written(&d, 3) && !cmddone_written(&d, 0));
    CHECK(cmddone_has(out, "head\na\nb\n") && cmddone_has(log, "1\n2\n"));
    /* Nothing written since this life began: a kill now cuts nothing. */
    CHECK(cmddone_put(o, "c\n") == 0 && cmddone_put(l, "3\n") == 0 && cmddone_note(&d, 3, 0) == 0);
    /* Its next command written, its note cut short by the kill. */
    CHECK(cmddone_put(o, "d\n") == 0 && cmddone_put(l, "4\n") == 0);
    CHECK(write(d.fd, "\4\0\0\0\0\0\0", 7) == 7);
    cmddone_close(&d);
    /* Life 3: the cut record and "d" go; life 4 with nothing new cuts nothing. */
    CHECK(cmddone_open(&d, done, o, l, err, sizeof err) == 0 && d.nwritten == 3);
    CHECK(cmddone_has(out, "head\na\nb\nc\n") && cmddone_has(log, "1\n2\n3\n"));
    struct stat st;
    CHECK(fstat(d.fd, &st) == 0 && st.st_size % CMDDONE_REC == 0);
    cmddone_close(&d);
    CHECK(cmddone_open(&d, done, o, l, err, sizeof err) == 0 && d.nwritten == 3);
    CHECK(cmddone_has(out, "head\na\nb\nc\n"));
    CHECK(cmddone_put(o, "e\n") == 0);
    cmddone_close(&d);
    /* Life 5 writes to another file and a pipe: neither is cut, and out
     * keeps "e" (a later life may have other owners of it). */
    int x = open(other, O_WRONLY | O_CREAT | O_APPEND, 0600);
    CHECK(x >= 0 && cmddone_put(x, "zzz\n") == 0 && pipe(p) == 0);
    CHECK(cmddone_open(&d, done, x, p[1], err, sizeof err) == 0 && d.nwritten == 3);
    CHECK(cmddone_has(other, "zzz\n") && cmddone_has(out, "head\na\nb\nc\ne\n"));
    CHECK(cmddone_note(&d, 5, 0) == 0);
    cmddone_close(&d);
    close(x);
    /* Life 6 on out again: the last life's notes were of other, so out is
     * not cut ("e" came after life 5's start, in another file's terms). */
    CHECK(cmddone_open(&d, done, o, l, err, sizeof err) == 0 && d.nwritten == 4);
    CHECK(cmddone_has(out, "head\na\nb\nc\ne\n"));
    cmddone_close(&d);
    /* A file that is no list of written commands: refused, not read. */
    int b = open(done, O_WRONLY | O_TRUNC);
    CHECK(b >= 0 && write(b, "\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32) == 32);
    close(b);
    CHECK(cmddone_open(&d, done, o, l, err, sizeof err) == -1 && strstr(err, "no stdout record"));
    CHECK(cmddone_has(out, "head\na\nb\nc\ne\n"));
    close(o);
    close(l);
    close(p[0]);
    close(p[1]);
    unlink(done), unlink(out), unlink(log), unlink(other), rmdir(dir);
    return 0;
fail:
    fprintf(stderr, "cmddone: err: %s\n", err);
    cmddone_close(&d);
    return -1;
}
#endif
