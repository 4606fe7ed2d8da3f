/*
 * report.h - DIR/report.json and the summary line, written when the job ends
 * (report.c).
 */
#ifndef SPITS_JM_REPORT_H
#define SPITS_JM_REPORT_H

#include "jm.h"

int jm_report_write(jm_t *jm, int exit_code, double finished);
/* Results whose commit_pit returned non-zero, over every phase. */
uint64_t jm_commit_errors(const jm_t *jm);

#endif
