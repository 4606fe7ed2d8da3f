/*
 * crash.c - naming a fatal signal (see crash.h).
 *
 * The handler runs where malloc, stdio and locks may be broken (a module
 * that overran its heap, a thread that died holding a lock), so it uses
 * only what POSIX calls async-signal-safe: atomics, write(2), open(2),
 * close(2), sigaction(2), raise(3), getpid(2), clock_gettime(2). Every
 * string it writes is either fixed, set up beforehand (the file's path
 * and its fixed fields), or a number formatted here by hand. It runs on
 * an alternate stack, so a stack overflow is named too.
 *
 * Where the module was hit is found from the faulting instruction (the
 * signal's context) or, when that is outside the module (a raise(), a
 * libc call it made), from the first return address inside the module
 * on the stack (backtrace(3), primed at set-up so that it allocates
 * nothing here); the file then holds the module's file and the offset in
 * it, which spits_crash_resolve turns into a function and source line
 * with addr2line(1) later, in ordinary code.
 *
 * Per thread, the state is two thread-local words, stored on every module
 * call (plain stores, no syscall, no lock); a worker's words live instead
 * in a process-wide table, so that the handler, on whichever thread it
 * runs, can list what every worker was running.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "crash.h"

typedef spits_crash_slot_t crash_slot_t;   /* (crash.h) */

/* How many running tasks a report lists (the rest are counted): a TM of
 * thousands of workers must not cut its line or its file short. */
#define CRASH_LINE_TASKS 32
#define CRASH_FILE_TASKS 64

/* The signals whose default action is a core dump because the process
 * (or a module in it) is broken, with what a person calls them. */
static const struct {
    int sig;
    const char *name, *what;
} crash_signals[] = {
    {SIGSEGV, "SIGSEGV", "segmentation fault"},
    {SIGBUS, "SIGBUS", "bus error"},
    {SIGFPE, "SIGFPE", "arithmetic exception"},
    {SIGILL, "SIGILL", "illegal instruction"},
    {SIGABRT, "SIGABRT", "aborted"},
};
#define CRASH_NSIGNALS (sizeof crash_signals / sizeof crash_signals[0])

/* The module functions whose call is about one task. */
static const char *const crash_task_fns[] = {
    "spits_job_manager_next_task", "spits_worker_run",
    "spits_committer_commit_pit"};

/* An alternate stack: a stack overflow needs room to report itself. */
#define CRASH_STACK (64 * 1024)

static char crash_program[32];
static atomic_int crash_installed;
static int crash_tty;                /* stderr is a terminal: clear the line */
/* The file and its fixed fields; crash_file_ready is 0 while they change. */
static char crash_path[PATH_MAX];
static char crash_fields[4096];
static size_t crash_fields_len;
static atomic_int crash_file_ready;

/* The loaded module's mapping [lo, hi), its load base (an address minus
 * it is the offset addr2line takes) and its file as a JSON string;
 * crash_mod_ready is 0 while they change. */
static uintptr_t crash_mod_lo, crash_mod_hi, crash_mod_base;
static char crash_mod_json[PATH_MAX * 2 + 3];
static atomic_int crash_mod_ready;
#define CRASH_FRAMES 64

static crash_slot_t crash_workers[SPITS_CRASH_WORKERS];
static atomic_uint crash_nworkers;
static atomic_int crash_busy;        /* a handler is reporting */

static __thread crash_slot_t crash_own __attribute__((tls_model("initial-exec")));
/* crash_own, or a worker's entry */
__thread crash_slot_t *spits_crash_self __attribute__((tls_model("initial-exec")));
static pthread_key_t crash_stack_key;
static pthread_once_t crash_key_once = PTHREAD_ONCE_INIT;

/* The handler's output, built in place (one handler at a time). */
/* (room for the path, and 32 or 64 task ids of 20 digits each) */
static char crash_line[sizeof crash_path + 1536];
static char crash_doc[sizeof crash_fields + sizeof crash_mod_json + 2048];

