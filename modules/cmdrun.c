/*
 * cmdrun.c - runs one command and captures what it writes (see cmdrun.h).
 *
 * Both pipes are read with poll, so a command that fills its stderr pipe
 * while we wait on its stdout cannot deadlock. The command leads its own
 * process group: a time-out or an output over the cap kills the group,
 * so a shell's children go with it. Once the command itself has exited,
 * what its pipes hold is read and they are closed: a background process
 * it left holding them does not keep the task running (GNU parallel does
 * not wait for those either). While a halt file says "now" (--halt
 * now), the command is killed the same way.
 *
 * The pipes are close-on-exec, so a command spawned by another worker
 * thread at the same moment never holds this command's pipe open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmdfile.h"
#include "cmdrun.h"

extern char **environ;

/* The commands running now, for cmdrun_kill_all. */
#define CMDRUN_SLOTS 4096
static atomic_int cmdrun_live[CMDRUN_SLOTS];

static int cmdrun_register(pid_t pid)
{
    for (int i = 0; i < CMDRUN_SLOTS; i++) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&cmdrun_live[i], &expect, (int)pid))
            return i;
    }
    return -1;
}

void cmdrun_kill_all(void)
{
    for (int i = 0; i < CMDRUN_SLOTS; i++) {
        int pid = atomic_load(&cmdrun_live[i]);
        if (pid > 0)
            kill(-pid, SIGKILL);
    }
}

static double cmdrun_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends to a growing buffer; -1 when out of memory. */
static int cmdrun_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*cap - *len < n) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < n)
            c *= 2;
        char *b = realloc(*buf, c);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

