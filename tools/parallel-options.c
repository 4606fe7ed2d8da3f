/*
 * parallel-options.c - spits-parallel's command line: GNU parallel's
 * options that it takes (each checked, a bad one refused in one line),
 * the command's words and the input sources (:::, ::::, -a, their links
 * and stdin), into par_t (parallel.h). Its --help is here too.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "parallel.h"
#include "parallel-args.h"
#include "parallel-options.h"
#include "resources.h"
#include "util.h"

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-parallel [OPTIONS] COMMAND [::: ARG...]... [:::: FILE...]...\n"
"Runs COMMAND once for each argument, or each combination of arguments of\n"
"several input sources (the last varies fastest), as a SPITS job: GNU\n"
"parallel's syntax, run by spits-run here, or by task managers that join\n"
"from elsewhere (--jobdir).\n"
"\n"
"Input sources: ::: ARG... (arguments), :::: FILE... (one argument a line,\n"
"each file a source; - is stdin), -a FILE; with none, lines from stdin.\n"
":::+ and ::::+ link a source to the one before: they step together (as\n"
"long as the shorter). Replacement strings in COMMAND: {} the argument(s),\n"
"{.} without extension, {/} basename, {//} dirname, {/.} basename without\n"
"extension, {#} the task number, {%%} the job slot (1 to -j: no two running\n"
"commands share one), {N} {N.} {N/} {N//} {N/.} of the N-th argument\n"
"(nothing past the last), {0} as {}, {NAME} with --header. Without any,\n"
"the arguments are appended. The command line runs in a shell, its\n"
"arguments quoted, as with GNU parallel (plain command lines run without).\n"
"Not here (refused, naming the option): {= =}, {+...}, --pipe, -X and\n"
"GNU parallel's other options.\n"
"\n"
"  -k, --keep-order       outputs in argument order (else as commands end)\n"
"  -j, --jobs N           commands at once per local task manager (one per\n"
"                         online core); with --jobdir, the TMs' own --workers\n"
"      --tag              prefix each output line with the arguments and a tab\n"
"      --line-buffer, --lb  print each line a command writes as it is\n"
"                         written (whole lines; with -k the oldest\n"
"                         command's, the others' when theirs is next); not\n"
"                         with --jobdir, --results or --max-copies above 1\n"
"      --joblog FILE      one line per command, GNU parallel's format (-:\n"
"                         stdout)\n"
"      --resume           with --joblog: skip the commands it has\n"
"      --resume-failed    with --joblog: skip the commands it has as\n"
"                         succeeded; run the failed and unrun ones again\n"
"      --results DIR      write DIR/1/ARG.../{stdout,stderr,seq} instead of\n"
"                         printing the outputs\n"
"      --halt now|soon,fail=N  stop after N failed commands: now kills the\n"
"                         running ones, soon lets them end (never); a\n"
"                         command a worker had already taken may still start\n"
"      --timeout SEC      kill a command (its process group) after SEC seconds\n"
"      --output-cap BYTES stdout plus stderr kept per command (67108864); a\n"
"                         command writing more is killed and fails\n"
"  -q, --quote            COMMAND's words are literal, not shell code\n"
"      --dry-run          print the command lines, run nothing\n"
"  -a, --arg-file FILE    an input source: FILE's lines\n"
"  -N, --max-args N       N arguments (of each source) per command, {1}..{N};\n"
"                         -n is the same; -N0: the command once per argument,\n"
"                         without it\n"
"      --colsep REGEX     split each argument into columns {1} {2}... at\n"
"                         REGEX (POSIX extended; \\t \\s \\d \\w as in Perl),\n"
"                         white space trimmed at their ends\n"
"  -0, --null             input lines end with a NUL byte, not a newline\n"
"      --header :         each source's first argument (its columns with\n"
"                         --colsep) names it: {NAME}, and --results paths\n"
"      --retries N        run a failing command up to N times in all (the\n"
"                         last run is the one written)\n"
"      --delay SEC        start commands at least SEC apart (per task manager)\n"
"      --bar, --eta, --progress  the commands done, on stderr: redrawn in\n"
"                         place on a terminal, else a line every 10 s at\n"
"                         most and one at the end (not GNU's format)\n"
"      --tms K            local task managers (1)\n"
"      --jobdir DIR       run the job manager only, in DIR; task managers join\n"
"                         with spits-tm --jobdir DIR (or Slurm: spits-alloc)\n"
"      --bind ENDPOINT    with --jobdir: the job manager's endpoint (tcp://*:0)\n"
"      --env NAME         carry only these variables (repeatable) to the\n"
"                         commands, on every task manager; without it, the\n"
"                         whole environment is carried (as sbatch's\n"
"                         --export=ALL)\n"
"      --workdir, --wd DIR  run the commands in DIR (this directory); where\n"
"                         a task manager's host lacks it, they fail there\n"
"      --max-copies N     concurrent copies of one command (1; passed to\n"
"                         spits-jm): 2 or more lets idle workers run another\n"
"                         copy of a late command (the first result counts),\n"
"                         only for commands that may run twice at once\n"
"      --cpus-per-task N  cores each command needs (passed to spits-jm): each\n"
"                         task manager runs as many at once as its cores\n"
"                         allow, each on cores of its own, OMP_NUM_THREADS=N\n"
"      --gpus-per-task N  GPUs each command needs: it sees its own in\n"
"                         CUDA_VISIBLE_DEVICES (or ROCm's) and SPITS_GPUS\n"
"      --mem-per-task SIZE  memory each command needs (512M, 4G)\n"
"      --will-cite        accepted (GNU parallel's), does nothing\n"
"  -v, --verbose          the job manager's progress and messages\n"
"  -h, --help             this help\n"
"  -V, --version          print the version\n"
"\n"
"Exit status:\n"
"  0        every command succeeded\n"
"  1-100    that many commands failed\n"
"  101      more than 100 commands failed\n"
"  N        with --halt ...,fail=1: the failed command's exit value\n"
"  255      any other error (a bad option: one line saying why)\n");
}

/* A usage error: one line, status 255 (GNU parallel's). */
int popts_bad(const char *fmt, const char *arg)
{
    spits_bad_option(fmt, arg);
    return PAR_ERROR;
}