/* The handler's view of the faulting thread (it may have made no call). */
static crash_slot_t *crash_slot(void)
{
    return spits_crash_self ? spits_crash_self : &crash_own;
}

/* ---- the per-thread state and the alternate stacks ---- */

/* A thread's alternate stack goes with the thread. */
static void crash_stack_free(void *stack)
{
    stack_t none = {.ss_flags = SS_DISABLE};
    sigaltstack(&none, NULL);
    free(stack);
}

static void crash_key_make(void)
{
    pthread_key_create(&crash_stack_key, crash_stack_free);
}

/* Gives the calling thread an alternate stack, once, unless it has one
 * (a sanitizer's, or the program's own). */
static void crash_thread_stack(void)
{
    stack_t ss, old;
    size_t size = CRASH_STACK;

    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
        return;
#ifdef _SC_SIGSTKSZ
    long min = sysconf(_SC_SIGSTKSZ);
    if (min > 0 && (size_t)min * 4 > size)
        size = (size_t)min * 4;
#endif
    if (!(ss.ss_sp = malloc(size)))
        return;
    ss.ss_size = size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0) {
        free(ss.ss_sp);
        return;
    }
    pthread_once(&crash_key_once, crash_key_make);
    pthread_setspecific(crash_stack_key, ss.ss_sp);
}

crash_slot_t *spits_crash_self_init(void)
{
    /* Until the handlers are in, the slow path is taken again, so the
     * thread's stack is made at its first call after them. */
    if (!atomic_load_explicit(&crash_installed, memory_order_relaxed))
        return &crash_own;
    crash_thread_stack();
    spits_crash_self = &crash_own;
    return spits_crash_self;
}

void spits_crash_worker(void)
{
    unsigned i = atomic_fetch_add(&crash_nworkers, 1);
    /* (its stack, once the handlers are in: workers start after
     * spits_crash_init) */
    (void)spits_crash_slot_now();
    if (i < SPITS_CRASH_WORKERS)
        spits_crash_self = &crash_workers[i];
    else
        atomic_store(&crash_nworkers, SPITS_CRASH_WORKERS);
}

/* ---- the handler: async-signal-safe from here to the next rule ---- */

typedef struct {
    char *p;
    size_t len, cap;
} crash_out_t;

static void crash_put(crash_out_t *o, const char *s)
{
    while (*s && o->len + 1 < o->cap)
        o->p[o->len++] = *s++;
    o->p[o->len] = '\0';
}

static void crash_put_u64(crash_out_t *o, uint64_t v)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char s[24];
    for (int i = 0; i < n; i++)
        s[i] = digits[n - 1 - i];
    s[n] = '\0';
    crash_put(o, s);
}

static double crash_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int crash_same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static int crash_has_task(const char *fn)
{
    for (size_t i = 0; fn && i < sizeof crash_task_fns / sizeof crash_task_fns[0]; i++)
        if (crash_same(fn, crash_task_fns[i]))
            return 1;
    return 0;
}

static void crash_write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

/* The first max tasks the workers are running, as "A, B" (line) or "A,B"
 * (doc); returns how many more there are. */
static unsigned crash_put_running(crash_out_t *o, const char *sep, unsigned max)
{
    unsigned n = atomic_load(&crash_nworkers), listed = 0, more = 0;
    for (unsigned i = 0; i < n && i < SPITS_CRASH_WORKERS; i++) {
        const char *fn = atomic_load_explicit(&crash_workers[i].fn,
                                              memory_order_relaxed);
        if (!crash_has_task(fn))
            continue;
        if (listed == max) {
            more++;
            continue;
        }
        if (listed)
            crash_put(o, sep);
        crash_put_u64(o, atomic_load_explicit(&crash_workers[i].task,
                                              memory_order_relaxed));
        listed++;
    }
    return more;
}

static int crash_any_running(void)
{
    crash_out_t o = {crash_doc, 0, 2};   /* (only asks whether it is empty) */
    return crash_put_running(&o, "", 1) > 0 || o.len > 0;
}

