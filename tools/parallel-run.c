/*
 * parallel-run.c - runs spits-parallel's job: the command line of
 * spits-run (or, with --jobdir, of spits-jm) with the command module,
 * the child that runs it and the signals that stop it (passed on, and
 * the commands halted through the module's halt file), --line-buffer's
 * channel, printed while the job runs, and the job's exit status, GNU
 * parallel's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmdlive.h"
#include "log.h"
#include "parallel.h"
#include "parallel-feed.h"
#include "parallel-run.h"
#include "util.h"

/* Halts the job's commands now: the workers read the halt file and kill
 * the ones they run, and the feed is cut. */
static void par_halt_now(const char *halt_file)
{
    int fd = open(halt_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    pfeed_cut();
    if (fd >= 0) {
        ssize_t w = write(fd, "now\n", 4);
        (void)w;
        close(fd);
    }
}

/* A signal that stops the job also halts its commands now: the workers
 * read the halt file (modules/cmd.c) and kill the commands they run,
 * which are in process groups of their own that a terminal's Ctrl-C
 * does not reach. The feed is cut (a job manager waiting for input
 * stops), and the signal goes on to spits-run (a Ctrl-C from the
 * terminal reached it already). */
static void par_stop(pid_t child, const char *halt_file, const siginfo_t *si)
{
    par_halt_now(halt_file);
    if (!(si->si_signo == SIGINT && si->si_code == SI_KERNEL))
        kill(child, si->si_signo);
}

/* In the child: SIGTERM when spits-parallel dies (kill -9 too), so the
 * job stops with it: spits-run and spits-jm stop their job on it. */
static void par_die_with_parent(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(128 + SIGTERM);
}

/* --line-buffer: prints what the line channel holds now (all of it, at
 * the end: then finish prints what is held too). A stdout closed early
 * (| head) halts the job quietly, as the job manager's SIGPIPE does
 * without --line-buffer; a damaged channel or another output error is
 * said once. The channel is still read, so that no worker waits on it. */
static void par_lines(par_t *p, int end)
{
    int rc;
    while ((rc = cmdlive_reader_read(&p->live, p->linesfd)) > 0)
        if (!end)
            break;                  /* (signals are looked at in between) */
    if (end)
        cmdlive_reader_finish(&p->live);
    if (rc >= 0 && p->live.failed && p->live.fail_errno == EPIPE) {
        if (!p->live_closed)
            par_halt_now(p->halt_path);
        p->live_closed = 1;
    } else if ((rc < 0 || p->live.failed) && !p->live_failed) {
        p->live_failed = 1;
        spits_error("cannot print the commands' lines (--line-buffer): %s",
                    strerror(p->live.failed ? p->live.fail_errno : errno));
    }
    if (rc < 0)
        p->live.inlen = 0;          /* (a damaged frame: what follows is lost) */
}

/* The next signal of wait (a SIGCHLD, or one that stops the job); with
 * --line-buffer, printing the line channel's lines until one comes. */
static int par_next_signal(par_t *p, const sigset_t *wait, int sfd, siginfo_t *si)
{
    if (sfd < 0)
        return sigwaitinfo(wait, si);
    for (;;) {
        struct signalfd_siginfo ss;
        struct pollfd pf[2] = {{sfd, POLLIN, 0}, {p->linesfd, POLLIN, 0}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            return -1;
        if (pf[1].revents)
            par_lines(p, 0);
        if (pf[0].revents && read(sfd, &ss, sizeof ss) == (ssize_t)sizeof ss) {
            memset(si, 0, sizeof *si);
            si->si_signo = (int)ss.ssi_signo;
            si->si_code = ss.ssi_code;
            return si->si_signo;
        }
    }
}

/* Runs argv and waits for it, passing on the signals that stop a job.
 * They are blocked in every thread (the feed's from its start) and
 * taken here, with the child's end, by sigwaitinfo (a signalfd with
 * --line-buffer, whose lines are printed meanwhile): no handler, and
 * none left pending behind a blocking call. */
int prun_run(par_t *p, char **argv)
{
    int ws, sfd = -1;
    sigset_t wait, old, pipe;
    pfeed_main_signals(&wait);
    pthread_sigmask(SIG_BLOCK, &wait, &old);
    /* --line-buffer: a closed stdout is an EPIPE to take (par_lines) */
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (p->lb)
        pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    if (p->lb && (sfd = signalfd(-1, &wait, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        spits_error("cannot wait for signals and lines at once: %s", strerror(errno));
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    pid_t self = getpid(), pid = fork();
    if (pid < 0) {
        spits_error("cannot start %s: %s", argv[0], strerror(errno));
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (sfd >= 0)
            close(sfd);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null > 0)
            dup2(null, STDIN_FILENO);   /* (stdin may be the feed's input) */
        sigprocmask(SIG_SETMASK, &old, NULL);
        par_die_with_parent(self);
        execv(argv[0], argv);
        fprintf(stderr, "spits-parallel: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int rc = 0;
    for (;;) {
        siginfo_t si;
        int sig = par_next_signal(p, &wait, sfd, &si);
        if (sig == SIGCHLD) {
            pid_t w = waitpid(pid, &ws, WNOHANG);
            if (w == pid)
                break;
            if (w < 0 && errno != EINTR) {
                rc = -1;
                break;
            }
        } else if (sig > 0) {
            par_stop(pid, p->halt_path, &si);
        }
    }
    if (sfd >= 0) {
        close(sfd);
        par_lines(p, 1);                /* (the task managers are gone) */
        while (sigtimedwait(&pipe, NULL, &(struct timespec){0, 0}) > 0)
            ;                           /* (taken as EPIPE) */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc < 0 ? -1 : WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* The command line of spits-run, or of spits-jm with --jobdir. */
int prun_command(par_t *p, char **a, char *prog, char *module, char *jobs, char *tms)
{
    int n = 0;
    if (p->jobdir) {
        if (spits_find_beside("spits-parallel", "spits-jm", "SPITS_JM", "jobmanager", X_OK, prog) != 0) {
            spits_error("cannot find spits-jm next to spits-parallel (set SPITS_JM)");
            return -1;
        }
    } else if (spits_find_beside("spits-parallel", "spits-run", "SPITS_RUN", "tools", X_OK, prog) != 0) {
        spits_error("cannot find spits-run next to spits-parallel (set SPITS_RUN)");
        return -1;
    }
    /* cmd.so: $SPITS_CMD_MODULE, the build tree's, the one installed
     * with this program (BINDIR/../lib/spits, a DESTDIR too), or the one
     * in the configured PKGLIBDIR. */
    if (spits_find_beside("spits-parallel", ".libs/cmd.so", "SPITS_CMD_MODULE", "modules", R_OK, module) != 0 &&
        spits_find_beside("spits-parallel", "cmd.so", NULL, "lib/spits", R_OK, module) != 0 &&
        (snprintf(module, PATH_MAX, "%s/cmd.so", SPITS_PKGLIBDIR), access(module, R_OK) != 0)) {
        spits_error("cannot find the command module cmd.so in %s (set SPITS_CMD_MODULE)",
                    SPITS_PKGLIBDIR);
        return -1;
    }
    a[n++] = prog;
    if (p->jobdir) {
        a[n++] = "--jobdir";
        a[n++] = p->dir;
        if (p->bind) {
            a[n++] = "--bind";
            a[n++] = (char *)p->bind;
        }
    } else {
        snprintf(jobs, 32, "%ld", p->jobs ? p->jobs : spits_online_cores());
        snprintf(tms, 32, "%ld", p->tms ? p->tms : 1);
        /* (with a resource request and no -j, a TM plans its own) */
        if (p->jobs || !(p->cpus_per_task || p->gpus_per_task || p->mem_per_task)) {
            a[n++] = "--workers";
            a[n++] = jobs;
        }
        a[n++] = "--tms";
        a[n++] = tms;
        /* (its temporary job dir goes at the end: nothing could resume) */
        a[n++] = "--journal";
        a[n++] = "off";
        a[n++] = "--no-keep";   /* (failed commands are ours to report) */
    }
    /* One copy at a time unless asked: a command may have effects (its
     * files) that a second copy running at once would spoil. */
    a[n++] = "--max-copies";
    a[n++] = (char *)(p->max_copies ? p->max_copies : "1");
    if (p->cpus_per_task) { a[n++] = "--cpus-per-task"; a[n++] = (char *)p->cpus_per_task; }
    if (p->gpus_per_task) { a[n++] = "--gpus-per-task"; a[n++] = (char *)p->gpus_per_task; }
    if (p->mem_per_task) { a[n++] = "--mem-per-task"; a[n++] = (char *)p->mem_per_task; }
    if (p->verbosity == 0)
        a[n++] = "-q";
    for (int v = 1; v < p->verbosity && v < 4; v++)
        a[n++] = "-v";
    a[n++] = "--";
    a[n++] = module;
    if (p->keep)
        a[n++] = "--keep-order";
    if (p->tag)
        a[n++] = "--tag";
    if (p->jobdir)
        a[n++] = "--spool";          /* (spits-jm --resume reads it again) */
    if (p->results) {
        a[n++] = "--results";
        a[n++] = p->results_abs;
    }
    if (p->joblog) {
        a[n++] = "--joblog";
        a[n++] = p->joblog_abs;
    }
    if (p->halt) {
        a[n++] = "--halt";
        a[n++] = (char *)p->halt;
    }
    if (p->timeout) {
        a[n++] = "--timeout";
        a[n++] = (char *)p->timeout;
    }
    if (p->cap) {
        a[n++] = "--output-cap";
        a[n++] = (char *)p->cap;
    }
    a[n++] = "--env-file";
    a[n++] = p->envfile;
    if (!p->jobdir)
        a[n++] = "--local";
    const char *const runs[][2] = {{"--retries", p->retries}, {"--delay", p->delay},
                                   {"--progress", p->progress}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++)
        if (runs[k][1]) {
            a[n++] = (char *)runs[k][0];
            a[n++] = (char *)runs[k][1];
        }
    if (p->slots)
        a[n++] = "--slots";
    if (p->lb)
        a[n++] = "--line-buffer";
    a[n++] = "--status";
    a[n++] = p->status;
    a[n++] = p->tasks;
    a[n] = NULL;
    return 0;
}

/* The exit status: the module's, when the job manager ended with the
 * value its committer wrote; anything else is an error. */
int prun_status(par_t *p, int rc)
{
    FILE *f = fopen(p->status, "r");
    int v = -1;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    if (v >= 0 && v == rc)
        return v;
    if (rc == 128 + SIGPIPE)
        return rc;                      /* stdout closed (| head): quietly */
    if (rc == 1 && !p->jobdir && v < 0)
        return PAR_ERROR;               /* spits-run's own error: it said why */
    if (rc == 128 + SIGINT || rc == 128 + SIGTERM || rc == 128 + SIGHUP)
        spits_error("the job was stopped by SIG%s", sigabbrev_np(rc - 128));
    else if (rc != 0)
        spits_error("the job did not end normally (status %d)%s", rc,
                    p->verbosity ? "" : "; -v says more");
    return PAR_ERROR;
}
