/*
 * pyjob.h - a job written in Python: a .py file given where a module goes.
 *
 * spits-jm, spits-tm and spits-run --serial take JOB.py as their module:
 * image.c then loads the Python module (modules/python.c, python.so) and
 * hashes it together with the file, so the job's module hash, which the
 * job dir records and TMs check, changes when either does. The module
 * reads the file from its argv[0].
 */
#ifndef SPITS_PYJOB_H
#define SPITS_PYJOB_H

#include <stddef.h>

/* Whether path names a Python job (ends in ".py"). */
int spits_pyjob_is(const char *path);
/* The Python module into out (PATH_MAX bytes): $SPITS_PYTHON_MODULE, the
 * build tree's, the installed one. 0, or -1 with a one-line reason in
 * err. */
int spits_pyjob_module(char *out, char *err, size_t errlen);

#ifdef SPITS_SELFTEST
int spits_pyjob_selftest(void);
#endif

#endif
