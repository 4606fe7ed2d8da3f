/*
 * crash.h - naming a fatal signal: which module function, and which task,
 * a process of spits died in.
 *
 * Each thread keeps the module function it is in (module.c sets it around
 * every call) and the task that call is about (the committer, the
 * generator, a worker). A handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and
 * SIGABRT, on an alternate stack, then says in one line on stderr which
 * signal, function and task it was, writes the same as a small JSON
 * document into a file whose path and fixed fields were set beforehand
 * (the handler may not allocate, so nothing is formatted there but numbers,
 * by hand), and dies of the signal by its default action, so that exit
 * statuses and core dumps stay what they were. Worker threads also
 * publish their tasks in a table the handler walks: a Task Manager's
 * report names every task its workers were running.
 *
 * A crash file is read back with spits_crash_read (jobmanager/crashes.c
 * for a TM's, spits-status for the JM's).
 */
#ifndef SPITS_CRASH_H
#define SPITS_CRASH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* The JM's crash file in its job dir, and the directory TMs write theirs
 * into (spits_crash_tm_path). */
#define SPITS_CRASH_FILE "crash.json"
#define SPITS_CRASH_DIR "crashes"
/* Worker threads whose tasks a crash report lists; more run unlisted. */
#define SPITS_CRASH_WORKERS 1024

/* Installs the handlers, for the whole process; program names it in the
 * line ("spits-jm"). The calling thread gets its alternate stack; the
 * others get theirs at their first module call. 0, or -1 with err set. */
int spits_crash_init(const char *program, char *err, size_t errlen);
/* The file the handler writes, with fields (an object of strings and
 * numbers: job id, host, pid...) put first in it; path NULL writes none.
 * fields is not kept. 0, or -1 with err set (then no file is written). */
int spits_crash_file(const char *path, json_t *fields, char *err,
                     size_t errlen);

/* A thread's module function and task, as the handler reads them; one a
 * cache line (each worker stores into its own at every task). */
typedef struct {
    _Alignas(64) _Atomic(const char *) fn;
    _Atomic uint64_t task;
} spits_crash_slot_t;

/* The calling thread's slot once it has made its first call below
 * (NULL before, and before spits_crash_init). The calls are inline: the
 * generator, the committer and every worker make them at every task. */
/* (initial-exec: libspits is linked into the programs, never dlopen()ed,
 * so no __tls_get_addr call at each access from its -fPIC objects) */
extern __thread spits_crash_slot_t *spits_crash_self
    __attribute__((tls_model("initial-exec")));
/* The first call of a thread: its slot, and its alternate stack. */
spits_crash_slot_t *spits_crash_self_init(void);

static inline spits_crash_slot_t *spits_crash_slot_now(void)
{
    spits_crash_slot_t *s = spits_crash_self;
    return s ? s : spits_crash_self_init();
}

/* The calling thread enters a module function (a name that lives as long
 * as the process, NULL: the runtime's own code); the previous one is
 * returned, for spits_crash_leave. */
static inline const char *spits_crash_enter(const char *fn)
{
    spits_crash_slot_t *s = spits_crash_slot_now();
    const char *prev = atomic_load_explicit(&s->fn, memory_order_relaxed);
    atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
    return prev;
}

static inline void spits_crash_leave(const char *prev)
{
    atomic_store_explicit(&spits_crash_slot_now()->fn, prev, memory_order_relaxed);
}

/* The module function the calling thread is in, or NULL. */
static inline const char *spits_crash_current(void)
{
    return atomic_load_explicit(&spits_crash_slot_now()->fn, memory_order_relaxed);
}

/* The task the calling thread's next module call is about. */
static inline void spits_crash_task(uint64_t id)
{
    atomic_store_explicit(&spits_crash_slot_now()->task, id, memory_order_relaxed);
}
/* The calling thread is a worker: its tasks are listed in a crash report. */
void spits_crash_worker(void);
/* Before its line, the handler copies to stderr what is left to read in
 * fd (non-blocking: spits-tm's stdout pipe, linefwd.h), each line after
 * prefix (a string that lives as long as the process): a module's last
 * prints before a crash are the ones that matter. fd -1: none. */
void spits_crash_drain(int fd, const char *prefix);

/* DIR/crashes/HOST-PID: where the TM with that host and pid writes its
 * crash file (a '/' in host becomes '_'). 0, or -1 if it does not fit. */
int spits_crash_tm_path(const char *jobdir, const char *host, long pid,
                        char *out, size_t outlen);
/* A crash file (new reference), or NULL: err empty when there is none,
 * else saying what is wrong with it. */
json_t *spits_crash_read(const char *path, char *err, size_t errlen);
/* The module's file and the load base its crash addresses are taken
 * against (sym: any symbol of it); module.c calls it at each load. */
void spits_crash_module(const char *path, const void *sym);
/* Adds "source" (FILE:LINE) and "source_function" to a crash document
 * that has a module_file and module_offset, from addr2line(1) (at most
 * 5 s); 1 if it did, 0 if it could not (no addr2line, no debug info). */
int spits_crash_resolve(json_t *doc);
/* What a crash document says, as one phrase: "SIGSEGV in the module's
 * spits_worker_run, task 42" (", at FILE.c:LINE" once resolved). */
void spits_crash_describe(const json_t *doc, char *out, size_t outlen);

int spits_crash_selftest(void);

#endif