/* Says something on the command's captured stderr. */
static void cmdrun_say(cmdrun_t *r, const char *fmt, const char *a, const char *b)
{
    char line[1024];
    int n = snprintf(line, sizeof line, fmt, a, b);
    if (n > 0)
        cmdrun_append(&r->err, &r->errlen, &r->errcap, line,
                      (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The environment (base's, else this process's) with PARALLEL_SEQ set
 * (NULL when out of memory). */
static char **cmdrun_env(char *const *base, uint64_t seq, char *seqvar, size_t seqlen)
{
    size_t n = 0;
    char *const *environ_in = base ? base : environ;
    while (environ_in[n])
        n++;
    char **env = malloc((n + 2) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ_in[i], "PARALLEL_SEQ=", 13) != 0)
            env[k++] = environ_in[i];
    snprintf(seqvar, seqlen, "PARALLEL_SEQ=%llu", (unsigned long long)seq);
    env[k++] = seqvar;
    env[k] = NULL;
    return env;
}

int cmdrun_halt_state(const char *haltfile)
{
    char c = 0;
    int fd = haltfile ? open(haltfile, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, &c, 1);
    close(fd);
    return n == 1 && c == 'n' ? 2 : 1;
}

static pid_t cmdrun_spawn(char *const *argv, const cmdrun_opts_t *o, int out, int err,
                          int *spawn_errno)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    char seqvar[40];
    pid_t pid = -1;
    char **env = cmdrun_env(o->env, o->seq, seqvar, sizeof seqvar);

    *spawn_errno = ENOMEM;
    if (!env)
        return -1;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out, 1);
    posix_spawn_file_actions_adddup2(&fa, err, 2);
    if (o->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
    /* Its own group, an empty mask and default dispositions: the TM's
     * worker threads block and ignore signals a command must not. */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                  POSIX_SPAWN_SETSIGDEF);
    *spawn_errno = posix_spawnp(&pid, argv[0], &fa, &at, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    return *spawn_errno ? -1 : pid;
}

/* Reads what fd has now into r's stdout (which 0) or stderr (1); closes
 * it at EOF (*fd = -1). Returns the bytes read, -1 when out of memory. */
static ssize_t cmdrun_read(cmdrun_t *r, int *fd, int which)
{
    char buf[65536];
    ssize_t got = 0, n;
    while ((n = read(*fd, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return got;
            break;                        /* an error ends it like EOF */
        }
        int rc = which ? cmdrun_append(&r->err, &r->errlen, &r->errcap, buf, (size_t)n)
                       : cmdrun_append(&r->out, &r->outlen, &r->outcap, buf, (size_t)n);
        if (rc)
            return -1;
        got += n;
        if (!which)
            r->received += (uint64_t)n;
        if (got >= (ssize_t)sizeof buf * 16)
            return got;                   /* let the caller check the cap */
    }
    close(*fd);
    *fd = -1;
    return got;
}

/* cmdrun_read, then with --line-buffer the complete lines go out live
 * (last: the command ended, all of it goes). -1 when out of memory. */
static ssize_t cmdrun_take(cmdrun_t *r, int *fd, int which, const cmdrun_opts_t *o)
{
    ssize_t got = *fd >= 0 ? cmdrun_read(r, fd, which) : 0;
    if (got >= 0 && o->live &&
        cmdlive_lines(o->live, which ? CMDLIVE_ERR : CMDLIVE_OUT, which ? r->err : r->out,
                      which ? &r->errlen : &r->outlen, *fd < 0) != 0)
        return -1;
    return got;
}

int cmdrun_exec(char *const *argv, const cmdrun_opts_t *o, cmdrun_t *r)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, serr = 0, ws = 0, reaped = 0;
    struct timespec now;

    memset(r, 0, sizeof *r);
    clock_gettime(CLOCK_REALTIME, &now);
    r->start = (double)now.tv_sec + now.tv_nsec / 1e9;
    double t0 = cmdrun_mono();
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
        cmdrun_say(r, "spits-parallel: cannot make a pipe: %s%s\n", strerror(errno), "");
        for (int i = 0; i < 2; i++) {
            if (po[i] >= 0) close(po[i]);
            if (pe[i] >= 0) close(pe[i]);
        }
        r->exitval = 255;
        r->flags = CMDRES_SPAWN;
        return -1;
    }
    pid_t pid = cmdrun_spawn(argv, o, po[1], pe[1], &serr);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        /* As a shell would say it: 127 not found, 126 not runnable; a
         * directory it cannot enter fails it (it never runs elsewhere). */
        if (o->cwd && serr != ENOMEM && access(o->cwd, X_OK) != 0) {
            char where[1200];
            snprintf(where, sizeof where, "%s on %s", o->cwd, o->host ? o->host : "this host");
            cmdrun_say(r, "spits-parallel: cannot run the command in %s: %s\n", where,
                       strerror(errno));
            serr = EACCES;
        } else {
            cmdrun_say(r, "spits-parallel: %s: %s\n", argv[0], strerror(serr));
        }
        r->exitval = serr == ENOENT ? 127 : 126;
        r->flags = CMDRES_SPAWN;
        r->runtime_ms = (uint32_t)((cmdrun_mono() - t0) * 1000);
        return serr == ENOMEM ? -1 : 0;
    }
    int slot = cmdrun_register(pid);
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    int fd[2] = {po[0], pe[0]}, rc = 0, killed = 0;
    /* A pidfd polls the command's exit with its pipes (else: 10 ms naps). */
#ifdef SYS_pidfd_open
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
    int pidfd = -1;
