/*
 * parallel-options.h - spits-parallel's command line (parallel-options.c).
 */
#ifndef PARALLEL_OPTIONS_H
#define PARALLEL_OPTIONS_H

#include "parallel.h"

/* Fills p from the command line: 0, or PAR_ERROR after one line naming
 * the problem (-h and -V print and exit 0). */
int popts_parse(par_t *p, int argc, char **argv);
/* A usage error: one line (fmt with arg), and PAR_ERROR, GNU parallel's
 * status for it. */
int popts_bad(const char *fmt, const char *arg);

#endif
