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
 * and prints while it waits for the job (prun_run, parallel-run.c); the
 * results carry no output then. The FIFO joins only this machine's task
 * managers, so --jobdir (task managers from anywhere) refuses it.
 *
 * Its own files (parallel.h says which calls which): this one, the top;
 * parallel-run.c runs the job; parallel-options.c reads the command line.
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
#include "parallel.h"
#include "parallel-args.h"
#include "parallel-compose.h"
#include "parallel-feed.h"
#include "parallel-input.h"
#include "parallel-options.h"
#include "parallel-run.h"
#include "util.h"

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
        return popts_bad("--joblog wants a file; %s is a directory", p->joblog) ? -1 : 0;
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

/* What popts_parse and par_read_joblog allocated. */
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
    if ((rc = popts_parse(p, argc, argv)) != 0)
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
    if (prun_command(p, a, prog, module, jobs, tms) != 0 || pfeed_start(feed) != 0)
        goto out;
    p->feeding = 1;
    if (p->jobdir)
        spits_info("the job manager runs in %s: start task managers with spits-tm "
                   "--jobdir %s (or spits-alloc --jobdir %s)", p->dir, p->dir, p->dir);
    fflush(stdout);
    int jrc = prun_run(p, a);
    rc = jrc < 0 || p->live_failed ? PAR_ERROR
       : p->live_closed            ? 128 + SIGPIPE
                                   : prun_status(p, jrc);
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
