/*
 * options.c - spits-tm's command line.
 *
 * tm_opts_parse fills a tm_opts_t from argv, with the defaults for what
 * is not given, and checks the options against each other. A usage error
 * is printed here in the one form every spits program uses
 * (spits_bad_option: "spits-tm: error: ... (see spits-tm --help)") and
 * returned as exit status 2; main returns it. tm_opts_complete then fills
 * in what depends on other options or on the world: --prefetch's default,
 * and, with no --end-time, the end of the Slurm job the TM runs in.
 *
 * Nothing here touches the network or the workers: main hands the options
 * on to the other files through tm_t.opts, which nothing changes after.
 */
#define _XOPEN_SOURCE 700   /* strptime */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pyjob.h"
#include "tm_private.h"
#include "util.h"

/* The --help text. */
static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-tm [OPTIONS]\n"
"Runs a task manager: pulls tasks of a SPITS job into worker threads.\n"
"\n"
"Options:\n"
"  -d, --jobdir DIR           find the job manager through DIR/jm.json\n"
"  -c, --connect ENDPOINT     connect to this endpoint instead\n"
"      --via ENDPOINT         reach the job manager through the relay at\n"
"                             ENDPOINT (tcp://HOST:PORT or ipc://PATH; repeat,\n"
"                             up to " TM_VIA_MAX_STR ", to try several in order): the TM starts\n"
"                             on the first relay and moves on to the next, then\n"
"                             to the job manager itself, then round again, when\n"
"                             one does not answer for 3 s (each round that\n"
"                             found none doubles it, up to 24 s)\n"
"  -w, --wait SEC             how long to wait for jm.json and for the job\n"
"                             manager's first answer (60)\n"
"      --reconnect-timeout SEC  how long to look for a job manager that\n"
"                             went silent before giving up (300)\n"
"  -n, --workers N            worker threads (one per online core)\n"
"  -p, --prefetch N           tasks queued beyond the workers (= workers)\n"
"      --gpus LIST|auto|none  the GPUs this TM gives a job that asks for\n"
"                             some (spits-jm --gpus-per-task): ids such as\n"
"                             0,1,2,3, or auto: CUDA_VISIBLE_DEVICES,\n"
"                             ROCR_VISIBLE_DEVICES, SLURM_STEP_GPUS,\n"
"                             SLURM_JOB_GPUS, GPU_DEVICE_ORDINAL, then\n"
"                             /dev/nvidia* and /dev/dri/renderD* (auto)\n"
"      --isolate              run each worker in its own process: a task that\n"
"                             crashes or hangs costs only that process\n"
"      --task-timeout SEC     with --isolate: kill a task's process after SEC\n"
"                             seconds and report the task as timed out (none)\n"
"      --drain-timeout SEC    on SIGTERM/SIGINT, how long running tasks may\n"
"                             take to finish before the TM leaves anyway (25)\n"
"      --end-time WHEN        this TM must be gone by WHEN (+SEC, epoch seconds,\n"
"                             YYYY-MM-DDTHH:MM:SS local, or none): it drains\n"
"                             when twice a task's time plus --end-margin is\n"
"                             left. Default: the Slurm job's end (squeue)\n"
"      --end-margin SEC       time kept for the last results (10)\n"
"  -m, --module PATH          load this module file instead of the announced one\n"
"                             (its BLAKE2b hash must match the job manager's)\n"
"  -k, --key-file FILE        with --connect: the job's key file (spits-jm\n"
"                             --export-key); with --jobdir, DIR/tm.key is used\n"
"                             (for the relays of --via too)\n"
"      --insecure             no CurveZMQ, for a job manager run --insecure\n"
"      --serve ENDPOINT       be a relay: run no task, serve task managers on\n"
"                             ENDPOINT and forward their work to the job;\n"
"                             ENDPOINT is tcp://ADDRESS:PORT (an address or\n"
"                             interface of this host, or * for all; PORT 0\n"
"                             or *: any free one) or ipc://PATH. Needs the\n"
"                             job's server key: DIR/jm.key, or --key-file with\n"
"                             a copy of it (see README, Relays)\n"
"      --simulate K           run K virtual task managers in this process, each\n"
"                             with its own connection and --workers virtual\n"
"                             workers, for scale tests (see README)\n"
"      --sim-task-time SEC    a virtual worker holds each task SEC seconds (at\n"
"                             least 0.001), then runs it for its result (1)\n"
"      --sim-churn SEC        each virtual TM leaves 0.5 to 1.5 x SEC seconds\n"
"                             after it joined, and a new one joins in its place\n"
"      --sim-kill PCT         percent of those that leave as if killed (no\n"
"                             BYE, their tasks lost); the rest drain (50)\n"
"  -v, --verbose              more logging (repeat for more)\n"
"  -q, --quiet                errors only\n"
"  -h, --help                 this help\n"
"  -V, --version              print the version\n"
"\n"
"Exit status:\n"
"  0   the job is over, or a drain finished\n"
"  1   an error, or a drain that timed out\n"
"  2   a usage error\n");
}

