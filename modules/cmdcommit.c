/*
 * cmdcommit.c - the command module's committer (its part in spits-jm, with
 * the job manager of cmd.c): each result's outputs to stdout and stderr
 * (in task order with --keep-order: cmdorder.h), --results files, the
 * joblog, TASKFILE.done (cmddone.h), --progress and --halt, and the exit status
 * (cmd.c's header says what each does). It owns what the job manager and
 * the workers read of it: whether the job halted (cmdcommit_halted), the
 * tasks made so far (cmdcommit_made) and the count of running commands
 * (cmdcommit_running_map). It calls nothing of cmd.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdcommit.h"
#include "cmddone.h"
#include "cmdfile.h"
#include "cmdopts.h"
#include "cmdorder.h"
#include "cmdtask.h"
#include "spits.h"

/* 1 once the committer halted the job: the generator stops. (The job
 * manager and committer share this process.) */
static atomic_int cmd_halted;

/* Tasks the generator made so far: --progress's total, as GNU parallel
 * counts the input read so far. (The generator and committer share this
 * process; the generator stores, the committer loads.) */
static _Atomic uint64_t cmd_made;

int cmdcommit_halted(void)
{
    return atomic_load(&cmd_halted);
}

void cmdcommit_made(uint64_t n)
{
    atomic_store(&cmd_made, n);
}

/* --halt soon with this machine's TMs (--local): the commands running
 * now, for GNU parallel's "Waiting for N jobs", in TASKFILE.running, a
 * counter every TM's workers and the committer map (MAP_SHARED): a
 * worker adds one from before it looks at the halt file to its command's
 * end, the committer reads it after it writes that file. NULL when not
 * counted (TMs elsewhere: "the running jobs" is said instead). */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "the counter is shared between processes");

_Atomic long *cmdcommit_running_map(const cmdopts_t *o)
{
    char path[PATH_MAX];
    struct stat st;
    if (!o->local || !o->halt_fail || o->halt_now)
        return NULL;
    snprintf(path, sizeof path, "%s.running", o->taskfile);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (st.st_size >= (off_t)sizeof(long) ||
                                ftruncate(fd, sizeof(long)) == 0))
        m = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return m == MAP_FAILED ? NULL : m;
}

void cmdcommit_running_unmap(_Atomic long *running)
{
    if (running)
        munmap((void *)running, sizeof(long));
}

/* ---- committer: outputs, joblog, results ---- */

typedef struct {
    cmdopts_t o;
    cmdorder_t held;              /* --keep-order: results waiting */
    cmddone_t notes;              /* TASKFILE.done */
    int joblog;                   /* fd, or -1 */
    uint64_t failed;
    int halt_rc;                  /* set once halted: the exit status */
    int halted;
    int write_failed;             /* a joblog or --results write failed */
    int live, job_committed;      /* made whole; commit_job called */
    uint64_t ndone;               /* --progress: commands written */
    double t0, shown;             /* --progress: start, last line (monotonic) */
    int tty;                      /* --progress: stderr is a terminal */
    _Atomic long *running;        /* cmdcommit_running_map's, or NULL */
} cmd_co_t;

static double cmd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What TASKFILE.halt says when the job stopped before its end (a signal
 * to the job manager, spits-parallel gone): "now" to the workers, which
 * kill their commands before their TM leaves them running; a resumed
 * job manager removes it. */
#define CMD_STOPPED "now: the job stopped\n"

/* A write of the joblog or of --results failed: said once (a full disk
 * fails every write after), and the job's exit status is 255. */
static void cmd_write_failed(cmd_co_t *c, const char *what, const char *path)
{
    if (!c->write_failed)
        fprintf(stderr, "spits-parallel: error: cannot write %s %s: %s (the exit "
                "status is 255; later write errors are not repeated)\n", what, path,
                strerror(errno));
    c->write_failed = 1;
}

static int cmd_write_all(int fd, const char *p, size_t n)
{
    return cmdfile_write_all(fd, p, n);
}

/* Writes p to fd, each line after "TAG\t" when tag is set. */
static void cmd_write_tagged(int fd, const char *tag, const char *p, size_t n)
{
    if (!tag) {
        cmd_write_all(fd, p, n);
        return;
    }
    size_t tl = strlen(tag);
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t line = nl ? (size_t)(nl - p) + 1 : n;
        cmd_write_all(fd, tag, tl);
        cmd_write_all(fd, "\t", 1);
        cmd_write_all(fd, p, line);
        p += line;
        n -= line;
    }
}

