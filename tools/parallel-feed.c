/*
 * parallel-feed.c - spits-parallel's task stream, written as the input
 * comes (see parallel-feed.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdfile.h"
#include "parallel-args.h"
#include "log.h"
#include "parallel-feed.h"

#define PFEED_BATCH (64u << 10)

/* The FIFO's write end while the feed has it open, and /dev/null to put
 * in its place (pfeed_cut). */
static atomic_int pfeed_fd = -1;
static int pfeed_null = -1;
/* pfeed_cut was called: a feed that opens the FIFO after it closes it
 * at once (each side stores, then loads the other's: one of them sees). */
static atomic_int pfeed_was_cut;

/* The next task's arguments into f->args: 1, 0 at the end, -1. */
static int pfeed_take(pfeed_t *f)
{
    const char *const *args;
    size_t nsrc = pinput_sources(f->in);
    long per = f->max_args > 0 ? f->max_args : 1, g;
    int rc = 1;
    pargs_list_reset(&f->args);
    for (g = 0; g < per && (rc = pinput_next(f->in, &args)) == 1; g++) {
        unsigned pos = 1;
        for (size_t i = 0; i < nsrc && f->max_args != 0; i++)
            /* a streamed line lasts until the next pinput_next: kept */
            if ((per > 1 ? pargs_list_add_copy : pargs_list_add)(&f->args, args[i], pos,
                                                                 f->colsep, &pos) != 0) {
                spits_error("out of memory composing command %llu",
                            (unsigned long long)f->seq);
                return -1;
            }
    }
    return rc < 0 ? -1 : g > 0;
}

int pfeed_skip(pfeed_t *f)
{
    int rc;
    if (f->pending)
        return 1;
    while ((rc = pfeed_take(f)) == 1 && f->seq < f->nskip && f->skip[f->seq])
        f->seq++;
    f->pending = rc == 1;
    return rc;
}

/* Composes the next task (after pfeed_skip said there is one) into c. */
static int pfeed_compose(pfeed_t *f, pcompose_task_t *c)
{
    f->pending = 0;
    if (pcompose_task_n(f->compose, f->args.v, f->args.pos, f->args.n, f->seq, c) != 0) {
        spits_error("out of memory composing command %llu", (unsigned long long)f->seq);
        return -1;
    }
    return 0;
}

int pfeed_print(pfeed_t *f, FILE *out)
{
    int rc;
    while ((rc = pfeed_skip(f)) == 1) {
        pcompose_task_t c;
        if (pfeed_compose(f, &c) != 0)
            return -1;
        char *line = cmdfile_slot_subst(c.display, 1);
        rc = !line || fprintf(out, "%s\n", line) < 0;
        free(line);
        pcompose_task_clear(&c);
        if (rc)
            return -1;
        f->seq++;
    }
    return rc;
}

static void *pfeed_main(void *arg)
{
    pfeed_t *f = arg;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc, fd;

    while ((fd = open(f->path, O_WRONLY | O_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (fd < 0) {
        spits_error("cannot open the task stream %s: %s", f->path, strerror(errno));
        f->rc = -1;
        return NULL;
    }
    atomic_store(&pfeed_fd, fd);
    if (atomic_load(&pfeed_was_cut) ||
        cmdfile_write_all(fd, CMDFILE_MAGIC, strlen(CMDFILE_MAGIC)) != 0)
        goto out;
    while ((rc = pfeed_skip(f)) == 1) {
        pcompose_task_t c;
        if (pfeed_compose(f, &c) != 0) {
            f->rc = -1;
            break;
        }
        rc = cmdfile_encode(&buf, &len, &cap, f->seq, c.tag, c.display, c.respath,
                            (const char *const *)c.argv, c.argc);
        pcompose_task_clear(&c);
        if (rc != 0) {
            spits_error("command %llu is too long or out of memory",
                        (unsigned long long)f->seq);
            f->rc = -1;
            break;
        }
        f->seq++;
        /* (before an input that may wait, nothing stays behind) */
        if (len >= PFEED_BATCH || !pinput_ready(f->in)) {
            if (cmdfile_write_all(fd, buf, len) != 0)
                goto out;
            len = 0;
        }
    }
    if (rc < 0)
        f->rc = -1;
    if (cap - len < 4) {
        char *b = realloc(buf, len + 4);
        if (!b)
            goto out;
        buf = b;
    }
    memset(buf + len, 0, 4);                  /* the end mark */
    len += 4;
    cmdfile_write_all(fd, buf, len);
out:
    atomic_store(&pfeed_fd, -1);
    close(fd);
    free(buf);
    return NULL;
}

void pfeed_main_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGCHLD);
}

int pfeed_start(pfeed_t *f)
{
    if (pfeed_null < 0 && (pfeed_null = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) {
        spits_error("cannot open /dev/null: %s", strerror(errno));
        return -1;
    }
    f->rc = 0;
    /* The thread starts with these blocked. SIGPIPE: a job manager gone
     * makes the write fail (EPIPE), and the feed ends. The main thread's
     * signals (pfeed_main_signals) are the main thread's alone: this
     * thread may wait in a read of the input for ever, and a SIGCHLD
     * taken here (ignored) would never reach the main thread's wait. */
    sigset_t mask, old;
    pfeed_main_signals(&mask);
    sigaddset(&mask, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &mask, &old);
    int err = pthread_create(&f->thread, NULL, pfeed_main, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        spits_error("cannot start the thread that feeds the tasks: %s", strerror(err));
        return -1;
    }
    return 0;
}

void pfeed_cut(void)
{
    atomic_store(&pfeed_was_cut, 1);
    int fd = atomic_load(&pfeed_fd);
    if (fd >= 0 && pfeed_null >= 0)
        dup2(pfeed_null, fd);
}

void pfeed_clear(pfeed_t *f)
{
    pargs_list_free(&f->args);
    f->pending = 0;
}
