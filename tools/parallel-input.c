/*
 * parallel-input.c - spits-parallel's input sources, combined lazily
 * (see parallel-input.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "parallel-input.h"
#include "util.h"

#define PIN_CHUNK (64u << 10)

typedef struct {
    char *const *vals;            /* the values (owned: own) */
    char **own;
    size_t n;
    const char *path;             /* a file source, else NULL */
} pin_src_t;

struct pinput {
    pin_src_t *src;
    size_t nsrc;
    /* the first source, when it is a file: read as it is needed */
    int fd;
    char *buf;
    size_t off, len, cap;
    int eof;
    char *first;                  /* its current value */
    size_t first_i;               /* or the index of it, for values */
    size_t *idx;                  /* the other sources' odometer */
    const char **args;
    int started, again, done, last;
};

pinput_t *pinput_new(void)
{
    pinput_t *in = calloc(1, sizeof *in);
    if (in)
        in->fd = -1;
    return in;
}

void pinput_destroy(pinput_t **inp)
{
    pinput_t *in = *inp;
    if (!in)
        return;
    for (size_t i = 0; i < in->nsrc; i++) {
        for (size_t k = 0; in->src[i].own && k < in->src[i].n; k++)
            free(in->src[i].own[k]);
        free(in->src[i].own);
    }
    if (in->fd > 0)
        close(in->fd);
    free(in->src);
    free(in->buf);
    free(in->first);
    free(in->idx);
    free(in->args);
    free(in);
    *inp = NULL;
}

static pin_src_t *pin_add(pinput_t *in)
{
    pin_src_t *s = realloc(in->src, (in->nsrc + 1) * sizeof *s);
    if (!s)
        return NULL;
    in->src = s;
    memset(&s[in->nsrc], 0, sizeof *s);
    return &s[in->nsrc++];
}

int pinput_add_values(pinput_t *in, char *const *vals, size_t n)
{
    pin_src_t *s = pin_add(in);
    if (!s)
        return -1;
    s->vals = vals;
    s->n = n;
    return 0;
}

int pinput_add_file(pinput_t *in, const char *path)
{
    pin_src_t *s = pin_add(in);
    if (!s)
        return -1;
    s->path = path;
    return 0;
}

size_t pinput_sources(const pinput_t *in)
{
    return in->nsrc;
}

/* Reads all of path's lines into s. */
static int pin_read_all(pin_src_t *s)
{
    FILE *f = strcmp(s->path, "-") ? fopen(s->path, "r") : stdin;
    char *line = NULL;
    size_t cap = 0, have = 0;
    ssize_t n;
    if (!f) {
        spits_error("cannot read the input source %s: %s", s->path, strerror(errno));
        return -1;
    }
    while ((n = getline(&line, &cap, f)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        if (memchr(line, '\0', (size_t)n)) {
            spits_error("the input source %s has a NUL byte in an argument", s->path);
            goto fail;
        }
        if (spits_grow((void **)&s->own, &have, s->n + 1, sizeof *s->own, 16) != 0 ||
            !(s->own[s->n] = strdup(line))) {
            spits_error("out of memory reading %s", s->path);
            goto fail;
        }
        s->vals = s->own;
        s->n++;
    }
    if (ferror(f)) {
        spits_error("cannot read the input source %s: %s", s->path, strerror(errno));
        goto fail;
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return 0;
fail:
    free(line);
    if (f != stdin)
        fclose(f);
    return -1;
}

int pinput_open(pinput_t *in)
{
    if (!in->nsrc)
        return 0;
    if (!(in->idx = calloc(in->nsrc, sizeof *in->idx)) ||
        !(in->args = calloc(in->nsrc, sizeof *in->args))) {
        spits_error("out of memory");
        return -1;
    }
    for (size_t i = 1; i < in->nsrc; i++)
        if (in->src[i].path && pin_read_all(&in->src[i]) != 0)
            return -1;
    const char *path = in->src[0].path;
    if (path) {
        in->fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
        if (in->fd < 0) {
            spits_error("cannot read the input source %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* The first source's next line into in->first: 1, 0 at its end, -1. */
static int pin_line(pinput_t *in)
{
    const char *path = in->src[0].path;
    for (;;) {
        /* (no buffer yet: nothing read, and memchr takes no NULL) */
        char *nl = in->len > in->off ? memchr(in->buf + in->off, '\n', in->len - in->off) : NULL;
        if (nl || (in->eof && in->off < in->len)) {
            size_t n = nl ? (size_t)(nl - (in->buf + in->off)) : in->len - in->off;
            if (memchr(in->buf + in->off, '\0', n)) {
                spits_error("the input source %s has a NUL byte in an argument", path);
                return -1;
            }
            free(in->first);
            if (!(in->first = strndup(in->buf + in->off, n))) {
                spits_error("out of memory reading %s", path);
                return -1;
            }
            in->off += n + (nl != NULL);
            return 1;
        }
        if (in->eof)
            return 0;
        if (in->off) {
            memmove(in->buf, in->buf + in->off, in->len - in->off);
            in->len -= in->off;
            in->off = 0;
        }
        if (in->cap - in->len < PIN_CHUNK) {
            char *b = realloc(in->buf, in->cap + PIN_CHUNK);
            if (!b) {
                spits_error("out of memory reading %s", path);
                return -1;
            }
            in->buf = b;
            in->cap += PIN_CHUNK;
        }
        ssize_t r = read(in->fd, in->buf + in->len, in->cap - in->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            spits_error("cannot read the input source %s: %s", path, strerror(errno));
            return -1;
        }
        if (r == 0)
            in->eof = 1;
        in->len += (size_t)r;
    }
}

/* The first source's next value: 1, 0 at its end, -1. */
static int pin_first(pinput_t *in, int fresh)
{
    pin_src_t *s = &in->src[0];
    if (s->path)
        return pin_line(in);
    if (!fresh)
        in->first_i++;
    return in->first_i < s->n;
}

static int pin_next(pinput_t *in)
{
    size_t i;
    int rc;
    if (in->done || !in->nsrc)
        return 0;
    if (!in->started) {
        in->started = 1;
        for (i = 1; i < in->nsrc; i++)
            if (!in->src[i].n)
                return 0;          /* (an empty source: no combination) */
        if ((rc = pin_first(in, 1)) <= 0)
            return rc;
    } else {
        /* the odometer: the last source fastest */
        for (i = in->nsrc - 1; i > 0; i--) {
            if (++in->idx[i] < in->src[i].n)
                break;
            in->idx[i] = 0;
        }
        if (i == 0 && (rc = pin_first(in, 0)) <= 0)
            return rc;
    }
    in->args[0] = in->src[0].path ? in->first : in->src[0].vals[in->first_i];
    for (i = 1; i < in->nsrc; i++)
        in->args[i] = in->src[i].vals[in->idx[i]];
    return 1;
}

int pinput_next(pinput_t *in, const char *const **args)
{
    if (in->again)
        in->again = 0;
    else
        in->last = pin_next(in);
    if (in->last <= 0)
        in->done = 1;
    *args = in->args;
    return in->last;
}

void pinput_again(pinput_t *in)
{
    in->again = 1;
}

int pinput_ready(const pinput_t *in)
{
    if (in->again || in->done || !in->nsrc || !in->src[0].path || in->eof)
        return 1;
    for (size_t i = 1; in->started && i < in->nsrc; i++)
        if (in->idx[i] + 1 < in->src[i].n)
            return 1;
    return in->len > in->off && memchr(in->buf + in->off, '\n', in->len - in->off);
}