static void cmd_result_file(cmd_co_t *c, const char *dir, const char *name, const char *p,
                            size_t n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || cmd_write_all(fd, p, n) != 0 || close(fd) != 0)
        cmd_write_failed(c, "the result file", path);
    else
        fd = -1;
    if (fd >= 0)
        close(fd);
}

/* A result (sz bytes): its header, and the index and record of the task
 * it carries at its end; 0, or -1 if malformed. */
static int cmd_result_parse(const void *result, size_t sz, cmdres_t *r, uint64_t *index,
                            cmdfile_rec_t *rec)
{
    if (cmdres_unpack(r, result, sz) != 0)
        return -1;
    size_t at = CMDRES_HEADER + r->outlen + r->errlen;
    return cmdtask_parse((const char *)result + at, sz - at, index, rec);
}

static void cmd_joblog_line(cmd_co_t *c, const cmdres_t *r, const cmdfile_rec_t *rec);

/* The joblog line, its Command with the job slot where {%} was. */
static void cmd_joblog(cmd_co_t *c, const cmdres_t *r, const cmdfile_rec_t *rec)
{
    cmdfile_rec_t with = *rec;
    char *display = r->slot && c->joblog >= 0 ? cmdfile_slot_subst(rec->display, r->slot) : NULL;
    if (display)
        with.display = display;
    cmd_joblog_line(c, r, &with);
    free(display);
}

static void cmd_joblog_line(cmd_co_t *c, const cmdres_t *r, const cmdfile_rec_t *rec)
{
    char line[8192];
    if (c->joblog < 0)
        return;
    int n = snprintf(line, sizeof line, "%" PRIu64 "\t%s\t%.3f\t%10.3f\t0\t%" PRIu64
                     "\t%d\t%d\t%s\n", r->seq, r->host[0] && !c->o.local ? r->host : ":", r->start,
                     r->runtime_ms / 1000.0, r->received, r->exitval, r->signal,
                     rec->display);
    if (n >= (int)sizeof line) {     /* a long command: its own buffer */
        char *big = malloc((size_t)n + 1);
        if (big) {
            snprintf(big, (size_t)n + 1, "%" PRIu64 "\t%s\t%.3f\t%10.3f\t0\t%" PRIu64
                     "\t%d\t%d\t%s\n", r->seq, r->host[0] && !c->o.local ? r->host : ":", r->start,
                     r->runtime_ms / 1000.0, r->received, r->exitval, r->signal,
                     rec->display);
            if (cmd_write_all(c->joblog, big, (size_t)n) != 0)
                cmd_write_failed(c, "the joblog", c->o.joblog);
            free(big);
        } else {
            cmd_write_failed(c, "the joblog", c->o.joblog);
        }
        return;
    }
    if (n > 0 && cmd_write_all(c->joblog, line, (size_t)n) != 0)
        cmd_write_failed(c, "the joblog", c->o.joblog);
}

/* Writes one command's outputs, --results files and joblog line, and
 * notes it in TASKFILE.done: after spits-jm --resume, whose journal has
 * the committer commit every result again, what was written is not
 * written twice (and its failure still counts). */
static void cmd_emit(cmd_co_t *c, const unsigned char *buf, size_t len)
{
    cmdres_t r;
    cmdfile_rec_t rec;
    uint64_t index;
    if (cmd_result_parse(buf, len, &r, &index, &rec) != 0)
        return;
    const char *out = (const char *)buf + CMDRES_HEADER, *err = out + r.outlen;
    const char *tag = c->o.tag ? rec.tag : NULL;
    if (c->o.results) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", c->o.results, rec.respath);
        if (cmdfile_mkdirs(dir) != 0) {
            cmd_write_failed(c, "the results directory", dir);
        } else {
            char seq[24];
            int sl = snprintf(seq, sizeof seq, "%" PRIu64, r.seq);
            cmd_result_file(c, dir, "stdout", out, r.outlen);
            cmd_result_file(c, dir, "stderr", err, r.errlen);
            cmd_result_file(c, dir, "seq", seq, (size_t)sl);
        }
    }
    if (!c->o.results) {
        cmd_write_tagged(STDOUT_FILENO, tag, out, r.outlen);
        cmd_write_tagged(STDERR_FILENO, tag, err, r.errlen);
    }
    cmd_joblog(c, &r, &rec);
    if (cmddone_note(&c->notes, r.seq, r.exitval != 0 || r.signal != 0) != 0) {
        fprintf(stderr, "cmd: cannot write %s.done: %s\n", c->o.taskfile, strerror(errno));
        cmddone_close(&c->notes);
    }
}