enum { OPT_RECONNECT = 256, OPT_ISOLATE, OPT_TASK_TIMEOUT, OPT_DRAIN_TIMEOUT,
       OPT_INSECURE, OPT_END_TIME, OPT_END_MARGIN, OPT_CHECK_OPTIONS,
       OPT_SIMULATE, OPT_SIM_TASK, OPT_SIM_CHURN, OPT_SIM_KILL, OPT_SERVE, OPT_VIA,
       OPT_GPUS };

/* WHEN as +SEC, epoch seconds, local YYYY-MM-DDTHH:MM:SS (as Slurm
 * prints), or none. 0, or -1 if it is none of those. */
static int parse_end_time(tm_opts_t *opts, const char *when)
{
    double wall, rel;
    long epoch;
    struct tm t;

    opts->end_wall = 0;
    if (strcmp(when, "none") == 0)
        return 0;
    if (when[0] == '+' && spits_parse_seconds(when + 1, 1e9, &rel) == 0) {
        wall = spits_wall_time() + rel;
    } else if (spits_parse_long(when, 1, LONG_MAX, &epoch) == 0) {
        wall = (double)epoch;
    } else {
        memset(&t, 0, sizeof t);
        const char *end = strptime(when, "%Y-%m-%dT%H:%M:%S", &t);
        if (!end || *end)
            return -1;
        t.tm_isdst = -1;
        wall = (double)mktime(&t);
    }
    opts->end_wall = wall;
    return 0;
}

/* Inside a Slurm job: its end time, from squeue (bounded by timeout). */
static void slurm_end_time(tm_opts_t *opts)
{
    const char *job = getenv("SLURM_JOB_ID");
    char cmd[128], line[64] = "";
    long id;

    if (!job || spits_parse_long(job, 1, LONG_MAX, &id) != 0)
        return;
    snprintf(cmd, sizeof cmd, "timeout 10 squeue -h -j %ld -o %%e 2>/dev/null", id);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    pclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (line[0] && parse_end_time(opts, line) == 0 && opts->end_wall > 0)
        spits_info("Slurm job %ld ends at %s: this task manager leaves before then",
                   id, line);
}

