/*
 * jm.c - spits-jm: the Job Manager/Committer program.
 *
 *   spits-jm [OPTIONS] MODULE [ARGS...]
 *
 * Loads the module, prepares the job dir, binds the ROUTER socket and
 * announces it in DIR/jm.json, then runs the module: spits_main if it has
 * one (each run() call is a phase, phase.c), else one job with the command
 * line's arguments. Task Managers join whenever they start. At the end it
 * tells the TMs to exit, writes DIR/report.json and a summary line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash.h"
#include "crashes.h"
#include "dispatch.h"
#include "jm.h"
#include "jobdir.h"
#include "joblog.h"
#include "log.h"
#include "pyjob.h"
#include "mem.h"
#include "modexit.h"
#include "phase.h"
#include "recovery.h"
#include "linefwd.h"
#include "report.h"
#include "resources.h"
#include "stop.h"
#include "term.h"
#include "taskpool.h"
#include "tmtable.h"
#include "util.h"

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-jm [OPTIONS] MODULE [ARGS...]\n"
"  or:  spits-jm --resume --jobdir DIR [OPTIONS]\n"
"Runs the job manager and committer of a SPITS job. Task managers\n"
"(spits-tm) join it through the job dir or the announced endpoint.\n"
"\n"
"Options:\n"
"  -d, --jobdir DIR        job directory, created if missing (./spits-job)\n"
"  -b, --bind ENDPOINT     ZeroMQ endpoint to listen on (tcp://*:0: all\n"
"                          interfaces, any free port)\n"
"      --max-copies N      concurrent copies of one task, 1-%d (2)\n"
"      --max-attempts N    failed runs before a task is given up (3)\n"
"      --keep-going        a task given up does not stop its phase short:\n"
"                          commit_job runs on the other results; the\n"
"                          failed tasks are listed and the exit status is 3\n"
"      --tm-timeout SEC    a TM sending no message and no bytes this long\n"
"                          is lost (30)\n"
"      --keep-dead-tms N   departed or lost TMs remembered one by one; older\n"
"                          ones are summed up (10000)\n"
"      --heartbeat SEC     heartbeat interval (1)\n"
"      --window N          tasks generated ahead of the commits (65536)\n"
"      --window-bytes N    task bytes held ahead of the commits (1073741824)\n"
"      --memory-limit N    resident bytes the JM keeps under, counting\n"
"                          libzmq's encrypted copies; 0: none (three quarters\n"
"                          of the RAM, or of the job's cgroup memory.max)\n"
"      --journal on|off    keep DIR/journal, which makes the job resumable (on)\n"
"      --resume            continue the job in DIR/journal after a crash or a\n"
"                          signal: module, arguments and the request per\n"
"                          task (--cpus/--gpus/--mem-per-task) come from the\n"
"                          journal\n"
"      --module-changed    with --resume: accept a module whose bytes changed\n"
"                          since the job started (a fix); committed results\n"
"                          are kept, only the other tasks run again\n"
"      --insecure          no CurveZMQ: plain, unauthenticated connections\n"
"      --io-threads N      ZeroMQ I/O threads, 1-%d (a quarter of the cores,\n"
"                          1 to 4); each does the CurveZMQ and TCP of the\n"
"                          TM connections it holds\n"
"      --cpus-per-task N   cores each task needs: a TM runs as many workers as\n"
"                          its cores allow, each on cores of its own, with\n"
"                          OMP_NUM_THREADS (and MKL's, OpenBLAS's) set to N\n"
"      --gpus-per-task N   GPUs each task needs: each worker is a process\n"
"                          that sees its own N (CUDA_VISIBLE_DEVICES...)\n"
"      --mem-per-task SIZE memory each task needs (512M, 4G; megabytes\n"
"                          without a suffix): a TM runs no more workers\n"
"                          than its memory holds, each a process; a task\n"
"                          whose process goes over SIZE resident fails\n"
"      --max-task-bytes N  largest task or result (1073741824); larger ones\n"
"                          fail with an error naming the task\n"
"      --progress-interval SEC  when stderr is not a terminal, a progress\n"
"                          line every SEC seconds (30; 0: none). On a\n"
"                          terminal the line redraws itself; -q: none\n"
"      --commit-errors fail|ignore  whether results whose commit_pit returned\n"
"                          non-zero make the exit status 4 (fail)\n"
"      --joblog FILE       append a line per resolved task to FILE in GNU\n"
"                          parallel's joblog format (Seq is the task id,\n"
"                          Starttime when its copy was sent, JobRuntime until\n"
"                          its result came, Send/Receive their bytes)\n"
"      --relay-fd FD       write the lines read from FD to stderr, clearing\n"
"                          and redrawing the progress line around them\n"
"                          (spits-run passes its TMs' stderr this way)\n"
"      --export-key FILE   copy the running job's TM key file (DIR/tm.key) to\n"
"                          FILE, for spits-tm --connect ... --key-file FILE\n"
"  -v, --verbose           more logging (repeat for more)\n"
"  -q, --quiet             errors only\n"
"  -h, --help              this help\n"
"  -V, --version           print the version\n"
"\n"
"Exit status:\n"
"  N       the module's: what spits_main returned, or commit_job's value\n"
"          (1 when it is not from 0 to 255)\n"
"  1       a runtime error\n"
"  2       a usage error\n"
"  3       tasks failed every attempt (with --keep-going too, after\n"
"          commit_job)\n"
"  4       commit_pit failed for some results (unless --commit-errors=ignore)\n"
"          and the job otherwise succeeded\n"
"  128+S   stopped by signal S\n",
            JM_MAX_COPIES, JM_IO_THREADS_MAX);
}

enum { OPT_MAX_COPIES = 256, OPT_MAX_ATTEMPTS, OPT_TM_TIMEOUT, OPT_HEARTBEAT,
       OPT_WINDOW, OPT_WINDOW_BYTES, OPT_MEMORY_LIMIT, OPT_JOURNAL, OPT_RESUME, OPT_INSECURE,
       OPT_MAX_TASK, OPT_EXPORT_KEY, OPT_PROGRESS, OPT_COMMIT_ERRORS,
       OPT_CHECK_OPTIONS, OPT_RELAY_FD, OPT_KEEP_DEAD, OPT_IO_THREADS, OPT_JOBLOG,
       OPT_KEEP_GOING, OPT_MODULE_CHANGED, OPT_CPUS_PER_TASK, OPT_GPUS_PER_TASK,
       OPT_MEM_PER_TASK };

/* Returns -1 to go on, or an exit status. */
static int parse_args(jm_t *jm, int argc, char **argv, int *verbosity)
{
    static const struct option longopts[] = {
        {"jobdir", required_argument, NULL, 'd'},
        {"bind", required_argument, NULL, 'b'},
        {"max-copies", required_argument, NULL, OPT_MAX_COPIES},
        {"max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS},
        {"keep-going", no_argument, NULL, OPT_KEEP_GOING},
        {"tm-timeout", required_argument, NULL, OPT_TM_TIMEOUT},
        {"heartbeat", required_argument, NULL, OPT_HEARTBEAT},
        {"keep-dead-tms", required_argument, NULL, OPT_KEEP_DEAD},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"io-threads", required_argument, NULL, OPT_IO_THREADS},
        {"window-bytes", required_argument, NULL, OPT_WINDOW_BYTES},
        {"memory-limit", required_argument, NULL, OPT_MEMORY_LIMIT},
        {"journal", required_argument, NULL, OPT_JOURNAL},
        {"resume", no_argument, NULL, OPT_RESUME},
        {"module-changed", no_argument, NULL, OPT_MODULE_CHANGED},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"max-task-bytes", required_argument, NULL, OPT_MAX_TASK},
        {"cpus-per-task", required_argument, NULL, OPT_CPUS_PER_TASK},
        {"gpus-per-task", required_argument, NULL, OPT_GPUS_PER_TASK},
        {"mem-per-task", required_argument, NULL, OPT_MEM_PER_TASK},
        {"export-key", required_argument, NULL, OPT_EXPORT_KEY},
        {"progress-interval", required_argument, NULL, OPT_PROGRESS},
        {"commit-errors", required_argument, NULL, OPT_COMMIT_ERRORS},
        {"joblog", required_argument, NULL, OPT_JOBLOG},
        {"relay-fd", required_argument, NULL, OPT_RELAY_FD},
        /* spits-run's: check the options, then exit 0 (or 2, as ever) */
        {"check-options", no_argument, NULL, OPT_CHECK_OPTIONS},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    long v;
    char endpoint_err[1200], res_err[256];
    int c, check_only = 0;

    opterr = 0;
    /* '+': stop at MODULE, so the module's own options reach the module. */
    while ((c = getopt_long(argc, argv, "+:d:b:vqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': jm->opt.jobdir = optarg; break;
        case 'b':
            if (spits_endpoint_check(optarg, 1, endpoint_err, sizeof endpoint_err) != 0)
                return spits_bad_option("--bind %s", endpoint_err);
            jm->opt.bind = optarg;
            break;
        case OPT_MAX_COPIES:
            if (spits_parse_long(optarg, 1, JM_MAX_COPIES, &v))
                return spits_bad_option("--max-copies wants a number from 1 to 8, not '%s'", optarg);
            jm->opt.max_copies = (int)v;
            break;
        case OPT_KEEP_DEAD:
            if (spits_parse_long(optarg, 1, 100000000, &v))
                return spits_bad_option("--keep-dead-tms wants a number from 1 to 100000000, not '%s'", optarg);
            jm->opt.keep_dead = (size_t)v;
            break;
        case OPT_MAX_ATTEMPTS:
            if (spits_parse_long(optarg, 1, 100, &v))
                return spits_bad_option("--max-attempts wants a number from 1 to 100, not '%s'", optarg);
            jm->opt.max_attempts = (int)v;
            break;
        case OPT_TM_TIMEOUT:
            if (spits_parse_seconds(optarg, 1e6, &jm->opt.tm_timeout) ||
                jm->opt.tm_timeout < 0.1)
                return spits_bad_option("--tm-timeout wants seconds (at least 0.1), not '%s'", optarg);
            break;
        case OPT_HEARTBEAT:
            if (spits_parse_seconds(optarg, 3600, &jm->opt.heartbeat) ||
                jm->opt.heartbeat < 0.01)
                return spits_bad_option("--heartbeat wants seconds (at least 0.01), not '%s'", optarg);
            break;
        case OPT_WINDOW:
            if (spits_parse_long(optarg, 1, 1L << 30, &v))
                return spits_bad_option("--window wants a positive number of tasks, not '%s'", optarg);
            jm->opt.window = v;
            break;
        case OPT_IO_THREADS:
            if (spits_parse_long(optarg, 1, JM_IO_THREADS_MAX, &v))
                return spits_bad_option("--io-threads wants a number from 1 to 64, not '%s'",
                                        optarg);
            jm->opt.io_threads = (int)v;
            break;
        case OPT_WINDOW_BYTES:
            if (spits_parse_long(optarg, 1, LONG_MAX, &v))
                return spits_bad_option("--window-bytes wants a positive number, not '%s'", optarg);
            jm->opt.window_bytes = v;
            break;
        case OPT_MEMORY_LIMIT:
            /* (a number of MiB or GiB given as bytes is caught here) */
            if (spits_parse_long(optarg, 0, LONG_MAX, &v) || (v > 0 && v < JM_MEMORY_LIMIT_MIN))
                return spits_bad_option("--memory-limit wants 0 (none) or a number of "
                                        "bytes from 67108864 (64 MiB), not '%s'", optarg);
            jm->opt.memory_limit = v;
            break;
        case OPT_JOURNAL:
            if (strcmp(optarg, "on") == 0)
                jm->opt.journal = 1;
            else if (strcmp(optarg, "off") == 0)
                jm->opt.journal = 0;
            else
                return spits_bad_option("--journal wants on or off, not '%s'", optarg);
            break;
        case OPT_RESUME: jm->opt.resume = 1; break;
        case OPT_MODULE_CHANGED: jm->opt.module_changed = 1; break;
        case OPT_KEEP_GOING: jm->opt.keep_going = 1; break;
        case OPT_INSECURE: jm->opt.insecure = 1; break;
        case OPT_MAX_TASK:
            if (spits_parse_long(optarg, 1, SPITS_TASK_BYTES_MAX, &v))
                return spits_bad_option("--max-task-bytes wants a number from 1 to 4294967295, not '%s'",
                                        optarg);
            jm->opt.max_task = v;
            break;
        case OPT_CPUS_PER_TASK:
            if (spits_res_parse_count("--cpus-per-task", optarg, SPITS_RES_CPUS_MAX,
                                      &jm->opt.res.cpus, res_err, sizeof res_err))
                return spits_bad_option("%s", res_err);
            break;
        case OPT_GPUS_PER_TASK:
            if (spits_res_parse_count("--gpus-per-task", optarg, SPITS_RES_GPUS_MAX,
                                      &jm->opt.res.gpus, res_err, sizeof res_err))
                return spits_bad_option("%s", res_err);
            break;
        case OPT_MEM_PER_TASK:
            if (spits_res_parse_size("--mem-per-task", optarg, &jm->opt.res.mem,
                                     res_err, sizeof res_err))
                return spits_bad_option("%s", res_err);
            break;
        case OPT_EXPORT_KEY: jm->opt.export_key = optarg; break;
        case OPT_PROGRESS:
            if (spits_parse_seconds(optarg, 1e6, &jm->opt.progress))
                return spits_bad_option("--progress-interval wants seconds, not '%s'", optarg);
            break;
        case OPT_CHECK_OPTIONS: check_only = 1; break;
        case OPT_JOBLOG:
            if (!*optarg)
                return spits_bad_option("--joblog wants a file name, not '%s'", optarg);
            jm->opt.joblog = optarg;
            break;
        case OPT_RELAY_FD:
            if (spits_parse_long(optarg, 0, INT_MAX, &v) || fcntl((int)v, F_GETFD) < 0)
                return spits_bad_option("--relay-fd wants an open file descriptor, not '%s'",
                                        optarg);
            jm->opt.relay_fd = (int)v;
            break;
        case OPT_COMMIT_ERRORS:
            jm->opt.commit_errors_ignore = strcmp(optarg, "ignore") == 0;
            if (!jm->opt.commit_errors_ignore && strcmp(optarg, "fail") != 0)
                return spits_bad_option("--commit-errors wants fail or ignore, not '%s'", optarg);
            break;
        case 'v': (*verbosity)++; break;
        case 'q': *verbosity = SPITS_LOG_ERROR; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("spits-jm %s\n", PACKAGE_VERSION); return 0;
        case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
        default:
            return spits_bad_option("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (jm->opt.module_changed && !jm->opt.resume)
        return spits_bad_option("%s", "--module-changed applies to --resume only");
    if (jm->opt.resume && optind + 1 < argc)
        return spits_bad_option("%s", "--resume takes the module's arguments "
                                "from the journal: give no ARGS");
    if (optind >= argc && !jm->opt.resume && !jm->opt.export_key)
        return spits_bad_option("%s", "no MODULE given");
    return check_only ? 0 : -1;
}

static int exit_status(const jm_t *jm, int rc)
{
    if (jm->interrupted || jm_signal)
        return 128 + (int)jm_signal;
    if (jm->runtime_error || atomic_load(&jm_abort))
        return JM_EXIT_ERROR;
    if (jm->failed_tasks) {
        for (uint32_t i = 0; i < jm->nphases; i++)
            for (size_t f = 0; f < jm->phases[i].nfailed && f < jm->phases[i].capfailed; f++) {
                char how[sizeof jm->phases[i].failed[f].why + 256];
                jm_failure_describe(&jm->phases[i].failed[f], how, sizeof how);
                spits_error("task %llu of phase %u failed (last run: %s) %s",
                            (unsigned long long)jm->phases[i].failed[f].id,
                            jm->phases[i].id,
                            spits_wire_status_name(jm->phases[i].failed[f].status), how);
            }
        return JM_EXIT_FAILED_TASKS;
    }
    if (rc == 0)
        return jm_commit_errors(jm) && !jm->opt.commit_errors_ignore
                   ? JM_EXIT_COMMIT_ERRORS : JM_EXIT_OK;
    return rc > 0 && rc < 256 ? rc : JM_EXIT_ERROR;
}

/* --export-key FILE: the running job's tm.key, copied for a TM that cannot
 * see the job dir. */
static int export_key(jm_t *jm)
{
    char path[PATH_MAX], err[1024];
    spits_keys_t k;
    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_TM_KEY_FILE);
    if (spits_keys_read(path, &k, 0, err, sizeof err) != 0 ||
        spits_keys_write(jm->opt.export_key, &k, 0, err, sizeof err) != 0) {
        spits_error("%s", err);
        return JM_EXIT_ERROR;
    }
    spits_info("wrote %s (mode 0600) for job %s: spits-tm --connect %s "
               "--key-file %s", jm->opt.export_key, k.job_id,
               k.endpoint[0] ? k.endpoint : "ENDPOINT", jm->opt.export_key);
    return JM_EXIT_OK;
}

/* CURVE keys: a new job makes them, a resumed one keeps its own (so its
 * running TMs can re-attach). --insecure removes stale key files. */
static int security_setup(jm_t *jm, char *err, size_t errlen)
{
    char jpath[PATH_MAX], tpath[PATH_MAX];
    snprintf(jpath, sizeof jpath, "%s/%s", jm->opt.jobdir, SPITS_JM_KEY_FILE);
    snprintf(tpath, sizeof tpath, "%s/%s", jm->opt.jobdir, SPITS_TM_KEY_FILE);
    if (jm->opt.insecure) {
        unlink(jpath);
        unlink(tpath);
        spits_warn("--insecure: connections are neither encrypted nor "
                   "authenticated; anyone who reaches the port can take tasks "
                   "and send results");
        return 0;
    }
    if (jm->opt.resume && access(jpath, F_OK) == 0) {
        if (spits_keys_read(jpath, &jm->keys, 1, err, errlen) != 0)
            return -1;
        if (strcmp(jm->keys.job_id, jm->job_id) != 0) {
            snprintf(err, errlen, "%.900s belongs to job %.40s, not %.40s",
                     jpath, jm->keys.job_id, jm->job_id);
            return -1;
        }
        return 0;
    }
    if (spits_keys_generate(&jm->keys, err, errlen) != 0)
        return -1;
    snprintf(jm->keys.job_id, sizeof jm->keys.job_id, "%s", jm->job_id);
    return spits_keys_write(jpath, &jm->keys, 1, err, errlen);
}

static int write_tm_key(jm_t *jm, const char *endpoint, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", jm->opt.jobdir, SPITS_TM_KEY_FILE);
    snprintf(jm->keys.endpoint, sizeof jm->keys.endpoint, "%s", endpoint);
    return spits_keys_write(path, &jm->keys, 0, err, errlen);
}

/* The job dir: made (a new job) or required (--resume), checked, made
 * absolute (as TMs will see it) and locked for the JM's life. */
static int jobdir_setup(jm_t *jm, char *abs, char *err, size_t errlen)
{
    struct stat st;
    if (jm->opt.resume && stat(jm->opt.jobdir, &st) != 0 && errno == ENOENT) {
        snprintf(err, errlen, "no job dir %s to resume", jm->opt.jobdir);
        return -1;
    }
    if (spits_jobdir_prepare(jm->opt.jobdir, err, errlen) != 0)
        return -1;
    if (realpath(jm->opt.jobdir, abs))
        jm->opt.jobdir = abs;
    jm->lock_fd = spits_jobdir_lock(jm->opt.jobdir, err, errlen);
    return jm->lock_fd < 0 ? -1 : 0;
}

static void free_argv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void set_defaults(jm_t *jm)
{
    memset(jm, 0, sizeof *jm);
    jm->opt.jobdir = "spits-job";
    jm->opt.bind = "tcp://*:0";
    jm->opt.max_copies = 2;
    jm->opt.max_attempts = 3;
    jm->opt.tm_timeout = 30;
    jm->opt.keep_dead = JM_TMTAB_KEEP_DEAD;
    jm->opt.heartbeat = 1;
    jm->opt.window = 65536;
    jm->opt.window_bytes = 1L << 30;
    jm->opt.memory_limit = -1;
    /* A quarter of the cores, 1 to 4: libzmq's I/O threads do CurveZMQ
     * for the TMs' connections (each connection on one), and the JM's own
     * threads need cores too (docs/performance.md). */
    int cores = spits_online_cores();
    jm->opt.io_threads = cores / 4 < 1 ? 1 : cores / 4 > 4 ? 4 : cores / 4;
    jm->opt.journal = 1;
    jm->opt.max_task = JM_MAX_TASK_DEFAULT;
    jm->opt.progress = 30;
    jm->lock_fd = -1;
    jm->opt.relay_fd = -1;
}

/* The module's private image, hashed: its absolute path is what TMs are
 * told to load, its hash what they check. -1 after saying why. */
static int read_module(jm_t *jm, const char *modarg)
{
    char err[1024];
    if (!realpath(modarg, jm->module_path)) {
        spits_error("cannot load module %s: %s", modarg, strerror(errno));
        return -1;
    }
    /* jm.json, the journal and report.json are JSON and name the module
     * by this path (the TMs load it by the name in jm.json), and JSON
     * strings are UTF-8: no other encoding of the path could reach them. */
    json_t *utf8 = json_string(jm->module_path);
    if (!utf8) {
        spits_error("the module path %s is not valid UTF-8: the job's files "
                    "(jm.json, journal, report.json) are JSON and must name "
                    "it; rename the module or the directory holding it",
                    jm->module_path);
        return -1;
    }
    json_decref(utf8);
    if (!(jm->image = spits_image_read(jm->module_path, err, sizeof err))) {
        spits_error("%s", err);
        return -1;
    }
    snprintf(jm->module_hash, sizeof jm->module_hash, "%s",
             spits_image_hash(jm->image));
    return 0;
}

/* --resume: job dir, then module, arguments and id from the journal.
 * 0, -1 after saying why, or 1 with *status when the job already ended. */
static int open_resumed_job(jm_t *jm, const char *modarg, char ***rargv,
                            int *margc, int *status)
{
    static char jobdir_abs[PATH_MAX];
    char err[1024];
    if (jobdir_setup(jm, jobdir_abs, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    int rc = jm_recovery_resume(jm, modarg, rargv, margc, err, sizeof err);
    if (rc == 0)
        return 0;
    if (rc > 0)
        spits_info("%s", err);
    else
        spits_error("%s", err);
    *status = rc > 0 && jm->replay.exit_status >= 0 && jm->replay.exit_status < 256
              ? (int)jm->replay.exit_status : JM_EXIT_ERROR;
    return 1;
}

/* A new job: its job dir, id and journal. -1 after saying why. */
static int open_new_job(jm_t *jm, int margc, const char **margv)
{
    static char jobdir_abs[PATH_MAX];
    char err[1024];
    if (jobdir_setup(jm, jobdir_abs, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    spits_random_hex(jm->job_id, 16);
    if (jm_recovery_start(jm, margc, margv, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    return 0;
}

/* Keys, the dispatcher's socket, DIR/tm.key and DIR/jm.json: from here
 * on TMs can find and join the job. -1 after saying why. */
static int open_to_tms(jm_t *jm)
{
    char err[1024];
    spits_announce_t a;

    if (jm_crashes_setup(jm) != 0)
        return -1;
    if (jm->opt.joblog && !(jm->joblog = jm_joblog_new(jm->opt.joblog, err, sizeof err))) {
        spits_error("%s", err);
        return -1;
    }
    jm->started = spits_wall_time();
    /* (no pool, when out of memory: every task is malloc'd and freed) */
    jm->taskpool = jm_taskpool_new();
    if (security_setup(jm, err, sizeof err) != 0 ||
        !(jm->disp = jm_disp_new(jm, err, sizeof err))) {
        spits_error("%s", err);
        return -1;
    }
    memset(&a, 0, sizeof a);
    snprintf(a.job_id, sizeof a.job_id, "%s", jm->job_id);
    snprintf(a.endpoint, sizeof a.endpoint, "%s", jm_disp_endpoint(jm->disp));
    spits_hostname(a.host, sizeof a.host);
    snprintf(a.module, sizeof a.module, "%s", jm->module_path);
    snprintf(a.module_hash, sizeof a.module_hash, "%s", jm->module_hash);
    snprintf(a.module_hash_was, sizeof a.module_hash_was, "%s", jm->module_hash_was);
    a.curve = !jm->opt.insecure;
    snprintf(a.server_key, sizeof a.server_key, "%s", jm->keys.server_public);
    a.pid = (long)getpid();
    a.started_unix = jm->started;
    spits_iso_time(jm->started, a.started, sizeof a.started);
    a.resources = spits_res_req_json(&jm->opt.res);
    /* (before jm.json: whoever reads it may signal us at once, as
     * spits-run does when its TMs fail, and a signal must then stop the
     * job with its report) */
    jm_stop_init(jm_disp_wake_fd(jm->disp));
    if ((a.curve && write_tm_key(jm, a.endpoint, err, sizeof err) != 0) ||
        spits_announce_write(jm->opt.jobdir, &a, err, sizeof err) != 0) {
        json_decref(a.resources);
        spits_error("%s", err);
        return -1;
    }
    json_decref(a.resources);
    if (jm_disp_start(jm->disp) != 0) {
        spits_error("cannot start the dispatcher thread: %s", strerror(errno));
        return -1;
    }
    spits_info("job %s: %s%s, listening on %s, job dir %s", jm->job_id,
               jm->module_path, spits_module_is_v20(jm->mod) ? " (SPITS 2.0)" : "",
               a.endpoint, jm->opt.jobdir);
    return 0;
}

/* The end once the exit status is known: report.json written, the
 * journal closed (left resumable unless the job finished). */
static int end_with(jm_t *jm, int status)
{
    int finished = !jm->interrupted && !jm_signal && !jm->runtime_error &&
                   !atomic_load(&jm_abort) && !jm->failed_tasks;
    jm->resumable = jm->journal && !finished;
    jm_report_write(jm, status, spits_wall_time());
    jm_recovery_end(jm, status, finished);
    return status;
}

/* The module called exit(code) in spits_main (modexit.c): the job ends
 * there, code being the process's exit status. */
static void end_at_exit(jm_t *jm, int code)
{
    jm->module_exit = 1;
    jm_disp_stop(jm->disp);
    end_with(jm, code);
}

/* Runs spits_main, or one job with the command line's arguments (argv[0]
 * of the module is its path; its own arguments follow). */
static int run_job(jm_t *jm, int margc, const char **margv)
{
    int rc;
    jm_phase_set_job(jm);
    jm_modexit_arm(jm, end_at_exit);
    if (spits_module_has_main(jm->mod)) {
        rc = spits_module_main(jm->mod, margc, margv, jm_run_phase);
    } else {
        const void *final;
        spitssize_t finalsz;
        rc = jm_run_phase(margc, margv, NULL, 0, &final, &finalsz);
    }
    jm_modexit_disarm();
    fflush(stdout);
    return rc;
}

/* The end: the TMs told, then end_with. Returns the exit status. */
static int end_job(jm_t *jm, int rc)
{
    jm_disp_stop(jm->disp);
    if (jm->resuming && !jm->interrupted && !jm_signal && jm->nphases < jm->replay.nphases) {
        spits_error("spits_main ran %u phase(s), but the journal holds %u: it "
                    "does not run deterministically", jm->nphases, jm->replay.nphases);
        jm->runtime_error = 1;
    }
    return end_with(jm, exit_status(jm, rc));
}

/* Frees what the job holds; a job that never ran has its new journal
 * removed. */
static void free_job(jm_t *jm, char **rargv, int ran)
{
    jm_stop_release();
    jm_disp_destroy(&jm->disp);
    jm_taskpool_destroy(&jm->taskpool);   /* (after the dispatcher's last cells) */
    jm_joblog_destroy(&jm->joblog);
    for (uint32_t i = 0; i < jm->nphases; i++) {
        for (int k = 0; k < jm->phases[i].argc && jm->phases[i].argv; k++)
            free(jm->phases[i].argv[k]);
        free(jm->phases[i].argv);
        free(jm->phases[i].failed);
        json_decref(jm->phases[i].metrics);
    }
    free(jm->phases);
    spits_buf_free(&jm->final);
    spits_module_close(&jm->mod);
    spits_image_free(&jm->image);
    if (!ran)
        jm_recovery_abandon(jm);
    spits_journal_destroy(&jm->journal);
    spits_journal_unload(&jm->replay);
    free_argv(rargv);
}

/* The job, once the options are taken; returns the exit status. */
static int jm_main(jm_t *jm, int argc, char **argv)
{
    int rc, status = JM_EXIT_ERROR;
    char err[1024];
    char **rargv = NULL;

    if (sodium_init() < 0) {
        spits_error("cannot initialise libsodium");
        return JM_EXIT_ERROR;
    }
    if (jm->opt.export_key)
        return export_key(jm);

    const char *modarg = optind < argc ? argv[optind] : NULL;
    int margc = argc - optind;
    const char **margv = (const char **)argv + optind;
    if (jm->opt.resume) {
        rc = open_resumed_job(jm, modarg, &rargv, &margc, &status);
        if (rc != 0) {
            free_job(jm, rargv, 1);
            return status;
        }
        margv = (const char **)rargv;
    } else if (read_module(jm, modarg) != 0) {
        return JM_EXIT_ERROR;
    } else if (spits_pyjob_is(modarg)) {
        /* The Python module reads the job file from argv[0], on TMs
         * whose working directory is not ours too. */
        argv[optind] = jm->module_path;
    }
    /* The TMs are told the image's hash: it is of the very bytes loaded. */
    if (!(jm->mod = spits_module_load(&jm->image, err, sizeof err))) {
        spits_error("%s", err);
        goto fail;
    }
    if ((!jm->opt.resume && open_new_job(jm, margc, margv) != 0) ||
        open_to_tms(jm) != 0)
        goto fail;
    status = end_job(jm, run_job(jm, margc, margv));
    free_job(jm, rargv, 1);
    return status;
fail:
    free_job(jm, rargv, 0);
    return JM_EXIT_ERROR;
}

int main(int argc, char **argv)
{
    jm_t jm;
    int verbosity = SPITS_LOG_INFO, rc;
    char err[1024];
    spits_linefwd_t *linefwd = NULL;

    /* Two arenas: the JM's threads (and libzmq's) each took one of the
     * 16, and with 10,000 TMs each kept its own freed memory: a peak RSS
     * of 1.7 GB against 0.47 GB with one arena. One or two cost nothing
     * measurable on 4,000,000 empty tasks (wall 0.97x, noise). */
    spits_malloc_tune(2);
    set_defaults(&jm);
    spits_log_init("spits-jm", SPITS_LOG_INFO);
    rc = parse_args(&jm, argc, argv, &verbosity);
    if (rc >= 0)
        return rc;
    if (jm.opt.memory_limit < 0) {
        /* (a batch job's limit is its cgroup's; the JM leaves the rest
         * to the module, libraries and page cache) */
        uint64_t avail = spits_mem_available();
        jm.opt.memory_limit = (long long)(avail / 4 * 3);
    }
    spits_log_init("spits-jm", verbosity > SPITS_LOG_TRACE ? SPITS_LOG_TRACE : verbosity);
    spits_term_init();
    /* From here a fatal signal is named (crash.h); DIR/crash.json too once
     * the job dir is known (crashes.c). */
    if (spits_crash_init("spits-jm", err, sizeof err) != 0)
        spits_warn("%s: a crash will not be named", err);
    if (jm.opt.relay_fd >= 0 && !(linefwd = spits_linefwd_start(jm.opt.relay_fd, NULL, err, sizeof err))) {
        spits_error("%s", err);
        return JM_EXIT_ERROR;
    }
    rc = jm_main(&jm, argc, argv);
    /* The TMs' last lines, then a bar a failure left behind is erased. */
    spits_linefwd_stop(&linefwd);
    spits_term_bar_end(NULL);
    return rc;
}
