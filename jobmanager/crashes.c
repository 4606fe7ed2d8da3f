/*
 * crashes.c - spits-jm's crash file, and its TMs' (see crashes.h).
 *
 * A TM that dies of a signal cannot say so over ZeroMQ: its handler
 * (libspits/crash.c) writes DIR/crashes/HOST-PID instead, before the
 * process dies and its connection drops, so that the file is there by
 * the time the dispatcher sees the TM go. Only a TM that found the JM
 * through the job dir writes one (--connect knows no job dir), and a
 * relay's TMs write theirs under their own host and pid, which the JM
 * never saw: such losses still read "disconnected".
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crashes.h"
#include "crash.h"
#include "jobdir.h"
#include "log.h"
#include "util.h"

static int crashes_told;   /* the --isolate hint was given (dispatcher) */

/* Removes the files an earlier run left in DIR/crashes: a TM of this run
 * may reuse a pid on the same host. */
static void crashes_clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];
    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    closedir(d);
}

int jm_crashes_setup(jm_t *jm)
{
    char path[PATH_MAX], dir[PATH_MAX], host[256], err[PATH_MAX + 128];

    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_CRASH_FILE);
    snprintf(dir, sizeof dir, "%s/%s", jm->opt.jobdir, SPITS_CRASH_DIR);
    if (unlink(path) != 0 && errno != ENOENT) {
        spits_error("cannot remove %s: %s", path, strerror(errno));
        return -1;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        spits_error("cannot make %s: %s", dir, strerror(errno));
        return -1;
    }
    crashes_clear_dir(dir);
    spits_hostname(host, sizeof host);
    /* (status and job_id first: spits-status shows it as a job's end) */
    json_t *fields = json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:s}",
                               "version", 1, "status", "crashed",
                               "job_id", jm->job_id, "program", "spits-jm",
                               "host", host, "pid", (json_int_t)getpid(),
                               "module", jm->module_path);
    int rc = fields ? spits_crash_file(path, fields, err, sizeof err) : -1;
    if (!fields)
        snprintf(err, sizeof err, "out of memory setting up %s", path);
    json_decref(fields);
    if (rc != 0)
        spits_warn("%s: a crash will be named on stderr only", err);
    return 0;
}

int jm_crashes_tm_lost(const jm_t *jm, const char *host, long pid,
                       double joined, char *why, size_t whylen)
{
    char path[PATH_MAX], err[PATH_MAX + 128], what[256];

    if (spits_crash_tm_path(jm->opt.jobdir, host, pid, path, sizeof path) != 0)
        return 0;
    json_t *doc = spits_crash_read(path, err, sizeof err);
    if (!doc) {
        if (err[0])
            spits_warn("%s", err);
        return 0;
    }
    /* A file from before this TM joined is an earlier process's that had
     * the same pid (reported then; kept for the user). */
    json_t *when = json_object_get(doc, "unix_time");
    if (json_is_integer(when) && (double)json_integer_value(when) + 1 < joined) {
        json_decref(doc);
        return 0;
    }
    /* The report in the job dir gets the source line too. */
    if (spits_crash_resolve(doc) &&
        spits_json_write_atomic(path, doc, 0644, err, sizeof err) != 0)
        spits_warn("%s", err);
    spits_crash_describe(doc, what, sizeof what);
    snprintf(why, whylen, "killed by %s", what);
    json_t *task = json_object_get(doc, "task");
    const char *fn = json_string_value(json_object_get(doc, "function"));
    /* A worker thread's crash takes its whole TM: said at the first. */
    if (fn && strncmp(fn, "spits_worker_", 13) == 0 && !crashes_told) {
        char which[64] = "a task";
        crashes_told = 1;
        if (json_is_integer(task))
            snprintf(which, sizeof which, "task %lld",
                     (long long)json_integer_value(task));
        spits_warn("%s crashed a worker thread, and with it its task manager: "
                   "with --isolate (spits-tm --isolate, spits-run --isolate) "
                   "only that worker's process would have died, and the task "
                   "manager would have gone on", which);
    }
    json_decref(doc);
    return 1;
}
