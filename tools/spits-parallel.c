/*
 * spits-parallel.c - GNU parallel's core syntax on top of spits.
 *
 *   spits-parallel [OPTIONS] COMMAND ::: ARG... [::: ARG...] [:::: FILE...]
 *
 * Builds the tasks (one command line each: parallel-compose.c) from the
 * input sources, in GNU parallel's order (the last source varies
 * fastest: parallel-input.c), as the input comes, writes them to a task
 * stream, a FIFO in the job dir that the command module's job manager
 * reads (parallel-feed.c, modules/cmdstream.h), and runs the
 * command module (cmd.so) on it: with spits-run (a job manager and local
 * task managers), or, with --jobdir, spits-jm alone, for task managers
 * that join from Slurm or by hand. The module's committer writes the
 * outputs, the joblog and --results; the exit status is GNU parallel's.
 *
 * --resume and --resume-failed read the joblog here: the tasks they skip
 * are left out of the task stream, the others keep their numbers.
 *
 * --line-buffer: the workers write each command's lines as they come to
 * a second FIFO in the job dir (cmdlive.h), which the main thread reads
 * and prints while it waits for the job (par_run); the results carry no
 * output then. The FIFO joins only this machine's task managers, so
 * --jobdir (task managers from anywhere) refuses it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmdenv.h"
#include "cmdfile.h"
#include "cmdlive.h"
#include "jobdir.h"
#include "resources.h"
#include "log.h"
#include "parallel-args.h"
#include "parallel-compose.h"
#include "parallel-feed.h"
#include "parallel-input.h"
#include "util.h"

#define PAR_ERROR 255              /* GNU parallel's "other error" */
/* The largest --output-cap: a result (its header, the output and a line
 * about the cap) fits the job manager's largest task (1 GiB). */
#define PAR_CAP_MAX ((1L << 30) - 4096)
#define PAR_CAP_MAX_S "1073737728"
#define PAR_JOBLOG_HEADER "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

typedef struct {
    char **vals;
    size_t n, cap;
    const char *path;             /* a file's lines (read by parallel-input.c) */
    unsigned char linked;         /* :::+ : steps with the source before */
} par_source_t;

