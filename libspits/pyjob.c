/*
 * pyjob.c - which module runs a job written in Python (see pyjob.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyjob.h"
#include "util.h"

#define PYJOB_MODULE "python.so"
#define PYJOB_ENV "SPITS_PYTHON_MODULE"

int spits_pyjob_is(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 3 && strcmp(path + n - 3, ".py") == 0;
}

int spits_pyjob_module(char *out, char *err, size_t errlen)
{
    /* (any of the programs' names does: they are installed side by side) */
    const char *self = program_invocation_short_name;
    const char *env = getenv(PYJOB_ENV);

    if (env && *env) {
        if (spits_find_beside(self, PYJOB_MODULE, PYJOB_ENV, "", R_OK, out) == 0)
            return 0;
        snprintf(err, errlen, "cannot load the Python module %s ($%s): %s",
                 env, PYJOB_ENV, strerror(errno));
        return -1;
    }
    if (spits_find_beside(self, ".libs/" PYJOB_MODULE, NULL, "modules", R_OK,
                          out) == 0 ||
        spits_find_beside(self, PYJOB_MODULE, NULL, "lib/spits", R_OK, out) == 0)
        return 0;
    snprintf(out, PATH_MAX, "%s/%s", SPITS_PKGLIBDIR, PYJOB_MODULE);
    if (access(out, R_OK) == 0)
        return 0;
    snprintf(err, errlen, "the Python module %s is not installed (spits was "
             "built without python3-dev); install it and rebuild, or set $%s",
             PYJOB_MODULE, PYJOB_ENV);
    return -1;
}

#ifdef SPITS_SELFTEST

#define PCHECK(c) do { if (!(c)) { fprintf(stderr, "pyjob selftest: %s:%d: " \
    "%s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

int spits_pyjob_selftest(void)
{
    char out[PATH_MAX], err[300];

    PCHECK(spits_pyjob_is("job.py"));
    PCHECK(spits_pyjob_is("/a/b/x.py"));
    PCHECK(!spits_pyjob_is(".py"));
    PCHECK(!spits_pyjob_is("job.pyc"));
    PCHECK(!spits_pyjob_is("job.so"));
    PCHECK(!spits_pyjob_is(NULL));
    /* $SPITS_PYTHON_MODULE wins, and a missing one is named. */
    const char *was = getenv(PYJOB_ENV);
    char keep[PATH_MAX] = "";
    if (was)
        snprintf(keep, sizeof keep, "%s", was);
    setenv(PYJOB_ENV, "/nonexistent/python.so", 1);
    PCHECK(spits_pyjob_module(out, err, sizeof err) == -1);
    PCHECK(strstr(err, "/nonexistent/python.so") != NULL);
    setenv(PYJOB_ENV, "/dev/null", 1);
    PCHECK(spits_pyjob_module(out, err, sizeof err) == 0);
    PCHECK(strcmp(out, "/dev/null") == 0);
    if (was)
        setenv(PYJOB_ENV, keep, 1);
    else
        unsetenv(PYJOB_ENV);
    return 0;
}
#endif
