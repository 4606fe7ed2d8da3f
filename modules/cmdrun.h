/*
 * cmdrun.h - runs one command for the command module's worker: spawned
 * without a shell (posix_spawnp) in a process group of its own, stdin
 * from /dev/null, stdout and stderr captured up to a cap, with an
 * optional time limit. With --line-buffer, its complete lines go to the
 * live output channel as they come (cmdlive.h) and only an unfinished
 * last line is kept (the cap bounds it).
 */
#ifndef CMDRUN_H
#define CMDRUN_H

#include <stddef.h>
#include <stdint.h>

#include "cmdlive.h"

typedef struct {
    double timeout;          /* seconds; 0: none */
    uint64_t cap;            /* stdout plus stderr bytes kept */
    uint64_t seq;            /* PARALLEL_SEQ in the command's environment */
    const char *haltfile;    /* while this file says "now", kill and stop */
    const char *name;        /* the command, as messages name it */
    char *const *env;        /* its environment (NULL: this process's) */
    const char *cwd;         /* its directory (NULL: this process's) */
    const char *host;        /* this host's name, for a missing cwd's message */
    cmdlive_t *live;         /* --line-buffer: where lines go (NULL: kept) */
} cmdrun_opts_t;

typedef struct {
    char *out, *err;         /* captured (malloc'd; NULL when empty) */
    size_t outlen, errlen, outcap, errcap;
    int32_t exitval, signal; /* as GNU parallel's joblog has them */
    uint32_t flags;          /* CMDRES_* (cmdfile.h) */
    double start;            /* epoch seconds */
    uint32_t runtime_ms;
    uint64_t received;       /* stdout bytes read (the joblog's Receive) */
} cmdrun_t;

/* Runs argv (argc >= 1 words) and fills r. 0; -1 only when out of
 * memory or out of pipes (r says why in its stderr, exit value 255). */
int cmdrun_exec(char *const *argv, const cmdrun_opts_t *o, cmdrun_t *r);
void cmdrun_clear(cmdrun_t *r);
/* What a halt file says: 0 no halt (no file), 1 halt soon, 2 halt now. */
int cmdrun_halt_state(const char *haltfile);
/* Kills the process groups of the commands still running (module
 * unload, the TM's exit). */
void cmdrun_kill_all(void);

#endif