static int par_add(par_source_t *s, char *v)
{
    if (!v || spits_grow((void **)&s->vals, &s->cap, s->n + 1, sizeof *s->vals, 16) != 0) {
        free(v);
        return -1;
    }
    s->vals[s->n++] = v;
    return 0;
}

static par_source_t *par_new_source(par_t *p)
{
    par_source_t *s = realloc(p->src, (p->nsrc + 1) * sizeof *s);
    if (!s)
        return NULL;
    p->src = s;
    memset(&s[p->nsrc], 0, sizeof *s);
    return &s[p->nsrc++];
}

/* A new source: path's lines ("-": stdin), read as the job runs. */
static int par_read_file(par_t *p, const char *path)
{
    par_source_t *s = par_new_source(p);
    if (!s) {
        spits_error("out of memory reading %s", path);
        return -1;
    }
    s->path = path;
    if (!strcmp(path, "-") && --p->stdin_left > 0) {
        /* stdin again later (:::: - -): this one takes one value now */
        char *line = NULL;
        size_t cap = 0;
        int delim = p->null ? '\0' : '\n';
        ssize_t n = getdelim(&line, &cap, delim, stdin);
        s->path = NULL;
        if (n > 0 && line[n - 1] == delim)
            line[--n] = '\0';
        if (n >= 0 && memchr(line, '\0', (size_t)n)) {
            spits_error("the input source %s has a NUL byte in an argument", path);
            free(line);
            return -1;
        }
        if (n >= 0 && par_add(s, line) != 0) {
            spits_error("out of memory reading %s", path);
            return -1;
        }
        if (n < 0)
            free(line);
    }
    return 0;
}

/* What word w is: 0 an argument, 1 :::, 2 ::::, 3 :::+, 4 ::::+. */
static int par_sep(const char *w)
{
    static const char *const seps[] = {":::", "::::", ":::+", "::::+"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(w, seps[k]))
            return k + 1;
    return 0;
}

