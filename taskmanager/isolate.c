/*
 * isolate.c - crash-isolated workers (spits-tm --isolate).
 *
 * Each worker thread drives one child process that runs the module's
 * worker: a task that segfaults, aborts, calls exit or runs past
 * --task-timeout costs only that child. The worker thread reports the task
 * as CRASHED or TIMEOUT and starts a fresh child for its next task.
 *
 * The child is the TM binary itself (/proc/self/exe, or in the bundle its
 * wrapper: selfexe.h), exec'd in a hidden
 * mode (spits-tm --worker-child MODULE ORIGIN MEASURE: the module's path
 * for messages, the directory its $ORIGIN run path means, and "1" when a
 * --mem-per-task limit wants the peaks of what it starts, else "0") with one end of a socketpair as
 * fd 3 and the TM's private copy of the module as fd 4; exec, not a bare fork, because the TM is multithreaded and a forked
 * copy of it may only call async-signal-safe functions. It dies with the
 * worker thread that started it (PR_SET_PDEATHSIG).
 *
 * A worker thread starts its child as soon as the module is known
 * (tm_child_prestart): with a job dir, before the TM says HELLO, and the
 * TM joins once each child said it is ready, or a bound passed (tm.c
 * tm_setup_start_wait_ms). A child not ready by then is waited for by
 * its first task, within the task's --task-timeout.
 *
 * The pipe protocol, all integers little endian:
 *   child -> parent  'R' once, when the module is loaded and its worker
 *                    process prepared (spits_worker_prepare: a Python
 *                    job's interpreter): the process is ready for tasks
 *   parent -> child  'P' u32 argc, then argc times (u32 len, bytes): the
 *                    phase's argv; the child rebuilds its worker instance
 *                    'T' u32 len, bytes: run this task
 *   child -> parent  u32 status (0 ok, 1 the worker returned non-zero or
 *                    could not be made), u32 len, u32 the largest peak
 *                    resident KiB of the processes it started and waited
 *                    for (getrusage's RUSAGE_CHILDREN; 0 unless MEASURE),
 *                    bytes: the result;
 *                    for a returned failure, its RESULTS payload (wire.h:
 *                    the code, then the module's words on it, if any)
 *
 * With a --mem-per-task limit the worker thread measures its child's
 * peak resident memory (VmHWM, which the kernel keeps per process) every
 * CHILD_MEM_POLL_MS while a task runs and once as it ends, with the
 * largest peak of the processes the child started (a command of
 * spits-parallel's) as the task ends; a child over the limit is killed
 * and its task fails with a record that says so. Both are high-water
 * marks: earlier tasks stayed under, so a mark over is this task's. A
 * high-water mark the kernel keeps is what makes the cause sure: a
 * refused allocation (RLIMIT_AS) leaves no trace, and a cgroup of its
 * own is seldom the TM's to make. Every worker process asks the kernel's
 * OOM killer to take it first (oom_score_adj 1000).
 *
 * A tm_child_t belongs to one worker thread; nothing else touches it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bytes.h"
#include "log.h"
#include "push.h"
#include "resources.h"
#include "selfexe.h"
#include "tm.h"
#include "util.h"

extern char **environ;

#define CHILD_FD 3
/* The TM's sealed copy of the module: the child loads the very bytes the
 * TM checked against the JM's hash, whatever the file on disk holds now. */
#define CHILD_MODULE_FD 4

/* How often a task's process is measured while it runs, with a
 * --mem-per-task limit (and once more as it ends). */
#define CHILD_MEM_POLL_MS 50

struct tm_child {
    char *const *env;          /* on top of the TM's (borrowed), or NULL */
    uint64_t mem_limit;        /* --mem-per-task, bytes (0: none) */
    pid_t pid;                 /* 0: not running */
    int fd;
    int status_fd;             /* the child's /proc/PID/status, with a limit */
    const tm_phase_t *phase;   /* the phase the child's instance is for */
    int ready;                 /* its 'R' was read */
};

tm_child_t *tm_child_new(char *const *env, uint64_t mem_limit)
{
    tm_child_t *c = calloc(1, sizeof *c);
    if (c) {
        c->fd = -1;
        c->status_fd = -1;
        c->env = env;
        c->mem_limit = mem_limit;
    }
    return c;
}

/* The TM's environment with extra's variables set (replacing any of the
 * same name), for execve: made before fork, as the child may not
 * allocate. NULL when out of memory. */
