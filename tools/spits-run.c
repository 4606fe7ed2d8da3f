/*
 * spits-run.c - one command for one machine: a JM plus local TMs.
 *
 *   spits-run [OPTIONS] MODULE [ARGS...]
 *   spits-run [OPTIONS] --resume --jobdir DIR [MODULE]
 *
 * Starts spits-jm in a job dir (a temporary one unless --jobdir is given)
 * bound to 127.0.0.1, and K spits-tm processes that join it through the
 * job dir. Its exit status is the JM's. The TMs are cleaned up on every
 * path: they die with this process (PR_SET_PDEATHSIG), Ctrl-C and SIGTERM
 * are handled, and a job whose TMs all failed is stopped rather than left
 * waiting forever.
 *
 * One writer owns the terminal: the JM. The TMs' stderr (and this
 * program's, while the JM runs) is a pipe the JM reads (--relay-fd), so
 * their lines reach the terminal through the JM's writer, which clears
 * and redraws its progress line around them. Once the JM has exited,
 * what is left in the pipe is copied here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash.h"
#include "jobdir.h"
#include "log.h"
#include "pyjob.h"
#include "run.h"
#include "run-jobdir.h"
#include "serial.h"
#include "util.h"

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-run [OPTIONS] MODULE [ARGS...]\n"
"  or:  spits-run [OPTIONS] --resume --jobdir DIR [MODULE]\n"
"  or:  spits-run --serial [--commit-errors fail|ignore] [--joblog FILE] MODULE [ARGS...]\n"
"Runs a SPITS job on this machine: a job manager and local task managers.\n"
"MODULE is a module's .so, or a job written in Python (JOB.py, whose\n"
"workers are processes: --isolate).\n"
"\n"
"Options:\n"
"  -n, --workers N        worker threads per task manager (one per online\n"
"                         core)\n"
"  -k, --tms K            task managers (1)\n"
"  -d, --jobdir DIR       job directory, kept afterwards (a temporary one,\n"
"                         removed at exit)\n"
"      --keep             keep the temporary job directory\n"
"      --no-keep          remove it even when the job failed (for a front end\n"
"                         that reports failures itself, as spits-parallel)\n"
"      --resume           continue the job in --jobdir DIR that was stopped\n"
"                         (a signal, a crash, an error): spits-jm --resume;\n"
"                         module and arguments come from its journal\n"
"      --module-changed   with --resume: the module was changed (fixed)\n"
"                         since the job started; keep its committed results\n"
"      --bind ENDPOINT    the job manager's endpoint (tcp://127.0.0.1:0)\n"
"      --max-copies N     passed to spits-jm\n"
"      --max-attempts N   passed to spits-jm\n"
"      --keep-going       passed to spits-jm (and used by --serial): tasks\n"
"                         that fail are listed, commit_job runs on the\n"
"                         other results, the exit status is 3\n"
"      --commit-errors fail|ignore  passed to spits-jm\n"
"      --progress-interval SEC  passed to spits-jm\n"
"      --joblog FILE      passed to spits-jm (with --serial, the same lines\n"
"                         are written here)\n"
"      --journal on|off   passed to spits-jm\n"
"      --cpus-per-task N  passed to spits-jm: cores each task needs\n"
"      --gpus-per-task N  passed to spits-jm: GPUs each task needs\n"
"      --mem-per-task SIZE  passed to spits-jm: memory each task needs\n"
"                         (each TM then runs as many workers as its cores,\n"
"                         GPUs and memory allow, unless --workers is given)\n"
"      --prefetch N       passed to spits-tm (raise it for tiny tasks)\n"
"      --isolate          passed to spits-tm: workers in their own processes\n"
"      --task-timeout SEC  passed to spits-tm (with --isolate)\n"
"      --serial           no job manager, task managers or job dir: run the\n"
"                         module in this process on one thread, each task\n"
"                         generated, run and committed in turn, then\n"
"                         commit_job (each phase so); for gdb and valgrind,\n"
"                         and to compare with a distributed run. No retries:\n"
"                         a failed task ends the job (exit status 3). What\n"
"                         the workers print goes to stderr, as a task\n"
"                         manager's does\n"
"  -v, --verbose          more logging\n"
"  -q, --quiet            errors only\n"
"  -h, --help             this help\n"
"  -V, --version          print the version\n"
"\n"
"Exit status:\n"
"  N   the job manager's (see spits-jm --help); 128+S when it was stopped\n"
"      by signal S; when every task manager failed, the last one's (a\n"
"      worker's exit(N): N, 128+S for a crash by signal S, as --serial)\n"
"  1   an error of its own: spits-jm or spits-tm not found or not\n"
"      started, no temporary job dir, every task manager exited\n"
"      with work left\n"
"  2   a usage error\n"
"A job that fails keeps its temporary job dir (its report, crash files and\n"
"journal), and spits-run says where it is.\n");
}

/* Runs argv with the signal mask; keep_fd (if >= 0) stays open across
 * exec, err_fd (if >= 0) becomes its stderr. The child's pid, or -1 after
 * saying why: a pid <= 0 must never reach kill(), where -1 means every
 * process of the user. */
