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
 * commands in TASKFILE.running (cmd_running_map) for the committer's
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
 * nothing twice. A command may still run twice (a copy re-sent after
 * its TM was lost, or --max-copies above 1): only one result is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdenv.h"
#include "cmdfile.h"
#include "cmdlive.h"
#include "cmdorder.h"
#include "cmdrun.h"
#include "cmdstream.h"
#include "spits.h"

#define CMD_DEFAULT_CAP (64ull << 20)

typedef struct {
    const char *taskfile, *joblog, *results, *status, *envfile;
    char haltfile[PATH_MAX];
    int keep, tag, halt_now, spool, local;
    long halt_fail;               /* 0: never halt */
    double timeout;
    uint64_t cap;
    long retries;                 /* runs of a failing command (0, 1: one) */
    double delay;                 /* seconds between a TM's starts */
    int slots;                    /* --slots */
    int live;                     /* --line-buffer */
    char progress;                /* --progress: 'b', 'e', 'p', or 0 */
} cmd_opts_t;

/* 1 once the committer halted the job: the generator stops. (The job
 * manager and committer share this process.) */
static atomic_int cmd_halted;

/* Tasks the generator made so far: --progress's total, as GNU parallel
 * counts the input read so far. (The generator and committer share this
 * process; the generator stores, the committer loads.) */
static _Atomic uint64_t cmd_made;

static int cmd_opts(int argc, const char **argv, cmd_opts_t *o)
{
    char *end;
    memset(o, 0, sizeof *o);
    o->cap = CMD_DEFAULT_CAP;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep-order")) {
            o->keep = 1;
            continue;
        }
        if (!strcmp(a, "--tag")) {
            o->tag = 1;
            continue;
        }
        if (!strcmp(a, "--spool")) {
            o->spool = 1;
            continue;
        }
        if (!strcmp(a, "--local")) {
            o->local = 1;
            continue;
        }
        if (!strcmp(a, "--slots")) {
            o->slots = 1;
            continue;
        }
        if (!strcmp(a, "--line-buffer")) {
            o->live = 1;
            continue;
        }
        if (a[0] != '-' && i + 1 == argc) {
            o->taskfile = a;
            continue;
        }
        if (!v || a[0] != '-') {
            fprintf(stderr, "cmd: unknown or incomplete argument '%s' (usage: cmd "
                    "[OPTIONS] TASKFILE)\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--results")) {
            o->results = v;
        } else if (!strcmp(a, "--joblog")) {
            o->joblog = v;
        } else if (!strcmp(a, "--status")) {
            o->status = v;
        } else if (!strcmp(a, "--env-file")) {
            o->envfile = v;
        } else if (!strcmp(a, "--timeout")) {
            errno = 0;
            o->timeout = strtod(v, &end);
            if (errno || end == v || *end || !(o->timeout > 0) || o->timeout > 1e9) {
                fprintf(stderr, "cmd: bad --timeout '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--output-cap")) {
            errno = 0;
            o->cap = strtoull(v, &end, 10);
            if (errno || end == v || *end || o->cap == 0 || v[0] == '-') {
                fprintf(stderr, "cmd: bad --output-cap '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--retries") || !strcmp(a, "--delay")) {
            errno = 0;
            double d = strtod(v, &end);
            if (errno || end == v || *end || !(d >= 0) || d > 1e6) {
                fprintf(stderr, "cmd: bad %s '%s'\n", a, v);
                return -1;
            }
            if (a[2] == 'r')
                o->retries = (long)d;
            else
                o->delay = d;
        } else if (!strcmp(a, "--progress")) {
            if (strcmp(v, "bar") && strcmp(v, "eta") && strcmp(v, "progress")) {
                fprintf(stderr, "cmd: bad --progress '%s'\n", v);
                return -1;
            }
            o->progress = v[0];
        } else if (!strcmp(a, "--halt")) {
            long n;
            if (!strncmp(v, "now,fail=", 9))
                o->halt_now = 1;
            else if (strncmp(v, "soon,fail=", 10)) {
                fprintf(stderr, "cmd: bad --halt '%s'\n", v);
                return -1;
            }
            errno = 0;
            n = strtol(strchr(v, '=') + 1, &end, 10);
            if (errno || *end || end == strchr(v, '=') + 1 || n < 1) {
                fprintf(stderr, "cmd: bad --halt '%s'\n", v);
                return -1;
            }
            o->halt_fail = n;
        } else {
            fprintf(stderr, "cmd: unknown option '%s'\n", a);
            return -1;
        }
    }
    if (!o->taskfile) {
        fprintf(stderr, "cmd: no TASKFILE given\n");
        return -1;
    }
    snprintf(o->haltfile, sizeof o->haltfile, "%s.halt", o->taskfile);
    return 0;
}