/* The long options; the short ones are in tm_opts_parse. */
static const struct option longopts[] = {
    {"jobdir", required_argument, NULL, 'd'},
    {"connect", required_argument, NULL, 'c'},
    {"via", required_argument, NULL, OPT_VIA},
    {"wait", required_argument, NULL, 'w'},
    {"reconnect-timeout", required_argument, NULL, OPT_RECONNECT},
    {"workers", required_argument, NULL, 'n'},
    {"prefetch", required_argument, NULL, 'p'},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"module", required_argument, NULL, 'm'},
    {"isolate", no_argument, NULL, OPT_ISOLATE},
    {"key-file", required_argument, NULL, 'k'},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"end-time", required_argument, NULL, OPT_END_TIME},
    {"end-margin", required_argument, NULL, OPT_END_MARGIN},
    {"task-timeout", required_argument, NULL, OPT_TASK_TIMEOUT},
    {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
    /* spits-run's: check the options, then exit 0 (or 2, as ever) */
    {"check-options", no_argument, NULL, OPT_CHECK_OPTIONS},
    {"simulate", required_argument, NULL, OPT_SIMULATE},
    {"sim-task-time", required_argument, NULL, OPT_SIM_TASK},
    {"sim-churn", required_argument, NULL, OPT_SIM_CHURN},
    {"sim-kill", required_argument, NULL, OPT_SIM_KILL},
    {"serve", required_argument, NULL, OPT_SERVE},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* One option c (getopt_long's answer). Returns -1 to go on, or the exit
 * status. */
static int parse_option(tm_opts_t *opts, int c, char **argv)
{
    long v;
    char endpoint_err[1200];

    switch (c) {
    case 'd': opts->jobdir = optarg; break;
    case 'c':
        if (spits_endpoint_check(optarg, 0, endpoint_err, sizeof endpoint_err) != 0)
            return spits_bad_option("--connect %s", endpoint_err);
        opts->connect = optarg;
        break;
    case OPT_VIA:
        if (spits_endpoint_check(optarg, 0, endpoint_err, sizeof endpoint_err) != 0)
            return spits_bad_option("--via %s", endpoint_err);
        /* (link.hops.endpoint's room, less its NUL) */
        if (strlen(optarg) > 511)
            return spits_bad_option("--via %.40s...: an endpoint of at most 511 "
                                    "characters", optarg);
        if (opts->n_via == TM_VIA_MAX)
            return spits_bad_option("%s", "--via given more than " TM_VIA_MAX_STR
                                    " times: at most " TM_VIA_MAX_STR " relays");
        opts->via[opts->n_via++] = optarg;
        break;
    case 'm': opts->module_override = optarg; break;
    case OPT_SERVE:
        if (spits_endpoint_check(optarg, 1, endpoint_err, sizeof endpoint_err) != 0)
            return spits_bad_option("--serve %s", endpoint_err);
        opts->serve = optarg;
        break;
    case 'w':
        if (spits_parse_seconds(optarg, 1e7, &opts->wait))
            return spits_bad_option("--wait wants seconds, not '%s'", optarg);
        break;
    case OPT_RECONNECT:
        if (spits_parse_seconds(optarg, 1e7, &opts->reconnect))
            return spits_bad_option("--reconnect-timeout wants seconds, not '%s'", optarg);
        break;
    case 'n':
        if (spits_parse_long(optarg, 1, SPITS_TM_WORKERS_MAX, &v))
            return spits_bad_option("--workers wants a number from 1 to 4096, "
                                    "not '%s'", optarg);
        opts->workers = (int)v;
        opts->workers_given = 1;
        break;
    case 'p':
        if (spits_parse_long(optarg, 0, 1 << 20, &v))
            return spits_bad_option("--prefetch wants a number from 0 to 1048576, not '%s'", optarg);
        opts->prefetch = (int)v;
        opts->prefetch_given = 1;
        break;
    case OPT_GPUS:
        if (strcmp(optarg, "auto") != 0) {
            char err[512];
            spits_res_have_t *h = calloc(1, sizeof *h);
            if (!h)
                snprintf(err, sizeof err, "out of memory");
            int bad = !h || spits_res_gpus_list(optarg, h, err, sizeof err) != 0;
            free(h);
            if (bad)
                return spits_bad_option("%s", err);
        }
        opts->gpus = optarg;
        break;
    case OPT_ISOLATE: opts->isolate = 1; break;
    case 'k': opts->key_file = optarg; break;
    case OPT_INSECURE: opts->insecure = 1; break;
    case OPT_END_TIME:
        opts->end_arg = optarg;
        if (parse_end_time(opts, optarg) != 0)
            return spits_bad_option("--end-time wants +SEC, epoch seconds, "
                                    "YYYY-MM-DDTHH:MM:SS or none, not '%s'", optarg);
        /* (a TM told to be gone already would start tasks, then drain at
         * once; and an end_wall of 0 would mean none) */
        if (strcmp(optarg, "none") != 0 && opts->end_wall <= spits_wall_time()) {
            char what[512], iso[32];
            spits_iso_time(opts->end_wall, iso, sizeof iso);
            snprintf(what, sizeof what, "'%.400s' is %s", optarg, iso);
            return spits_bad_option("--end-time %s, not in the future: give a "
                                    "time to come, +SEC with SEC above 0, or none",
                                    what);
        }
        break;
    case OPT_END_MARGIN:
        if (spits_parse_seconds(optarg, 1e6, &opts->end_margin))
            return spits_bad_option("--end-margin wants seconds, not '%s'", optarg);
        break;
    case OPT_TASK_TIMEOUT:
        if (spits_parse_seconds(optarg, 1e7, &opts->task_timeout) ||
            opts->task_timeout < 0.001)
            return spits_bad_option("--task-timeout wants seconds (at least 0.001), not '%s'", optarg);
        break;
    case OPT_CHECK_OPTIONS: opts->check_only = 1; break;
    case OPT_DRAIN_TIMEOUT:
        if (spits_parse_seconds(optarg, 1e7, &opts->drain_timeout))
            return spits_bad_option("--drain-timeout wants seconds, not '%s'", optarg);
        break;
    case OPT_SIMULATE:
        if (spits_parse_long(optarg, 1, TM_SIMULATE_MAX, &v))
            return spits_bad_option("--simulate wants a number from 1 to "
                                    TM_SIMULATE_MAX_STR ", not '%s'", optarg);
        opts->simulate = (int)v;
        break;
    case OPT_SIM_TASK:
        if (spits_parse_seconds(optarg, 1e6, &opts->sim_task) || opts->sim_task < 0.001)
            return spits_bad_option("--sim-task-time wants seconds (at least 0.001), not '%s'", optarg);
        break;
    case OPT_SIM_CHURN:
        if (spits_parse_seconds(optarg, 1e6, &opts->sim_churn) || opts->sim_churn < 0.01)
            return spits_bad_option("--sim-churn wants seconds (at least 0.01), not '%s'", optarg);
        break;
    case OPT_SIM_KILL:
        if (spits_parse_long(optarg, 0, 100, &v))
            return spits_bad_option("--sim-kill wants a percentage from 0 to 100, not '%s'", optarg);
        opts->sim_kill = (int)v;
        break;
    case 'v': opts->verbosity++; break;
    case 'q': opts->verbosity = SPITS_LOG_ERROR; break;
    case 'h': usage(stdout); return 0;
    case 'V': printf("spits-tm %s\n", PACKAGE_VERSION); return 0;
    case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
    default: return spits_bad_option("unknown option '%s'", argv[optind - 1]);
    }
    return -1;
}

/* The rules between options. Returns -1 if they hold, or 2 (printed). */
static int check_options(const tm_opts_t *opts)
{
    if (!opts->jobdir && !opts->connect)
        return spits_bad_option("%s", "give --jobdir DIR or --connect ENDPOINT");
    if (opts->jobdir && opts->connect)
        return spits_bad_option("%s", "give --jobdir or --connect, not both");
    if (opts->connect && !opts->key_file && !opts->insecure)
        return spits_bad_option("%s", "--connect needs --key-file FILE (made by "
                                "spits-jm --export-key), or --insecure for a job "
                                "manager run --insecure");
    if (opts->key_file && opts->insecure)
        return spits_bad_option("%s", "give --key-file or --insecure, not both");
    if (!opts->simulate && (opts->sim_task > 0 || opts->sim_churn > 0 ||
                            opts->sim_kill >= 0))
        return spits_bad_option("%s", "--sim-task-time, --sim-churn and "
                                "--sim-kill need --simulate K");
    if (opts->simulate && opts->isolate)
        return spits_bad_option("%s", "--simulate runs virtual workers: it "
                                "takes no --isolate");
    if (opts->serve && (opts->simulate || opts->isolate || opts->module_override))
        return spits_bad_option("%s", "a relay (--serve) runs no task: it takes "
                                "no --simulate, --isolate or --module");
    if (opts->task_timeout > 0 && !opts->isolate)
        return spits_bad_option("%s", "--task-timeout needs --isolate: a "
                                "worker thread cannot be stopped, a process can");
    return -1;
}

int tm_opts_parse(tm_opts_t *opts, int argc, char **argv)
{
    int c, rc;

    memset(opts, 0, sizeof *opts);
    opts->wait = 60;
    opts->reconnect = 300;
    opts->drain_timeout = 25;
    opts->end_margin = 10;
    opts->workers = spits_online_cores();
    opts->prefetch = -1;
    opts->verbosity = SPITS_LOG_INFO;
    opts->sim_kill = -1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:c:w:n:p:m:k:vqhV", longopts, NULL)) != -1)
        if ((rc = parse_option(opts, c, argv)) >= 0)
            return rc;
    if (optind < argc)
        return spits_bad_option("unexpected argument '%s'", argv[optind]);
    /* A Python job's workers are processes (pyjob.h). */
    if (spits_pyjob_is(opts->module_override) && !opts->simulate)
        opts->isolate = 1;
    rc = check_options(opts);
    return rc < 0 && opts->check_only ? 0 : rc;
}

void tm_opts_complete(tm_opts_t *opts)
{
    if (opts->simulate && opts->sim_task <= 0)
        opts->sim_task = 1;
    if (opts->sim_kill < 0)
        opts->sim_kill = 50;
    if (opts->prefetch < 0)
        opts->prefetch = opts->workers;
    if (!opts->end_arg)
        slurm_end_time(opts);
}
