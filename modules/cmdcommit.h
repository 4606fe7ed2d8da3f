/*
 * cmdcommit.h - the command module's committer (cmdcommit.c): besides the
 * module's spits_committer_* entry points, what the job manager and the
 * workers (cmd.c) read of it.
 */
#ifndef CMDCOMMIT_H
#define CMDCOMMIT_H

#include <stdint.h>

#include "cmdopts.h"

/* 1 once the committer halted the job (--halt): the job manager makes
 * no more tasks. */
int cmdcommit_halted(void);
/* The job manager has made n tasks so far: --progress's total. */
void cmdcommit_made(uint64_t n);
/* TASKFILE.running, mapped: the commands running now, which the workers
 * count and the committer reads (NULL: not counted); see cmdcommit.c. */
_Atomic long *cmdcommit_running_map(const cmdopts_t *o);
void cmdcommit_running_unmap(_Atomic long *running);

#endif
