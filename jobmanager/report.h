/*
 * report.h - DIR/report.json and the summary line, written when the job ends
 * (report.c).
 */
#ifndef SPITS_JM_REPORT_H
#define SPITS_JM_REPORT_H

#include "jm.h"

int jm_report_write(jm_t *jm, int exit_code, double finished);

#endif