/* The one line on stderr. */
static void crash_say(int sig, size_t k, pid_t sender, const char *fn,
                      uint64_t task, int file)
{
    crash_out_t o = {crash_line, 0, sizeof crash_line};
    if (crash_tty)
        crash_put(&o, "\r\033[K");   /* (over a progress line) */
    crash_put(&o, crash_program);
    crash_put(&o, ": error: killed by ");
    if (k < CRASH_NSIGNALS) {
        crash_put(&o, crash_signals[k].name);
        crash_put(&o, " (");
        crash_put(&o, crash_signals[k].what);
        crash_put(&o, ")");
    } else {
        crash_put(&o, "signal ");
        crash_put_u64(&o, (uint64_t)sig);
    }
    if (sender > 0) {
        crash_put(&o, " sent by pid ");
        crash_put_u64(&o, (uint64_t)sender);
    }
    if (fn) {
        crash_put(&o, " in the module's ");
        crash_put(&o, fn);
        if (crash_has_task(fn)) {
            crash_put(&o, ", task ");
            crash_put_u64(&o, task);
        }
    } else {
        crash_put(&o, " in a thread not running a module call");
    }
    if (crash_any_running()) {
        crash_put(&o, "; its workers were running task(s) ");
        unsigned more = crash_put_running(&o, ", ", CRASH_LINE_TASKS);
        if (more) {
            crash_put(&o, " and ");
            crash_put_u64(&o, more);
            crash_put(&o, " more");
        }
    }
    if (file) {
        crash_put(&o, "; details in ");
        crash_put(&o, crash_path);
    }
    crash_put(&o, "\n");
    crash_write_all(STDERR_FILENO, o.p, o.len);
}

