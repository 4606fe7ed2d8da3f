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
    size_t n, nown;
    const char *path;             /* a file source, else NULL */
    unsigned char linked;         /* steps with the source before (:::+) */
    char *hdr;                    /* --header: its first value (owned) */
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
    int delim;                    /* a value's end: '\n', or '\0' (-0) */
    int header;                   /* each source's first value is a name */
};

pinput_t *pinput_new(void)
{
    pinput_t *in = calloc(1, sizeof *in);
    if (in) {
        in->fd = -1;
        in->delim = '\n';
    }
    return in;
}

void pinput_destroy(pinput_t **inp)
{
    pinput_t *in = *inp;
    if (!in)
        return;
    for (size_t i = 0; i < in->nsrc; i++) {
        for (size_t k = 0; k < in->src[i].nown; k++)
            free(in->src[i].own[k]);
        free(in->src[i].own);
        free(in->src[i].hdr);
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

int pinput_link(pinput_t *in)
{
    if (in->nsrc < 2)
        return -1;
    in->src[in->nsrc - 1].linked = 1;
    return 0;
}

void pinput_set_null(pinput_t *in)
{
    in->delim = '\0';
}

void pinput_set_header(pinput_t *in)
{
    in->header = 1;
}

const char *pinput_header(const pinput_t *in, size_t i)
{
    return i < in->nsrc ? in->src[i].hdr : NULL;
}

size_t pinput_sources(const pinput_t *in)
{
    return in->nsrc;
}

/* Reads all of path's lines (values ended by delim) into s. */
static int pin_read_all(pin_src_t *s, int delim)
{
    FILE *f = strcmp(s->path, "-") ? fopen(s->path, "r") : stdin;
    char *line = NULL;
    size_t cap = 0, have = 0;
    ssize_t n;
    if (!f) {
        spits_error("cannot read the input source %s: %s", s->path, strerror(errno));
        return -1;
    }
    while ((n = getdelim(&line, &cap, delim, f)) >= 0) {
        if (n > 0 && line[n - 1] == delim)
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
        s->nown++;
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

static int pin_line(pinput_t *in);

/* --header: each source's first value becomes its name (the first
 * source's first line is read here, waiting for it if need be). */
static int pin_header(pinput_t *in)
{
    for (size_t i = 0; i < in->nsrc; i++) {
        pin_src_t *s = &in->src[i];
        if (i == 0 && s->path) {
            int rc = pin_line(in);
            if (rc < 0)
                return -1;
            s->hdr = rc ? in->first : NULL;
            in->first = NULL;
            continue;
        }
        if (!s->n)
            continue;
        if (!(s->hdr = strdup(s->vals[0]))) {
            spits_error("out of memory");
            return -1;
        }
        s->vals++;
        s->n--;
    }
    return 0;
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
        if (in->src[i].path && pin_read_all(&in->src[i], in->delim) != 0)
            return -1;
    const char *path = in->src[0].path;
    if (path) {
        in->fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
        if (in->fd < 0) {
            spits_error("cannot read the input source %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return in->header ? pin_header(in) : 0;
}

/* The first source's next line into in->first: 1, 0 at its end, -1. */
static int pin_line(pinput_t *in)
{
    const char *path = in->src[0].path;
    for (;;) {
        /* (no buffer yet: nothing read, and memchr takes no NULL) */
        char *nl = in->len > in->off ? memchr(in->buf + in->off, in->delim, in->len - in->off) : NULL;
        if (nl || (in->eof && in->off < in->len)) {
            size_t n = nl ? (size_t)(nl - (in->buf + in->off)) : in->len - in->off;
            if (in->delim && memchr(in->buf + in->off, '\0', n)) {
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

/* The end of source h's group: h and the sources linked to it. */
static size_t pin_group_end(const pinput_t *in, size_t h)
{
    size_t e = h + 1;
    while (e < in->nsrc && in->src[e].linked)
        e++;
    return e;
}

/* The values of the group h..e-1: as many as its shortest has. */
static size_t pin_group_len(const pinput_t *in, size_t h, size_t e)
{
    size_t n = in->src[h].n;
    for (size_t i = h + 1; i < e; i++)
        if (in->src[i].n < n)
            n = in->src[i].n;
    return n;
}

/* The first source's next value (its index in first_i, which the
 * sources linked to it take too): 1, 0 at its group's end, -1. */
static int pin_first(pinput_t *in, int fresh)
{
    pin_src_t *s = &in->src[0];
    int rc;
    if (!fresh)
        in->first_i++;
    if (s->path ? (rc = pin_line(in)) <= 0 : (rc = in->first_i < s->n) == 0)
        return rc;
    for (size_t i = 1, e = pin_group_end(in, 0); i < e; i++) {
        if (in->first_i >= in->src[i].n)
            return 0;
        in->idx[i] = in->first_i;
    }
    return 1;
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
        /* the odometer: the last source fastest, a linked group as one */
        for (i = in->nsrc - 1; i > 0; i--) {
            if (in->src[i].linked)
                continue;
            size_t e = pin_group_end(in, i), k = i;
            size_t at = ++in->idx[i] < pin_group_len(in, i, e) ? in->idx[i] : 0;
            for (; k < e; k++)
                in->idx[k] = at;
            if (at)
                break;
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
        if (!in->src[i].linked && in->idx[i] + 1 < pin_group_len(in, i, pin_group_end(in, i)))
            return 1;
    return in->len > in->off && memchr(in->buf + in->off, in->delim, in->len - in->off);
}