static void cmd_put64(char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (char)(v >> (8 * i));
}

static uint64_t cmd_get64(const void *p)
{
    const unsigned char *b = p;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* A task's bytes (cmd.c's header): its index and its parsed record; 0,
 * or -1 if malformed. */
static int cmd_task_parse(const void *task, size_t len, uint64_t *index, cmdfile_rec_t *rec)
{
    if (len <= 8 || cmdfile_parse((const char *)task + 8, len - 8, rec) != 0)
        return -1;
    *index = cmd_get64(task);
    return 0;
}

/* ---- job manager: the tasks, from the file or the stream ---- */

typedef struct {
    cmd_opts_t o;
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
    if (!g || cmd_opts(argc, argv, &g->o) != 0) {
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
    if (atomic_load(&cmd_halted))
        return 0;
    int rc = cmdstream_next(g->in, &body, &len, err, sizeof err);
    /* A stream cut after a halt (the committer's, or spits-parallel's
     * when a signal stops it) ends the tasks: the job is stopping. */
    if (rc < 0 && (atomic_load(&cmd_halted) || cmdrun_halt_state(g->o.haltfile)))
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
    cmd_put64(g->task, g->index++);
    atomic_store(&cmd_made, g->index);
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

/* --halt soon with this machine's TMs (--local): the commands running
 * now, for GNU parallel's "Waiting for N jobs", in TASKFILE.running, a
 * counter every TM's workers and the committer map (MAP_SHARED): a
 * worker adds one from before it looks at the halt file to its command's
 * end, the committer reads it after it writes that file. NULL when not
 * counted (TMs elsewhere: "the running jobs" is said instead). */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "the counter is shared between processes");

static _Atomic long *cmd_running_map(const cmd_opts_t *o)
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

static void cmd_running_unmap(_Atomic long *running)
{
    if (running)
        munmap((void *)running, sizeof(long));
}

/* ---- worker: runs one command ---- */

typedef struct {
    cmd_opts_t o;
    char host[CMDRES_HOST];
    cmdenv_t env;                 /* --env-file's: loaded by worker_new, read-only after */
    cmdlive_t live;               /* --line-buffer: this worker thread's channel */
    _Atomic long *running;        /* cmd_running_map's, or NULL */
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
static int cmd_run_tries(const cmd_opts_t *o, char **argv, const cmdrun_opts_t *ro,
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
static int cmd_run_slotted(const cmd_opts_t *o, char **argv, size_t argc,
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
    if (!w || cmd_opts(argc, argv, &w->o) != 0) {
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
    w->running = cmd_running_map(&w->o);
    if (w->o.live) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s", w->o.taskfile, CMDLIVE_SUFFIX);
        if (cmdlive_open(&w->live, path, err, sizeof err) != 0) {
            fprintf(stderr, "cmd: %s: no command runs here\n", err);
            cmdenv_clear(&w->env);
            cmd_running_unmap(w->running);
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

    if (tasksz <= 0 || cmd_task_parse(task, (size_t)tasksz, &index, &rec) != 0)
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
        cmd_running_unmap(w->running);
    }
    free(w);
}

/* ---- committer: outputs, joblog, results ---- */

typedef struct {
    cmd_opts_t o;
    cmdorder_t held;              /* --keep-order: results waiting */
    uint64_t *emitted;            /* task numbers a past life wrote out, sorted */
    size_t nemitted;
    int done;                     /* TASKFILE.done, appended to, or -1 */
    int joblog;                   /* fd, or -1 */
    uint64_t failed;
    int halt_rc;                  /* set once halted: the exit status */
    int halted;
    int write_failed;             /* a joblog or --results write failed */
    int live, job_committed;      /* made whole; commit_job called */
    uint64_t ndone;               /* --progress: commands written */
    double t0, shown;             /* --progress: start, last line (monotonic) */
    int tty;                      /* --progress: stderr is a terminal */
    _Atomic long *running;        /* cmd_running_map's, or NULL */
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

/* Whether a past life of the job manager wrote task seq out. */
static int cmd_emitted(const cmd_co_t *c, uint64_t seq)
{
    size_t lo = 0, hi = c->nemitted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->emitted[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nemitted && c->emitted[lo] == seq;
}

/* A result (sz bytes): its header, and the index and record of the task
 * it carries at its end; 0, or -1 if malformed. */
static int cmd_result_parse(const void *result, size_t sz, cmdres_t *r, uint64_t *index,
                            cmdfile_rec_t *rec)
{
    if (cmdres_unpack(r, result, sz) != 0)
        return -1;
    size_t at = CMDRES_HEADER + r->outlen + r->errlen;
    return cmd_task_parse((const char *)result + at, sz - at, index, rec);
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
    uint64_t done[2] = {r.seq, r.exitval != 0 || r.signal != 0};
    if (c->done >= 0 && cmd_write_all(c->done, (const char *)done, sizeof done) != 0) {
        fprintf(stderr, "cmd: cannot write %s.done: %s\n", c->o.taskfile, strerror(errno));
        close(c->done);
        c->done = -1;
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

static int cmd_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* TASKFILE.done: what a past life of the job manager wrote out (pairs
 * of task number and failed flag), then kept open to add to. */
static int cmd_done_load(cmd_co_t *c)
{
    char path[PATH_MAX];
    uint64_t rec[2];
    snprintf(path, sizeof path, "%s.done", c->o.taskfile);
    c->done = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (c->done < 0) {
        fprintf(stderr, "cmd: cannot open %s: %s\n", path, strerror(errno));
        return -3;
    }
    size_t cap = 0;
    while (read(c->done, rec, sizeof rec) == (ssize_t)sizeof rec) {
        if (c->nemitted == cap) {
            cap = cap ? cap * 2 : 1024;
            uint64_t *e = realloc(c->emitted, cap * sizeof *e);
            if (!e) {
                fprintf(stderr, "cmd: out of memory reading %s\n", path);
                return -3;
            }
            c->emitted = e;
        }
        c->emitted[c->nemitted++] = rec[0];
        c->failed += rec[1] != 0;
    }
    if (c->nemitted)   /* (qsort takes no NULL, even for 0 items) */
        qsort(c->emitted, c->nemitted, sizeof *c->emitted, cmd_u64_cmp);
    return 0;
}

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    int rc;
    cmd_co_t *c = calloc(1, sizeof *c);
    if (!c || cmd_opts(argc, argv, &c->o) != 0) {
        free(c);
        return NULL;
    }
    c->joblog = c->done = -1;
    c->running = cmd_running_map(&c->o);
    c->t0 = c->shown = cmd_now();
    c->tty = c->o.progress && isatty(STDERR_FILENO);
    rc = cmd_done_load(c);
    if (rc == 0 && c->o.joblog && !strcmp(c->o.joblog, "-"))
        c->joblog = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);   /* GNU parallel's - */
    else if (rc == 0 && c->o.joblog &&
        (c->joblog = open(c->o.joblog, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666)) < 0) {
        fprintf(stderr, "cmd: cannot open the joblog %s: %s\n", c->o.joblog, strerror(errno));
        rc = -3;
    }
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
        (c->nemitted && cmd_emitted(c, r.seq))) {
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
    cmd_running_unmap(c->running);
    free(c->emitted);
    if (c->done >= 0)
        close(c->done);
    if (c->joblog >= 0)
        close(c->joblog);
    free(c);
}
