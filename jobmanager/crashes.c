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
#include "log.h"
#include "util.h"

/* The tasks TMs' crash files named, each once (dispatcher thread). */
static uint64_t *crashes_tasks;
static size_t crashes_n, crashes_cap;
static int crashes_told;   /* the --isolate hint was given */

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

/* Remembers a crashed task; 1 if an earlier crash named it too. */
static int crashes_seen(uint64_t id)
{
    for (size_t i = 0; i < crashes_n; i++)
        if (crashes_tasks[i] == id)
            return 1;
    if (crashes_n == crashes_cap) {
        size_t cap = crashes_cap ? crashes_cap * 2 : 16;
        uint64_t *t = realloc(crashes_tasks, cap * sizeof *t);
        if (!t)
            return 0;
        crashes_tasks = t;
        crashes_cap = cap;
    }
    crashes_tasks[crashes_n++] = id;
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
    spits_crash_describe(doc, what, sizeof what);
    snprintf(why, whylen, "killed by %s", what);
    json_t *task = json_object_get(doc, "task");
    if (json_is_integer(task) && crashes_seen((uint64_t)json_integer_value(task)) &&
        !crashes_told) {
        crashes_told = 1;
        spits_warn("task %lld has killed two task managers: run them with "
                   "--isolate (spits-tm --isolate, spits-run --isolate), so "
                   "that a task that crashes costs only its worker process",
                   (long long)json_integer_value(task));
    }
    json_decref(doc);
    return 1;
}