static void crash_put_hex(crash_out_t *o, uint64_t v)
{
    char s[20];
    int n = 0;
    for (int shift = 60; shift >= 0; shift -= 4) {
        unsigned d = (unsigned)(v >> shift) & 15;
        if (d || n || shift == 0)
            s[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
    }
    s[n] = '\0';
    crash_put(o, "0x");
    crash_put(o, s);
}

static int crash_in_module(uintptr_t a)
{
    return atomic_load(&crash_mod_ready) && a >= crash_mod_lo && a < crash_mod_hi;
}

/* The faulting instruction's address, from the signal's context (0:
 * not known on this machine). */
static uintptr_t crash_pc(const void *uctx)
{
    const ucontext_t *uc = uctx;
    if (!uc)
        return 0;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

/* Where in the module it was: the faulting instruction if it is the
 * module's, else the call instruction of the first return address on the
 * stack that is (its address minus one: inside that call). The walk
 * starts past the interrupted instruction's own frame when the unwinder
 * shows it (it does across the signal's frame), else past the first
 * frame outside the module: either way past the handler's frames, which
 * share the module's object in the self-test. 0: none. */
static uintptr_t crash_module_address(uintptr_t pc)
{
    void *frames[CRASH_FRAMES];
    int from = 0, past_handler = 0;
    if (crash_in_module(pc))
        return pc;
    if (!atomic_load(&crash_mod_ready))
        return 0;
    int n = backtrace(frames, CRASH_FRAMES);
    for (int i = 0; pc && i < n && !from; i++)
        if ((uintptr_t)frames[i] == pc)
            from = i + 1;
    for (int i = from; i < n; i++) {
        if (!crash_in_module((uintptr_t)frames[i]))
            past_handler = 1;
        else if (past_handler || from)
            return (uintptr_t)frames[i] - 1;
    }
    return 0;
}

/* The crash file: the fixed fields, then what this crash adds. 1 if it
 * was written. */
static int crash_write_file(int sig, size_t k, pid_t sender, const char *fn,
                            uint64_t task, uintptr_t pc)
{
    crash_out_t o = {crash_doc, 0, sizeof crash_doc};
    struct timespec now;

    if (!atomic_load(&crash_file_ready))
        return 0;
    for (size_t i = 0; i < crash_fields_len; i++)
        o.p[o.len++] = crash_fields[i];
    o.p[o.len] = '\0';
    crash_put(&o, "\"signal\":\"");
    crash_put(&o, k < CRASH_NSIGNALS ? crash_signals[k].name : "");
    crash_put(&o, "\",\"signo\":");
    crash_put_u64(&o, (uint64_t)sig);
    crash_put(&o, ",\"sender_pid\":");
    if (sender > 0)
        crash_put_u64(&o, (uint64_t)sender);
    else
        crash_put(&o, "null");
    crash_put(&o, ",\"function\":");
    if (fn) {
        crash_put(&o, "\"");
        crash_put(&o, fn);   /* (module.c's names: nothing to escape) */
        crash_put(&o, "\"");
    } else {
        crash_put(&o, "null");
    }
    crash_put(&o, ",\"task\":");
    if (crash_has_task(fn))
        crash_put_u64(&o, task);
    else
        crash_put(&o, "null");
    crash_put(&o, ",\"running\":[");
    unsigned more = crash_put_running(&o, ",", CRASH_FILE_TASKS);
    crash_put(&o, "],\"running_more\":");
    crash_put_u64(&o, more);
    crash_put(&o, ",\"address\":");
    if (pc) {
        crash_put(&o, "\"");
        crash_put_hex(&o, pc);
        crash_put(&o, "\"");
    } else {
        crash_put(&o, "null");
    }
    uintptr_t at = crash_module_address(pc);
    if (at) {
        crash_put(&o, ",\"module_file\":");
        crash_put(&o, crash_mod_json);
        crash_put(&o, ",\"module_offset\":\"");
        crash_put_hex(&o, at - crash_mod_base);
        crash_put(&o, "\"");
    }
    crash_put(&o, ",\"unix_time\":");
    clock_gettime(CLOCK_REALTIME, &now);
    crash_put_u64(&o, (uint64_t)now.tv_sec);
    crash_put(&o, "}\n");

    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                  0644);
    if (fd < 0)
        return 0;
    crash_write_all(fd, o.p, o.len);
    close(fd);
    return 1;
}

static atomic_int crash_drain_fd = -1;
static const char *_Atomic crash_drain_prefix;

void spits_crash_drain(int fd, const char *prefix)
{
    atomic_store(&crash_drain_prefix, prefix);
    atomic_store(&crash_drain_fd, fd);
}

/* What the drain fd still holds, line by line after the prefix (a line
 * cut by the buffer's end is finished by the next read). */
static void crash_drain_now(void)
{
    int fd = atomic_load(&crash_drain_fd);
    const char *prefix = atomic_load(&crash_drain_prefix);
    size_t plen = 0, have = 0;
    ssize_t n;
    int at_start = 1;

    while (prefix && prefix[plen])
        plen++;
    while (fd >= 0 && (n = read(fd, crash_line + have, sizeof crash_line - have)) > 0) {
        have += (size_t)n;
        char *p = crash_line, *end = crash_line + have, *nl;
        while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
            if (at_start)
                crash_write_all(STDERR_FILENO, prefix, plen);
            crash_write_all(STDERR_FILENO, p, (size_t)(nl - p) + 1);
            p = nl + 1;
            at_start = 1;
        }
        if (p == crash_line && have == sizeof crash_line) {   /* a long line */
            if (at_start)
                crash_write_all(STDERR_FILENO, prefix, plen);
            crash_write_all(STDERR_FILENO, p, have);
            at_start = 0;
            p = end;
        }
        have = (size_t)(end - p);
        memmove(crash_line, p, have);
    }
    if (have) {
        if (at_start)
            crash_write_all(STDERR_FILENO, prefix, plen);
        crash_write_all(STDERR_FILENO, crash_line, have);
        crash_write_all(STDERR_FILENO, "\n", 1);
    }
}