static pid_t spawn(char **argv, const sigset_t *mask, int keep_fd, int err_fd)
{
    pid_t pid = fork();
    if (pid < 0)
        spits_error("cannot start %s: fork: %s", argv[0], strerror(errno));
    if (pid != 0)
        return pid;
    /* Die with spits-run, whatever kills it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    if (keep_fd >= 0)
        fcntl(keep_fd, F_SETFD, 0);
    if (err_fd >= 0)
        dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv);
    fprintf(stderr, "spits-run: error: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int status_of(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

/* After the JM (errpipe_end, which makes the read end non-blocking): copies
 * the complete lines the TMs wrote since to stderr (all of it, an
 * unfinished line too, when all is set). */
static void errpipe_drain(run_t *r, int all)
{
    ssize_t n;
    if (r->errpipe[1] >= 0)
        return;                       /* the JM still reads the pipe */
    while (r->errpipe[0] >= 0 &&
           (n = read(r->errpipe[0], r->left + r->nleft, sizeof r->left - r->nleft)) > 0) {
        r->nleft += (size_t)n;
        char *nl = memrchr(r->left, '\n', r->nleft);
        size_t upto = nl ? (size_t)(nl - r->left) + 1 : r->nleft == sizeof r->left ? r->nleft : 0;
        if (write(STDERR_FILENO, r->left, upto) < 0)
            upto = r->nleft;          /* stderr is gone: drop it */
        memmove(r->left, r->left + upto, r->nleft - upto);
        r->nleft -= upto;
    }
    if (all && r->nleft) {
        r->left[r->nleft] = '\n';
        if (write(STDERR_FILENO, r->left, r->nleft + 1) < 0)
            r->nleft = 0;
        r->nleft = 0;
    }
}

/* Signals every live TM, then waits for them up to ms. */
static void stop_tms(run_t *r, int sig, int ms)
{
    for (long i = 0; i < r->tms; i++)
        if (r->tm[i] > 0)
            kill(r->tm[i], sig);
    for (int waited = 0; waited <= ms; waited += 20) {
        int left = 0;
        for (long i = 0; i < r->tms; i++) {
            if (r->tm[i] <= 0)
                continue;
            int ws;
            if (waitpid(r->tm[i], &ws, WNOHANG) == r->tm[i])
                r->tm[i] = 0;
            else
                left++;
        }
        errpipe_drain(r, 0);          /* a TM blocked on a full pipe goes on */
        if (!left)
            return;
        usleep(20000);
    }
}

/* While the JM runs, this program's own lines go through its writer too:
 * stderr becomes the pipe. Returns the real stderr, kept aside (-1). */
static int errpipe_own_stderr(run_t *r)
{
    int saved;
    if (r->errpipe[1] < 0 || (saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)) < 0)
        return -1;
    dup2(r->errpipe[1], STDERR_FILENO);
    return saved;
}

/* The JM has exited: stderr is the real one again, this program holds no
 * write end (so the pipe ends with the last TM), and the read end, no
 * longer read by the JM, is emptied here. */
static void errpipe_end(run_t *r, int saved_err)
{
    if (saved_err >= 0) {
        dup2(saved_err, STDERR_FILENO);
        close(saved_err);
    }
    if (r->errpipe[1] >= 0)
        close(r->errpipe[1]);
    r->errpipe[1] = -1;
    if (r->errpipe[0] >= 0)
        fcntl(r->errpipe[0], F_SETFL, O_NONBLOCK);
    errpipe_drain(r, 0);
}

/* The signals that stop the job: every one whose default action would
 * end this program and that can be caught. */
static const int run_stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                       SIGUSR2, SIGPIPE, SIGALRM, SIGVTALRM,
                                       SIGPROF, SIGXCPU, SIGXFSZ};

