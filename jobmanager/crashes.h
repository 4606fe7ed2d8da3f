/*
 * crashes.h - what spits-jm does about crashes: its own (DIR/crash.json,
 * written by libspits' crash.c handler) and its TMs' (DIR/crashes/HOST-PID,
 * read when such a TM is lost).
 */
#ifndef SPITS_JM_CRASHES_H
#define SPITS_JM_CRASHES_H

#include <stddef.h>
#include "jm.h"

/* Once the job dir and the job id are known: an earlier run's crash files
 * are removed, DIR/crashes is made for the TMs, and a crash of this
 * process from now on writes DIR/crash.json. 0, or -1 after saying why. */
int jm_crashes_setup(jm_t *jm);
/* A TM (host, pid, joined at wall time joined) was lost: if it left a
 * crash file since it joined (an older one is an earlier process's with
 * the same pid), why gets what it says ("killed by SIGSEGV in the
 * module's spits_worker_run, task 42, at mod.c:17") and 1 is returned;
 * else 0. The file gets its source line (spits_crash_resolve). The first
 * crash of a worker thread says once that --isolate would have kept the
 * TM. Dispatcher thread only. */
int jm_crashes_tm_lost(const jm_t *jm, const char *host, long pid,
                       double joined, char *why, size_t whylen);

#endif