static void crash_on_signal(int sig, siginfo_t *si, void *uctx)
{
    int saved = errno;

    /* Two threads crashing at once: the first reports, then kills the
     * process; the second waits for that. */
    if (atomic_exchange(&crash_busy, 1)) {
        for (;;)
            pause();
    }
    size_t k = 0;
    while (k < CRASH_NSIGNALS && crash_signals[k].sig != sig)
        k++;
    /* Sent with kill(2) by another process: not a fault of this one. */
    pid_t sender = si && si->si_code <= 0 && si->si_pid != getpid() ? si->si_pid : 0;
    crash_slot_t *s = crash_slot();
    const char *fn = atomic_load_explicit(&s->fn, memory_order_relaxed);
    uint64_t task = atomic_load_explicit(&s->task, memory_order_relaxed);

    int file = crash_write_file(sig, k, sender, fn, task, crash_pc(uctx));
    crash_drain_now();   /* (crash_line is free until crash_say) */
    crash_say(sig, k, sender, fn, task, file);

    /* Die of it by the default action (core dump, the shell's status):
     * the raised signal is pending until this handler returns, and a
     * fault's instruction faults again under the default anyway. */
    struct sigaction dfl;
    dfl.sa_handler = SIG_DFL;
    dfl.sa_flags = 0;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

/* ---- set-up and reading back: ordinary code ---- */

int spits_crash_init(const char *program, char *err, size_t errlen)
{
    struct sigaction sa;

    snprintf(crash_program, sizeof crash_program, "%s", program);
    crash_tty = isatty(STDERR_FILENO);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = crash_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < CRASH_NSIGNALS; i++)
        sigaddset(&sa.sa_mask, crash_signals[i].sig);
    for (size_t i = 0; i < CRASH_NSIGNALS; i++)
        if (sigaction(crash_signals[i].sig, &sa, NULL) != 0) {
            snprintf(err, errlen, "cannot catch %s: %s", crash_signals[i].name,
                     strerror(errno));
            return -1;
        }
    atomic_store(&crash_installed, 1);
    crash_thread_stack();
    /* (backtrace loads its unwinder at its first call: not in a handler) */
    void *frame;
    backtrace(&frame, 1);
    return 0;
}

/* dl_iterate_phdr's visit: the object whose base is the module's. */
static int crash_mod_visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if ((uintptr_t)info->dlpi_addr != *(uintptr_t *)data)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo)
            lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    crash_mod_lo = lo;
    crash_mod_hi = hi;
    return 1;
}

