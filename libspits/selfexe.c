/*
 * selfexe.c - the file that starts this program again (see selfexe.h).
 *
 * A program the kernel started through its interpreter has that
 * interpreter's load address in AT_BASE. When the dynamic loader itself
 * was the program exec'd (ld-linux-x86-64.so.2 --library-path ... PROGRAM,
 * as the bundle's wrappers do), the kernel mapped no interpreter and
 * AT_BASE is 0: only then is SPITS_BUNDLE trusted, so a stale value
 * inherited by a normally started program changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "selfexe.h"

int spits_selfexe_wrapper(const char *name, char *out, size_t outlen)
{
    const char *bundle = getenv("SPITS_BUNDLE");

    if (getauxval(AT_BASE) != 0 || !bundle || !*bundle)
        return 0;
    int n = snprintf(out, outlen, "%s/bin/%s", bundle, name);
    return n < 0 || (size_t)n >= outlen ? -1 : 1;
}

int spits_selfexe(const char *name, char *out, size_t outlen)
{
    int w = spits_selfexe_wrapper(name, out, outlen);
    if (w != 0)
        return w > 0 ? 0 : -1;
    if (outlen < 2)
        return -1;
    ssize_t n = readlink("/proc/self/exe", out, outlen - 1);
    if (n <= 0 || (size_t)n >= outlen - 1)
        return -1;
    out[n] = '\0';
    return 0;
}
