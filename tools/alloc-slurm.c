/*
 * alloc-slurm.c - the commands spits-alloc runs, and the check of the
 * options it passes on to sbatch (see alloc-slurm.h).
 *
 * Each runs as a child with a pipe for its output and a deadline: a
 * scheduler that hangs must not hang spits-alloc, which has jobs to
 * cancel. spits-alloc blocks SIGINT and SIGTERM to take them with
 * sigtimedwait; its children start with no signal blocked.
 */
#define _GNU_SOURCE             /* pipe2, strcasestr */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc-slurm.h"
#include "log.h"
#include "util.h"

/* The child's side: stdin from /dev/null, stdout and stderr to the pipe
 * (dup2 clears their close-on-exec), no signal blocked, then exec. Only
 * async-signal-safe calls: the parent blocked every signal across fork,
 * so nothing else runs here first. */
static void alloc_child(char *const argv[], int wfd, int with_stderr)
{
    sigset_t none;
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(wfd, 1) < 0 ||
        dup2(with_stderr ? wfd : null, 2) < 0)
        _exit(127);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(argv[0], argv);
    _exit(127);
}

/* Reads the child's output into out until it closes the pipe or the
 * deadline passes: 0, or -1 on the deadline (or a failed poll). *cut is
 * set when out could not hold it all. */
static int alloc_collect(int rfd, char *out, size_t outlen, int *cut, int64_t deadline)
{
    size_t len = 0;
    char sink[4096];
    *cut = 0;
    for (;;) {
        int64_t left = deadline - spits_now_ms();
        struct pollfd p = {rfd, POLLIN, 0};
        if (left <= 0)
            return -1;
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        /* What does not fit is read and dropped, so the child never
         * blocks on a full pipe. */
        char *dst = len + 1 < outlen ? out + len : sink;
        size_t room = len + 1 < outlen ? outlen - 1 - len : sizeof sink;
        ssize_t n = read(rfd, dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        if (dst != sink)
            len += (size_t)n;
        else
            *cut = 1;
        out[len] = '\0';
    }
}

/* Waits for the child until the deadline, then kills it: its status. */
static int alloc_reap(pid_t pid, int64_t deadline, int *late)
{
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, *late ? 0 : WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return 0;
        if (!*late && spits_now_ms() >= deadline) {
            kill(pid, SIGKILL);  /* it closed its output but hangs */
            *late = 1;
        } else if (!*late) {
            struct timespec ts = {0, 10 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

int alloc_run(char *const argv[], int with_stderr, char *out, size_t outlen,
              int *cut, int timeout_s)
{
    int fds[2], status = 0, dummy;
    sigset_t all, saved;

    out[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(out, outlen, "cannot make a pipe: %s", strerror(errno));
        return -1;
    }
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &saved);
    pid_t pid = fork();
    if (pid == 0)
        alloc_child(argv, fds[1], with_stderr);
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &saved, NULL);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        snprintf(out, outlen, "cannot start %s: %s", argv[0], strerror(fork_errno));
        return -1;
    }
    int64_t t0 = spits_now_ms(), deadline = t0 + timeout_s * 1000LL;
    int late = alloc_collect(fds[0], out, outlen, cut ? cut : &dummy, deadline);
    close(fds[0]);
    if (late)
        kill(pid, SIGKILL);
    status = alloc_reap(pid, deadline, &late);
    spits_debug("%s ... (%zu byte(s) out): %s after %lld ms", argv[0], strlen(out),
                late ? "killed" : WIFEXITED(status) ? "exited" : "died",
                (long long)(spits_now_ms() - t0));
    if (late)
        return 124;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !out[0]) {
        snprintf(out, outlen, "%s: not found on PATH, or it cannot run", argv[0]);
        return ALLOC_NOT_FOUND;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The first line of s, for a one-line message. */
static void alloc_first_line(const char *s, char *dst, size_t len)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    snprintf(dst, len, "%.*s", (int)strcspn(s, "\n"), s);
}

int alloc_squeue(const char *name, alloc_qjob_t *jobs, size_t max, char *err,
                 size_t errlen)
{
    static char out[4 << 20];      /* 100,000 jobs at 40 bytes a line */
    char line[256];
    char *argv[] = {"squeue", "-h", "-n", (char *)name, "-o", "%i %T", NULL};
    int cut = 0, rc = alloc_run(argv, 1, out, sizeof out, &cut, 30);
    if (rc == ALLOC_NOT_FOUND) {
        snprintf(err, errlen, "%s", out);
        return ALLOC_NOT_FOUND;
    }
    if (rc != 0 || cut) {
        alloc_first_line(out, line, sizeof line);
        snprintf(err, errlen, "squeue %s: %s", rc == 124 ? "took over 30 s"
                 : cut ? "printed more than it may" : "failed", line[0] ? line : "no message");
        return -1;
    }
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        long id;
        char state[64], *end;
        if (sscanf(l, "%63s %63s", line, state) != 2)
            continue;
        id = strtol(line, &end, 10);
        if (*end || id <= 0 || n == max)
            continue;      /* an array element (ID_N) is not one of ours */
        jobs[n].id = id;
        /* (SUSPENDED started once: it counts as running) */
        jobs[n].pending = strcmp(state, "PENDING") == 0 ||
                          strcmp(state, "REQUEUE_HOLD") == 0;
        n++;
    }
    return (int)n;
}

