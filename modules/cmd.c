/*
 * cmd.c - the command module: each task is one command line to run.
 *
 *   cmd [OPTIONS] TASKFILE
 *     --keep-order        write outputs in task order (else as they commit)
 *     --tag               prefix each output line with the task's tag
 *     --results DIR       also write DIR/<results path>/{stdout,stderr,seq}
 *     --joblog FILE       append one GNU parallel joblog line per task (-:
 *                         to stdout)
 *     --halt now|soon,fail=N  stop after N failed commands
 *     --timeout SEC       kill a command's process group after SEC seconds
 *     --output-cap BYTES  stdout plus stderr kept per task (64 MiB); a
 *                         command writing more is killed and fails
 *     --status FILE       where commit_job writes the exit status
 *     --spool             keep what is read of a streamed TASKFILE in
 *                         TASKFILE.spool, for a resumed job manager
 *     --env-file FILE     run each command in the directory and with the
 *                         environment FILE carries (cmdenv.h)
 *     --local             the TMs are this host's: the joblog's Host is
 *                         ":" (GNU parallel's), else the TM's host name
 *     --retries N         run a failing command up to N times in all; its
 *                         last run is the one written
 *     --delay SEC         start a TM's commands at least SEC apart
 *     --slots             commands hold {%} (CMDFILE_SLOT): give each the
 *                         lowest job slot free while it runs
 *     --progress bar|eta|progress  the committer's progress on stderr:
 *                         redrawn in place on a terminal, else a line at
 *                         most every 10 s and one at the end
 *     --line-buffer       the workers send each command's lines as they
 *                         come to TASKFILE.lines, a FIFO spits-parallel
 *                         reads and prints (cmdlive.h); results carry none
 *
 * spits-parallel writes TASKFILE (cmdfile.h), a file or a stream that
 * it writes as the job runs (cmdstream.h), and runs this module; any
 * spits runtime feature (re-sends, the journal, Slurm TMs, the dashboard)
 * applies as to any module. The job manager reads the tasks from the
 * file, a worker runs one (cmdrun.c) and sends back its exit value,
 * signal, times and output, and the committer writes them: stdout to the
 * job manager's stdout, stderr to its stderr (with --results, only to
 * the results files, as GNU parallel does), the joblog and --results.
 * A task is its generation index (8 bytes, little endian: 0, 1, 2... in
 * the order next_task makes them, the same again in a resumed job) and
 * its record; its result ends with the task's bytes, so the committer
 * needs no copy of the task list: it holds, with --keep-order, only the
 * results that wait for an earlier one, placed by their index.
 * commit_job's value (the job manager's exit status) is GNU parallel's:
 * the number of failed commands, at most 101 (with --halt ...,fail=1:
 * the failed command's exit value).
 *
 * --halt: the committer, which counts failures, writes TASKFILE.halt
 * ("soon" or "now"); the job manager then generates no more tasks, the
 * workers run no more commands (they check the file before each one) and
 * with "now" kill the ones running (they check it while they wait).
 * Commands not run are neither written nor logged, so --resume-failed
 * runs them later. With soon and --local, the workers count their running
 * commands in TASKFILE.running (cmdcommit_running_map) for the committer's
 * "Waiting for N jobs". The file must be where the workers see it: the job
 * dir, shared by Slurm TMs anyway.
 *
 * A committer that ends before commit_job (the job manager stopped by a
 * signal) writes "now" to TASKFILE.halt too, so that no command goes on
 * running on a TM that leaves its busy workers behind; a resumed job
 * manager's committer removes that note.
 *
 * TASKFILE.done lists the commands written out, so that a job manager
 * resumed from its journal (which commits every result again) writes
 * nothing twice (cmddone.h). A command may still run twice (a copy re-sent after
 * its TM was lost, or --max-copies above 1): only one result is written.
 *
 * Its files: this one, the job manager and the workers; cmdcommit.c the
 * committer; cmdopts.c the arguments all three parse; cmdtask.h a task's
 * bytes; below them, cmdrun.c (one command run), cmdstream.c (the task
 * stream), cmdfile.c, cmdenv.c, cmdlive.c and cmdorder.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdcommit.h"
#include "cmdenv.h"
#include "cmdfile.h"
#include "cmdlive.h"
#include "cmdopts.h"
#include "cmdrun.h"
#include "cmdstream.h"
#include "cmdtask.h"
#include "spits.h"

/* ---- job manager: the tasks, from the file or the stream ---- */