static char **child_environ(char *const *extra)
{
    size_t n = 0, k = 0, m = 0;
    while (environ[n])
        n++;
    while (extra[m])
        m++;
    char **env = malloc((n + m + 1) * sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(environ[i], "=");
        int replaced = 0;
        for (size_t j = 0; j < m && !replaced; j++)
            replaced = strncmp(extra[j], environ[i], len + 1) == 0;
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++)
        env[k++] = extra[j];
    env[k] = NULL;
    return env;
}

/* Reaps the child; why gets how it ended ("signal 11, Segmentation fault"). */
static void child_reap(tm_child_t *c, char *why, size_t whylen)
{
    int st = 0;
    if (c->fd >= 0)
        close(c->fd);
    if (c->status_fd >= 0)
        close(c->status_fd);
    c->fd = c->status_fd = -1;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(st))
        snprintf(why, whylen, "signal %d, %s", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        snprintf(why, whylen, "exit status %d", WEXITSTATUS(st));
    else
        snprintf(why, whylen, "wait status %d", st);
    c->pid = 0;
    c->phase = NULL;
    c->ready = 0;
}

void tm_child_destroy(tm_child_t **cp)
{
    tm_child_t *c = *cp;
    char why[64];
    if (!c)
        return;
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        child_reap(c, why, sizeof why);
    }
    free(c);
    *cp = NULL;
}

/* The child's status file, which the kernel keeps for the process
 * (its pid, across its exec): read again at offset 0, it is new. */
static int child_open_status(tm_child_t *c)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)c->pid);
    c->status_fd = open(path, O_RDONLY | O_CLOEXEC);
    return c->status_fd >= 0 ? 0 : -1;
}

/* The child's peak resident memory so far (VmHWM), in bytes; 0 when it
 * cannot be read (the process is gone: its end tells then). */
static uint64_t child_peak(const tm_child_t *c)
{
    char buf[4096];
    ssize_t n = pread(c->status_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *hwm = strstr(buf, "\nVmHWM:");
    return hwm ? strtoull(hwm + 7, NULL, 10) * 1024 : 0;
}

/* Whether the child, or a process it started (peak of the largest, in
 * bytes), went over its limit; if so it is killed and why says so, for
 * the task's record and the log. */
static int child_over(tm_child_t *c, uint64_t started_peak, char *why, size_t whylen)
{
    uint64_t peak = child_peak(c);
    int own = peak > c->mem_limit;
    if (!own && started_peak <= c->mem_limit)
        return 0;
    char limit[32], ended[64];
    kill(c->pid, SIGKILL);
    child_reap(c, ended, sizeof ended);
    spits_res_size_text(c->mem_limit, limit, sizeof limit);
    snprintf(why, whylen, "exceeded --mem-per-task %s: %s reached %.1fM resident",
             limit, own ? "its process" : "a process it started",
             (double)(own ? peak : started_peak) / (1 << 20));
    return 1;
}

/* Waits until the child has written (0), is past the deadline (-2) or
 * over its limit (-3: killed, why says so), measuring it meanwhile. */
static int child_await(tm_child_t *c, int64_t deadline, char *why, size_t whylen)
{
    for (;;) {
        int wait_ms = CHILD_MEM_POLL_MS;
        if (deadline) {
            int64_t left = deadline - spits_now_ms();
            if (left <= 0)
                return -2;
            if (left < wait_ms)
                wait_ms = (int)left;
        }
        struct pollfd pfd = {c->fd, POLLIN, 0};
        int rc = poll(&pfd, 1, wait_ms);
        if (rc > 0 || (rc < 0 && errno != EINTR))
            return 0;   /* (read_all meets what it is: data, an end, an error) */
        if (child_over(c, 0, why, whylen))
            return -3;
    }
}

static int child_start(tm_child_t *c, const spits_module_t *mod)
{
    const char *module_path = spits_module_path(mod);
    const char *origin = spits_module_origin(mod);
    int modfd = spits_module_fd(mod), sv[2];
    /* /proc/self/exe, not its target: that stays right if the file is
     * replaced while the TM runs */
    char self[PATH_MAX] = "/proc/self/exe";
    if (spits_selfexe_wrapper("spits-tm", self, sizeof self) < 0)
        return -1;
    char **env = c->env ? child_environ(c->env) : environ;
    if (!env)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        if (env != environ)
            free(env);
        return -1;
    }
    pid_t parent = getpid();
    /* The group's SIGTERM/SIGINT must never reach a worker process (see
     * tm_child_main): they stay blocked across fork, the child ignores
     * them before exec (an ignored signal stays ignored through exec) and
     * only then unblocks, so there is no moment in which one kills it. */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    pthread_sigmask(SIG_BLOCK, &term, &old);
    pid_t pid = fork();
    if (pid < 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(sv[0]);
        close(sv[1]);
        if (env != environ)
            free(env);
        return -1;
    }
    if (pid == 0) {
        /* Async-signal-safe calls only until exec. */
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGTERM, &ign, NULL);
        sigaction(SIGINT, &ign, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        /* Above both targets first, so neither dup2 overwrites the other's
         * source; dup2 clears close-on-exec on the targets only. */
        int sock = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
        int image = fcntl(modfd, F_DUPFD_CLOEXEC, 10);
        if (sock < 0 || image < 0 || dup2(sock, CHILD_FD) < 0 ||
            dup2(image, CHILD_MODULE_FD) < 0)
            _exit(127);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        char *args[] = {"spits-tm", "--worker-child", (char *)module_path,
                        (char *)(origin ? origin : ""), c->mem_limit ? "1" : "0", NULL};
        execve(self, args, env);
        _exit(127);
    }
    if (env != environ)
        free(env);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(sv[1]);
    c->pid = pid;
    c->fd = sv[0];
    c->phase = NULL;
    c->ready = 0;
    if (c->mem_limit && child_open_status(c) != 0) {
        int err = errno;
        char why[64];
        kill(pid, SIGKILL);
        child_reap(c, why, sizeof why);
        errno = err;    /* (no process runs unmeasured under a limit) */
        return -1;
    }
    return 0;
}