typedef struct {
    int keep, tag, quote, resume, resume_failed, dry_run, verbosity;
    const char *joblog, *results, *halt, *timeout, *jobdir, *bind, *max_copies, *cap;
    const char *cpus_per_task, *gpus_per_task, *mem_per_task;   /* to spits-jm */
    long jobs, tms;
    const char *argfiles[64];
    size_t nargfiles;
    char **words;                 /* the command */
    size_t nwords;
    par_source_t *src;
    size_t nsrc;
    unsigned char *skip;          /* --resume*: by task number */
    size_t nskip;
    char dir[PATH_MAX];           /* where the task file goes */
    int tmpdir;                   /* dir is ours, removed at the end */
    char tasks[PATH_MAX], status[PATH_MAX], halt_path[PATH_MAX];
    char joblog_abs[PATH_MAX], results_abs[PATH_MAX];
    pid_t child;
    /* the task stream: its feed thread owns these once started */
    pinput_t *in;
    pcompose_t compose;
    pfeed_t feed;
    int feeding;                  /* the feed thread was started */
    const char *envnames[64];     /* --env: what the job carries (all) */
    size_t nenv;
    const char *workdir;          /* --workdir: where commands run (.) */
    char envfile[PATH_MAX];
    int reaper;                   /* the pipe that keeps the reaper waiting */
    long max_args;                /* -N: tuples per command; -1: one, unset */
    int null;                     /* -0: records end with NUL, not newline */
    int stdin_left;               /* stdin sources still to read (:::: - -) */
    const char *colsep, *header, *retries, *delay;
    int slots;                    /* the command has {%} */
    const char *progress;         /* --bar, --eta, --progress: "bar"... */
    regex_t colsep_re;
    char **names;                 /* --header: position names */
    size_t nnames;
    char **hwords;                /* --header: the words, {NAME} as {N} */
    int lb;                       /* --line-buffer */
    char lines[PATH_MAX];         /* --line-buffer: its FIFO (cmdlive.h) */
    int linesfd;                  /* its read end (the main thread's), or -1 */
    cmdlive_reader_t live;        /* the main thread's */
    int live_failed;              /* the channel failed: said, status 255 */
    int live_closed;              /* stdout was closed (| head): status 141 */
} par_t;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-parallel [OPTIONS] COMMAND [::: ARG...]... [:::: FILE...]...\n"
"Runs COMMAND once for each argument, or each combination of arguments of\n"
"several input sources (the last varies fastest), as a SPITS job: GNU\n"
"parallel's syntax, run by spits-run here, or by task managers that join\n"
"from elsewhere (--jobdir).\n"
"\n"
"Input sources: ::: ARG... (arguments), :::: FILE... (one argument a line,\n"
"each file a source; - is stdin), -a FILE; with none, lines from stdin.\n"
":::+ and ::::+ link a source to the one before: they step together (as\n"
"long as the shorter). Replacement strings in COMMAND: {} the argument(s),\n"
"{.} without extension, {/} basename, {//} dirname, {/.} basename without\n"
"extension, {#} the task number, {%%} the job slot (1 to -j: no two running\n"
"commands share one), {N} {N.} {N/} {N//} {N/.} of the N-th argument\n"
"(nothing past the last), {0} as {}, {NAME} with --header. Without any,\n"
"the arguments are appended. The command line runs in a shell, its\n"
"arguments quoted, as with GNU parallel (plain command lines run without).\n"
"Not here (refused, naming the option): {= =}, {+...}, --pipe, -X and\n"
"GNU parallel's other options.\n"
"\n"
"  -k, --keep-order       outputs in argument order (else as commands end)\n"
"  -j, --jobs N           commands at once per local task manager (one per\n"
"                         online core); with --jobdir, the TMs' own --workers\n"
"      --tag              prefix each output line with the arguments and a tab\n"
"      --line-buffer, --lb  print each line a command writes as it is\n"
"                         written (whole lines; with -k the oldest\n"
"                         command's, the others' when theirs is next); not\n"
"                         with --jobdir, --results or --max-copies above 1\n"
"      --joblog FILE      one line per command, GNU parallel's format (-:\n"
"                         stdout)\n"
"      --resume           with --joblog: skip the commands it has\n"
"      --resume-failed    with --joblog: skip the commands it has as\n"
"                         succeeded; run the failed and unrun ones again\n"
"      --results DIR      write DIR/1/ARG.../{stdout,stderr,seq} instead of\n"
"                         printing the outputs\n"
"      --halt now|soon,fail=N  stop after N failed commands: now kills the\n"
"                         running ones, soon lets them end (never); a\n"
"                         command a worker had already taken may still start\n"
"      --timeout SEC      kill a command (its process group) after SEC seconds\n"
"      --output-cap BYTES stdout plus stderr kept per command (67108864); a\n"
"                         command writing more is killed and fails\n"
"  -q, --quote            COMMAND's words are literal, not shell code\n"
"      --dry-run          print the command lines, run nothing\n"
"  -a, --arg-file FILE    an input source: FILE's lines\n"
"  -N, --max-args N       N arguments (of each source) per command, {1}..{N};\n"
"                         -n is the same; -N0: the command once per argument,\n"
"                         without it\n"
"      --colsep REGEX     split each argument into columns {1} {2}... at\n"
"                         REGEX (POSIX extended; \\t \\s \\d \\w as in Perl),\n"
"                         white space trimmed at their ends\n"
"  -0, --null             input lines end with a NUL byte, not a newline\n"
"      --header :         each source's first argument (its columns with\n"
"                         --colsep) names it: {NAME}, and --results paths\n"
"      --retries N        run a failing command up to N times in all (the\n"
"                         last run is the one written)\n"
"      --delay SEC        start commands at least SEC apart (per task manager)\n"
"      --bar, --eta, --progress  the commands done, on stderr: redrawn in\n"
"                         place on a terminal, else a line every 10 s at\n"
"                         most and one at the end (not GNU's format)\n"
"      --tms K            local task managers (1)\n"
"      --jobdir DIR       run the job manager only, in DIR; task managers join\n"
"                         with spits-tm --jobdir DIR (or Slurm: spits-alloc)\n"
"      --bind ENDPOINT    with --jobdir: the job manager's endpoint (tcp://*:0)\n"
"      --env NAME         carry only these variables (repeatable) to the\n"
"                         commands, on every task manager; without it, the\n"
"                         whole environment is carried (as sbatch's\n"
"                         --export=ALL)\n"
"      --workdir, --wd DIR  run the commands in DIR (this directory); where\n"
"                         a task manager's host lacks it, they fail there\n"
"      --max-copies N     concurrent copies of one command (1; passed to\n"
"                         spits-jm): 2 or more lets idle workers run another\n"
"                         copy of a late command (the first result counts),\n"
"                         only for commands that may run twice at once\n"
"      --cpus-per-task N  cores each command needs (passed to spits-jm): each\n"
"                         task manager runs as many at once as its cores\n"
"                         allow, each on cores of its own, OMP_NUM_THREADS=N\n"
"      --gpus-per-task N  GPUs each command needs: it sees its own in\n"
"                         CUDA_VISIBLE_DEVICES (or ROCm's) and SPITS_GPUS\n"
"      --mem-per-task SIZE  memory each command needs (512M, 4G)\n"
"      --will-cite        accepted (GNU parallel's), does nothing\n"
"  -v, --verbose          the job manager's progress and messages\n"
"  -h, --help             this help\n"
"  -V, --version          print the version\n"
"\n"
"Exit status:\n"
"  0        every command succeeded\n"
"  1-100    that many commands failed\n"
"  101      more than 100 commands failed\n"
"  N        with --halt ...,fail=1: the failed command's exit value\n"
"  255      any other error (a bad option: one line saying why)\n");
}

/* A usage error: one line, status 255 (GNU parallel's). */
static int par_bad(const char *fmt, const char *arg)
{
    spits_bad_option(fmt, arg);
    return PAR_ERROR;
}

static int par_add(par_source_t *s, char *v)
{
    if (!v || spits_grow((void **)&s->vals, &s->cap, s->n + 1, sizeof *s->vals, 16) != 0) {
        free(v);
        return -1;
    }
    s->vals[s->n++] = v;
    return 0;
}

static par_source_t *par_new_source(par_t *p)
{
    par_source_t *s = realloc(p->src, (p->nsrc + 1) * sizeof *s);
    if (!s)
        return NULL;
    p->src = s;
    memset(&s[p->nsrc], 0, sizeof *s);
    return &s[p->nsrc++];
}

/* A new source: path's lines ("-": stdin), read as the job runs. */
static int par_read_file(par_t *p, const char *path)
{
    par_source_t *s = par_new_source(p);
    if (!s) {
        spits_error("out of memory reading %s", path);
        return -1;
    }
    s->path = path;
    if (!strcmp(path, "-") && --p->stdin_left > 0) {
        /* stdin again later (:::: - -): this one takes one value now */
        char *line = NULL;
        size_t cap = 0;
        int delim = p->null ? '\0' : '\n';
        ssize_t n = getdelim(&line, &cap, delim, stdin);
        s->path = NULL;
        if (n > 0 && line[n - 1] == delim)
            line[--n] = '\0';
        if (n >= 0 && memchr(line, '\0', (size_t)n)) {
            spits_error("the input source %s has a NUL byte in an argument", path);
            free(line);
            return -1;
        }
        if (n >= 0 && par_add(s, line) != 0) {
            spits_error("out of memory reading %s", path);
            return -1;
        }
        if (n < 0)
            free(line);
    }
    return 0;
}

