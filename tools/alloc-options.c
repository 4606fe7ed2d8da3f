/*
 * alloc-options.c - spits-alloc's command line: its usage text and the
 * parse into alloc_t's options (alloc.h), each bad value one line naming
 * the option.
 */
#define _GNU_SOURCE             /* getopt_long's permutation stops at "--" */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "alloc-request.h"
#include "alloc-slurm.h"
#include "log.h"
#include "selfexe.h"
#include "util.h"

static const char *usage_text =
"Usage: spits-alloc [OPTIONS] [-- SBATCH OPTIONS...]\n"
"Keeps Task Manager queue jobs submitted for one spits job on Slurm, as many\n"
"as the job's performance model says still help, within the limits; cancels\n"
"its queued jobs when the job ends or no longer needs them.\n"
"\n"
"Options:\n"
"  -d, --jobdir DIR         the job's directory (./spits-job)\n"
"  -s, --script FILE        the TM job script ($SPITS_TM_SCRIPT, else\n"
"                           spits-tm.sbatch of tools/slurm or\n"
"                           PREFIX/share/spits/slurm)\n"
"  -T, --target SEC         the remaining time to aim at (600)\n"
"      --time MIN           a TM job's --time, minutes (60); near the end of\n"
"                           the job, shorter (twice the time left)\n"
"      --min-time MIN       the shortest --time it asks for (5)\n"
"      --max-queued N       its jobs pending at once (4)\n"
"      --max-jobs N         its jobs pending or running at once (16)\n"
"      --max-total N        its jobs submitted in all (100)\n"
"      --workers-per-job N  workers one job brings (learned from the TMs); a\n"
"                           job asks Slurm for N tasks' worth of the job's\n"
"                           request (1 when not given)\n"
"      --gres NAME          the generic resource GPUs are asked as (gpu; a\n"
"                           type: gpu:a100): --gres=NAME:COUNT\n"
"  -i, --interval SEC       how often it looks, at least 2 (10)\n"
"      --sbatch-options     print the options a TM job asks Slurm for (from\n"
"                           DIR/jm.json), for sbatch spits-tm.sbatch by hand,\n"
"                           and exit\n"
"  -n, --dry-run            decide and log, submit and cancel nothing (with\n"
"                           no squeue, as if none of its jobs were queued)\n"
"  -q, --quiet              errors only\n"
"  -v, --verbose            also every command it runs, with its time\n"
"  -h, --help               this help\n"
"  -V, --version            print the version\n"
"\n"
"Each job asks Slurm for what the job's tasks need (DIR/jm.json, from\n"
"spits-jm --cpus-per-task, --gpus-per-task, --mem-per-task): for its one\n"
"spits-tm, --cpus-per-task=N*CPUS, --gres=gpu:N*GPUS and --mem=N*MEM,\n"
"for N workers. Everything after -- goes to sbatch after those (partition,\n"
"account, nodes), and a resource named there (or --exclusive) is left to it:\n"
"  $ spits-alloc --jobdir DIR -- --partition=cpu --cpus-per-task=16\n"
"\n"
"It sets the job name and time and submits single jobs, so --job-name,\n"
"--array, --clusters, --time, --parsable, --wait, --test-only (-J -a -M -t -W)\n"
"and their abbreviations are refused there.\n"
"Its state is DIR/alloc.json; spits-status shows it.\n"
"\n"
"Exit status:\n"
"  0   the job is over (also at once, for a job dir whose report.json says\n"
"      so), or it was stopped\n"
"  1   an error: sbatch refused the job; no sbatch or squeue; no Slurm\n"
"      controller answered in 3 tries\n"
"  2   a usage error\n";

static int alloc_int_opt(const char *name, const char *arg, long min, long max, long *out)
{
    if (spits_parse_long(arg, min, max, out) != 0) {
        char fmt[128];
        snprintf(fmt, sizeof fmt, "%s wants a number from %ld to %ld, not '%%s'", name,
                 min, max);
        return spits_bad_option(fmt, arg);
    }
    return 0;
}

/* The file next to this program (0), or name on PATH (-1). */
static int alloc_beside_me(const char *name, char *out, size_t len)
{
    char self[PATH_MAX];
    if (spits_selfexe("spits-alloc", self, sizeof self) == 0) {
        snprintf(out, len, "%s/%s", dirname(self), name);
        if (access(out, X_OK) == 0 || access(out, R_OK) == 0)
            return 0;
    }
    snprintf(out, len, "%s", name);
    return -1;
}