#endif
    double deadline = o->timeout > 0 ? t0 + o->timeout : 0, kill_at = 0;
    double halt_check = t0 + 0.1;

    while (fd[0] >= 0 || fd[1] >= 0 || !reaped) {
        double t = cmdrun_mono(), next = 0;
        if (deadline && !killed && t >= deadline) {
            kill(-pid, SIGTERM);
            r->flags |= CMDRES_TIMEOUT;
            killed = SIGTERM;
            kill_at = t + 1.0;            /* then SIGKILL, if still there */
        }
        if (o->haltfile && !killed && t >= halt_check) {
            halt_check = t + 0.1;
            if (cmdrun_halt_state(o->haltfile) == 2) {
                kill(-pid, SIGTERM);
                r->flags |= CMDRES_HALTED;
                killed = SIGTERM;
                kill_at = t + 1.0;
            }
        }
        if (kill_at && t >= kill_at) {
            kill(-pid, SIGKILL);
            kill_at = 0;
        }
        if (deadline && !killed)
            next = deadline;
        if (kill_at)
            next = kill_at;
        int ms = next ? (int)((next - t) * 1000) + 1 : -1;
        if (reaped && ms < 0)
            ms = 0;
        if (pidfd < 0 && fd[0] < 0 && fd[1] < 0 && (ms < 0 || ms > 10))
            ms = 10;                      /* only the exit to wait for */
        else if (ms < 0 || ms > 100)
            ms = 100;                     /* the halt file, the exit */
        struct pollfd pf[3] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}, {pidfd, POLLIN, 0}};
        int pn = poll(pf, 3, ms);
        if (pn < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++)
            if (fd[i] >= 0 && (reaped || (pn > 0 && pf[i].revents)) &&
                cmdrun_take(r, &fd[i], i, o) < 0) {
                rc = -1;
                r->flags |= CMDRES_CAP;
            }
        if (!(r->flags & CMDRES_CAP) && r->outlen + r->errlen > o->cap) {
            r->flags |= CMDRES_CAP;
        }
        if (r->flags & CMDRES_CAP) {
            /* Over the cap (or out of memory): nothing more is read. */
            if (killed != SIGKILL)
                kill(-pid, SIGKILL);
            killed = SIGKILL;
            kill_at = 0;
            for (int i = 0; i < 2; i++)
                if (fd[i] >= 0) {
                    close(fd[i]);
                    fd[i] = -1;
                }
        }
        if (!reaped && waitpid(pid, &ws, WNOHANG) == pid)
            reaped = 1;
        if (reaped) {
            /* What the pipes hold now is all that is read: a process it
             * left behind may keep them open. */
            for (int i = 0; i < 2; i++)
                if (fd[i] >= 0 && !(r->flags & CMDRES_CAP)) {
                    if (cmdrun_read(r, &fd[i], i) < 0)
                        rc = -1;
                    if (fd[i] >= 0) {
                        close(fd[i]);
                        fd[i] = -1;
                    }
                }
            break;
        }
    }
    /* --line-buffer: the lines left, and an unfinished last one, go out
     * now (what is said below stays in the result); a pipe still open (a
     * failed poll) is read no more, so the take sees the stream's end */
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0) {
            close(fd[i]);
            fd[i] = -1;
        }
    for (int i = 0; i < 2 && o->live; i++)
        if (cmdrun_take(r, &fd[i], i, o) < 0)
            rc = -1;
    if (!reaped) {
        kill(-pid, SIGKILL);
        waitpid(pid, &ws, 0);
    }
    if (pidfd >= 0)
        close(pidfd);
    if (slot >= 0)
        atomic_store(&cmdrun_live[slot], 0);
    r->runtime_ms = (uint32_t)((cmdrun_mono() - t0) * 1000);
    if (WIFSIGNALED(ws)) {
        r->exitval = 0;
        r->signal = WTERMSIG(ws);
    } else {
        r->exitval = WEXITSTATUS(ws);
    }
    if (r->flags & (CMDRES_TIMEOUT | CMDRES_CAP | CMDRES_HALTED))
        r->exitval = -1;                  /* GNU parallel's "killed" */
    if (r->flags & CMDRES_CAP) {
        r->signal = SIGKILL;
        if (r->outlen + r->errlen > o->cap) {
            /* Keep what fits; the reason goes at the end of stderr. */
            if (r->outlen > o->cap)
                r->outlen = (size_t)o->cap;
            if (r->errlen > o->cap - r->outlen)
                r->errlen = (size_t)(o->cap - r->outlen);
        }
        char capstr[32];
        snprintf(capstr, sizeof capstr, "%llu", (unsigned long long)o->cap);
        cmdrun_say(r, rc ? "spits-parallel: %s: out of memory capturing its output%s\n"
                         : "spits-parallel: %s: killed: its output passed the cap "
                           "of %s bytes (--output-cap)\n",
                   o->name ? o->name : argv[0], rc ? "" : capstr);
    } else if (r->flags & CMDRES_TIMEOUT && !r->signal) {
        r->signal = SIGTERM;
    }
    return rc;
}

void cmdrun_clear(cmdrun_t *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}
