/*
 * run-jobdir.c - spits-run and its job dir: what the JM's files there
 * say (jm.json written, a past run's report.json replaced, how many TMs
 * the JM has, asked of spits-status), the JM's crash file resolved to
 * source lines, the rule that stops a job whose TMs are all gone, and
 * what of a temporary job dir is kept at the end. spits-run.c, the top,
 * calls it; it calls nothing of spits-run.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash.h"
#include "jobdir.h"
#include "log.h"
#include "run.h"
#include "run-jobdir.h"
#include "util.h"

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

int rundir_has_report(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_REPORT_FILE);
    return access(path, F_OK) == 0;
}

/* The temporary job dir goes, unless --keep, or the job failed or a
 * process of it crashed: then what says why (report.json, crash files,
 * the journal to resume from) is kept, in one line. (A few tries: a
 * child's last file may still be on its way at the first.) */
void rundir_cleanup(run_t *r)
{
    if (!r->tmpdir[0])
        return;
    if (r->jm_crashed) {
        spits_error("the job manager died of SIG%s; job dir kept: %s "
                    "(spits-status --jobdir %s says where it crashed)",
                    sigabbrev_np(r->jm_crashed), r->tmpdir, r->tmpdir);
        return;
    }
    /* (a JM that failed before its job began, such as on a module it
     * could not load, leaves nothing to keep) */
    if (r->failed && !r->no_keep && rundir_has_report(r->tmpdir)) {
        spits_error("the job failed (exit status %d); job dir kept: %s "
                    "(its report.json%s; spits-status --jobdir %s)", r->failed,
                    r->tmpdir, r->tm_crashed ? " and crashes/" : "", r->tmpdir);
        return;
    }
    if (r->tm_crashed && !r->no_keep) {
        spits_warn("a task manager crashed; job dir kept: %s (its crash "
                   "report is in %s/crashes)", r->tmpdir, r->tmpdir);
        return;
    }
    if (r->keep) {
        spits_info("job dir kept: %s", r->tmpdir);
        return;
    }
    for (int i = 0; i < 5; i++) {
        if (nftw(r->tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ||
            access(r->tmpdir, F_OK) != 0)
            return;
        usleep(100000);
    }
    spits_warn("cannot remove the temporary job dir %s: %s", r->tmpdir,
               strerror(errno));
}

/* The JM crashed: its crash.json gets the source line (the JM's handler
 * could only write the module's offset). */
void rundir_resolve_crash(const run_t *r)
{
    char path[PATH_MAX], err[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", r->jobdir, SPITS_CRASH_FILE);
    json_t *doc = spits_crash_read(path, err, sizeof err);
    if (doc && spits_crash_resolve(doc) &&
        spits_json_write_atomic(path, doc, 0644, err, sizeof err) != 0)
        spits_warn("%s", err);
    json_decref(doc);
}

/* Waits until the JM has removed the run before's report.json (a new run
 * of the dir does that first), has exited, or a stop signal is pending;
 * at most a minute. The JM is not reaped here. */
void rundir_wait_replaced(run_t *r, const sigset_t *stops)
{
    for (int waited = 0; waited < 60000 && rundir_has_report(r->jobdir); waited += 10) {
        siginfo_t si = {0};
        sigset_t pending;
        if (waitid(P_PID, (id_t)r->jm, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == r->jm)
            return;
        sigpending(&pending);
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGCHLD && sigismember(stops, sig) == 1 &&
                sigismember(&pending, sig) == 1)
                return;
        usleep(10000);
    }
}

/* The JM has written jm.json, which it does once its signal handlers are
 * set (a stale one of an earlier run says so too early, as before). */
int rundir_jm_announced(const run_t *r)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/jm.json", r->jobdir ? r->jobdir : ".") >=
        (int)sizeof path)
        return 1;
    return access(path, F_OK) == 0;
}

/* How long the JM may outlive the last TM before it is stopped: a job
 * that ended tells its TMs to exit first, and exits itself soon after;
 * a TM started by hand joins within it. $SPITS_RUN_ORPHAN_S sets it (for
 * the tests, where a sanitizer's TM may take longer to join). */
#define RUN_ORPHAN_MS 3000

static int64_t orphan_ms(void)
{
    const char *e = getenv("SPITS_RUN_ORPHAN_S");
    double s;
    return e && spits_parse_seconds(e, 3600, &s) == 0 && s > 0 ? (int64_t)(s * 1000)
                                                               : RUN_ORPHAN_MS;
}

/* How many TMs the JM has, those that joined it from elsewhere too:
 * spits-status --json's tms_alive (at most 10 s to answer); -1 when it
 * cannot tell. Only asked once every local TM has gone. */
static long run_jm_tms(const run_t *r)
{
    char prog[PATH_MAX];
    int fd[2];
    size_t n = 0, cap = 4 << 20;
    char *buf;
    if (spits_find_beside("spits-run", "spits-status", "SPITS_STATUS", "tools", X_OK,
                          prog) != 0 || !(buf = malloc(cap)))
        return -1;
    if (pipe2(fd, O_CLOEXEC) != 0) {
        free(buf);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(fd[1], STDOUT_FILENO);
        if (null >= 0)
            dup2(null, STDERR_FILENO);
        execl(prog, prog, "--jobdir", r->jobdir, "--json", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    int64_t until = spits_now_ms() + 10000;
    while (pid > 0 && n < cap - 1) {
        struct pollfd pf = {fd[0], POLLIN, 0};
        int64_t left = until - spits_now_ms();
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            break;
        ssize_t k = read(fd[0], buf + n, cap - 1 - n);
        if (k <= 0 && !(k < 0 && errno == EINTR))
            break;
        n += k > 0 ? (size_t)k : 0;
    }
    close(fd[0]);
    buf[n] = '\0';
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    const char *t = strstr(buf, "\"tms_alive\"");
    long alive = -1;
    if (t && (t = strchr(t, ':')))
        alive = strtol(t + 1, NULL, 10);
    free(buf);
    return alive;
}

/* 1 once every TM has been gone (exited, some with status 0) for
 * orphan_ms() while the JM runs, has not written its report and has no
 * TM that joined from elsewhere: nothing would do the work left, so
 * the job is stopped, with one line saying what to do. *since holds when
 * the last one left (0: some still run). */
int rundir_orphaned(run_t *r, int64_t *since)
{
    for (long i = 0; i < r->tms; i++)
        if (r->tm[i] > 0) {
            *since = 0;
            return 0;
        }
    int64_t now = spits_now_ms();
    if (rundir_has_report(r->jobdir))
        return 0;                       /* the job ended: the JM is exiting */
    if (!*since)
        *since = now;
    if (now - *since < orphan_ms())
        return 0;
    if (run_jm_tms(r) > 0) {
        *since = spits_now_ms();        /* others joined it: they work on */
        return 0;
    }
    if (r->tmpdir[0])
        spits_error("every task manager has exited with work left; stopping the job "
                    "(with --jobdir DIR it could be resumed: spits-run --resume "
                    "--jobdir DIR)");
    else
        spits_error("every task manager has exited with work left; stopping the job: "
                    "resume it with spits-run --resume --jobdir %s (or start task "
                    "managers with spits-tm --jobdir %s)", r->jobdir, r->jobdir);
    return 1;
}