int alloc_options(alloc_t *a, int argc, char **argv)
{
    enum { OPT_TIME = 256, OPT_MIN_TIME, OPT_MAX_QUEUED, OPT_MAX_JOBS, OPT_MAX_TOTAL,
           OPT_PER_JOB, OPT_GRES, OPT_PRINT };
    static const struct option longopts[] = {
        {"jobdir", required_argument, NULL, 'd'},
        {"script", required_argument, NULL, 's'},
        {"target", required_argument, NULL, 'T'},
        {"time", required_argument, NULL, OPT_TIME},
        {"min-time", required_argument, NULL, OPT_MIN_TIME},
        {"max-queued", required_argument, NULL, OPT_MAX_QUEUED},
        {"max-jobs", required_argument, NULL, OPT_MAX_JOBS},
        {"max-total", required_argument, NULL, OPT_MAX_TOTAL},
        {"workers-per-job", required_argument, NULL, OPT_PER_JOB},
        {"gres", required_argument, NULL, OPT_GRES},
        {"interval", required_argument, NULL, 'i'},
        {"dry-run", no_argument, NULL, 'n'},
        {"sbatch-options", no_argument, NULL, OPT_PRINT},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    long v;
    int c, rc;
    static char script[PATH_MAX];

    a->dir = "spits-job";
    a->lim = (alloc_limits_t){600, 4, 16, 100, 0, 60, 5};
    a->interval = 10;
    opterr = 0;
    /* "+": options end at the first argument; "--" hands the rest to sbatch. */
    while ((c = getopt_long(argc, argv, "+:d:s:T:i:nqvhV", longopts, NULL)) != -1) {
        rc = 0;
        switch (c) {
        case 'd': a->dir = optarg; break;
        case 's': a->script = optarg; break;
        case 'T':
            if (spits_parse_seconds(optarg, 1e7, &a->lim.target_s) || a->lim.target_s < 0.1)
                return spits_bad_option("--target wants seconds (at least 0.1), not '%s'", optarg);
            break;
        case OPT_TIME: rc = alloc_int_opt("--time", optarg, 1, 525600, &v); a->lim.time_min = (int)v; break;
        case OPT_MIN_TIME: rc = alloc_int_opt("--min-time", optarg, 1, 525600, &v); a->lim.min_time_min = (int)v; break;
        case OPT_MAX_QUEUED: rc = alloc_int_opt("--max-queued", optarg, 1, 10000, &v); a->lim.max_queued = (int)v; break;
        case OPT_MAX_JOBS: rc = alloc_int_opt("--max-jobs", optarg, 1, 100000, &v); a->lim.max_running = (int)v; break;
        case OPT_MAX_TOTAL: rc = alloc_int_opt("--max-total", optarg, 1, ALLOC_QUEUE_MAX, &v); a->lim.max_total = v; break;
        case OPT_PER_JOB: rc = alloc_int_opt("--workers-per-job", optarg, 1, 1000000, &v); a->lim.workers_per_job = (int)v; break;
        case OPT_GRES:
            if (!optarg[0] || strlen(optarg) > 100 ||
                strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                               "0123456789_-.:") != strlen(optarg))
                return spits_bad_option("--gres wants a generic resource name such as "
                                        "gpu or gpu:a100, not '%s'", optarg);
            a->gres = optarg;
            break;
        case 'i':
            if (spits_parse_seconds(optarg, 86400, &a->interval) || a->interval < 2)
                return spits_bad_option("--interval wants seconds, at least 2 (the "
                                        "scheduler is asked that often), not '%s'", optarg);
            break;
        case 'n': a->dry_run = 1; break;
        case OPT_PRINT: a->print_options = 1; break;
        case 'q': spits_log_init("spits-alloc", SPITS_LOG_ERROR); break;
        case 'v': spits_log_init("spits-alloc", SPITS_LOG_DEBUG); break;
        case 'h': fputs(usage_text, stdout); exit(0);
        case 'V': printf("spits-alloc %s\n", PACKAGE_VERSION); exit(0);
        case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
        default: return spits_bad_option("unknown option '%s'", argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (optind < argc && strcmp(argv[optind - 1], "--") != 0)
        return spits_bad_option("unexpected argument '%s' (sbatch options go after --)",
                                argv[optind]);
    if (a->lim.min_time_min > a->lim.time_min) {
        char t[32];
        snprintf(t, sizeof t, "%d", a->lim.time_min);
        return spits_bad_option("--min-time is above --time (%s minutes)", t);
    }
    a->sbatch_args = argv + optind;
    a->nsbatch = argc - optind;
    char why[400];
    if (alloc_sbatch_check(a->sbatch_args, a->nsbatch, why, sizeof why) != 0)
        return spits_bad_option("%s", why);
    if (!a->script) {
        const char *env = getenv("SPITS_TM_SCRIPT");
        if (env && *env) {
            a->script = env;
        } else {
            /* in the build tree, in an installed tree moved elsewhere
             * (the bundle is one), or where it was installed */
            alloc_beside_me("slurm/spits-tm.sbatch", script, sizeof script);
            if (access(script, R_OK) != 0 &&
                alloc_beside_me("../share/spits/slurm/spits-tm.sbatch", script,
                                sizeof script) != 0)
                snprintf(script, sizeof script, "%s/spits-tm.sbatch", SPITS_SLURMDIR);
            a->script = script;
        }
    }
    if (!a->print_options && access(a->script, R_OK) != 0)
        return spits_bad_option("cannot read the TM job script '%s' (give --script FILE)",
                                a->script);
    alloc_beside_me("spits-status", a->status_exe, sizeof a->status_exe);
    return 0;
}