/* sbatch failures that can pass: the controller is unreachable or busy. */
static int alloc_transient(const char *msg)
{
    static const char *const words[] = {
        "unable to contact", "socket timed out", "temporarily", "try again",
        "communication", "connection refused", "timed out", "slurm_load",
        "not responding", "controller", "qos", "policy", "maxsubmit",
        "job limit"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasestr(msg, words[i]))
            return 1;
    return 0;
}

/* sbatch's options that spits-alloc cannot pass on, and why. */
static const struct {
    const char *name;         /* the long name, without "--" */
    char letter;              /* the short one, or 0 */
    const char *why;
} alloc_refused[] = {
    {"job-name", 'J', "spits-alloc names its jobs itself: it finds them in the queue "
                      "by that name"},
    {"array", 'a', "spits-alloc submits single jobs: it counts and cancels them one "
                   "job id at a time"},
    {"clusters", 'M', "spits-alloc's squeue and scancel see this cluster only: jobs "
                      "elsewhere would go unseen and be submitted again"},
    {"time", 't', "spits-alloc sets each job's time itself: give spits-alloc --time "
                  "MIN (before --)"},
    {"parsable", 0, "spits-alloc gives sbatch --parsable itself, to read the job id"},
    {"wait", 'W', "sbatch would not return until the job ends"},
    {"test-only", 0, "sbatch would submit nothing"},
    {"help", 'h', "sbatch would print its help and submit nothing"},
    {"usage", 'u', "sbatch would print its usage and submit nothing"},
    {"version", 'V', "sbatch would print its version and submit nothing"},
};

/* sbatch's short options that take a value (its getopt string): what
 * follows one in the same word is its value, not more options. A letter
 * not here is read as a flag, so that nothing bundled after it escapes. */
const char alloc_sbatch_valued[] = "AaBbCcDdeFGiJLMmNnopqStwx";

/* The refused option that a long option word ("--NAME[=VALUE]") may be
 * to sbatch, or -1. getopt_long takes any prefix of a name that is
 * unambiguous, so every prefix of a refused name is refused: none of them
 * is an sbatch option of its own (--time-min is no prefix of --time). */
static int alloc_refused_long(const char *word)
{
    size_t len = strcspn(word + 2, "=");
    for (size_t r = 0; len && r < sizeof alloc_refused / sizeof *alloc_refused; r++)
        if (strncmp(word + 2, alloc_refused[r].name, len) == 0)
            return (int)r;
    return -1;
}

/* The refused option among the letters of a short option word ("-HJx":
 * -H, then -J with value "x"), or -1; *valued is set when the word ends
 * with a letter whose value is the next word. */
static int alloc_refused_short(const char *word, int *valued)
{
    *valued = 0;
    for (const char *c = word + 1; *c; c++) {
        for (size_t r = 0; r < sizeof alloc_refused / sizeof *alloc_refused; r++)
            if (*c == alloc_refused[r].letter)
                return (int)r;
        if (strchr(alloc_sbatch_valued, *c)) {
            *valued = c[1] == '\0';
            break;
        }
    }
    return -1;
}