/* How many input sources read stdin (-a -, :::: -): GNU parallel gives
 * each but the last one line of it, the last the rest. */
static void par_count_stdin(par_t *p, int argc, char **argv, int i)
{
    int files = 0;
    p->stdin_left = 0;
    for (size_t k = 0; k < p->nargfiles; k++)
        p->stdin_left += !strcmp(p->argfiles[k], "-");
    for (; i < argc; i++) {
        int sep = par_sep(argv[i]);
        files = sep ? sep % 2 == 0 : files;
        p->stdin_left += !sep && files && !strcmp(argv[i], "-");
    }
}

static int par_ends(const char *s, const char *end)
{
    size_t n = strlen(s), e = strlen(end);
    return n >= e && !strcmp(s + n - e, end);
}

/* --env NAME (env set) and --workdir DIR. */
static int par_where_option(par_t *p, int env, const char *arg)
{
    if (!env) {
        if (!*arg)
            return popts_bad("%s", "--workdir wants a directory, not ''");
        p->workdir = arg;
        return 0;
    }
    if (!*arg || strchr(arg, '='))
        return popts_bad("--env wants a variable's name, not '%s'", arg);
    if (p->nenv == sizeof p->envnames / sizeof p->envnames[0])
        return popts_bad("too many --env names (at most 64), at '%s'", arg);
    p->envnames[p->nenv++] = arg;
    return 0;
}

/* The option getopt stopped at, as typed: --name (without =VALUE), or
 * -C for a short one (arg, the word it is in, may hold several). */
static const char *par_option_name(const char *arg, int opt)
{
    static char name[64];
    if (!strncmp(arg, "--", 2))
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(name, sizeof name, "-%c", opt > 32 && opt < 127 ? opt : '?');
    return name;
}

enum { O_PAR_COLSEP = 512, O_PAR_HEADER, O_PAR_RETRIES, O_PAR_DELAY, O_PAR_BAR,
       O_PAR_ETA, O_PAR_PROGRESS, O_PAR_LB };

/* The options of GNU parallel's input and retries (-N, -0, --colsep,
 * --header, --retries, --delay); 0, or -1 after saying why. */
static int par_more_options(par_t *p, int c, const char *arg)
{
    double d;
    char err[256];
    switch (c) {
    case 'N': case 'n':
        if (spits_parse_long(arg, 0, 1000000, &p->max_args))
            return popts_bad("-N wants a number of arguments from 0 to 1000000, not '%s'", arg),
                   -1;
        break;
    case '0': p->null = 1; break;
    case O_PAR_BAR: p->progress = "bar"; break;
    case O_PAR_ETA: p->progress = "eta"; break;
    case O_PAR_PROGRESS: p->progress = "progress"; break;
    case O_PAR_LB: p->lb = 1; break;
    case O_PAR_COLSEP:
        if (p->colsep)
            regfree(&p->colsep_re);
        p->colsep = NULL;
        if (pargs_colsep_compile(&p->colsep_re, arg, err, sizeof err) != 0) {
            char msg[512];
            snprintf(msg, sizeof msg, "--colsep '%s' is not a regular expression here: %s",
                     arg, err);
            return popts_bad("%s", msg), -1;
        }
        p->colsep = arg;
        break;
    case O_PAR_HEADER:
        if (strcmp(arg, ":") && strcmp(arg, ".*\\n"))
            return popts_bad("--header takes ':' (the first line, or argument, of each "
                           "source names it) here, not '%s'", arg), -1;
        p->header = arg;
        break;
    case O_PAR_RETRIES:
        if (spits_parse_long(arg, 0, 1000000, &(long){0}))
            return popts_bad("--retries wants a number of tries from 0 to 1000000, not '%s'",
                           arg), -1;
        p->retries = arg;
        break;
    case O_PAR_DELAY:
        if (spits_parse_seconds(arg, 1e6, &d) || d < 0)
            return popts_bad("--delay wants a number of seconds, not '%s'", arg), -1;
        p->delay = arg;
        break;
    }
    return 0;
}