/* 1 if the JM (its wait status ws) died of a signal this program did not
 * send it, other than SIGPIPE: a crash, the OOM killer. What is left of the job is in its job
 * dir then (crash.json, the journal), so a temporary one is kept. */
static int run_jm_crashed(int ws, int sent)
{
    /* SIGPIPE: its stdout was closed (| head), as for any filter */
    return WIFSIGNALED(ws) && WTERMSIG(ws) != SIGPIPE &&
           !(sent && (WTERMSIG(ws) == SIGINT || WTERMSIG(ws) == SIGTERM));
}

#define JM_ARGS_MAX (40 + 256)
#define TM_ARGS_MAX 24

/* spits-jm's command line; check: only check the options (the program
 * exits 0 or 2 at once, after one line naming a bad option). */
static void jm_args(run_t *r, char **jargv, int check, int argc, char **argv)
{
    int ja = 0;
    jargv[ja++] = r->jm_path;
    if (check)
        jargv[ja++] = "--check-options";
    if (r->resume)
        jargv[ja++] = "--resume";
    jargv[ja++] = "--jobdir";
    jargv[ja++] = (char *)(r->jobdir ? r->jobdir : ".");
    jargv[ja++] = "--bind";
    jargv[ja++] = (char *)r->bind;
    if (r->max_copies) { jargv[ja++] = "--max-copies"; jargv[ja++] = (char *)r->max_copies; }
    if (r->max_attempts) { jargv[ja++] = "--max-attempts"; jargv[ja++] = (char *)r->max_attempts; }
    if (r->keep_going) jargv[ja++] = "--keep-going";
    if (r->module_changed) jargv[ja++] = "--module-changed";
    if (r->commit_errors) { jargv[ja++] = "--commit-errors"; jargv[ja++] = (char *)r->commit_errors; }
    if (r->progress) { jargv[ja++] = "--progress-interval"; jargv[ja++] = (char *)r->progress; }
    if (r->joblog) { jargv[ja++] = "--joblog"; jargv[ja++] = (char *)r->joblog; }
    if (r->journal) { jargv[ja++] = "--journal"; jargv[ja++] = (char *)r->journal; }
    if (r->cpus_per_task) { jargv[ja++] = "--cpus-per-task"; jargv[ja++] = (char *)r->cpus_per_task; }
    if (r->gpus_per_task) { jargv[ja++] = "--gpus-per-task"; jargv[ja++] = (char *)r->gpus_per_task; }
    if (r->mem_per_task) { jargv[ja++] = "--mem-per-task"; jargv[ja++] = (char *)r->mem_per_task; }
    if (r->verbosity < 0) jargv[ja++] = "-q";
    for (int v = 0; v < r->verbosity && v < 3; v++) jargv[ja++] = "-v";
    if (!check && r->errpipe[0] >= 0) {
        snprintf(r->errpipe_arg, sizeof r->errpipe_arg, "%d", r->errpipe[0]);
        jargv[ja++] = "--relay-fd";
        jargv[ja++] = r->errpipe_arg;
    }
    if (optind < argc) {   /* (--resume: the module, if given, is checked) */
        jargv[ja++] = "--";
        for (int i = optind; i < argc; i++)
            jargv[ja++] = argv[i];
    }
    jargv[ja] = NULL;
}

/* spits-tm's command line (check: as for jm_args). */
static void tm_args(run_t *r, char **targv, int check)
{
    static char workers[32];
    int ta = 0;
    snprintf(workers, sizeof workers, "%ld", r->workers);
    targv[ta++] = r->tm_path;
    if (check)
        targv[ta++] = "--check-options";
    targv[ta++] = "--jobdir";
    targv[ta++] = (char *)(r->jobdir ? r->jobdir : ".");
    /* (with a resource request and no --workers, a TM plans its own) */
    if (r->workers_given || !(r->cpus_per_task || r->gpus_per_task || r->mem_per_task)) {
        targv[ta++] = "--workers";
        targv[ta++] = workers;
    }
    if (r->prefetch) { targv[ta++] = "--prefetch"; targv[ta++] = (char *)r->prefetch; }
    if (r->isolate) targv[ta++] = "--isolate";
    if (r->task_timeout) { targv[ta++] = "--task-timeout"; targv[ta++] = (char *)r->task_timeout; }
    if (r->verbosity < 0) targv[ta++] = "-q";
    for (int v = 0; v < r->verbosity && v < 3; v++) targv[ta++] = "-v";
    targv[ta] = NULL;
}