int alloc_sbatch_check(char *const args[], int nargs, char *err, size_t errlen)
{
    /* after "--NAME" (no '='), the next word may be its value */
    int maybe_value = 0, valued = 0;
    for (int i = 0; i < nargs; i++) {
        const char *w = args[i];
        int r = -1;
        if (valued) {               /* "-p cpu": the value, whatever it looks like */
            valued = 0;
            continue;
        }
        if (strcmp(w, "--") == 0) {
            snprintf(err, errlen, "drop the second '--': sbatch would take what follows "
                     "it (spits-alloc's own options) for the job script");
            return -1;
        }
        if (w[0] != '-' || w[1] == '\0') {
            if (maybe_value) {
                maybe_value = 0;
                continue;
            }
            snprintf(err, errlen, "'%s' is no sbatch option: sbatch would take it for "
                     "the job script (spits-alloc gives its own, see --script)", w);
            return -1;
        }
        if (w[1] == '-') {
            r = alloc_refused_long(w);
            maybe_value = !strchr(w, '=');
        } else {
            r = alloc_refused_short(w, &valued);
            maybe_value = 0;
        }
        if (r < 0)
            continue;
        size_t len = strcspn(w + 2, "=");
        if (w[1] == '-' && (len != strlen(alloc_refused[r].name) ||
                            strncmp(w + 2, alloc_refused[r].name, len) != 0))
            snprintf(err, errlen, "drop '%s' after --: sbatch may read it as --%s (it "
                     "takes abbreviations), and %s", w, alloc_refused[r].name,
                     alloc_refused[r].why);
        else if (w[1] == '-' || w[2] == '\0')
            snprintf(err, errlen, "drop '%s' after --: %s", w, alloc_refused[r].why);
        else
            snprintf(err, errlen, "drop '%s' after --: sbatch reads -%c (--%s) in it, "
                     "and %s", w, alloc_refused[r].letter, alloc_refused[r].name,
                     alloc_refused[r].why);
        return -1;
    }
    return 0;
}

char **alloc_sbatch_argv(const char *name, char *const pre[], int npre,
                        char *const args[], int nargs, int time_min, const char *script,
                        const char *jobdir, char bufs[2][256])
{
    char **argv = calloc((size_t)npre + (size_t)nargs + 8, sizeof *argv);
    int k = 0;

    if (!argv)
        return NULL;
    snprintf(bufs[0], 256, "--job-name=%s", name);
    snprintf(bufs[1], 256, "--time=%d", time_min);
    argv[k++] = "sbatch";
    argv[k++] = "--parsable";
    for (int i = 0; i < npre; i++)   /* first: the user's options override them */
        argv[k++] = pre[i];
    for (int i = 0; i < nargs; i++)
        argv[k++] = args[i];
    argv[k++] = bufs[0];    /* last: ours, whatever the options said */
    argv[k++] = bufs[1];
    argv[k++] = (char *)script;
    argv[k++] = (char *)jobdir;
    argv[k] = NULL;
    return argv;
}

long alloc_sbatch(const char *name, char *const pre[], int npre, char *const args[],
                  int nargs, int time_min, const char *script, const char *jobdir,
                  char *err, size_t errlen)
{
    char out[16384], line[512], bufs[2][256];
    char **argv = alloc_sbatch_argv(name, pre, npre, args, nargs, time_min, script,
                                    jobdir, bufs);

    if (!argv) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    int rc = alloc_run(argv, 1, out, sizeof out, NULL, 60);
    free(argv);

    /* --parsable: "ID" or "ID;CLUSTER" on a line of its own, perhaps
     * after warnings. */
    long id = 0;
    for (char *save = NULL, *l = rc == 0 ? strtok_r(out, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        char *end;
        long v = strtol(l, &end, 10);
        if (end != l && (*end == '\0' || *end == ';') && v > 0)
            id = v;
    }
    if (rc == 0 && id > 0)
        return id;
    if (rc == ALLOC_NOT_FOUND) {
        snprintf(err, errlen, "%s", out);
        return ALLOC_NOT_FOUND;
    }
    alloc_first_line(rc == 0 ? "no job id in its output" : out, line, sizeof line);
    snprintf(err, errlen, "%s", rc == 124 ? "sbatch took over 60 s" : line[0] ? line
                                                                             : "sbatch failed");
    /* A signal (Ctrl-C reaches the child too) is no refusal. */
    return rc == 124 || rc < 0 || rc == 0 || rc >= 128 || alloc_transient(out) ? 0 : -1;
}

int alloc_scancel(const long *ids, size_t n, char *err, size_t errlen)
{
    char out[4096], line[256];
    char **argv = calloc(n + 3, sizeof *argv);
    char *nums = malloc(n * 24 + 1);
    int rc = -1;

    if (argv && nums) {
        argv[0] = "scancel";
        argv[1] = "--state=PENDING";
        for (size_t i = 0; i < n; i++) {
            argv[i + 2] = nums + i * 24;
            snprintf(argv[i + 2], 24, "%ld", ids[i]);
        }
        rc = alloc_run(argv, 1, out, sizeof out, NULL, 30);
        alloc_first_line(out, line, sizeof line);
        if (rc != 0)
            snprintf(err, errlen, "scancel failed: %s", line[0] ? line : "no message");
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(argv);
    free(nums);
    return rc == 0 ? 0 : -1;
}
