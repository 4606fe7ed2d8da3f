/*
 * cmdstream.c - the command module's task list or task stream, read by
 * its job manager (see cmdstream.h). Built into cmd.so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmdfile.h"
#include "cmdstream.h"

#define CMDSTREAM_CHUNK (64u << 10)
#define CMDSTREAM_MAX_RECORD (1u << 30)

struct cmdstream {
    char *path;
    int mapped;                   /* a regular task file: f */
    cmdfile_t f;
    int fd;                       /* what is read now: the spool, then the FIFO */
    int from_spool;               /* fd is the spool being read again */
    int fifo_open;                /* the FIFO was opened (fd, or done with) */
    int spool;                    /* appended to, or -1 */
    int resumed;                  /* the spool was there: a past life's */
    char *buf;                    /* bytes read, not yet handed out */
    size_t off, len, cap;
    size_t magic;                 /* magic bytes checked so far */
    uint64_t records;
    int ended;                    /* the end mark was read */
};

cmdstream_t *cmdstream_new(const char *path, const char *spool, char *err, size_t errlen)
{
    struct stat st;
    cmdstream_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->fd = s->spool = -1;
    if (stat(path, &st) != 0 || !S_ISFIFO(st.st_mode)) {
        if (cmdfile_open(&s->f, path, err, errlen) != 0) {
            cmdstream_destroy(&s);
            return NULL;
        }
        s->mapped = 1;
        return s;
    }
    if (spool) {
        /* A spool already there is a past life's: read it again first. */
        s->spool = open(spool, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (s->spool < 0 && errno == EEXIST) {
            s->fd = open(spool, O_RDONLY | O_CLOEXEC);
            s->from_spool = s->resumed = s->fd >= 0;
            if (s->fd >= 0)
                s->spool = open(spool, O_WRONLY | O_APPEND | O_CLOEXEC);
        }
        if (s->spool < 0) {
            snprintf(err, errlen, "cannot open the task spool %s: %s", spool, strerror(errno));
            cmdstream_destroy(&s);
            return NULL;
        }
    }
    return s;
}

void cmdstream_destroy(cmdstream_t **sp)
{
    cmdstream_t *s = *sp;
    if (!s)
        return;
    if (s->mapped)
        cmdfile_close(&s->f);
    if (s->fd >= 0)
        close(s->fd);
    if (s->spool >= 0)
        close(s->spool);
    free(s->buf);
    free(s->path);
    free(s);
    *sp = NULL;
}

/* Opens the FIFO: blocking when this is a fresh job (its writer opens it
 * too), else without waiting for a writer that may be gone. */
static int cmdstream_open_fifo(cmdstream_t *s, char *err, size_t errlen)
{
    int resumed = s->resumed;
    s->fifo_open = 1;
    s->fd = open(s->path, O_RDONLY | O_CLOEXEC | (resumed ? O_NONBLOCK : 0));
    if (s->fd < 0) {
        snprintf(err, errlen, "cannot open the task stream %s: %s", s->path, strerror(errno));
        return -1;
    }
    if (resumed && fcntl(s->fd, F_SETFL, 0) != 0) {
        snprintf(err, errlen, "cannot read the task stream %s: %s", s->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Reads more bytes into buf (room for want more): 1, 0 at the end of
 * both the spool and the FIFO, -1 on an error. */
static int cmdstream_fill(cmdstream_t *s, size_t want, char *err, size_t errlen)
{
    if (s->off) {
        memmove(s->buf, s->buf + s->off, s->len - s->off);
        s->len -= s->off;
        s->off = 0;
    }
    if (want < CMDSTREAM_CHUNK)
        want = CMDSTREAM_CHUNK;
    if (s->cap - s->len < want) {
        char *b = realloc(s->buf, s->len + want);
        if (!b) {
            snprintf(err, errlen, "out of memory reading the task stream %s", s->path);
            return -1;
        }
        s->buf = b;
        s->cap = s->len + want;
    }
    for (;;) {
        if (s->fd < 0 && !s->fifo_open && cmdstream_open_fifo(s, err, errlen) != 0)
            return -1;
        if (s->fd < 0)
            return 0;
        ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "cannot read the task stream %s: %s", s->path, strerror(errno));
            return -1;
        }
        if (n == 0) {
            close(s->fd);
            s->fd = -1;
            s->from_spool = 0;
            continue;   /* the spool's end: on to the FIFO */
        }
        if (!s->from_spool && s->spool >= 0 &&
            cmdfile_write_all(s->spool, s->buf + s->len, (size_t)n) != 0) {
            snprintf(err, errlen, "cannot write the task spool of %s: %s", s->path,
                     strerror(errno));
            return -1;
        }
        s->len += (size_t)n;
        return 1;
    }
}

int cmdstream_next(cmdstream_t *s, const char **body, size_t *len, char *err, size_t errlen)
{
    size_t mlen = strlen(CMDFILE_MAGIC);
    if (s->mapped) {
        int rc = cmdfile_next(&s->f, body, len);
        if (rc < 0)
            snprintf(err, errlen, "the task file %s is cut short or damaged", s->path);
        return rc;
    }
    if (s->ended)
        return 0;
    for (;;) {
        size_t have = s->len - s->off;
        int rc;
        if (s->magic < mlen) {
            size_t n = have < mlen - s->magic ? have : mlen - s->magic;
            /* (n is 0 before the first read, when buf is still NULL) */
            if (n && memcmp(s->buf + s->off, CMDFILE_MAGIC + s->magic, n) != 0) {
                snprintf(err, errlen, "%s is not a task stream of spits-parallel", s->path);
                return -1;
            }
            s->magic += n;
            s->off += n;
            if (s->magic == mlen)
                continue;
        } else if (have >= 4) {
            const unsigned char *p = (const unsigned char *)s->buf + s->off;
            size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
                       (size_t)p[3] << 24;
            if (n == 0) {
                s->ended = 1;
                return 0;
            }
            if (n > CMDSTREAM_MAX_RECORD) {
                snprintf(err, errlen, "the task stream %s is damaged (a record of %zu bytes)",
                         s->path, n);
                return -1;
            }
            if (have - 4 >= n) {
                *body = s->buf + s->off + 4;
                *len = n;
                s->off += 4 + n;
                s->records++;
                return 1;
            }
            if ((rc = cmdstream_fill(s, 4 + n - have, err, errlen)) <= 0)
                goto short_read;
            continue;
        }
        if ((rc = cmdstream_fill(s, 0, err, errlen)) <= 0)
            goto short_read;
        continue;
short_read:
        if (rc == 0)
            snprintf(err, errlen, "the task stream %s ended without its end mark after "
                     "%llu task(s): spits-parallel, which writes it, is gone or stopped; "
                     "run it again for the rest (--resume with its --joblog skips what ran)",
                     s->path, (unsigned long long)s->records);
        return -1;
    }
}
