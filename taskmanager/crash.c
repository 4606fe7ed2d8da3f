/*
 * crash.c - spits-tm's side of naming a crash (libspits/crash.h): the
 * handler is installed, and with --jobdir it writes DIR/crashes/HOST-PID,
 * which the JM reads when it loses this TM (jobmanager/crashes.c): a TM
 * cannot use ZeroMQ from a signal handler, but the file is there before
 * the process dies and its connection drops.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash.h"
#include "log.h"
#include "tm_private.h"

void tm_crash_setup(tm_t *tm)
{
    char path[PATH_MAX], dir[PATH_MAX], err[PATH_MAX + 128];

    if (spits_crash_init("spits-tm", err, sizeof err) != 0) {
        spits_warn("%s: a crash will not be named", err);
        return;
    }
    if (!tm->opts.jobdir)
        return;
    snprintf(dir, sizeof dir, "%s/%s", tm->opts.jobdir, SPITS_CRASH_DIR);
    if (spits_crash_tm_path(tm->opts.jobdir, tm->link.host, (long)getpid(),
                            path, sizeof path) != 0) {
        spits_warn("%s: path too long: a crash will be named on stderr only",
                   dir);
        return;
    }
    /* (the JM makes it; a JM older than this TM does not) */
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        spits_warn("cannot make %s: %s: a crash will be named on stderr only",
                   dir, strerror(errno));
        return;
    }
    json_t *fields = json_pack("{s:i, s:s, s:s, s:I}", "version", 1,
                               "program", "spits-tm", "host", tm->link.host,
                               "pid", (json_int_t)getpid());
    if (!fields || spits_crash_file(path, fields, err, sizeof err) != 0)
        spits_warn("%s: a crash will be named on stderr only",
                   fields ? err : "out of memory");
    json_decref(fields);
}