void spits_crash_module(const char *path, const void *sym)
{
    Dl_info info;
    struct link_map *lm = NULL;

    atomic_store(&crash_mod_ready, 0);
    if (!sym || !dladdr1(sym, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return;
    uintptr_t base = (uintptr_t)lm->l_addr;
    json_t *name = json_string(path);
    char *q = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    if (q && strlen(q) < sizeof crash_mod_json &&
        dl_iterate_phdr(crash_mod_visit, &base) == 1) {
        memcpy(crash_mod_json, q, strlen(q) + 1);
        crash_mod_base = base;
        atomic_store(&crash_mod_ready, 1);
    }
    free(q);
}

int spits_crash_file(const char *path, json_t *fields, char *err, size_t errlen)
{
    atomic_store(&crash_file_ready, 0);
    if (!path)
        return 0;
    char *s = json_dumps(fields, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t len = s ? strlen(s) : 0;
    /* "{...}" becomes "{...," for the handler to go on from. */
    if (!s || len < 2 || s[len - 1] != '}' || len + 1 >= sizeof crash_fields ||
        strlen(path) >= sizeof crash_path) {
        snprintf(err, errlen, "cannot set up the crash file %s: %s", path,
                 s ? "too long" : "out of memory");
        free(s);
        return -1;
    }
    memcpy(crash_fields, s, len);
    crash_fields[len - 1] = len > 2 ? ',' : ' ';
    crash_fields_len = len;
    free(s);
    snprintf(crash_path, sizeof crash_path, "%s", path);
    atomic_store(&crash_file_ready, 1);
    return 0;
}

int spits_crash_tm_path(const char *jobdir, const char *host, long pid,
                        char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/%s/", jobdir, SPITS_CRASH_DIR);
    if (n < 0 || (size_t)n >= outlen)
        return -1;
    for (const char *h = host; *h; h++) {
        if ((size_t)n + 1 >= outlen)
            return -1;
        out[n++] = *h == '/' ? '_' : *h;
    }
    int m = snprintf(out + n, outlen - (size_t)n, "-%ld", pid);
    return m < 0 || (size_t)m >= outlen - (size_t)n ? -1 : 0;
}

json_t *spits_crash_read(const char *path, char *err, size_t errlen)
{
    json_error_t jerr;
    err[0] = '\0';
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return NULL;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) {
        snprintf(err, errlen, "%s is damaged: %s (line %d)", path, jerr.text,
                 jerr.line);
        return NULL;
    }
    if (!json_is_integer(json_object_get(doc, "signo"))) {
        snprintf(err, errlen, "%s is damaged: it names no signal", path);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* addr2line's answer, read from fd for at most ms; its length. */
static size_t crash_read_bounded(int fd, char *buf, size_t cap, int ms)
{
    size_t have = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    double end = crash_now_ms() + ms;
    for (;;) {
        int left = (int)(end - crash_now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0 || have + 1 >= cap)
            break;
        ssize_t n = read(fd, buf + have, cap - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    return have;
}

int spits_crash_resolve(json_t *doc)
{
    const char *file = json_string_value(json_object_get(doc, "module_file"));
    const char *off = json_string_value(json_object_get(doc, "module_offset"));
    char out[2 * PATH_MAX];
    int fds[2], ws;

    if (!file || !off || json_object_get(doc, "source") || pipe2(fds, O_CLOEXEC) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(fds[1], STDOUT_FILENO);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execlp("addr2line", "addr2line", "-f", "-C", "-e", file, off, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = pid > 0 ? crash_read_bounded(fds[0], out, sizeof out, 5000) : 0;
    close(fds[0]);
    if (pid > 0) {
        kill(pid, SIGKILL);   /* (gone already, unless it hung) */
        waitpid(pid, &ws, 0);
    }
    /* "FUNCTION\nFILE:LINE[ (discriminator N)]\n"; "??" for unknown */
    char *nl = n ? strchr(out, '\n') : NULL;
    if (!nl)
        return 0;
    *nl = '\0';
    char *src = nl + 1, *end = src + strcspn(src, " \n");
    *end = '\0';
    size_t len = (size_t)(end - src);
    if (!len || strncmp(src, "??", 2) == 0 ||
        (len > 2 && (strcmp(end - 2, ":?") == 0 || strcmp(end - 2, ":0") == 0)))
        return 0;
    json_object_set_new(doc, "source", json_string(src));
    if (strcmp(out, "??") != 0)
        json_object_set_new(doc, "source_function", json_string(out));
    return 1;
}

void spits_crash_describe(const json_t *doc, char *out, size_t outlen)
{
    const char *sig = json_string_value(json_object_get(doc, "signal"));
    const char *fn = json_string_value(json_object_get(doc, "function"));
    const char *src = json_string_value(json_object_get(doc, "source"));
    json_t *task = json_object_get(doc, "task");
    json_t *sender = json_object_get(doc, "sender_pid");
    char signame[32], by[48] = "", where[160], at[160] = "";

    if (sig && *sig)
        snprintf(signame, sizeof signame, "%s", sig);
    else
        snprintf(signame, sizeof signame, "signal %lld",
                 (long long)json_integer_value(json_object_get(doc, "signo")));
    if (json_is_integer(sender))
        snprintf(by, sizeof by, " sent by pid %lld",
                 (long long)json_integer_value(sender));
    if (fn && json_is_integer(task))
        snprintf(where, sizeof where, " in the module's %s, task %lld", fn,
                 (long long)json_integer_value(task));
    else if (fn)
        snprintf(where, sizeof where, " in the module's %s", fn);
    else
        snprintf(where, sizeof where, " in a thread not running a module call");
    if (src) {   /* (the file's name: the line says where, the doc in full) */
        const char *slash = strrchr(src, '/');
        snprintf(at, sizeof at, ", at %s", slash ? slash + 1 : src);
    }
    snprintf(out, outlen, "%s%s%s%s", signame, by, where, at);
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST
#include <sys/wait.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "crash selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

/* A child whose worker thread's module call segfaults on task 41: it
 * dies of SIGSEGV, and its crash file says where. */
__attribute__((noinline)) static int crash_selftest_child(const char *path)
{
    char err[256];
    json_t *f = json_pack("{s:s}", "program", "selftest");
    if (spits_crash_init("selftest", err, sizeof err) != 0 ||
        spits_crash_file(path, f, err, sizeof err) != 0)
        _exit(2);
    json_decref(f);
    spits_crash_worker();
    spits_crash_task(41);
    spits_crash_enter("spits_worker_run");
    raise(SIGSEGV);   /* (in libc: the offset is this call's, on the stack) */
    _exit(3);
}

int spits_crash_selftest(void)
{
    char path[PATH_MAX], err[256], line[256];
    json_t *doc = NULL;
    int ws;
    Dl_info self;

    /* This file's object stands for the module. */
    CHECK(dladdr((void *)crash_selftest_child, &self) && self.dli_fname);
    spits_crash_module(self.dli_fname, (void *)crash_selftest_child);
    CHECK(atomic_load(&crash_mod_ready) && crash_in_module((uintptr_t)crash_selftest_child));

    CHECK(spits_crash_tm_path("/j", "a/b", 12, path, sizeof path) == 0);
    CHECK(strcmp(path, "/j/crashes/a_b-12") == 0);
    CHECK(spits_crash_tm_path("/j", "host", 12, path, 14) == -1);

    snprintf(path, sizeof path, "%s/spits-crash-selftest.%ld",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    CHECK(!spits_crash_read(path, err, sizeof err) && !err[0]);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);   /* (its line is not ours) */
        dup2(null, STDERR_FILENO);
        crash_selftest_child(path);
    }
    CHECK(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSEGV);
    CHECK((doc = spits_crash_read(path, err, sizeof err)) != NULL);
    CHECK(strcmp(json_string_value(json_object_get(doc, "program")), "selftest") == 0);
    CHECK(json_integer_value(json_object_get(doc, "signo")) == SIGSEGV);
    CHECK(json_is_null(json_object_get(doc, "sender_pid")));
    CHECK(json_array_size(json_object_get(doc, "running")) == 1);
    CHECK(json_integer_value(json_array_get(json_object_get(doc, "running"), 0)) == 41);
    spits_crash_describe(doc, line, sizeof line);
    CHECK(strcmp(line, "SIGSEGV in the module's spits_worker_run, task 41") == 0);
    /* where: raise() is libc's, so the module's call of it on the stack */
    const char *off = json_string_value(json_object_get(doc, "module_offset"));
    CHECK(strcmp(json_string_value(json_object_get(doc, "module_file")), self.dli_fname) == 0);
    CHECK(off && strncmp(off, "0x", 2) == 0);
    CHECK(strtoull(off, NULL, 16) >= crash_mod_lo - crash_mod_base &&
          strtoull(off, NULL, 16) < crash_mod_hi - crash_mod_base);
    CHECK(strncmp(json_string_value(json_object_get(doc, "address")), "0x", 2) == 0);
    /* addr2line names this file's function, when it is installed (a
     * build without -g gives no line: then nothing is added) */
    if (system("command -v addr2line >/dev/null 2>&1") == 0 && spits_crash_resolve(doc)) {
        const char *src = json_string_value(json_object_get(doc, "source"));
        CHECK(src && strstr(src, "crash.c:"));
        CHECK(strcmp(json_string_value(json_object_get(doc, "source_function")),
                     "crash_selftest_child") == 0);
        spits_crash_describe(doc, line, sizeof line);
        const char *want = "SIGSEGV in the module's spits_worker_run, task 41, at crash.c:";
        CHECK(strncmp(line, want, strlen(want)) == 0);
    }
    CHECK(spits_crash_resolve(doc) == 0);   /* (once: it has a source now, or none) */
    json_decref(doc);
    unlink(path);
    return 0;
fail:
    json_decref(doc);
    unlink(path);
    return -1;
}
#endif /* SPITS_SELFTEST */