/* What --keep-order holds for a task with nothing to write (not run, or
 * written by a past life): its place in the order only. */
static char cmd_nothing;

static void cmd_held_free(void *p)
{
    if (p != &cmd_nothing)
        free(p);
}

/* --keep-order: writes the held results that are next in order; with
 * gaps set, steps over tasks that have none (the end of a halted job). */
static void cmd_flush(cmd_co_t *c, int gaps)
{
    void *p;
    size_t len;
    while ((p = cmdorder_take(&c->held, gaps, &len))) {
        if (p != &cmd_nothing)
            cmd_emit(c, p, len);
        cmd_held_free(p);
    }
}

/* TASKFILE.done: what past lives of the job manager wrote out, and the
 * cut of what they wrote without a note (cmddone.h). */
static int cmd_done_load(cmd_co_t *c)
{
    char path[PATH_MAX], err[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s.done", c->o.taskfile);
    if (cmddone_open(&c->notes, path, c->o.results ? -1 : STDOUT_FILENO, c->joblog, err,
                     sizeof err) != 0) {
        fprintf(stderr, "cmd: %s\n", err);
        return -3;
    }
    c->failed += c->notes.failed;
    return 0;
}

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    int rc;
    cmd_co_t *c = calloc(1, sizeof *c);
    if (!c || cmdopts_parse(argc, argv, &c->o) != 0) {
        free(c);
        return NULL;
    }
    c->joblog = c->notes.fd = -1;
    c->running = cmdcommit_running_map(&c->o);
    c->t0 = c->shown = cmd_now();
    c->tty = c->o.progress && isatty(STDERR_FILENO);
    rc = 0;
    if (c->o.joblog && !strcmp(c->o.joblog, "-"))
        c->joblog = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);   /* GNU parallel's - */
    else if (c->o.joblog &&
        (c->joblog = open(c->o.joblog, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666)) < 0) {
        fprintf(stderr, "cmd: cannot open the joblog %s: %s\n", c->o.joblog, strerror(errno));
        rc = -3;
    }
    if (rc == 0)
        rc = cmd_done_load(c);
    if (rc == 0) {
        char said[sizeof CMD_STOPPED];
        int fd = open(c->o.haltfile, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, said, sizeof said - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n == (ssize_t)sizeof said - 1 && !memcmp(said, CMD_STOPPED, (size_t)n))
            unlink(c->o.haltfile);
        c->live = 1;
    }
    if (rc != 0) {
        spits_committer_finalize(c);
        return NULL;
    }
    return c;
}

/* --progress: one more command done (end: the job's end), of the tasks
 * read so far (a streamed input's total is known only at its end). On a terminal
 * the line is redrawn at most 10 times a second, elsewhere a line is
 * written at most every 10 s, and once at the end. */
static void cmd_progress(cmd_co_t *c, int end)
{
    if (!c->o.progress)
        return;
    double now = cmd_now();
    if (!end && now - c->shown < (c->tty ? 0.1 : 10.0))
        return;
    c->shown = now;
    uint64_t n = atomic_load(&cmd_made);
    if (n < c->ndone)
        n = c->ndone;
    uint64_t left = n - c->ndone;
    int pct = n ? (int)(c->ndone * 100 / n) : 100;
    double avg = c->ndone ? (now - c->t0) / (double)c->ndone : 0, eta = avg * (double)left;
    char line[160];
    if (c->o.progress == 'b')
        snprintf(line, sizeof line, "%d%% %" PRIu64 ":%" PRIu64 "=%.0fs", pct, c->ndone, left,
                 eta);
    else
        snprintf(line, sizeof line, "%sdone %" PRIu64 " of %" PRIu64 ", %d%%, %.3fs each",
                 c->o.progress == 'e' ? "" : "local: ", c->ndone, n, pct, avg);
    if (c->o.progress == 'e') {
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, ", ETA %.0fs", eta);
    }
    fprintf(stderr, c->tty ? "\r%s\033[K%s" : "%s\n", line, c->tty && end ? "\n" : "");
    fflush(stderr);
}

