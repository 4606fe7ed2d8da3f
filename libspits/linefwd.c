/*
 * linefwd.c - other processes' lines to this program's stderr (see
 * linefwd.h). The thread reads only; every write goes through term.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linefwd.h"
#include "term.h"
#include "wake.h"

#define LINEFWD_LINE_MAX 4096         /* longer lines are written in pieces */

struct spits_linefwd {
    int fd, wake_fd;
    pthread_t thread;
    char buf[LINEFWD_LINE_MAX];
    size_t have;
    size_t plen;                      /* the prefix: out[0, plen) */
    char out[SPITS_LINEFWD_PREFIX_MAX + LINEFWD_LINE_MAX];
};

/* One line (or piece), after the prefix. */
static void linefwd_line(spits_linefwd_t *r, const char *line, size_t len)
{
    if (!r->plen) {
        spits_term_line(line, len);
        return;
    }
    memcpy(r->out + r->plen, line, len);
    spits_term_line(r->out, r->plen + len);
}

/* Writes every complete line in the buffer and keeps the rest; a full
 * buffer without a newline is written as it is. */
static void linefwd_emit(spits_linefwd_t *r)
{
    char *start = r->buf, *end = r->buf + r->have, *nl;
    while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
        linefwd_line(r, start, (size_t)(nl - start));
        start = nl + 1;
    }
    r->have = (size_t)(end - start);
    if (r->have == sizeof r->buf) {
        linefwd_line(r, r->buf, r->have);
        r->have = 0;
    }
    memmove(r->buf, start, r->have);
}

/* Reads what is there now: 0, or -1 at the end of the pipe (or an error). */
static int linefwd_read(spits_linefwd_t *r)
{
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->have, sizeof r->buf - r->have);
        if (n > 0) {
            r->have += (size_t)n;
            linefwd_emit(r);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && errno == EAGAIN ? 0 : -1;
    }
}

static void *linefwd_main(void *arg)
{
    spits_linefwd_t *r = arg;
    struct pollfd pf[2] = {{r->fd, POLLIN, 0}, {r->wake_fd, POLLIN, 0}};
    int open_pipe = 1;              /* a pollfd of -1 is skipped once closed */

    for (;;) {
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN)
            break;
        if (open_pipe && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
            linefwd_read(r) < 0) {
            open_pipe = 0;            /* every writer is gone: wait for stop */
            pf[0].fd = -1;
        }
    }
    if (open_pipe)
        linefwd_read(r);
    if (r->have)                      /* an unfinished line, finished here */
        linefwd_line(r, r->buf, r->have);
    r->have = 0;
    return NULL;
}

spits_linefwd_t *spits_linefwd_start(int fd, const char *prefix, char *err,
                                     size_t errlen)
{
    spits_linefwd_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory starting the line forwarder");
        return NULL;
    }
    r->fd = fd;
    r->plen = prefix ? strnlen(prefix, SPITS_LINEFWD_PREFIX_MAX) : 0;
    memcpy(r->out, prefix ? prefix : "", r->plen);
    r->wake_fd = spits_wake_open();
    if (r->wake_fd < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot forward lines from fd %d: %s", fd, strerror(errno));
        spits_wake_close(&r->wake_fd);
        free(r);
        return NULL;
    }
    if (pthread_create(&r->thread, NULL, linefwd_main, r) != 0) {
        snprintf(err, errlen, "cannot start the line forwarder thread");
        spits_wake_close(&r->wake_fd);
        free(r);
        return NULL;
    }
    return r;
}

void spits_linefwd_stop(spits_linefwd_t **rp)
{
    spits_linefwd_t *r = *rp;
    if (!r)
        return;
    spits_wake_signal(r->wake_fd);
    pthread_join(r->thread, NULL);
    spits_wake_close(&r->wake_fd);
    close(r->fd);
    free(r);
    *rp = NULL;
}
