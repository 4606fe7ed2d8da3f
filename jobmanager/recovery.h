/*
 * recovery.h - the journal's life in a job (recovery.c): a new job's, a resumed
 * job's, its end, and a write that failed.
 */
#ifndef SPITS_JM_RECOVERY_H
#define SPITS_JM_RECOVERY_H

#include <stddef.h>

#include "jm.h"

/* The journal for a new job (after any old journal's check),
 * for --resume (1: the job already finished, err says so), and at the end */
int jm_recovery_start(jm_t *jm, int margc, const char **margv, char *err,
                      size_t errlen);
int jm_recovery_resume(jm_t *jm, const char *modarg, char ***margv_out,
                       int *margc_out, char *err, size_t errlen);
void jm_recovery_end(jm_t *jm, int status, int finished);
/* A job that failed before it ran: a new job's journal is removed. */
void jm_recovery_abandon(jm_t *jm);
/* Main thread: the journal could not be written (why: the journal's
 * error); says so in one line and stops the job, which stays resumable. */
void jm_recovery_failed(jm_t *jm, const char *why);

#endif