typedef struct {
    cmdopts_t o;
    cmdstream_t *in;
    uint64_t index;               /* the next task's generation index */
    char *task;                   /* the task being pushed: index, record */
    size_t cap;
} cmd_gen_t;

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    char err[PATH_MAX + 128], spool[PATH_MAX];
    cmd_gen_t *g = calloc(1, sizeof *g);
    if (!g || cmdopts_parse(argc, argv, &g->o) != 0) {
        free(g);
        return NULL;
    }
    snprintf(spool, sizeof spool, "%s.spool", g->o.taskfile);
    if (!(g->in = cmdstream_new(g->o.taskfile, g->o.spool ? spool : NULL, err, sizeof err))) {
        fprintf(stderr, "cmd: %s\n", err);
        free(g);
        return NULL;
    }
    return g;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    cmd_gen_t *g = jm;
    const char *body;
    size_t len;
    char err[PATH_MAX + 160];
    if (cmdcommit_halted())
        return 0;
    int rc = cmdstream_next(g->in, &body, &len, err, sizeof err);
    /* A stream cut after a halt (the committer's, or spits-parallel's
     * when a signal stops it) ends the tasks: the job is stopping. */
    if (rc < 0 && (cmdcommit_halted() || cmdrun_halt_state(g->o.haltfile)))
        return 0;
    if (rc < 0) {
        fprintf(stderr, "cmd: %s\n", err);
        return -1;
    }
    if (rc == 0)
        return 0;
    if (len + 8 > g->cap) {
        size_t cap = (len + 8) * 2;
        char *t = realloc(g->task, cap);
        if (!t) {
            fprintf(stderr, "cmd: out of memory making task %llu\n",
                    (unsigned long long)g->index);
            return -1;
        }
        g->task = t;
        g->cap = cap;
    }
    cmdtask_put_index(g->task, g->index++);
    cmdcommit_made(g->index);
    memcpy(g->task + 8, body, len);
    push(g->task, (spitssize_t)(len + 8), ctx);
    return 1;
}

void spits_job_manager_finalize(void *jm)
{
    cmd_gen_t *g = jm;
    cmdstream_destroy(&g->in);
    free(g->task);
    free(g);
}

/* ---- worker: runs one command ---- */

typedef struct {
    cmdopts_t o;
    char host[CMDRES_HOST];
    cmdenv_t env;                 /* --env-file's: loaded by worker_new, read-only after */
    cmdlive_t live;               /* --line-buffer: this worker thread's channel */
    _Atomic long *running;        /* cmdcommit_running_map's, or NULL */
} cmd_worker_t;

/* A TM that exits (or unloads the module) takes its commands with it. */
__attribute__((destructor)) static void cmd_unload(void)
{
    cmdrun_kill_all();
}

/* --delay: when this TM's next command may start (monotonic seconds),
 * shared by its worker threads under cmd_delay_lock. */
static pthread_mutex_t cmd_delay_lock = PTHREAD_MUTEX_INITIALIZER;
static double cmd_delay_next;

