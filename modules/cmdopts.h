/*
 * cmdopts.h - the command module's arguments (cmdopts.c), which its job
 * manager, workers and committer each parse from the module's argv.
 */
#ifndef CMDOPTS_H
#define CMDOPTS_H

#include <limits.h>
#include <stdint.h>

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
} cmdopts_t;

/* Parses the module's argv into o (TASKFILE last; o->haltfile is
 * TASKFILE.halt): 0, or -1 after one line on stderr naming the problem. */
int cmdopts_parse(int argc, const char **argv, cmdopts_t *o);

#endif