/* What --line-buffer cannot go with, and why; NULL: nothing. */
static const char *par_lb_conflict(const par_t *p)
{
    if (p->jobdir)
        return "--jobdir: its lines reach this machine's task managers only, and with "
               "--jobdir they may join from anywhere";
    if (p->results)
        return "--results: the outputs go to its files, not to the terminal";
    if (p->max_copies && strcmp(p->max_copies, "1"))
        return "--max-copies above 1: each copy's lines would be printed";
    return NULL;
}

int popts_parse(par_t *p, int argc, char **argv)
{
    enum { O_JOBLOG = 256, O_RESULTS, O_RESUME, O_RESUME_FAILED, O_HALT, O_TIMEOUT,
           O_TAG, O_TMS, O_JOBDIR, O_BIND, O_MAX_COPIES, O_CAP, O_DRY, O_CITE,
           O_CPUS_PER_TASK, O_GPUS_PER_TASK, O_MEM_PER_TASK };
    enum { O_ENV = 400, O_WORKDIR };
    static const struct option longopts[] = {
        {"keep-order", no_argument, NULL, 'k'},
        {"jobs", required_argument, NULL, 'j'},
        {"joblog", required_argument, NULL, O_JOBLOG},
        {"results", required_argument, NULL, O_RESULTS},
        {"res", required_argument, NULL, O_RESULTS},
        {"resume", no_argument, NULL, O_RESUME},
        {"resume-failed", no_argument, NULL, O_RESUME_FAILED},
        {"halt", required_argument, NULL, O_HALT},
        {"halt-on-error", required_argument, NULL, O_HALT},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"tag", no_argument, NULL, O_TAG},
        {"arg-file", required_argument, NULL, 'a'},
        {"quote", no_argument, NULL, 'q'},
        {"dry-run", no_argument, NULL, O_DRY},
        {"tms", required_argument, NULL, O_TMS},
        {"jobdir", required_argument, NULL, O_JOBDIR},
        {"bind", required_argument, NULL, O_BIND},
        {"max-copies", required_argument, NULL, O_MAX_COPIES},
        {"cpus-per-task", required_argument, NULL, O_CPUS_PER_TASK},
        {"gpus-per-task", required_argument, NULL, O_GPUS_PER_TASK},
        {"mem-per-task", required_argument, NULL, O_MEM_PER_TASK},
        {"output-cap", required_argument, NULL, O_CAP},
        {"will-cite", no_argument, NULL, O_CITE},
        {"env", required_argument, NULL, O_ENV},
        {"workdir", required_argument, NULL, O_WORKDIR},
        {"wd", required_argument, NULL, O_WORKDIR},
        {"max-args", required_argument, NULL, 'N'},
        {"max-replace-args", required_argument, NULL, 'N'},
        {"null", no_argument, NULL, '0'},
        {"colsep", required_argument, NULL, O_PAR_COLSEP},
        {"header", required_argument, NULL, O_PAR_HEADER},
        {"retries", required_argument, NULL, O_PAR_RETRIES},
        {"delay", required_argument, NULL, O_PAR_DELAY},
        {"bar", no_argument, NULL, O_PAR_BAR},
        {"eta", no_argument, NULL, O_PAR_ETA},
        {"progress", no_argument, NULL, O_PAR_PROGRESS},
        {"line-buffer", no_argument, NULL, O_PAR_LB},
        {"lb", no_argument, NULL, O_PAR_LB},
        {"linebuffer", no_argument, NULL, O_PAR_LB},
        {"line-buffered", no_argument, NULL, O_PAR_LB},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    static char halt[64];
    int c;
    long v;
    double d;
    opterr = 0;
    p->max_args = -1;
    int at = 1;
    while ((at = optind, c = getopt_long(argc, argv, "+:kj:a:qvhVN:n:0", longopts, NULL)) != -1) {
        if (par_more_options(p, c, optarg) != 0)
            return PAR_ERROR;
        switch (c) {
        case 'k': p->keep = 1; break;
        case 'j':
            if (spits_parse_long(optarg, 1, 4096, &p->jobs))
                return popts_bad("--jobs wants a number from 1 to 4096, not '%s'", optarg);
            break;
        case O_JOBLOG: p->joblog = optarg; break;
        case O_RESULTS: p->results = optarg; break;
        case O_RESUME: p->resume = 1; break;
        case O_RESUME_FAILED: p->resume_failed = 1; break;
        case O_HALT: {
            /* never, 0, 1 (soon,fail=1), 2 (now,fail=1), now|soon,fail=N */
            const char *h = optarg;
            if (!strcmp(h, "never") || !strcmp(h, "0")) {
                p->halt = NULL;
                break;
            }
            if (!strcmp(h, "1") || !strcmp(h, "2")) {
                snprintf(halt, sizeof halt, "%s,fail=1", h[0] == '1' ? "soon" : "now");
            } else {
                const char *n = !strncmp(h, "now,fail=", 9) ? h + 9
                              : !strncmp(h, "soon,fail=", 10) ? h + 10 : NULL;
                if (!n || spits_parse_long(n, 1, 1000000000, &v))
                    return popts_bad("--halt wants never, now,fail=N or soon,fail=N "
                                   "(N a number of commands), not '%s'", h);
                snprintf(halt, sizeof halt, "%s", h);
            }
            p->halt = halt;
            break;
        }
        case O_TIMEOUT:
            if (spits_parse_seconds(optarg, 1e9, &d) || !(d > 0))
                return popts_bad("--timeout wants a number of seconds over 0, not '%s'", optarg);
            p->timeout = optarg;
            break;
        case O_TAG: p->tag = 1; break;
        case 'a':
            if (p->nargfiles == sizeof p->argfiles / sizeof p->argfiles[0])
                return popts_bad("too many -a files (at most 64), at '%s'", optarg);
            p->argfiles[p->nargfiles++] = optarg;
            break;
        case 'q': p->quote = 1; break;
        case O_DRY: p->dry_run = 1; break;
        case O_CITE: break;             /* GNU parallel's; nothing to do */
        case O_TMS:
            if (spits_parse_long(optarg, 1, 1024, &p->tms))
                return popts_bad("--tms wants a number from 1 to 1024, not '%s'", optarg);
            break;
        case O_JOBDIR: p->jobdir = optarg; break;
        case O_BIND: p->bind = optarg; break;
        case O_MAX_COPIES:
            if (spits_parse_long(optarg, 1, 8, &v))
                return popts_bad("--max-copies wants a number from 1 to 8, not '%s'", optarg);
            p->max_copies = optarg;
            break;
        case O_CPUS_PER_TASK:
        case O_GPUS_PER_TASK:
        case O_MEM_PER_TASK: {
            char err[256];
            int n;
            uint64_t m;
            if (c == O_MEM_PER_TASK
                ? spits_res_parse_size("--mem-per-task", optarg, &m, err, sizeof err)
                : spits_res_parse_count(c == O_CPUS_PER_TASK ? "--cpus-per-task"
                                        : "--gpus-per-task", optarg,
                                        c == O_CPUS_PER_TASK ? SPITS_RES_CPUS_MAX
                                        : SPITS_RES_GPUS_MAX, &n, err, sizeof err))
                return popts_bad("%s", err);
            *(c == O_CPUS_PER_TASK ? &p->cpus_per_task : c == O_GPUS_PER_TASK
              ? &p->gpus_per_task : &p->mem_per_task) = optarg;
            break;
        }
        case O_CAP:
            if (spits_parse_long(optarg, 1, LONG_MAX, &v))
                return popts_bad("--output-cap wants a number of bytes over 0, not '%s'",
                               optarg);
            if (v > PAR_CAP_MAX)
                return popts_bad("--output-cap '%s' is more than a result can carry "
                               "(at most " PAR_CAP_MAX_S " bytes)", optarg);
            p->cap = optarg;
            break;
        case O_ENV:
        case O_WORKDIR:
            if (par_where_option(p, c == O_ENV, optarg) != 0)
                return PAR_ERROR;
            break;
        case 'v': p->verbosity++; break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("spits-parallel %s\n", PACKAGE_VERSION); exit(0);
        case 'N': case 'n': case '0': case O_PAR_COLSEP: case O_PAR_HEADER:
        case O_PAR_RETRIES: case O_PAR_DELAY: case O_PAR_BAR: case O_PAR_ETA:
        case O_PAR_PROGRESS: case O_PAR_LB:
            break;                      /* (par_more_options) */
        case ':':
            return popts_bad("option '%s' needs a value", par_option_name(argv[at], optopt));
        default:
            return popts_bad("option '%s' is not supported", par_option_name(argv[at], optopt));
        }
    }
    if ((p->resume || p->resume_failed) && (!p->joblog || !strcmp(p->joblog, "-")))
        return popts_bad("%s", "--resume and --resume-failed need --joblog FILE");
    if (p->bind && !p->jobdir)
        return popts_bad("%s", "--bind needs --jobdir (spits-run binds to 127.0.0.1)");
    if (p->tms && p->jobdir)
        return popts_bad("%s", "--tms starts local task managers, --jobdir none: start "
                       "them with spits-tm --jobdir DIR (or spits-alloc)");
    if (p->lb && par_lb_conflict(p))
        return popts_bad("--line-buffer does not go with %s", par_lb_conflict(p));

    /* The command, then the input sources. */
    int i = optind;
    size_t nempty = 0;
    p->words = argv + i;
    while (i < argc && !par_sep(argv[i]))
        i++;
    p->nwords = (size_t)(i - optind);
    /* GNU parallel's other replacement strings would be left as they are
     * here: a wrong command, run without a word. Refused instead. */
    for (size_t k = 0; k < p->nwords; k++) {
        const char *w = p->words[k];
        if (strstr(w, "{=") || strstr(w, "{+"))
            return popts_bad("a replacement string of '%s' is not supported ({= =} and "
                           "{+...} are not)", w);
        p->slots |= strstr(w, "{%}") != NULL;
    }
    if (p->results && (strchr(p->results, '{') || par_ends(p->results, ".csv") ||
                       par_ends(p->results, ".tsv") || par_ends(p->results, ".json")))
        return popts_bad("--results takes a directory name here, without replacement "
                       "strings or a .csv, .tsv or .json ending, not '%s'", p->results);
    par_count_stdin(p, argc, argv, i);
    for (size_t k = 0; k < p->nargfiles; k++)
        if (par_read_file(p, p->argfiles[k]) != 0)
            return PAR_ERROR;
    while (i < argc) {
        int sep = par_sep(argv[i++]), files = sep % 2 == 0;
        size_t first = p->nsrc;
        par_source_t *s = files ? NULL : par_new_source(p);
        if (!files && !s)
            return PAR_ERROR;
        if (i == argc || par_sep(argv[i])) {
            /* GNU parallel's: an empty ::: is one empty argument, and
             * nothing to run when every source is one */
            if (files)
                return popts_bad("'%s' has no arguments after it", argv[i - 1]);
            if (par_add(s, strdup("")) != 0)
                return PAR_ERROR;
            nempty++;
        }
        for (; i < argc && !par_sep(argv[i]); i++) {
            if (files ? par_read_file(p, argv[i]) != 0 : par_add(s, strdup(argv[i])) != 0)
                return PAR_ERROR;
        }
        if (sep > 2 && first > 0 && first < p->nsrc)
            p->src[first].linked = 1;   /* :::+ steps with the source before */
    }
    if (!p->nsrc && par_read_file(p, "-") != 0)
        return PAR_ERROR;
    if (nempty && nempty == p->nsrc) {
        free(p->src[0].vals[0]);
        p->src[0].n = 0;
    }
    if (p->nsrc > 256)
        return popts_bad("too many input sources (at most 256), the last '%s'", argv[argc - 1]);
    return 0;
}
