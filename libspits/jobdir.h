/*
 * jobdir.h - the job directory and the files in it.
 *
 * A job directory is where a JM and its TMs meet: it usually sits on a
 * filesystem that every node of the cluster sees. The JM creates it and
 * publishes DIR/jm.json (the announce file: how to reach the JM); TMs
 * started from queue jobs wait for that file to appear. At the end the JM
 * writes DIR/report.json. While it runs it holds a lock on DIR/jm.pid, so
 * a second JM started on the dir is refused. Every file is written atomically (temporary file,
 * fsync, rename), so a reader never sees half of one.
 */
#ifndef SPITS_JOBDIR_H
#define SPITS_JOBDIR_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "resources.h"

#define SPITS_ANNOUNCE_FILE "jm.json"
#define SPITS_REPORT_FILE "report.json"
#define SPITS_ANNOUNCE_VERSION 1
/* "PID HOST" of the JM running the job in the dir (see spits_jobdir_lock) */
#define SPITS_LOCK_FILE "jm.pid"

typedef struct {
    char job_id[64];
    char endpoint[512];
    char host[256];
    char module[4096];
    char module_hash[65];     /* BLAKE2b-256 of the module file, hex */
    char module_hash_was[65]; /* the hash the job started with, when a
                                 resume accepted a changed module ("") */
    int curve;                /* 1: CurveZMQ (keys in DIR/tm.key) */
    char server_key[41];      /* the JM's public key (Z85) when curve */
    long pid;
    char started[32];
    double started_unix;
    json_t *resources;        /* what each task needs (resources.h), or
                                 NULL; written only, borrowed */
    spits_res_req_t req;      /* ...as read (all 0: none asked) */
} spits_announce_t;

/* Creates DIR (and parents) with mode 0700 if missing, and checks that it
 * is a directory this process can write into. 0, or -1 with err set. */
int spits_jobdir_prepare(const char *dir, char *err, size_t errlen);

/* Refuses a job dir that others could write into: group- or world-
 * writable, or owned by another user (its jm.json names the module a TM
 * loads, so it must be the user's own). 0, or -1 with err set. */
int spits_jobdir_check(const char *dir, char *err, size_t errlen);

/* One JM per job dir: takes an exclusive flock on DIR/jm.pid and writes
 * "PID HOST" into it. Returns the file's descriptor, to be kept open for
 * the JM's life (the lock goes with it, even on kill -9). -1 with err
 * set; when a live JM holds the lock, err says that it is running, with
 * its pid, host, job and endpoint (from DIR/jm.json). */
int spits_jobdir_lock(const char *dir, char *err, size_t errlen);

/* Writes path atomically (a temporary file, fsync, rename, fsync of the
 * directory) with the given mode: fill(f, arg) writes the content to f
 * and returns 0, or -1 to leave path as it was. 0, or -1 with err set. */
typedef int (*spits_fill_fn)(FILE *f, void *arg);
int spits_file_write_atomic(const char *path, int mode, spits_fill_fn fill,
                            void *arg, char *err, size_t errlen);

/* Writes a JSON document to path atomically (a temporary file, fsync,
 * rename, fsync of the directory), with the given mode. The temporary file
 * is made 0600 by mkstemp, so a secret is never readable by others, not
 * even for a moment. 0, or -1 with err set. */
int spits_json_write_atomic(const char *path, const json_t *doc, int mode,
                            char *err, size_t errlen);

/* {"journal_hash": was, "module_hash": now}: a resumed job's module
 * changed since it started, as jm.json and report.json say it. */
json_t *spits_module_changed_json(const char *was, const char *now);
int spits_announce_write(const char *dir, const spits_announce_t *a,
                         char *err, size_t errlen);
/* Reads and validates DIR/jm.json. Returns 0; 1 if the file does not exist
 * (yet); -1 with err set if it exists but is unreadable or invalid. */
int spits_announce_read(const char *dir, spits_announce_t *a, char *err,
                        size_t errlen);
/* Parses an announce document (also used by the fuzzers). */
int spits_announce_parse(const json_t *doc, spits_announce_t *a, char *err,
                         size_t errlen);

/* 1 if DIR/report.json says that job job_id is over. A job that can be
 * resumed (report "resumable": stopped by a signal or a fatal error, with
 * its journal) counts as over only with resumable_too: a new TM waits for
 * spits-jm --resume, while a running one, told to stop, stops. */
int spits_jobdir_finished(const char *dir, const char *job_id, int resumable_too);
/* A new run of a job dir (a new job, or --resume), once it is sure to
 * run, removes what describes the run before it: report.json, jm.json and
 * report.html, so that no TM takes them for this run's. (A TM that read
 * them a moment before still can: spits-run starts its TMs only once they
 * are gone.) 0, or -1 with err set. */
int spits_jobdir_clear_old(const char *dir, char *err, size_t errlen);

/* 1 if the JM that wrote a ran on this host and its process is gone (no
 * such pid); 0 if it is alive or on another host (not known here). */
int spits_announce_jm_gone(const spits_announce_t *a);
/* What to add to "no job manager answered": "; its process (spits-jm pid
 * P on H) is gone" when it is (above), and how to go on when DIR keeps
 * the job's journal: "; spits-jm --resume --jobdir DIR continues the job"
 * (prefixed "if it is gone, " when its host is another). "" when neither
 * applies. Returns buf. */
char *spits_jobdir_gone_hint(const char *dir, const spits_announce_t *a, char *buf,
                             size_t len);

#ifdef SPITS_SELFTEST
int spits_jobdir_selftest(void);
#endif

#endif
