/*
 * selfexe.h - the file that starts this program again, for a program that
 * runs a copy of itself (spits-tm --isolate) or finds its siblings
 * (spits-run's spits-jm and spits-tm, spits-alloc's spits-status).
 *
 * Usually that is /proc/self/exe. In the relocatable bundle
 * (tools/spits-bundle) each program is started by running the bundle's
 * own dynamic loader on it, so /proc/self/exe is the loader; there the
 * program's wrapper script, SPITS_BUNDLE/bin/NAME, is the way back in.
 */
#ifndef SPITS_SELFEXE_H
#define SPITS_SELFEXE_H

#include <stddef.h>

/* Writes the path that starts this program (whose installed name is name)
 * into out. 0 on success, -1 when it cannot be found or is too long. */
int spits_selfexe(const char *name, char *out, size_t outlen);
/* When this program was started through the bundle's loader, writes its
 * wrapper's path into out and returns 1; otherwise returns 0 and leaves
 * out alone (/proc/self/exe is then the program); -1 if too long. */
int spits_selfexe_wrapper(const char *name, char *out, size_t outlen);

#endif