/* Counts a failure; halts the job when --halt says so. */
static void cmd_failed(cmd_co_t *c, const cmdres_t *r, const cmdfile_rec_t *rec)
{
    c->failed++;
    /* GNU parallel's lines, in its places: each failure under --halt,
     * and with soon, while commands run, that no more start. */
    if (c->o.halt_fail)
        fprintf(stderr, "spits-parallel: This job failed:\n%s\n", rec->display);
    if (!c->o.halt_fail || c->failed < (uint64_t)c->o.halt_fail)
        return;
    if (!c->halted) {
        c->halted = 1;
        c->halt_rc = c->o.halt_fail == 1 ? (r->exitval > 0 && r->exitval < 256 ? r->exitval : 1)
                                         : (c->failed > 101 ? 101 : (int)c->failed);
        int fd = open(c->o.haltfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0 || cmd_write_all(fd, c->o.halt_now ? "now\n" : "soon\n",
                                    c->o.halt_now ? 4 : 5) != 0)
            fprintf(stderr, "cmd: cannot write %s: %s: running commands go on\n",
                    c->o.haltfile, strerror(errno));
        if (fd >= 0)
            close(fd);
        atomic_store(&cmd_halted, 1);
    }
    if (c->o.halt_now)
        return;
    /* (counted after the halt file is written: no command starts after) */
    long n = c->running ? atomic_load(c->running) : -1;
    if (n > 0)
        fprintf(stderr, "spits-parallel: Starting no more jobs. Waiting for %ld jobs to "
                "finish.\n", n);
    else if (n < 0)
        fprintf(stderr, "spits-parallel: Starting no more jobs. Waiting for the running "
                "jobs to finish.\n");
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    cmd_co_t *c = co;
    cmdres_t r;
    cmdfile_rec_t rec;
    uint64_t index;
    if (sz < 0 || cmd_result_parse(result, (size_t)sz, &r, &index, &rec) != 0)
        return 1;
    /* Not run, or killed by the halt: as if never run. After "now",
     * nothing more is written. A task written by the job manager's past
     * life (--resume) is not written again. Either keeps its place in
     * the order. */
    if (r.flags & (CMDRES_SKIPPED | CMDRES_HALTED) || (c->halted && c->o.halt_now) ||
        cmddone_written(&c->notes, r.seq)) {
        if (c->o.keep && cmdorder_put(&c->held, index, &cmd_nothing, 0) < 0)
            return 1;
        if (c->o.keep)
            cmd_flush(c, 0);
        return 0;
    }
    if (r.flags & CMDRES_TIMEOUT)
        fprintf(stderr, "spits-parallel: warning: this job was killed because it "
                "timed out (--timeout %g): %s\n", c->o.timeout, rec.display);
    int bad = r.exitval != 0 || r.signal != 0;
    if (!c->o.keep) {
        cmd_emit(c, result, (size_t)sz);
    } else {
        unsigned char *copy = malloc((size_t)sz);
        if (!copy)
            return 1;
        memcpy(copy, result, (size_t)sz);
        int put = cmdorder_put(&c->held, index, copy, (size_t)sz);
        if (put != 0)
            free(copy);
        if (put < 0)
            return 1;
    }
    if (bad)
        cmd_failed(c, &r, &rec);
    if (c->o.keep)
        cmd_flush(c, 0);
    c->ndone++;
    cmd_progress(c, 0);
    return 0;
}

int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    (void)push; (void)ctx;
    cmd_co_t *c = co;
    c->job_committed = 1;
    if (c->o.keep && !(c->halted && c->o.halt_now))
        cmd_flush(c, 1);
    cmd_progress(c, 1);
    int rc = c->halted ? c->halt_rc : c->failed > 101 ? 101 : (int)c->failed;
    if (c->write_failed)
        rc = 255;                 /* GNU parallel's "other error" */
    if (c->o.status) {
        char line[16];
        int n = snprintf(line, sizeof line, "%d\n", rc);
        int fd = open(c->o.status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0 || cmd_write_all(fd, line, (size_t)n) != 0)
            fprintf(stderr, "cmd: cannot write %s: %s\n", c->o.status, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return rc;
}

void spits_committer_finalize(void *co)
{
    cmd_co_t *c = co;
    if (c->live && !c->job_committed) {
        int fd = open(c->o.haltfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd >= 0) {
            cmd_write_all(fd, CMD_STOPPED, sizeof CMD_STOPPED - 1);
            close(fd);
        }
    }
    cmdorder_clear(&c->held, cmd_held_free);
    cmdcommit_running_unmap(c->running);
    cmddone_close(&c->notes);
    if (c->joblog >= 0)
        close(c->joblog);
    free(c);
}