/* Waits for this command's turn to start, delay seconds after the last. */
static void cmd_delay_wait(double delay)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double t = (double)now.tv_sec + now.tv_nsec / 1e9, at;
    pthread_mutex_lock(&cmd_delay_lock);
    at = cmd_delay_next > t ? cmd_delay_next : t;
    cmd_delay_next = at + delay;
    pthread_mutex_unlock(&cmd_delay_lock);
    if (at > t) {
        struct timespec ts = {(time_t)(at - t), (long)((at - t - (double)(time_t)(at - t)) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

/* Runs the command as --retries and --delay say: again while it fails
 * (not when the job halted), r holding its last run. */
static int cmd_run_tries(const cmdopts_t *o, char **argv, const cmdrun_opts_t *ro,
                         cmdrun_t *r)
{
    for (long run = 1;; run++) {
        if (o->delay > 0)
            cmd_delay_wait(o->delay);
        int rc = cmdrun_exec(argv, ro, r);
        if (rc != 0 || run >= o->retries || (r->exitval == 0 && r->signal == 0) ||
            (r->flags & CMDRES_HALTED) || cmdrun_halt_state(o->haltfile))
            return rc;
        cmdrun_clear(r);
    }
}

/* {%}: the lowest job slot no running command holds, until the command
 * ends. Between TMs on the job dir: a POSIX record lock on
 * TASKFILE.slotN, which a forked child does not inherit (an flock would
 * stay held by a command another thread is starting, between its fork
 * and exec, and push the next slot up). Between this TM's threads, whose
 * record locks are one process's: cmd_slots, under cmd_slot_lock. */
#define CMD_SLOTS 65536
static pthread_mutex_t cmd_slot_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char cmd_slots[CMD_SLOTS + 1];  /* held by this process */

/* The lock's fd, or -1 (said). */
static int cmd_slot_take(const char *taskfile, unsigned *slot)
{
    char path[PATH_MAX];
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int fd = -1;
    pthread_mutex_lock(&cmd_slot_lock);
    for (unsigned n = 1; n <= CMD_SLOTS; n++) {
        if (cmd_slots[n])
            continue;
        snprintf(path, sizeof path, "%s.slot%u", taskfile, n);
        if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
            break;
        if (fcntl(fd, F_SETLK, &lk) == 0) {
            cmd_slots[n] = 1;
            *slot = n;
            break;
        }
        close(fd);
        fd = -1;
    }
    pthread_mutex_unlock(&cmd_slot_lock);
    if (fd < 0)
        fprintf(stderr, "cmd: cannot take a job slot ({%%}) beside %s: %s\n", taskfile,
                strerror(errno));
    return fd;
}

/* Frees the slot: its lock goes with the fd. */
static void cmd_slot_give(int fd, unsigned slot)
{
    pthread_mutex_lock(&cmd_slot_lock);
    close(fd);
    cmd_slots[slot] = 0;
    pthread_mutex_unlock(&cmd_slot_lock);
}

/* Runs argv in a job slot written where its words (and name) hold {%}. */
static int cmd_run_slotted(const cmdopts_t *o, char **argv, size_t argc,
                           cmdrun_opts_t *ro, cmdrun_t *r, unsigned *slot)
{
    int fd = cmd_slot_take(o->taskfile, slot), rc = -1;
    char **sv = calloc(argc + 1, sizeof *sv);
    char *name = sv ? cmdfile_slot_subst(ro->name, *slot) : NULL;
    for (size_t i = 0; name && i < argc; i++)
        if (!(sv[i] = cmdfile_slot_subst(argv[i], *slot)))
            goto out;
    if (name) {
        ro->name = name;
        rc = cmd_run_tries(o, sv, ro, r);
    }
out:
    for (size_t i = 0; sv && i < argc; i++)
        free(sv[i]);
    free(sv);
    free(name);
    if (fd >= 0)
        cmd_slot_give(fd, *slot);
    return rc;
}

void *spits_worker_new(int argc, const char *argv[])
{
    cmd_worker_t *w = calloc(1, sizeof *w);
    if (!w || cmdopts_parse(argc, argv, &w->o) != 0) {
        free(w);
        return NULL;
    }
    gethostname(w->host, sizeof w->host - 1);
    char err[PATH_MAX + 128];
    if (w->o.envfile && cmdenv_load(&w->env, w->o.envfile, environ, err, sizeof err) != 0) {
        fprintf(stderr, "cmd: %s: no command runs here (the job dir must be on a "
                "file system this host shares)\n", err);
        free(w);
        return NULL;
    }
    w->live.fd = -1;
    w->running = cmdcommit_running_map(&w->o);
    if (w->o.live) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s", w->o.taskfile, CMDLIVE_SUFFIX);
        if (cmdlive_open(&w->live, path, err, sizeof err) != 0) {
            fprintf(stderr, "cmd: %s: no command runs here\n", err);
            cmdenv_clear(&w->env);
            cmdcommit_running_unmap(w->running);
            free(w);
            return NULL;
        }
    }
    return w;
}

int spits_worker_run(void *wp, const void *task, spitssize_t tasksz,
                     spitspush_t push, spitsctx_t ctx)
{
    cmd_worker_t *w = wp;
    cmdfile_rec_t rec;
    cmdrun_t r;
    cmdres_t res;
    uint64_t index;

    if (tasksz <= 0 || cmdtask_parse(task, (size_t)tasksz, &index, &rec) != 0)
        return 1;
    char **argv = malloc((rec.nwords + 1) * sizeof *argv);
    if (!argv)
        return 1;
    const char *p = rec.words;
    for (size_t i = 0; i < rec.nwords; i++, p += strlen(p) + 1)
        argv[i] = (char *)p;
    argv[rec.nwords] = NULL;

    memset(&r, 0, sizeof r);
    int rc = 0;
    unsigned slot = 0;
    if (w->running)
        atomic_fetch_add(w->running, 1);
    if (cmdrun_halt_state(w->o.haltfile)) {
        r.flags = CMDRES_SKIPPED;
    } else {
        cmdrun_opts_t ro = {w->o.timeout, w->o.cap, rec.seq, w->o.haltfile, rec.display,
                            w->env.env, w->env.cwd, w->host, w->o.live ? &w->live : NULL};
        w->live.index = index;
        w->live.tag = w->o.tag ? rec.tag : NULL;
        rc = w->o.slots ? cmd_run_slotted(&w->o, argv, rec.nwords, &ro, &r, &slot)
                        : cmd_run_tries(&w->o, argv, &ro, &r);
    }
    free(argv);
    if (w->running)
        atomic_fetch_sub(w->running, 1);
    if (rc != 0) {
        cmdrun_clear(&r);
        return 1;            /* out of memory or pipes here: try elsewhere */
    }
    memset(&res, 0, sizeof res);
    res.seq = rec.seq;
    res.exitval = r.exitval;
    res.signal = r.signal;
    res.start = r.start;
    res.runtime_ms = r.runtime_ms;
    res.flags = r.flags | (w->o.live ? CMDRES_LIVE : 0);
    res.outlen = r.outlen;
    res.received = r.received;
    res.errlen = r.errlen;
    memcpy(res.host, w->host, sizeof res.host);
    res.slot = slot;
    size_t len = CMDRES_HEADER + r.outlen + r.errlen + (size_t)tasksz;
    unsigned char *buf = malloc(len);
    if (!buf) {
        cmdrun_clear(&r);
        return 1;
    }
    cmdres_pack(&res, buf);
    if (r.outlen)
        memcpy(buf + CMDRES_HEADER, r.out, r.outlen);
    if (r.errlen)
        memcpy(buf + CMDRES_HEADER + r.outlen, r.err, r.errlen);
    memcpy(buf + CMDRES_HEADER + r.outlen + r.errlen, task, (size_t)tasksz);
    cmdrun_clear(&r);
    if (w->o.live) {
        w->live.index = index;
        cmdlive_end(&w->live);      /* (after its lines, in the FIFO's order) */
    }
    push(buf, (spitssize_t)len, ctx);
    free(buf);
    return 0;
}

void spits_worker_finalize(void *wp)
{
    cmd_worker_t *w = wp;
    if (w) {
        cmdenv_clear(&w->env);
        cmdlive_close(&w->live);
        cmdcommit_running_unmap(w->running);
    }
    free(w);
}