/* The joblog's verdicts for --resume (any line) or --resume-failed (a
 * line with exit value and signal 0): which task numbers to skip. */
static int par_read_joblog(par_t *p)
{
    FILE *f = fopen(p->joblog, "r");
    char *line = NULL;
    size_t cap = 0;
    if (!f)
        return errno == ENOENT ? 0 : -1;
    while (getline(&line, &cap, f) >= 0) {
        char *fld[9], *save = NULL, *t = line;
        int nf = 0;
        for (char *tok; nf < 9 && (tok = strsep(&t, "\t")); save = tok)
            fld[nf++] = tok;
        (void)save;
        long seq;
        if (nf < 9 || spits_parse_long(fld[0], 1, LONG_MAX, &seq) != 0)
            continue;                   /* the header, or a damaged line */
        if (p->resume_failed && !(strcmp(fld[6], "0") == 0 && strcmp(fld[7], "0") == 0))
            continue;
        if ((size_t)seq >= p->nskip) {
            size_t n = p->nskip ? p->nskip : 1024;
            while (n <= (size_t)seq)
                n *= 2;
            unsigned char *s = realloc(p->skip, n);
            if (!s)
                break;
            memset(s + p->nskip, 0, n - p->nskip);
            p->skip = s;
            p->nskip = n;
        }
        p->skip[seq] = 1;
    }
    free(line);
    fclose(f);
    return 0;
}

/* The shell GNU parallel would use: $PARALLEL_SHELL, the shell this was
 * started from, $SHELL, /bin/sh. */
static const char *par_shell(void)
{
    static char parent[PATH_MAX];
    const char *s = getenv("PARALLEL_SHELL");
    char link[64];
    if (s && *s)
        return s;
    snprintf(link, sizeof link, "/proc/%d/exe", (int)getppid());
    ssize_t n = readlink(link, parent, sizeof parent - 1);
    if (n > 0) {
        parent[n] = '\0';
        const char *base = strrchr(parent, '/');
        base = base ? base + 1 : parent;
        if (strlen(base) >= 2 && !strcmp(base + strlen(base) - 2, "sh"))
            return parent;
    }
    s = getenv("SHELL");
    return s && *s ? s : "/bin/sh";
}

/* --header: each source's first value (its columns, with --colsep)
 * names its position(s), and is no argument; the command's {NAME}
 * become {N}. */
static int par_header(par_t *p, const pinput_t *in)
{
    pargs_list_t l = {0};
    unsigned pos = 1;
    for (size_t i = 0; i < p->nsrc; i++) {
        const char *h = pinput_header(in, i);
        if (!h)
            continue;
        if (pargs_list_add(&l, h, pos, p->colsep ? &p->colsep_re : NULL, &pos) != 0)
            goto oom;
        for (size_t k = 0; k < l.n; k++, p->nnames++) {
            char **nn = realloc(p->names, (p->nnames + 1) * sizeof *nn);
            if (!nn)
                goto oom;
            p->names = nn;
            if (!(p->names[p->nnames] = strdup(l.v[k])))
                goto oom;
        }
        pargs_list_reset(&l);
    }
    pargs_list_free(&l);
    if (pargs_header_words(p->words, p->nwords, (const char *const *)p->names, p->nnames,
                           &p->hwords) != 0)
        goto oom;
    return 0;
oom:
    pargs_list_free(&l);
    spits_error("out of memory reading the --header line");
    return -1;
}

/* The input sources, opened, and the tasks' composition, for the feed:
 * every -N group of combinations of the sources, less the skipped. */
static int par_input(par_t *p, pinput_t **in, pcompose_t *t, pfeed_t *f)
{
    if (!(*in = pinput_new())) {
        spits_error("out of memory");
        return -1;
    }
    if (p->null)
        pinput_set_null(*in);
    if (p->header)
        pinput_set_header(*in);
    for (size_t i = 0; i < p->nsrc; i++) {
        par_source_t *s = &p->src[i];
        if ((s->path ? pinput_add_file(*in, s->path)
                     : pinput_add_values(*in, s->vals, s->n)) != 0) {
            spits_error("out of memory");
            return -1;
        }
        if (s->linked)
            pinput_link(*in);
    }
    if (pinput_open(*in) != 0 || (p->header && par_header(p, *in) != 0))
        return -1;
    size_t most = p->colsep ? 2 : p->nsrc * (size_t)(p->max_args > 0 ? p->max_args : 1);
    pcompose_init(t, p->hwords ? p->hwords : p->words, p->nwords, most, par_shell(), p->quote);
    t->names = (const char *const *)p->names;
    t->nnames = p->nnames;
    t->context = p->max_args >= 0;
    memset(f, 0, sizeof *f);
    f->in = *in;
    f->compose = t;
    f->skip = p->skip;
    f->nskip = p->nskip;
    f->seq = 1;
    f->path = p->tasks;
    f->max_args = p->max_args;
    f->colsep = p->colsep ? &p->colsep_re : NULL;
    return 0;
}

/* path made absolute (the job manager may run elsewhere); the file or
 * directory must exist. */
