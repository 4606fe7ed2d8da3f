/*
 * alloc-request.c - the sbatch options a Task Manager queue job asks
 * Slurm for, from the job's resource request (see alloc-request.h).
 */
#include <stdio.h>
#include <string.h>

#include "alloc-request.h"
#include "alloc-slurm.h"

enum { ASK_CPUS = 1, ASK_GPUS = 2, ASK_MEM = 4, ASK_ALL = 7 };

/* sbatch's long options that ask for a resource: the user's own word
 * for it wins. (--gres asks for GPUs only when its value names gpu.) */
static const struct {
    const char *name;
    int asks;
} request_long[] = {
    {"cpus-per-task", ASK_CPUS}, {"cpus-per-gpu", ASK_CPUS}, {"mincpus", ASK_CPUS},
    {"gpus", ASK_GPUS}, {"gpus-per-task", ASK_GPUS}, {"gpus-per-node", ASK_GPUS},
    {"gpus-per-socket", ASK_GPUS}, {"gres", ASK_GPUS},
    {"mem", ASK_MEM}, {"mem-per-cpu", ASK_MEM}, {"mem-per-gpu", ASK_MEM},
    {"exclusive", ASK_ALL},
};

/* What a long option word ("--NAME[=VALUE]", value the next word when
 * there is no '=') asks for. sbatch takes unambiguous prefixes, so a
 * prefix of a name counts as the name. */
static int request_long_asks(const char *word, const char *next)
{
    size_t len = strcspn(word + 2, "=");
    for (size_t i = 0; len && i < sizeof request_long / sizeof *request_long; i++) {
        if (strncmp(word + 2, request_long[i].name, len) != 0)
            continue;
        if (strcmp(request_long[i].name, "gres") == 0) {
            const char *v = word[2 + len] == '=' ? word + 3 + len : next;
            return v && strstr(v, "gpu") ? ASK_GPUS : 0;
        }
        return request_long[i].asks;
    }
    return 0;
}

/* What a short option word ("-c4", "-G 2", "-Hc4") asks for: -c cores,
 * -G GPUs; a letter that takes a value ends the flags. */
static int request_short_asks(const char *word)
{
    for (const char *c = word + 1; *c; c++) {
        if (*c == 'c')
            return ASK_CPUS;
        if (*c == 'G')
            return ASK_GPUS;
        if (strchr(alloc_sbatch_valued, *c))
            break;
    }
    return 0;
}

int alloc_request_args(const spits_res_req_t *r, int workers, const char *gres,
                       char *const args[], int nargs, char out[][ALLOC_REQ_LEN])
{
    int asked = 0, n = 0;
    long long w = workers > 0 ? workers : 1;

    if (!spits_res_req_any(r))
        return 0;
    for (int i = 0; i < nargs; i++) {
        const char *a = args[i];
        if (a[0] == '-' && a[1] == '-' && a[2])
            asked |= request_long_asks(a, i + 1 < nargs ? args[i + 1] : NULL);
        else if (a[0] == '-' && a[1] && a[1] != '-')
            asked |= request_short_asks(a);
    }
    if (!(asked & ASK_CPUS))
        snprintf(out[n++], ALLOC_REQ_LEN, "--cpus-per-task=%lld",
                 w * (r->cpus ? r->cpus : 1));
    if (r->gpus && !(asked & ASK_GPUS))
        snprintf(out[n++], ALLOC_REQ_LEN, "--gres=%.100s:%lld", gres ? gres : "gpu",
                 w * r->gpus);
    if (r->mem && !(asked & ASK_MEM))
        snprintf(out[n++], ALLOC_REQ_LEN, "--mem=%lldM",
                 w * (long long)((r->mem + (1u << 20) - 1) >> 20));
    return n;
}

#ifdef SPITS_SELFTEST
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "alloc-request: %s:%d: %s\n", \
                                     __FILE__, __LINE__, #c); failures++; } } while (0)

/* The options for r and w, joined by blanks, against want. */
static int request_is(const spits_res_req_t *r, int w, const char *gres,
                      const char *user, const char *want)
{
    char out[ALLOC_REQ_MAX][ALLOC_REQ_LEN], got[ALLOC_REQ_MAX * (ALLOC_REQ_LEN + 1)] = "";
    char buf[256], *args[16], *save = NULL;
    int nargs = 0;
    snprintf(buf, sizeof buf, "%s", user);
    for (char *t = strtok_r(buf, " ", &save); t && nargs < 16; t = strtok_r(NULL, " ", &save))
        args[nargs++] = t;
    int n = alloc_request_args(r, w, gres, args, nargs, out);
    for (int i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", out[i]);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "alloc_request_args(w %d, '%s'): '%s', not '%s'\n", w, user,
                got, want);
    return strcmp(got, want) == 0;
}

int alloc_request_selftest(void)
{
    int failures = 0;
    spits_res_req_t none = {0, 0, 0}, cpus = {2, 0, 0}, all = {4, 1, 1536ULL << 20};
    spits_res_req_t mem = {0, 0, 100ULL << 20}, odd = {0, 0, (1ULL << 20) + 1};

    CHECK(request_is(&none, 4, NULL, "", ""));
    CHECK(request_is(&cpus, 1, NULL, "", "--cpus-per-task=2"));
    CHECK(request_is(&cpus, 0, NULL, "-p cpu", "--cpus-per-task=2"));
    CHECK(request_is(&cpus, 3, NULL, "", "--cpus-per-task=6"));
    CHECK(request_is(&all, 2, NULL, "", "--cpus-per-task=8 --gres=gpu:2 --mem=3072M"));
    CHECK(request_is(&all, 2, "gpu:a100", "", "--cpus-per-task=8 --gres=gpu:a100:2 --mem=3072M"));
    /* memory alone: a core per worker, and megabytes rounded up */
    CHECK(request_is(&mem, 3, NULL, "", "--cpus-per-task=3 --mem=300M"));
    CHECK(request_is(&odd, 1, NULL, "", "--cpus-per-task=1 --mem=2M"));
    /* the user's own word for a resource wins, in every form */
    CHECK(request_is(&all, 1, NULL, "-c 16", "--gres=gpu:1 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "-Hc16", "--gres=gpu:1 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "--cpus-per-t=16", "--gres=gpu:1 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "--gres=gpu:4", "--cpus-per-task=4 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "--gres gpu:v100:4", "--cpus-per-task=4 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "-G2", "--cpus-per-task=4 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "--mem-per-cpu=1G", "--cpus-per-task=4 --gres=gpu:1"));
    CHECK(request_is(&all, 1, NULL, "--exclusive", ""));
    /* ...and words that only look like one do not */
    CHECK(request_is(&all, 1, NULL, "--gres=nic:1 --gres-flags=enforce-binding "
                     "--mem-bind=local --gpu-bind=closest --cpu-freq=high --export=ALL -p c",
                     "--cpus-per-task=4 --gres=gpu:1 --mem=1536M"));
    CHECK(request_is(&all, 1, NULL, "-pc", "--cpus-per-task=4 --gres=gpu:1 --mem=1536M"));
    return failures;
}
#endif