static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Reads exactly n bytes by the deadline. 0; -1 EOF or error; -2 timeout. */
static int read_all(int fd, void *buf, size_t n, int64_t deadline)
{
    unsigned char *p = buf;
    while (n > 0) {
        int wait_ms = -1;
        if (deadline) {
            int64_t left = deadline - spits_now_ms();
            if (left <= 0)
                return -2;
            wait_ms = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        int rc = poll(&pfd, 1, wait_ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        if (rc == 0)
            return -2;
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int send_phase(tm_child_t *c, const tm_phase_t *ph)
{
    spits_buf_t b = {0};
    size_t need = 5;
    for (int i = 0; i < ph->argc; i++)
        need += 4 + strlen(ph->argv[i]);
    if (spits_buf_reserve(&b, need) != 0)
        return -1;
    b.data[0] = 'P';
    put_u32(b.data + 1, (uint32_t)ph->argc);
    b.len = 5;
    for (int i = 0; i < ph->argc; i++) {
        size_t n = strlen(ph->argv[i]);
        put_u32(b.data + b.len, (uint32_t)n);
        memcpy(b.data + b.len + 4, ph->argv[i], n);
        b.len += 4 + n;
    }
    struct iovec iov = {b.data, b.len};
    int rc = write_all(c->fd, &iov, 1);
    spits_buf_free(&b);
    if (rc == 0)
        c->phase = ph;
    return rc;
}

/* Reads the child's 'R' by the deadline (0: none), if not read yet. 0;
 * -1 it ended, or wrote something else; -2 timeout. */
static int child_ready(tm_child_t *c, int64_t deadline)
{
    unsigned char r;
    if (c->ready)
        return 0;
    int rc = read_all(c->fd, &r, 1, deadline);
    if (rc == 0 && r != 'R') {
        kill(c->pid, SIGKILL);   /* (not ours, whatever runs: reaped next) */
        rc = -1;
    }
    c->ready = rc == 0;
    return rc;
}

uint32_t tm_child_run(tm_child_t *c, const spits_module_t *mod,
                      const tm_item_t *it, int64_t timeout_ms,
                      uint64_t max_result, spits_buf_t *result, char *why,
                      size_t whylen)
{
    unsigned char hdr[12];
    int64_t deadline = timeout_ms > 0 ? spits_now_ms() + timeout_ms : 0;
    int rc;

    result->len = 0;
    why[0] = '\0';
    /* A child found dead before it got the task (it died idle, say of an
     * earlier task's stray thread) is replaced once: the task is not to
     * blame for that. */
    for (int attempt = 0;; attempt++) {
        if (!c->pid && child_start(c, mod) != 0) {
            snprintf(why, whylen, "cannot start a worker process: %s", strerror(errno));
            return SPITS_ST_FAILED;
        }
        /* (a process that dies as it starts is the task's crash, as one
         * that dies running it) */
        if ((rc = child_ready(c, deadline)) != 0)
            goto ended;
        hdr[0] = 'T';
        put_u32(hdr + 1, it->len);
        struct iovec iov[2] = {{hdr, 5}, {(void *)it->data, it->len}};
        if ((c->phase == it->phase || send_phase(c, it->phase) == 0) &&
            write_all(c->fd, iov, it->len ? 2 : 1) == 0)
            break;
        if (attempt == 1)
            goto died;
        child_reap(c, why, whylen);
        spits_debug("a worker process was found dead (%s); starting another", why);
        why[0] = '\0';
    }
    if (c->mem_limit && (rc = child_await(c, deadline, why, whylen)) != 0)
        goto ended;
    if ((rc = read_all(c->fd, hdr, 12, deadline)) != 0)
        goto ended;
    uint32_t status = get_u32(hdr), len = get_u32(hdr + 4);
    uint64_t started_peak = (uint64_t)get_u32(hdr + 8) * 1024;
    if (len > max_result || spits_buf_reserve(result, len) != 0) {
        char ended_by[64];
        kill(c->pid, SIGKILL);
        child_reap(c, ended_by, sizeof ended_by);
        snprintf(why, whylen, len > max_result
                 ? "its %u-byte result is over --max-task-bytes"
                 : "out of memory for its %u-byte result", len);
        return SPITS_ST_FAILED;
    }
    if ((rc = read_all(c->fd, result->data, len, deadline)) != 0)
        goto ended;
    /* (a peak too short for child_await to see, or the last one) */
    if (c->mem_limit && child_over(c, started_peak, why, whylen)) {
        rc = -3;
        goto ended;
    }
    result->len = len;
    return status == 0 ? SPITS_ST_OK : SPITS_ST_FAILED;
ended:
    if (rc == -3) {
        /* a failure the worker did not return: its record says why */
        result->len = spits_buf_reserve(result, 4 + SPITS_FAIL_TEXT_MAX) == 0
                      ? spits_fail_payload(result->data, TM_FAIL_RC_LIMIT, why) : 0;
        return SPITS_ST_FAILED;
    }
    if (rc == -2) {
        kill(c->pid, SIGKILL);
        child_reap(c, why, whylen);
        snprintf(why, whylen, "ran past --task-timeout (%.1f s)", timeout_ms / 1000.0);
        return SPITS_ST_TIMEOUT;
    }
died:
    child_reap(c, why, whylen);
    return SPITS_ST_CRASHED;
}

int tm_child_prestart(tm_child_t *c, const spits_module_t *mod, int64_t wait_ms,
                      char *why, size_t whylen)
{
    why[0] = '\0';
    if (!c->pid && child_start(c, mod) != 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
    int rc = child_ready(c, spits_now_ms() + (wait_ms > 0 ? wait_ms : 1));
    if (rc == -2)
        return -2;   /* (left to start: its first task waits for it) */
    if (rc != 0)
        child_reap(c, why, whylen);
    return rc;
}

/* --- the child ---------------------------------------------------------- */

static int child_read(void *buf, size_t n)
{
    return read_all(CHILD_FD, buf, n, 0);
}

/* The child's one task at a time (it has one thread). */
typedef struct {
    spits_buf_t buf;           /* the last push's bytes */
    unsigned pushes;
    spits_push_fault_t fault;  /* the first push that could not be kept */
    spitssize_t bad_size;
} child_result_t;

/* Once a worker process: the TM's other workers have processes of their
 * own, so each may warn once. */
static atomic_int child_extra_warned;

/* Keeps the last push; the TM checks the size against --max-task-bytes. */
static void child_push(const void *data, spitssize_t size, spitsctx_t ctx)
{
    child_result_t *r = (child_result_t *)ctx;
    r->pushes++;
    spits_push_keep(&r->buf, data, size, UINT32_MAX, &r->fault, &r->bad_size);
}

/* Whether the task's pushes let it succeed; says why not (rare). */
static int child_pushes_ok(const child_result_t *r)
{
    char why[200];
    if (r->pushes > 1)
        spits_push_warn_extra(&child_extra_warned, "spits_worker_run",
                              r->pushes, "a task of this worker process");
    if (r->fault == SPITS_PUSH_OK)
        return 1;
    spits_push_describe(why, sizeof why, r->fault, "spits_worker_run",
                        r->bad_size, UINT32_MAX, "the largest result");
    spits_error("%s; the task fails", why);
    return 0;
}

/* The kernel's OOM killer, short of memory, takes a worker process
 * before anything else: a task is lost, not the TM and all it holds. */
static void child_oom_first(void)
{
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1000", 4) != 4)
        spits_debug("cannot raise this worker's oom_score_adj: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
}

int tm_child_main(int argc, char **argv)
{
    char err[1024];
    spits_module_t *mod;
    spits_inst_t inst;
    int have_inst = 0;
    spits_buf_t task = {0};
    child_result_t result = {{0}, 0, SPITS_PUSH_OK, 0};
    char **pargv = NULL;
    int pargc = 0;

    spits_log_init("spits-tm worker", SPITS_LOG_INFO);
    child_oom_first();
    /* stdout is the TM's pipe (tm.c): each line goes at once, so a worker
     * that is killed (a timeout) loses no finished line. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Slurm (or Ctrl-C) signals the whole process group; the TM drains
     * and decides when a worker process ends (SIGKILL, or closing the
     * pipe), so a running task is not cut short and blamed for it. The
     * TM set both to SIG_IGN before exec already; this is for clarity. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    if (argc != 5) {
        spits_error("--worker-child is spits-tm's own: not for use by hand");
        return 2;
    }
    int measure = strcmp(argv[4], "1") == 0;
    spits_image_t *img = spits_image_read_fd(CHILD_MODULE_FD, argv[2],
                                             argv[3][0] ? argv[3] : NULL,
                                             err, sizeof err);
    close(CHILD_MODULE_FD);
    mod = img ? spits_module_load(&img, err, sizeof err) : NULL;
    if (!mod) {
        spits_error("%s", err);
        return 1;
    }
    /* Ready for tasks once the module's slow start is done (a Python
     * job's interpreter): the TM joins the job then. */
    spits_module_worker_prepare(mod);
    if (write(CHILD_FD, "R", 1) != 1)
        return 1;
    for (;;) {
        unsigned char h[5];
        if (child_read(h, 5) != 0)
            break;                  /* the TM closed the pipe: done */
        uint32_t n = get_u32(h + 1);
        if (h[0] == 'P') {
            for (int i = 0; i < pargc; i++)
                free(pargv[i]);
            free(pargv);
            pargc = 0;
            pargv = calloc((size_t)n + 1, sizeof *pargv);
            if (!pargv)
                return 1;
            for (uint32_t i = 0; i < n; i++) {
                unsigned char l[4];
                if (child_read(l, 4) != 0 || !(pargv[i] = calloc(get_u32(l) + 1, 1)) ||
                    child_read(pargv[i], get_u32(l)) != 0)
                    return 1;
                pargc++;
            }
            if (have_inst)
                spits_module_worker_free(mod, &inst);
            have_inst = spits_module_worker_new(mod, &inst, pargc,
                                                (const char **)pargv) == 0;
            if (!have_inst)
                spits_error("spits_worker_new returned NULL; its tasks fail");
            continue;
        }
        if (h[0] != 'T' || spits_buf_reserve(&task, n) != 0 ||
            child_read(task.data, n) != 0)
            return 1;
        uint32_t status = 1;
        result.buf.len = 0;
        result.pushes = 0;
        result.fault = SPITS_PUSH_OK;
        int rc = have_inst ? spits_module_worker_run(mod, &inst, task.data,
                                                     (spitssize_t)n, child_push,
                                                     &result) : 1;
        int returned = 0;     /* the failure is the code the worker returned */
        if ((result.pushes <= 1 && result.fault == SPITS_PUSH_OK) ||
            child_pushes_ok(&result))
            status = rc != 0, returned = rc != 0;
        unsigned char rh[12], failed[4 + SPITS_FAIL_TEXT_MAX];
        struct rusage ru;
        /* (a failure sends its record's payload: workers.c reports it) */
        size_t len = status == 0 ? result.buf.len
                     : returned ? spits_fail_payload(failed, rc,
                                      spits_module_worker_error(mod, &inst)) : 0;
        put_u32(rh, status);
        put_u32(rh + 4, (uint32_t)len);
        put_u32(rh + 8, measure && getrusage(RUSAGE_CHILDREN, &ru) == 0 && ru.ru_maxrss > 0
                        ? (uint32_t)(ru.ru_maxrss < UINT32_MAX ? ru.ru_maxrss : UINT32_MAX)
                        : 0);
        struct iovec iov[2] = {{rh, 12}, {status == 0 ? result.buf.data : failed, len}};
        if (write_all(CHILD_FD, iov, iov[1].iov_len ? 2 : 1) != 0)
            return 1;
    }
    if (have_inst)
        spits_module_worker_free(mod, &inst);
    spits_module_close(&mod);
    spits_buf_free(&task);
    spits_buf_free(&result.buf);
    return 0;
}