static int par_absolute(const char *path, char *out)
{
    if (!realpath(path, out)) {
        spits_error("cannot resolve %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int par_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

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

/* --line-buffer's FIFO, held open for reading (and writing: it never
 * reads as ended while no worker has it open) for the job's life. */
static int par_lines_open(par_t *p)
{
    snprintf(p->lines, sizeof p->lines, "%s%s", p->tasks, CMDLIVE_SUFFIX);
    if ((unlink(p->lines) != 0 && errno != ENOENT) || mkfifo(p->lines, 0600) != 0 ||
        (p->linesfd = open(p->lines, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
        spits_error("cannot make the line channel %s: %s", p->lines, strerror(errno));
        return -1;
    }
    if (cmdlive_reader_init(&p->live, p->keep, STDOUT_FILENO, STDERR_FILENO) != 0) {
        spits_error("%s", "out of memory");
        return -1;
    }
    return 0;
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
static int par_run(par_t *p, char **argv)
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

/* What word w is: 0 an argument, 1 :::, 2 ::::, 3 :::+, 4 ::::+. */
static int par_sep(const char *w)
{
    static const char *const seps[] = {":::", "::::", ":::+", "::::+"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(w, seps[k]))
            return k + 1;
    return 0;
}

/* How many input sources read stdin (-a -, :::: -): GNU parallel gives
 * each but the last one line of it, the last the rest. */
static void par_count_stdin(par_t *p, int argc, char **argv, int i)
{
    int files = 0;
    p->stdin_left = 0;
    for (size_t k = 0; k < p->nargfiles; k++)
        p->stdin_left += !strcmp(p->argfiles[k], "-");
    for (; i < argc; i++) {
        int sep = par_sep(argv[i]);
        files = sep ? sep % 2 == 0 : files;
        p->stdin_left += !sep && files && !strcmp(argv[i], "-");
    }
}

static int par_ends(const char *s, const char *end)
{
    size_t n = strlen(s), e = strlen(end);
    return n >= e && !strcmp(s + n - e, end);
}

/* --env NAME (env set) and --workdir DIR. */
static int par_where_option(par_t *p, int env, const char *arg)
{
    if (!env) {
        if (!*arg)
            return par_bad("%s", "--workdir wants a directory, not ''");
        p->workdir = arg;
        return 0;
    }
    if (!*arg || strchr(arg, '='))
        return par_bad("--env wants a variable's name, not '%s'", arg);
    if (p->nenv == sizeof p->envnames / sizeof p->envnames[0])
        return par_bad("too many --env names (at most 64), at '%s'", arg);
    p->envnames[p->nenv++] = arg;
    return 0;
}

/* The option getopt stopped at, as typed: --name (without =VALUE), or
 * -C for a short one (arg, the word it is in, may hold several). */
static const char *par_option_name(const char *arg, int opt)
{
    static char name[64];
    if (!strncmp(arg, "--", 2))
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(name, sizeof name, "-%c", opt > 32 && opt < 127 ? opt : '?');
    return name;
}

enum { O_PAR_COLSEP = 512, O_PAR_HEADER, O_PAR_RETRIES, O_PAR_DELAY, O_PAR_BAR,
       O_PAR_ETA, O_PAR_PROGRESS, O_PAR_LB };

/* The options of GNU parallel's input and retries (-N, -0, --colsep,
 * --header, --retries, --delay); 0, or -1 after saying why. */
static int par_more_options(par_t *p, int c, const char *arg)
{
    double d;
    char err[256];
    switch (c) {
    case 'N': case 'n':
        if (spits_parse_long(arg, 0, 1000000, &p->max_args))
            return par_bad("-N wants a number of arguments from 0 to 1000000, not '%s'", arg),
                   -1;
        break;
    case '0': p->null = 1; break;
    case O_PAR_BAR: p->progress = "bar"; break;
    case O_PAR_ETA: p->progress = "eta"; break;
    case O_PAR_PROGRESS: p->progress = "progress"; break;
    case O_PAR_LB: p->lb = 1; break;
    case O_PAR_COLSEP:
        if (p->colsep)
            regfree(&p->colsep_re);
        p->colsep = NULL;
        if (pargs_colsep_compile(&p->colsep_re, arg, err, sizeof err) != 0) {
            char msg[512];
            snprintf(msg, sizeof msg, "--colsep '%s' is not a regular expression here: %s",
                     arg, err);
            return par_bad("%s", msg), -1;
        }
        p->colsep = arg;
        break;
    case O_PAR_HEADER:
        if (strcmp(arg, ":") && strcmp(arg, ".*\\n"))
            return par_bad("--header takes ':' (the first line, or argument, of each "
                           "source names it) here, not '%s'", arg), -1;
        p->header = arg;
        break;
    case O_PAR_RETRIES:
        if (spits_parse_long(arg, 0, 1000000, &(long){0}))
            return par_bad("--retries wants a number of tries from 0 to 1000000, not '%s'",
                           arg), -1;
        p->retries = arg;
        break;
    case O_PAR_DELAY:
        if (spits_parse_seconds(arg, 1e6, &d) || d < 0)
            return par_bad("--delay wants a number of seconds, not '%s'", arg), -1;
        p->delay = arg;
        break;
    }
    return 0;
}

/* What --line-buffer cannot go with, and why; NULL: nothing. */
static const char *par_lb_conflict(const par_t *p)
{
    if (p->jobdir)
        return "--jobdir: its lines reach this machine's task managers only, and with "
               "--jobdir they may join from anywhere";
    if (p->results)
        return "--results: the outputs go to its files, not to the terminal";
    if (p->max_copies && strcmp(p->max_copies, "1"))
        return "--max-copies above 1: each copy's lines would be printed";
    return NULL;
}

static int par_options(par_t *p, int argc, char **argv)
{
    enum { O_JOBLOG = 256, O_RESULTS, O_RESUME, O_RESUME_FAILED, O_HALT, O_TIMEOUT,
           O_TAG, O_TMS, O_JOBDIR, O_BIND, O_MAX_COPIES, O_CAP, O_DRY, O_CITE,
           O_CPUS_PER_TASK, O_GPUS_PER_TASK, O_MEM_PER_TASK };
    enum { O_ENV = 400, O_WORKDIR };
    static const struct option longopts[] = {
        {"keep-order", no_argument, NULL, 'k'},
        {"jobs", required_argument, NULL, 'j'},
        {"joblog", required_argument, NULL, O_JOBLOG},
        {"results", required_argument, NULL, O_RESULTS},
        {"res", required_argument, NULL, O_RESULTS},
        {"resume", no_argument, NULL, O_RESUME},
        {"resume-failed", no_argument, NULL, O_RESUME_FAILED},
        {"halt", required_argument, NULL, O_HALT},
        {"halt-on-error", required_argument, NULL, O_HALT},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"tag", no_argument, NULL, O_TAG},
        {"arg-file", required_argument, NULL, 'a'},
        {"quote", no_argument, NULL, 'q'},
        {"dry-run", no_argument, NULL, O_DRY},
        {"tms", required_argument, NULL, O_TMS},
        {"jobdir", required_argument, NULL, O_JOBDIR},
        {"bind", required_argument, NULL, O_BIND},
        {"max-copies", required_argument, NULL, O_MAX_COPIES},
        {"cpus-per-task", required_argument, NULL, O_CPUS_PER_TASK},
        {"gpus-per-task", required_argument, NULL, O_GPUS_PER_TASK},
        {"mem-per-task", required_argument, NULL, O_MEM_PER_TASK},
        {"output-cap", required_argument, NULL, O_CAP},
        {"will-cite", no_argument, NULL, O_CITE},
        {"env", required_argument, NULL, O_ENV},
        {"workdir", required_argument, NULL, O_WORKDIR},
        {"wd", required_argument, NULL, O_WORKDIR},
        {"max-args", required_argument, NULL, 'N'},
        {"max-replace-args", required_argument, NULL, 'N'},
        {"null", no_argument, NULL, '0'},
        {"colsep", required_argument, NULL, O_PAR_COLSEP},
        {"header", required_argument, NULL, O_PAR_HEADER},
        {"retries", required_argument, NULL, O_PAR_RETRIES},
        {"delay", required_argument, NULL, O_PAR_DELAY},
        {"bar", no_argument, NULL, O_PAR_BAR},
        {"eta", no_argument, NULL, O_PAR_ETA},
        {"progress", no_argument, NULL, O_PAR_PROGRESS},
        {"line-buffer", no_argument, NULL, O_PAR_LB},
        {"lb", no_argument, NULL, O_PAR_LB},
        {"linebuffer", no_argument, NULL, O_PAR_LB},
        {"line-buffered", no_argument, NULL, O_PAR_LB},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    static char halt[64];
    int c;
    long v;
    double d;
    opterr = 0;
    p->max_args = -1;
    int at = 1;
    while ((at = optind, c = getopt_long(argc, argv, "+:kj:a:qvhVN:n:0", longopts, NULL)) != -1) {
        if (par_more_options(p, c, optarg) != 0)
            return PAR_ERROR;
        switch (c) {
        case 'k': p->keep = 1; break;
        case 'j':
            if (spits_parse_long(optarg, 1, 4096, &p->jobs))
                return par_bad("--jobs wants a number from 1 to 4096, not '%s'", optarg);
            break;
        case O_JOBLOG: p->joblog = optarg; break;
        case O_RESULTS: p->results = optarg; break;
        case O_RESUME: p->resume = 1; break;
        case O_RESUME_FAILED: p->resume_failed = 1; break;
        case O_HALT: {
            /* never, 0, 1 (soon,fail=1), 2 (now,fail=1), now|soon,fail=N */
            const char *h = optarg;
            if (!strcmp(h, "never") || !strcmp(h, "0")) {
                p->halt = NULL;
                break;
            }
            if (!strcmp(h, "1") || !strcmp(h, "2")) {
                snprintf(halt, sizeof halt, "%s,fail=1", h[0] == '1' ? "soon" : "now");
            } else {
                const char *n = !strncmp(h, "now,fail=", 9) ? h + 9
                              : !strncmp(h, "soon,fail=", 10) ? h + 10 : NULL;
                if (!n || spits_parse_long(n, 1, 1000000000, &v))
                    return par_bad("--halt wants never, now,fail=N or soon,fail=N "
                                   "(N a number of commands), not '%s'", h);
                snprintf(halt, sizeof halt, "%s", h);
            }
            p->halt = halt;
            break;
        }
        case O_TIMEOUT:
            if (spits_parse_seconds(optarg, 1e9, &d) || !(d > 0))
                return par_bad("--timeout wants a number of seconds over 0, not '%s'", optarg);
            p->timeout = optarg;
            break;
        case O_TAG: p->tag = 1; break;
        case 'a':
            if (p->nargfiles == sizeof p->argfiles / sizeof p->argfiles[0])
                return par_bad("too many -a files (at most 64), at '%s'", optarg);
            p->argfiles[p->nargfiles++] = optarg;
            break;
        case 'q': p->quote = 1; break;
        case O_DRY: p->dry_run = 1; break;
        case O_CITE: break;             /* GNU parallel's; nothing to do */
        case O_TMS:
            if (spits_parse_long(optarg, 1, 1024, &p->tms))
                return par_bad("--tms wants a number from 1 to 1024, not '%s'", optarg);
            break;
        case O_JOBDIR: p->jobdir = optarg; break;
        case O_BIND: p->bind = optarg; break;
        case O_MAX_COPIES:
            if (spits_parse_long(optarg, 1, 8, &v))
                return par_bad("--max-copies wants a number from 1 to 8, not '%s'", optarg);
            p->max_copies = optarg;
            break;
        case O_CPUS_PER_TASK:
        case O_GPUS_PER_TASK:
        case O_MEM_PER_TASK: {
            char err[256];
            int n;
            uint64_t m;
            if (c == O_MEM_PER_TASK
                ? spits_res_parse_size("--mem-per-task", optarg, &m, err, sizeof err)
                : spits_res_parse_count(c == O_CPUS_PER_TASK ? "--cpus-per-task"
                                        : "--gpus-per-task", optarg,
                                        c == O_CPUS_PER_TASK ? SPITS_RES_CPUS_MAX
                                        : SPITS_RES_GPUS_MAX, &n, err, sizeof err))
                return par_bad("%s", err);
            *(c == O_CPUS_PER_TASK ? &p->cpus_per_task : c == O_GPUS_PER_TASK
              ? &p->gpus_per_task : &p->mem_per_task) = optarg;
            break;
        }
        case O_CAP:
            if (spits_parse_long(optarg, 1, LONG_MAX, &v))
                return par_bad("--output-cap wants a number of bytes over 0, not '%s'",
                               optarg);
            if (v > PAR_CAP_MAX)
                return par_bad("--output-cap '%s' is more than a result can carry "
                               "(at most " PAR_CAP_MAX_S " bytes)", optarg);
            p->cap = optarg;
            break;
        case O_ENV:
        case O_WORKDIR:
            if (par_where_option(p, c == O_ENV, optarg) != 0)
                return PAR_ERROR;
            break;
        case 'v': p->verbosity++; break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("spits-parallel %s\n", PACKAGE_VERSION); exit(0);
        case 'N': case 'n': case '0': case O_PAR_COLSEP: case O_PAR_HEADER:
        case O_PAR_RETRIES: case O_PAR_DELAY: case O_PAR_BAR: case O_PAR_ETA:
        case O_PAR_PROGRESS: case O_PAR_LB:
            break;                      /* (par_more_options) */
        case ':':
            return par_bad("option '%s' needs a value", par_option_name(argv[at], optopt));
        default:
            return par_bad("option '%s' is not supported", par_option_name(argv[at], optopt));
        }
    }
    if ((p->resume || p->resume_failed) && (!p->joblog || !strcmp(p->joblog, "-")))
        return par_bad("%s", "--resume and --resume-failed need --joblog FILE");
    if (p->bind && !p->jobdir)
        return par_bad("%s", "--bind needs --jobdir (spits-run binds to 127.0.0.1)");
    if (p->tms && p->jobdir)
        return par_bad("%s", "--tms starts local task managers, --jobdir none: start "
                       "them with spits-tm --jobdir DIR (or spits-alloc)");
    if (p->lb && par_lb_conflict(p))
        return par_bad("--line-buffer does not go with %s", par_lb_conflict(p));

    /* The command, then the input sources. */
    int i = optind;
    size_t nempty = 0;
    p->words = argv + i;
    while (i < argc && !par_sep(argv[i]))
        i++;
    p->nwords = (size_t)(i - optind);
    /* GNU parallel's other replacement strings would be left as they are
     * here: a wrong command, run without a word. Refused instead. */
    for (size_t k = 0; k < p->nwords; k++) {
        const char *w = p->words[k];
        if (strstr(w, "{=") || strstr(w, "{+"))
            return par_bad("a replacement string of '%s' is not supported ({= =} and "
                           "{+...} are not)", w);
        p->slots |= strstr(w, "{%}") != NULL;
    }
    if (p->results && (strchr(p->results, '{') || par_ends(p->results, ".csv") ||
                       par_ends(p->results, ".tsv") || par_ends(p->results, ".json")))
        return par_bad("--results takes a directory name here, without replacement "
                       "strings or a .csv, .tsv or .json ending, not '%s'", p->results);
    par_count_stdin(p, argc, argv, i);
    for (size_t k = 0; k < p->nargfiles; k++)
        if (par_read_file(p, p->argfiles[k]) != 0)
            return PAR_ERROR;
    while (i < argc) {
        int sep = par_sep(argv[i++]), files = sep % 2 == 0;
        size_t first = p->nsrc;
        par_source_t *s = files ? NULL : par_new_source(p);
        if (!files && !s)
            return PAR_ERROR;
        if (i == argc || par_sep(argv[i])) {
            /* GNU parallel's: an empty ::: is one empty argument, and
             * nothing to run when every source is one */
            if (files)
                return par_bad("'%s' has no arguments after it", argv[i - 1]);
            if (par_add(s, strdup("")) != 0)
                return PAR_ERROR;
            nempty++;
        }
        for (; i < argc && !par_sep(argv[i]); i++) {
            if (files ? par_read_file(p, argv[i]) != 0 : par_add(s, strdup(argv[i])) != 0)
                return PAR_ERROR;
        }
        if (sep > 2 && first > 0 && first < p->nsrc)
            p->src[first].linked = 1;   /* :::+ steps with the source before */
    }
    if (!p->nsrc && par_read_file(p, "-") != 0)
        return PAR_ERROR;
    if (nempty && nempty == p->nsrc) {
        free(p->src[0].vals[0]);
        p->src[0].n = 0;
    }
    if (p->nsrc > 256)
        return par_bad("too many input sources (at most 256), the last '%s'", argv[argc - 1]);
    return 0;
}

/* The task stream: a FIFO in place of a past job's task file. */
static int par_fifo(par_t *p)
{
    if ((unlink(p->tasks) != 0 && errno != ENOENT) || mkfifo(p->tasks, 0600) != 0) {
        spits_error("cannot make the task stream %s: %s", p->tasks, strerror(errno));
        return -1;
    }
    return 0;
}

/* Where the task stream and the status go: DIR of --jobdir, else a
 * temporary directory of ours. */
static int par_workdir(par_t *p)
{
    if (p->jobdir) {
        if (cmdfile_mkdirs(p->jobdir) != 0 || par_absolute(p->jobdir, p->dir) != 0) {
            spits_error("cannot make the job dir %s: %s", p->jobdir, strerror(errno));
            return -1;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(p->dir, sizeof p->dir, "%s/spits-parallel-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(p->dir)) {
            spits_error("cannot make a temporary directory in %s: %s",
                        tmp && *tmp ? tmp : "/tmp", strerror(errno));
            return -1;
        }
        p->tmpdir = 1;
    }
    if (strlen(p->dir) + 32 > sizeof p->tasks) {
        spits_error("the directory name %s is too long", p->dir);
        return -1;
    }
    strcat(strcpy(p->tasks, p->dir), "/parallel.tasks");
    strcat(strcpy(p->status, p->dir), "/parallel.status");
    strcat(strcpy(p->halt_path, p->tasks), ".halt");
    char done[PATH_MAX + 8], spool[PATH_MAX + 8];
    snprintf(done, sizeof done, "%s.done", p->tasks);
    snprintf(spool, sizeof spool, "%s.spool", p->tasks);
    unlink(p->status);
    unlink(p->halt_path);
    unlink(done);                   /* (the module's notes of a past job) */
    unlink(spool);
    if (par_fifo(p) != 0)
        return -1;
    return p->lb ? par_lines_open(p) : 0;
}

/* The joblog: a new one (the header), or with --resume* appended to. */
static int par_joblog(par_t *p)
{
    struct stat st;
    if (!strcmp(p->joblog, "-")) {
        strcpy(p->joblog_abs, "-");
        return fputs(PAR_JOBLOG_HEADER, stdout) < 0 ? -1 : 0;
    }
    int fresh = !(p->resume || p->resume_failed) ||
                stat(p->joblog, &st) != 0 || st.st_size == 0;
    if (fresh) {
        FILE *f = fopen(p->joblog, "w");
        if (!f || fputs(PAR_JOBLOG_HEADER, f) < 0 || fclose(f) != 0) {
            spits_error("cannot write the joblog %s: %s", p->joblog, strerror(errno));
            return -1;
        }
    }
    return par_absolute(p->joblog, p->joblog_abs);
}

/* The directory the commands run in: --workdir's (made absolute, it
 * need not exist here), else this one, as the shell names it ($PWD). */
static int par_cwd(const par_t *p, char *out)
{
    char here[PATH_MAX];
    struct stat a, b;
    const char *pwd = getenv("PWD");
    if (!getcwd(here, sizeof here)) {
        spits_error("cannot tell the current directory: %s", strerror(errno));
        return -1;
    }
    if (pwd && pwd[0] == '/' && strlen(pwd) < PATH_MAX && stat(pwd, &a) == 0 &&
        stat(here, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        snprintf(here, sizeof here, "%s", pwd);
    const char *wd = p->workdir;
    if (!wd)
        snprintf(out, PATH_MAX, "%s", here);
    else if (snprintf(out, PATH_MAX, "%s%s%s", wd[0] == '/' ? "" : here,
                      wd[0] == '/' ? "" : "/", wd) >= PATH_MAX) {
        spits_error("the --workdir %s is too long", wd);
        return -1;
    }
    return 0;
}

/* Where the commands run and with what (cmdenv.h): the job carries this
 * directory and environment to every task manager, as sbatch does. */
static int par_write_env(par_t *p)
{
    extern char **environ;
    char cwd[PATH_MAX];
    if (par_cwd(p, cwd) != 0)
        return -1;
    snprintf(p->envfile, sizeof p->envfile, "%s/%s", p->dir, CMDENV_FILE);
    if (cmdenv_write(p->envfile, cwd, environ, p->envnames, p->nenv) != 0) {
        spits_error("cannot write %s: %s", p->envfile, strerror(errno));
        return -1;
    }
    return 0;
}

/* A --jobdir that a job uses now is refused before anything is written
 * there (or to the joblog): another spits-parallel holds DIR/parallel.lock
 * for its life, a job manager DIR's jm.pid. The job dir is private. */
static int par_claim_jobdir(par_t *p)
{
    char err[PATH_MAX + 256], path[PATH_MAX + 32];
    if (spits_jobdir_prepare(p->jobdir, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    snprintf(path, sizeof path, "%s/parallel.lock", p->jobdir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (fd >= 0 && errno == EWOULDBLOCK)
            spits_error("job dir %s is in use: another spits-parallel runs a job there",
                        p->jobdir);
        else
            spits_error("cannot lock %s: %s", path, strerror(errno));
        return -1;                      /* (the lock, if any, goes at exit) */
    }
    int jm = spits_jobdir_lock(p->jobdir, err, sizeof err);
    if (jm < 0) {
        spits_error("%s", err);
        return -1;
    }
    close(jm);                          /* free for our own job manager */
    return 0;
}

/* A joblog that is a directory is refused; with --resume*, one whose
 * last line was cut off (a full disk, a kill) is ended there, so that the
 * next line is not glued to it: that command runs again. */
static int par_joblog_check(par_t *p)
{
    struct stat st;
    char last;
    if (!strcmp(p->joblog, "-") || stat(p->joblog, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return par_bad("--joblog wants a file; %s is a directory", p->joblog) ? -1 : 0;
    if (!(p->resume || p->resume_failed) || p->dry_run || !S_ISREG(st.st_mode) ||
        st.st_size == 0)
        return 0;
    int fd = open(p->joblog, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0 || pread(fd, &last, 1, st.st_size - 1) != 1 ||
        (last != '\n' && write(fd, "\n", 1) != 1)) {
        spits_error("cannot read the joblog %s: %s", p->joblog, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    if (last != '\n')
        spits_warn("the joblog %s ended in a cut-off line; ended it there (that "
                   "command runs again)", p->joblog);
    return 0;
}

/* Removes the temporary dir if this process dies before it can (kill
 * -9): a child that waits for the end of a pipe only this process holds. */
static void par_start_reaper(par_t *p)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
            dup2(null, fd);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != fds[0])
                close(fd);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        while (read(fds[0], &c, 1) < 0 && errno == EINTR)
            ;
        /* (the job manager's children may still be ending: a few tries) */
        for (int i = 0; i < 20 && access(p->dir, F_OK) == 0; i++) {
            nftw(p->dir, par_rm, 16, FTW_DEPTH | FTW_PHYS);
            if (access(p->dir, F_OK) == 0)
                usleep(100000);
        }
        _exit(0);
    }
    close(fds[0]);
    if (pid < 0)
        close(fds[1]);
    else
        p->reaper = fds[1];
}

/* The command line of spits-run, or of spits-jm with --jobdir. */
static int par_command(par_t *p, char **a, char *prog, char *module, char *jobs, char *tms)
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
static int par_status(par_t *p, int rc)
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

/* What par_options and par_read_joblog allocated. */
static void par_free(par_t *p)
{
    if (p->feeding)
        return;
    pinput_destroy(&p->in);
    for (size_t i = 0; i < p->nsrc; i++) {
        for (size_t k = 0; k < p->src[i].n && p->src[i].vals; k++)
            free(p->src[i].vals[k]);
        free(p->src[i].vals);
    }
    free(p->src);
    free(p->skip);
    for (size_t i = 0; i < p->nnames; i++)
        free(p->names[i]);
    free(p->names);
    for (size_t i = 0; p->hwords && i < p->nwords; i++)
        free(p->hwords[i]);
    free(p->hwords);
    if (p->colsep)
        regfree(&p->colsep_re);
    cmdlive_reader_clear(&p->live);
    if (p->linesfd >= 0)
        close(p->linesfd);
    p->linesfd = -1;
    p->src = NULL;
    p->skip = NULL;
    p->nsrc = p->nskip = 0;
}

static int par_main(par_t *p, int argc, char **argv)
{
    int rc;
    pfeed_t *feed = &p->feed;
    p->linesfd = -1;
    if ((rc = par_options(p, argc, argv)) != 0)
        return rc;
    if (p->joblog && par_joblog_check(p) != 0)
        return PAR_ERROR;
    if (p->joblog && (p->resume || p->resume_failed) && par_read_joblog(p) != 0) {
        spits_error("cannot read the joblog %s: %s", p->joblog, strerror(errno));
        return PAR_ERROR;
    }
    rc = PAR_ERROR;
    if (par_input(p, &p->in, &p->compose, feed) != 0)
        goto out;
    if (p->dry_run) {
        rc = pfeed_print(feed, stdout) == 0 ? 0 : PAR_ERROR;
        goto out;
    }
    if (p->jobdir && par_claim_jobdir(p) != 0)
        goto out;
    if (p->joblog && par_joblog(p) != 0)
        goto out;
    if (p->results && (cmdfile_mkdirs(p->results) != 0 || par_absolute(p->results, p->results_abs) != 0)) {
        spits_error("cannot make the results directory %s: %s", p->results, strerror(errno));
        goto out;
    }
    if (par_workdir(p) != 0)
        goto out;
    if (p->tmpdir)
        par_start_reaper(p);
    if (par_write_env(p) != 0)
        goto out;
    /* (the first command's arguments: none, and there is nothing to run) */
    int first = pfeed_skip(feed);
    if (first < 0)
        goto out;
    if (first == 0 && !p->jobdir) {
        rc = 0;
        goto out;
    }
    char *a[64], prog[PATH_MAX], module[PATH_MAX], jobs[32], tms[32];
    if (par_command(p, a, prog, module, jobs, tms) != 0 || pfeed_start(feed) != 0)
        goto out;
    p->feeding = 1;
    if (p->jobdir)
        spits_info("the job manager runs in %s: start task managers with spits-tm "
                   "--jobdir %s (or spits-alloc --jobdir %s)", p->dir, p->dir, p->dir);
    fflush(stdout);
    int jrc = par_run(p, a);
    rc = jrc < 0 || p->live_failed ? PAR_ERROR
       : p->live_closed            ? 128 + SIGPIPE
                                   : par_status(p, jrc);
    if (atomic_load(&feed->rc) != 0)
        rc = PAR_ERROR;                 /* (the input failed: said) */
out:
    if (p->tmpdir)
        nftw(p->dir, par_rm, 16, FTW_DEPTH | FTW_PHYS);
    /* A feed still running waits on its input or on a job manager that
     * is gone: the process ends under it, with what it uses. */
    if (p->feeding && pthread_tryjoin_np(feed->thread, NULL) == 0)
        p->feeding = 0;
    return rc;
}

int main(int argc, char **argv)
{
    /* (static: a feed thread still running at exit uses it) */
    static par_t p;
    spits_log_init("spits-parallel", SPITS_LOG_INFO);
    int rc = par_main(&p, argc, argv);
    par_free(&p);
    return rc;
}
