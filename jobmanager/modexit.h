/*
 * modexit.h - a module that calls exit() in spits_main still leaves its
 * report.json; one that calls it elsewhere is named (modexit.c).
 */
#ifndef SPITS_JM_MODEXIT_H
#define SPITS_JM_MODEXIT_H

#include "jm.h"

/* What ends the job when the module exits: the report and the journal's
 * end, with code as the exit status. */
typedef void (*jm_modexit_end_fn)(jm_t *jm, int code);

/* Before the module runs (spits_main, or its one phase), on the main
 * thread: from now on an exit() from spits_main ends the job with end,
 * and one from anywhere else ends the JM with a line naming it and a
 * non-zero status. */
void jm_modexit_arm(jm_t *jm, jm_modexit_end_fn end);
/* The module returned: an exit is the JM's own again. */
void jm_modexit_disarm(void);

#endif