/* Runs a program in its --check-options mode: 0 if it takes its options,
 * 2 if it refused one (it said which), 1 if it could not check. */
static int options_check(char **argv)
{
    sigset_t now;
    int wstatus;
    sigprocmask(SIG_SETMASK, NULL, &now);
    pid_t pid = spawn(argv, &now, -1, -1);
    if (pid < 0 || waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus))
        return 1;
    return WEXITSTATUS(wstatus) == 0 ? 0 : WEXITSTATUS(wstatus) == 2 ? 2 : 1;
}

/* The long name of the option whose getopt value is c. */
static const char *run_option_name(const struct option *lo, int c)
{
    for (; lo->name; lo++)
        if (lo->val == c)
            return lo->name;
    return "?";
}

/* --serial: the options it takes checked, then serial.c. */
static int run_serial(const run_t *r, int argc, char **argv)
{
    if (r->not_serial)
        return spits_bad_option("--serial runs no job manager or task "
                                "manager, so --%s does not apply", r->not_serial);
    if (optind >= argc)
        return spits_bad_option("%s", "no MODULE given");
    if (r->commit_errors && strcmp(r->commit_errors, "fail") != 0 &&
        strcmp(r->commit_errors, "ignore") != 0)
        return spits_bad_option("--commit-errors wants fail or ignore, not '%s'",
                                r->commit_errors);
    spits_log_set_level(r->verbosity < 0 ? SPITS_LOG_ERROR
                        : r->verbosity > 0 ? SPITS_LOG_DEBUG : SPITS_LOG_INFO);
    return serial_run(argc - optind, (const char **)argv + optind,
                      r->commit_errors && strcmp(r->commit_errors, "ignore") == 0,
                      r->keep_going, r->joblog);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"workers", required_argument, NULL, 'n'},
        {"tms", required_argument, NULL, 'k'},
        {"jobdir", required_argument, NULL, 'd'},
        {"keep", no_argument, NULL, 'K'},
        {"no-keep", no_argument, NULL, 'N'},
        {"resume", no_argument, NULL, 'R'},
        {"bind", required_argument, NULL, 'b'},
        {"max-copies", required_argument, NULL, 'C'},
        {"max-attempts", required_argument, NULL, 'A'},
        {"keep-going", no_argument, NULL, 'g'},
        {"module-changed", no_argument, NULL, 'M'},
        {"commit-errors", required_argument, NULL, 'E'},
        {"progress-interval", required_argument, NULL, 'G'},
        {"joblog", required_argument, NULL, 'L'},
        {"journal", required_argument, NULL, 'J'},
        {"prefetch", required_argument, NULL, 'P'},
        {"cpus-per-task", required_argument, NULL, 'u'},
        {"gpus-per-task", required_argument, NULL, 'x'},
        {"mem-per-task", required_argument, NULL, 'y'},
        {"isolate", no_argument, NULL, 'I'},
        {"task-timeout", required_argument, NULL, 'T'},
        {"serial", no_argument, NULL, 'S'},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    run_t r;
    int c, status = 1;
    char endpoint_err[1200];
    sigset_t block, orig;

    memset(&r, 0, sizeof r);
    r.workers = spits_online_cores();
    r.tms = 1;
    r.bind = "tcp://127.0.0.1:0";
    r.errpipe[0] = r.errpipe[1] = -1;
    spits_log_init("spits-run", SPITS_LOG_INFO);
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:n:k:d:vqhV", longopts, NULL)) != -1) {
        if (strchr("nkdKRMbCAGPITuxy", c))
            r.not_serial = run_option_name(longopts, c);
        switch (c) {
        case 'n':
            if (spits_parse_long(optarg, 1, 4096, &r.workers))
                return spits_bad_option("--workers wants a number from 1 to 4096, not '%s'", optarg);
            r.workers_given = 1;
            break;
        case 'u': r.cpus_per_task = optarg; break;
        case 'x': r.gpus_per_task = optarg; break;
        case 'y': r.mem_per_task = optarg; break;
        case 'k':
            if (spits_parse_long(optarg, 1, MAX_TMS, &r.tms))
                return spits_bad_option("--tms wants a number from 1 to 1024, not '%s'", optarg);
            break;
        case 'd': r.jobdir = optarg; break;
        case 'K': r.keep = 1; break;
        case 'N': r.no_keep = 1; break;
        case 'R': r.resume = 1; break;
        case 'b':
            if (spits_endpoint_check(optarg, 1, endpoint_err, sizeof endpoint_err) != 0)
                return spits_bad_option("--bind %s", endpoint_err);
            r.bind = optarg;
            break;
        case 'C': r.max_copies = optarg; break;
        case 'A': r.max_attempts = optarg; break;
        case 'g': r.keep_going = 1; break;
        case 'M': r.module_changed = 1; break;
        case 'E': r.commit_errors = optarg; break;
        case 'G': r.progress = optarg; break;
        case 'L': r.joblog = optarg; break;
        case 'J': r.journal = optarg; break;
        case 'P': r.prefetch = optarg; break;
        case 'I': r.isolate = 1; break;
        case 'T': r.task_timeout = optarg; break;
        case 'S': r.serial = 1; break;
        case 'v': r.verbosity++; break;
        case 'q': r.verbosity = -1; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("spits-run %s\n", PACKAGE_VERSION); return 0;
        case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
        default: return spits_bad_option("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (r.serial)
        return run_serial(&r, argc, argv);
    if (r.resume && !r.jobdir)
        return spits_bad_option("%s", "--resume needs the job's --jobdir DIR");
    if (r.resume && argc - optind > 1)
        return spits_bad_option("%s", "--resume takes its module's arguments from "
                                "the journal: give at most MODULE");
    if (optind >= argc && !r.resume)
        return spits_bad_option("%s", "no MODULE given");
    /* A Python job's workers are processes: threads would take turns
     * on its interpreter's lock (pyjob.h). */
    if (optind < argc && spits_pyjob_is(argv[optind]))
        r.isolate = 1;
    if (r.resume && optind >= argc && r.jobdir) {
        static spits_announce_t was;   /* (big) */
        char e[512];
        if (spits_announce_read(r.jobdir, &was, e, sizeof e) == 0 &&
            spits_pyjob_is(was.module))
            r.isolate = 1;
    }
    if (r.task_timeout && !r.isolate)
        return spits_bad_option("%s", "--task-timeout needs --isolate");
    /* $SPITS_JM/$SPITS_TM, next to this program, or in the build tree. */
    if (spits_find_beside("spits-run", "spits-jm", "SPITS_JM", "jobmanager", X_OK, r.jm_path) != 0 ||
        spits_find_beside("spits-run", "spits-tm", "SPITS_TM", "taskmanager", X_OK, r.tm_path) != 0) {
        spits_error("cannot find spits-jm and spits-tm next to spits-run "
                    "(set SPITS_JM and SPITS_TM)");
        return 1;
    }
    if (argc - optind > 256) {
        spits_error("too many module arguments (at most 256)");
        return 2;
    }
    /* Options the JM or the TMs would refuse are refused before anything
     * starts: each program checks its own, so the rules and the messages
     * have one home. */
    {
        char *jcheck[JM_ARGS_MAX], *tcheck[TM_ARGS_MAX];
        jm_args(&r, jcheck, 1, argc, argv);
        tm_args(&r, tcheck, 1);
        int rc = options_check(jcheck);
        if (rc == 0)
            rc = options_check(tcheck);
        if (rc != 0)
            return rc;
    }
    if (!r.jobdir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(r.tmpdir, sizeof r.tmpdir, "%s/spits-run-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(r.tmpdir)) {
            spits_error("cannot make a temporary job dir in %s: %s",
                        tmp && *tmp ? tmp : "/tmp", strerror(errno));
            return 1;
        }
        r.jobdir = r.tmpdir;
    }

    /* Signals are taken synchronously below; children get the old mask.
     * A shell without job control starts background jobs with SIGINT
     * ignored; undo that, or Ctrl-C could never reach us or the JM. Every
     * signal whose default would kill this program stops the job instead,
     * so the job dir is never left behind by one it can catch. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    for (size_t i = 0; i < sizeof run_stop_signals / sizeof run_stop_signals[0]; i++)
        sigaddset(&block, run_stop_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &orig);

    /* Without the pipe, every process writes to stderr on its own. */
    if (pipe2(r.errpipe, O_CLOEXEC) != 0)
        r.errpipe[0] = r.errpipe[1] = -1;

    /* The JM: spits-jm --jobdir DIR --bind EP [knobs] MODULE ARGS... */
    char *jargv[JM_ARGS_MAX];
    int stale = r.jobdir != r.tmpdir && rundir_has_report(r.jobdir);
    jm_args(&r, jargv, 0, argc, argv);
    r.jm = spawn(jargv, &orig, r.errpipe[0], -1);
    if (r.jm < 0) {
        rundir_cleanup(&r);
        return 1;
    }
    /* A job dir that holds a finished run: TMs started now could read its
     * report before the JM replaces it, and leave. */
    if (stale)
        rundir_wait_replaced(&r, &block);

    char *targv[TM_ARGS_MAX];
    int signalled = 0, tms_failed = 0, gave_up = 0, waits_for_jm = 0, orphaned = 0;
    int64_t tms_gone_at = 0;
    int tm_failure = 1;     /* the last failed TM's status, as status_of */
    tm_args(&r, targv, 0);
    for (long i = 0; i < r.tms; i++)
        if ((r.tm[i] = spawn(targv, &orig, -1, r.errpipe[1])) < 0) {
            r.tm[i] = 0;
            tms_failed++;
        }
    int own_err = errpipe_own_stderr(&r);

    /* Wait for the JM, reaping TMs on the way. */
    for (;;) {
        struct timespec ts = {0, 200 * 1000000};
        siginfo_t si;
        int sig = sigtimedwait(&block, &si, &ts);
        if (sig > 0 && sig != SIGCHLD) {
            if (!signalled)
                spits_info("stopping the job (%s)", strsignal(sig));
            signalled = sig;
            /* Passed on naming its sender (0: the kernel), plus 1: when
             * it reached the whole process group (a terminal's Ctrl-C,
             * kill -INT -PGID), the JM got it too, and pairs the two
             * (jobmanager/stop.c), so one press is one. */
            union sigval from = {.sival_int = (si.si_code == SI_KERNEL ? 0 : (int)si.si_pid) + 1};
            sigqueue(r.jm, sig == SIGINT ? SIGINT : SIGTERM, from);
            stop_tms(&r, SIGTERM, 0);
        }
        int ws;
        pid_t pid;
        while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
            if (pid == r.jm) {
                status = status_of(ws);
                if (run_jm_crashed(ws, signalled || gave_up))
                    r.jm_crashed = WTERMSIG(ws);
                r.jm = 0;
                continue;
            }
            for (long i = 0; i < r.tms; i++)
                if (r.tm[i] == pid) {
                    r.tm[i] = 0;
                    if (status_of(ws) != 0) {
                        tms_failed++;
                        tm_failure = status_of(ws);
                    }
                    if (WIFSIGNALED(ws) && WTERMSIG(ws) != SIGTERM &&
                        WTERMSIG(ws) != SIGKILL)
                        r.tm_crashed = 1;
                }
        }
        if (!r.jm)
            break;
        /* (once the JM has announced itself: a SIGTERM before it set its
         * handlers would end it with no report; 30 s at most) */
        if (tms_failed == r.tms && !signalled && !gave_up &&
            (rundir_jm_announced(&r) || ++waits_for_jm > 150)) {
            spits_error("every task manager failed; stopping the job");
            kill(r.jm, SIGTERM);
            gave_up = 1;
        }
        if (!signalled && !gave_up && rundir_orphaned(&r, &tms_gone_at)) {
            kill(r.jm, SIGTERM);
            gave_up = orphaned = 1;
        }
    }
    errpipe_end(&r, own_err);
    /* The JM told the TMs to exit; make sure they did. */
    stop_tms(&r, SIGTERM, 3000);
    stop_tms(&r, SIGKILL, 1000);
    errpipe_drain(&r, 1);
    if (r.jm_crashed)
        rundir_resolve_crash(&r);
    /* Stopped as asked: the status says by which signal (the JM was sent
     * SIGINT or SIGTERM for it). */
    int stopped = status == 0 || status == 128 + SIGINT || status == 128 + SIGTERM;
    int final = status;
    if (signalled && stopped)
        final = 128 + signalled;
    else if (tms_failed == r.tms && stopped)
        /* stopped by us, for want of TMs: a failure, with the status the
         * last TM ended with (a worker's exit(5), a crash's 128+SIGSEGV),
         * as --serial ends with it; 1 if none started */
        final = tm_failure;
    else if (orphaned && stopped)
        final = 1;    /* every TM exited with work left */
    /* (a job stopped as asked failed nobody: its dir goes) */
    if (status != 0 && !signalled &&
        (gave_up || (status != 128 + SIGINT && status != 128 + SIGTERM)))
        r.failed = final;
    rundir_cleanup(&r);
    return final;
}
