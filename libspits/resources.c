/*
 * resources.c - a job's resource request and what a Task Manager has
 * (see resources.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mem.h"
#include "resources.h"

extern char **environ;

int spits_res_parse_count(const char *opt, const char *arg, int max, int *out,
                          char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = arg && isdigit((unsigned char)arg[0]) ? strtol(arg, &end, 10) : -1;
    if (v < 1 || v > max || errno || *end) {
        snprintf(err, errlen, "%s wants a whole number from 1 to %d, not '%s'",
                 opt, max, arg ? arg : "");
        return -1;
    }
    *out = (int)v;
    return 0;
}

int spits_res_parse_size(const char *opt, const char *arg, uint64_t *out,
                         char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = arg && isdigit((unsigned char)arg[0])
                           ? strtoull(arg, &end, 10) : 0;
    int shift = 20;
    if (end && *end) {
        const char *units = "KMGT";
        const char *u = strchr(units, toupper((unsigned char)*end));
        shift = u && end[1] == '\0' ? 10 * (int)(u - units + 1) : -1;
    }
    if (!end || v == 0 || errno || shift < 0 || v > (UINT64_MAX >> 1) >> shift) {
        snprintf(err, errlen, "%s wants a size such as 512M, 4G or 2048 (megabytes; "
                 "suffixes K, M, G, T), not '%s'", opt, arg ? arg : "");
        return -1;
    }
    *out = (uint64_t)v << shift;
    return 0;
}

int spits_res_req_any(const spits_res_req_t *r)
{
    return r->cpus > 0 || r->gpus > 0 || r->mem > 0;
}

json_t *spits_res_req_json(const spits_res_req_t *r)
{
    if (!spits_res_req_any(r))
        return NULL;
    json_t *j = json_object();
    if (j && r->cpus)
        json_object_set_new(j, "cpus_per_task", json_integer(r->cpus));
    if (j && r->gpus)
        json_object_set_new(j, "gpus_per_task", json_integer(r->gpus));
    if (j && r->mem)
        json_object_set_new(j, "mem_per_task", json_integer((json_int_t)r->mem));
    return j;
}

/* An optional key: absent 0, else a whole number in [1, max]. */
static int req_key(const json_t *j, const char *key, json_int_t max, json_int_t *out)
{
    const json_t *v = json_object_get(j, key);
    *out = 0;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

int spits_res_req_parse(const json_t *j, spits_res_req_t *r, const char **why)
{
    json_int_t c, g, m;
    memset(r, 0, sizeof *r);
    if (!j)
        return 0;
    if (!json_is_object(j) || req_key(j, "cpus_per_task", SPITS_RES_CPUS_MAX, &c) ||
        req_key(j, "gpus_per_task", SPITS_RES_GPUS_MAX, &g) ||
        req_key(j, "mem_per_task", INT64_MAX, &m)) {
        *why = "resources that are not {cpus_per_task (1-4096), gpus_per_task "
               "(1-64), mem_per_task (bytes)}";
        return -1;
    }
    r->cpus = (int)c;
    r->gpus = (int)g;
    r->mem = (uint64_t)m;
    return 0;
}

/* "512M"-like, exact when it can be. */
void spits_res_size_text(uint64_t b, char *out, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(out, len, "%" PRIu64 "B", b);
    else
        snprintf(out, len, "%" PRIu64 "%c", b, units[u]);
}

void spits_res_req_describe(const spits_res_req_t *r, char *out, size_t len)
{
    char mem[32];
    size_t n = 0;
    out[0] = '\0';
    if (r->cpus)
        n += (size_t)snprintf(out + n, len - n, " --cpus-per-task %d", r->cpus);
    if (r->gpus && n < len)
        n += (size_t)snprintf(out + n, len - n, " --gpus-per-task %d", r->gpus);
    if (r->mem && n < len) {
        spits_res_size_text(r->mem, mem, sizeof mem);
        snprintf(out + n, len - n, " --mem-per-task %s", mem);
    }
    if (out[0])
        memmove(out, out + 1, strlen(out));
    else
        snprintf(out, len, "none");
}

/* ---- GPUs ---------------------------------------------------------------- */

/* Adds the comma-separated ids of list; -1 (err) on a bad or repeated id. */
static int gpus_add_list(const char *list, spits_res_have_t *h, char *err, size_t errlen)
{
    const char *p = list;
    h->ngpus = 0;
    for (;;) {
        size_t n = strcspn(p, ",");
        int ok = n > 0 && n < SPITS_RES_GPU_ID_MAX && h->ngpus < SPITS_RES_GPUS_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)p[i]) || strchr("-_:/", p[i]);
        for (int k = 0; ok && k < h->ngpus; k++)
            ok = strlen(h->gpus[k]) != n || memcmp(h->gpus[k], p, n) != 0;
        if (!ok) {
            snprintf(err, errlen, "--gpus wants auto, none or a list of up to %d "
                     "distinct GPU ids separated by commas (such as 0,1,2,3), "
                     "not '%s'", SPITS_RES_GPUS_MAX, list);
            h->ngpus = 0;
            return -1;
        }
        memcpy(h->gpus[h->ngpus], p, n);
        h->gpus[h->ngpus++][n] = '\0';
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

int spits_res_gpus_list(const char *list, spits_res_have_t *h, char *err,
                        size_t errlen)
{
    h->gpu_kind = SPITS_GPU_ANY;
    h->gpu_from = "--gpus";
    h->ngpus = 0;
    if (strcmp(list, "none") == 0)
        return 0;
    return gpus_add_list(list, h, err, errlen);
}

static const char *env_get(const char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

/* The number after prefix in path, or -1. */
static long dev_number(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0 || !isdigit((unsigned char)path[n]))
        return -1;
    char *end;
    long v = strtol(path + n, &end, 10);
    return *end || v > INT_MAX ? -1 : v;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* The devices named prefix<N>, sorted by N, into h; how many. */
static int gpus_from_devs(const char *const *devs, const char *prefix, int rank,
                          spits_res_have_t *h)
{
    long nums[SPITS_RES_GPUS_MAX];
    int n = 0;
    for (; devs && *devs && n < SPITS_RES_GPUS_MAX; devs++) {
        long v = dev_number(*devs, prefix);
        if (v >= 0)
            nums[n++] = v;
    }
    qsort(nums, (size_t)n, sizeof *nums, cmp_long);
    h->ngpus = n;
    for (int i = 0; i < n; i++)
        snprintf(h->gpus[i], sizeof h->gpus[i], "%ld", rank ? (long)i : nums[i]);
    return n;
}

void spits_res_gpus_auto(const char *const *env, const char *const *devs,
                         spits_res_have_t *h)
{
    static const struct { const char *name; spits_gpu_kind_t kind; } vars[] = {
        {"CUDA_VISIBLE_DEVICES", SPITS_GPU_NVIDIA},
        {"ROCR_VISIBLE_DEVICES", SPITS_GPU_AMD},
        {"SLURM_STEP_GPUS", SPITS_GPU_ANY},
        {"SLURM_JOB_GPUS", SPITS_GPU_ANY},
        {"GPU_DEVICE_ORDINAL", SPITS_GPU_ANY},
    };
    char err[256];
    h->ngpus = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = env_get(env, vars[i].name);
        if (!v)
            continue;
        h->gpu_kind = vars[i].kind;
        h->gpu_from = vars[i].name;
        /* (set to nothing, or to what CUDA and Slurm write for none: the
         * job is given no GPU, whatever /dev shows) */
        if (!*v || strcmp(v, "-1") == 0 || strcmp(v, "NoDevFiles") == 0) {
            h->ngpus = 0;
        } else if (gpus_add_list(v, h, err, sizeof err) != 0) {
            spits_warn("%s: %s; no GPU is taken from it", vars[i].name, err);
            h->ngpus = 0;
        }
        return;
    }
    h->gpu_kind = SPITS_GPU_NVIDIA;
    h->gpu_from = "/dev/nvidia*";
    if (gpus_from_devs(devs, "/dev/nvidia", 0, h))
        return;
    h->gpu_kind = SPITS_GPU_AMD;
    h->gpu_from = "/dev/dri/renderD*";
    if (gpus_from_devs(devs, "/dev/dri/renderD", 1, h))
        return;
    h->gpu_kind = SPITS_GPU_ANY;
    h->gpu_from = "the environment and /dev";
}

/* Appends dir's entries, as dir/NAME, to list (NULL ended, n so far). */
static void list_dir(const char *dir, char **list, size_t *n, size_t max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while (*n + 1 < max && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if ((list[*n] = malloc(len)) != NULL)
            snprintf(list[(*n)++], len, "%s/%s", dir, e->d_name);
    }
    list[*n] = NULL;
    closedir(d);
}

void spits_res_have_gpus_auto(spits_res_have_t *h)
{
    enum { DEVS_MAX = 1024 };
    char **devs = calloc(DEVS_MAX, sizeof *devs);
    size_t n = 0;
    if (devs) {
        list_dir("/dev", devs, &n, DEVS_MAX);
        list_dir("/dev/dri", devs, &n, DEVS_MAX);
    }
    spits_res_gpus_auto((const char *const *)environ, (const char *const *)devs, h);
    for (size_t i = 0; i < n; i++)
        free(devs[i]);
    free(devs);
}

/* ---- cores and memory ---------------------------------------------------- */

uint64_t spits_res_mem_pick(uint64_t limit, uint64_t total, uint64_t avail)
{
    return limit && total && limit < total ? limit : avail;
}

/* /proc/meminfo's line key, in bytes (0: none). */
static uint64_t meminfo(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    unsigned long long kb = 0;
    if (p && sscanf(p + strlen(key), " %llu", &kb) != 1)
        kb = 0;
    return (uint64_t)kb * 1024;
}

int spits_res_have_host(spits_res_have_t *h, char *err, size_t errlen)
{
    cpu_set_t *set = CPU_ALLOC(SPITS_RES_CPUS_MAX);
    size_t size = CPU_ALLOC_SIZE(SPITS_RES_CPUS_MAX);
    if (!set || sched_getaffinity(0, size, set) != 0) {
        snprintf(err, errlen, "cannot read this process's CPU affinity: %s",
                 strerror(errno));
        CPU_FREE(set);
        return -1;
    }
    h->ncpus = 0;
    for (int c = 0; c < SPITS_RES_CPUS_MAX; c++)
        if (CPU_ISSET_S((size_t)c, size, set))
            h->cpus[h->ncpus++] = c;
    CPU_FREE(set);

    char text[8192];
    FILE *f = fopen("/proc/meminfo", "r");
    size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[got] = '\0';
    if (f)
        fclose(f);
    h->mem = spits_res_mem_pick(spits_mem_available(), meminfo(text, "MemTotal:"),
                                meminfo(text, "MemAvailable:"));
    return 0;
}

/* ---- the plan ------------------------------------------------------------ */

typedef struct {
    long allows;
    char text[96];            /* "4 GPUs at 1 per task" */
} res_limit_t;

int spits_res_plan(const spits_res_req_t *r, const spits_res_have_t *h, int cap,
                   const char *cap_what, char *why, size_t whylen)
{
    res_limit_t lim[4];
    int n = 0;
    char a[32], b[32];
    if (r->gpus) {
        lim[n].allows = h->ngpus / r->gpus;
        snprintf(lim[n++].text, sizeof lim[0].text, "%d GPU%s at %d per task",
                 h->ngpus, h->ngpus == 1 ? "" : "s", r->gpus);
    }
    if (r->cpus) {
        lim[n].allows = h->ncpus / r->cpus;
        snprintf(lim[n++].text, sizeof lim[0].text, "%d core%s at %d per task",
                 h->ncpus, h->ncpus == 1 ? "" : "s", r->cpus);
    }
    if (r->mem) {
        spits_res_size_text(h->mem, a, sizeof a);
        spits_res_size_text(r->mem, b, sizeof b);
        lim[n].allows = (long)(h->mem / r->mem);
        snprintf(lim[n++].text, sizeof lim[0].text, "%s of memory at %s per task",
                 h->mem ? a : "unknown", b);
    }
    if (cap > 0) {
        lim[n].allows = cap;
        snprintf(lim[n++].text, sizeof lim[0].text, "%s", cap_what);
    }
    if (n == 0) {
        snprintf(why, whylen, "no resources asked");
        return 0;
    }
    int least = 0;
    for (int i = 1; i < n; i++)
        if (lim[i].allows < lim[least].allows)
            least = i;
    long k = lim[least].allows;
    size_t used = (size_t)snprintf(why, whylen, "%ld worker%s: %s", k,
                                   k == 1 ? "" : "s", lim[least].text);
    const char *sep = " (";
    for (int i = 0; i < n && used < whylen; i++) {
        if (i == least)
            continue;
        used += (size_t)snprintf(why + used, whylen - used, "%s%s would allow %ld",
                                 sep, lim[i].text, lim[i].allows);
        sep = ", ";
    }
    if (n > 1 && used < whylen)
        snprintf(why + used, whylen - used, ")");
    return (int)(k > SPITS_RES_CPUS_MAX ? SPITS_RES_CPUS_MAX : k);
}

void spits_res_worker_gpus(const spits_res_req_t *r, const spits_res_have_t *h,
                           int i, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int k = 0; k < r->gpus && n < len; k++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", k ? "," : "",
                              h->gpus[i * r->gpus + k]);
}

int spits_res_worker_first_cpu(const spits_res_req_t *r, int i)
{
    return i * r->cpus;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

size_t spits_res_cpulist(const void *set, size_t size, char *out, size_t len)
{
    const cpu_set_t *cs = set;
    size_t n = 0;
    out[0] = '\0';
    for (int c = 0; c < SPITS_RES_CPUS_MAX; c++) {
        if (!CPU_ISSET_S((size_t)c, size, cs))
            continue;
        int e = c;
        while (e + 1 < SPITS_RES_CPUS_MAX && CPU_ISSET_S((size_t)e + 1, size, cs))
            e++;
        int w = e > c ? snprintf(out + n, len - n, "%s%d-%d", n ? "," : "", c, e)
                      : snprintf(out + n, len - n, "%s%d", n ? "," : "", c);
        if (w < 0 || (size_t)w >= len - n) {
            out[0] = '\0';
            return 0;
        }
        n += (size_t)w;
        c = e;
    }
    return n;
}

#ifdef SPITS_SELFTEST
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "resources selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

int spits_res_selftest(void)
{
    char err[512], why[256];
    int v;
    uint64_t m;
    spits_res_req_t r, q;
    spits_res_have_t *h = calloc(1, sizeof *h);
    json_t *j = NULL;
    const char *w = NULL;
    CHECK(h);

    /* Strict option values: whole numbers in range, Slurm's sizes. */
    CHECK(spits_res_parse_count("--gpus-per-task", "2", 64, &v, err, sizeof err) == 0 && v == 2);
    CHECK(spits_res_parse_count("--gpus-per-task", "0", 64, &v, err, sizeof err) == -1 &&
          strcmp(err, "--gpus-per-task wants a whole number from 1 to 64, not '0'") == 0);
    CHECK(spits_res_parse_count("--cpus-per-task", "2x", 4096, &v, err, sizeof err) == -1);
    CHECK(spits_res_parse_count("--cpus-per-task", "-1", 4096, &v, err, sizeof err) == -1);
    CHECK(spits_res_parse_count("--cpus-per-task", " 1", 4096, &v, err, sizeof err) == -1);
    CHECK(spits_res_parse_count("--cpus-per-task", "4097", 4096, &v, err, sizeof err) == -1);
    CHECK(spits_res_parse_count("--cpus-per-task", "99999999999999999999", 4096, &v,
                                err, sizeof err) == -1);
    CHECK(spits_res_parse_size("--mem-per-task", "512", &m, err, sizeof err) == 0 &&
          m == 512ULL << 20);
    CHECK(spits_res_parse_size("--mem-per-task", "4G", &m, err, sizeof err) == 0 &&
          m == 4ULL << 30);
    CHECK(spits_res_parse_size("--mem-per-task", "3k", &m, err, sizeof err) == 0 && m == 3072);
    CHECK(spits_res_parse_size("--mem-per-task", "1T", &m, err, sizeof err) == 0 &&
          m == 1ULL << 40);
    CHECK(spits_res_parse_size("--mem-per-task", "0", &m, err, sizeof err) == -1 &&
          strstr(err, "--mem-per-task wants a size") && strstr(err, "not '0'"));
    CHECK(spits_res_parse_size("--mem-per-task", "4GB", &m, err, sizeof err) == -1);
    CHECK(spits_res_parse_size("--mem-per-task", "G", &m, err, sizeof err) == -1);
    CHECK(spits_res_parse_size("--mem-per-task", "4X", &m, err, sizeof err) == -1);
    CHECK(spits_res_parse_size("--mem-per-task", "99999999999T", &m, err, sizeof err) == -1);

    /* The wire form, both ways; nothing asked is no object at all. */
    memset(&r, 0, sizeof r);
    CHECK(spits_res_req_json(&r) == NULL && spits_res_req_parse(NULL, &q, &w) == 0 &&
          !spits_res_req_any(&q));
    spits_res_req_describe(&r, why, sizeof why);
    CHECK(strcmp(why, "none") == 0);
    r.cpus = 8;
    r.mem = 512ULL << 20;
    CHECK((j = spits_res_req_json(&r)) != NULL && json_object_size(j) == 2);
    CHECK(spits_res_req_parse(j, &q, &w) == 0 && q.cpus == 8 && q.gpus == 0 &&
          q.mem == 512ULL << 20);
    spits_res_req_describe(&q, why, sizeof why);
    CHECK(strcmp(why, "--cpus-per-task 8 --mem-per-task 512M") == 0);
    json_object_set_new(j, "gpus_per_task", json_integer(0));
    CHECK(spits_res_req_parse(j, &q, &w) == -1 && strstr(w, "gpus_per_task"));
    json_object_set_new(j, "gpus_per_task", json_string("1"));
    CHECK(spits_res_req_parse(j, &q, &w) == -1);
    json_decref(j);
    j = json_array();
    CHECK(spits_res_req_parse(j, &q, &w) == -1);

    /* --gpus LIST */
    CHECK(spits_res_gpus_list("0,1,2,3", h, err, sizeof err) == 0 && h->ngpus == 4 &&
          strcmp(h->gpus[3], "3") == 0 && strcmp(h->gpu_from, "--gpus") == 0);
    CHECK(spits_res_gpus_list("none", h, err, sizeof err) == 0 && h->ngpus == 0);
    CHECK(spits_res_gpus_list("GPU-8f3a-11,GPU-9b", h, err, sizeof err) == 0 &&
          h->ngpus == 2 && strcmp(h->gpus[1], "GPU-9b") == 0);
    CHECK(spits_res_gpus_list("0,,1", h, err, sizeof err) == -1 && strstr(err, "'0,,1'"));
    CHECK(spits_res_gpus_list("0,1,0", h, err, sizeof err) == -1);
    CHECK(spits_res_gpus_list("", h, err, sizeof err) == -1);
    CHECK(spits_res_gpus_list("0 1", h, err, sizeof err) == -1);

    /* --gpus auto: the variables in order, then the devices. */
    {
        const char *devs[] = {"/dev/null", "/dev/nvidiactl", "/dev/nvidia-uvm",
                              "/dev/nvidia3", "/dev/nvidia1", "/dev/dri/card0",
                              "/dev/dri/renderD129", "/dev/dri/renderD128", NULL};
        const char *amd[] = {"/dev/dri/renderD130", "/dev/dri/renderD128", NULL};
        const char *env1[] = {"PATH=/bin", "SLURM_JOB_GPUS=4,5",
                              "CUDA_VISIBLE_DEVICES=2", NULL};
        const char *env2[] = {"SLURM_JOB_GPUS=4,5", "GPU_DEVICE_ORDINAL=0",
                              "SLURM_STEP_GPUS=6", NULL};
        const char *env3[] = {"GPU_DEVICE_ORDINAL=1,0", NULL};
        const char *env4[] = {"CUDA_VISIBLE_DEVICES=", "SLURM_JOB_GPUS=1", NULL};
        const char *env5[] = {"ROCR_VISIBLE_DEVICES=0,1", "SLURM_JOB_GPUS=1", NULL};
        const char *env6[] = {"CUDA_VISIBLE_DEVICES_X=1", NULL};
        const char *env7[] = {"CUDA_VISIBLE_DEVICES=GPU-8f2c4a1e-51b3-4c7d-9e0a-6b5d3c2f1a09,"
                              "MIG-GPU-8f2c4a1e-51b3-4c7d-9e0a-6b5d3c2f1a09/1/0", NULL};
        spits_res_gpus_auto(env1, devs, h);
        CHECK(h->ngpus == 1 && strcmp(h->gpus[0], "2") == 0 &&
              h->gpu_kind == SPITS_GPU_NVIDIA &&
              strcmp(h->gpu_from, "CUDA_VISIBLE_DEVICES") == 0);
        spits_res_gpus_auto(env2, devs, h);
        CHECK(h->ngpus == 1 && strcmp(h->gpus[0], "6") == 0 &&
              strcmp(h->gpu_from, "SLURM_STEP_GPUS") == 0 && h->gpu_kind == SPITS_GPU_ANY);
        spits_res_gpus_auto(env3, devs, h);
        CHECK(h->ngpus == 2 && strcmp(h->gpus[0], "1") == 0 &&
              strcmp(h->gpu_from, "GPU_DEVICE_ORDINAL") == 0);
        spits_res_gpus_auto(env4, devs, h);
        CHECK(h->ngpus == 0 && strcmp(h->gpu_from, "CUDA_VISIBLE_DEVICES") == 0);
        spits_res_gpus_auto(env5, devs, h);
        CHECK(h->ngpus == 2 && h->gpu_kind == SPITS_GPU_AMD);
        spits_res_gpus_auto(env7, devs, h);
        CHECK(h->ngpus == 2 && strcmp(h->gpus[1], "MIG-GPU-8f2c4a1e-51b3-4c7d-9e0a-6b5d3c2f1a09/1/0") == 0);
        spits_res_gpus_auto(env6, devs, h);
        CHECK(h->ngpus == 2 && strcmp(h->gpus[0], "1") == 0 &&
              strcmp(h->gpus[1], "3") == 0 && h->gpu_kind == SPITS_GPU_NVIDIA);
        spits_res_gpus_auto(env6, amd, h);
        CHECK(h->ngpus == 2 && strcmp(h->gpus[0], "0") == 0 &&
              strcmp(h->gpus[1], "1") == 0 && h->gpu_kind == SPITS_GPU_AMD);
        spits_res_gpus_auto(NULL, NULL, h);
        CHECK(h->ngpus == 0);
    }

    /* Memory: the cgroup's limit when it is one, else what is available. */
    CHECK(spits_res_mem_pick(8ULL << 30, 64ULL << 30, 40ULL << 30) == 8ULL << 30);
    CHECK(spits_res_mem_pick(64ULL << 30, 64ULL << 30, 40ULL << 30) == 40ULL << 30);
    CHECK(spits_res_mem_pick(0, 0, 40ULL << 30) == 40ULL << 30);

    /* The plan: the least over what is asked, and why. */
    memset(&r, 0, sizeof r);
    spits_res_gpus_list("0,1,2,3", h, err, sizeof err);
    h->ncpus = 64;
    for (int i = 0; i < 64; i++)
        h->cpus[i] = i;
    h->mem = 32ULL << 30;
    r.gpus = 1;
    r.cpus = 8;
    CHECK(spits_res_plan(&r, h, 0, NULL, why, sizeof why) == 4);
    CHECK(strcmp(why, "4 workers: 4 GPUs at 1 per task (64 cores at 8 per task "
                      "would allow 8)") == 0);
    r.cpus = 32;
    r.mem = 4ULL << 30;
    CHECK(spits_res_plan(&r, h, 0, NULL, why, sizeof why) == 2);
    CHECK(strcmp(why, "2 workers: 64 cores at 32 per task (4 GPUs at 1 per task would "
                      "allow 4, 32G of memory at 4G per task would allow 8)") == 0);
    CHECK(spits_res_plan(&r, h, 1, "--workers 1", why, sizeof why) == 1 &&
          strncmp(why, "1 worker: --workers 1 (", 23) == 0);
    r.gpus = 2;
    r.cpus = 0;
    r.mem = 0;
    CHECK(spits_res_plan(&r, h, 0, NULL, why, sizeof why) == 2 &&
          strcmp(why, "2 workers: 4 GPUs at 2 per task") == 0);
    spits_res_worker_gpus(&r, h, 0, err, sizeof err);
    CHECK(strcmp(err, "0,1") == 0);
    spits_res_worker_gpus(&r, h, 1, err, sizeof err);
    CHECK(strcmp(err, "2,3") == 0);
    r.gpus = 5;
    CHECK(spits_res_plan(&r, h, 0, NULL, why, sizeof why) == 0 &&
          strcmp(why, "0 workers: 4 GPUs at 5 per task") == 0);
    /* Memory alone: at most the cap given (a TM's worker per core). */
    r.gpus = 0;
    r.mem = 1ULL << 20;
    CHECK(spits_res_plan(&r, h, 64, "64 cores at 1 worker each", why, sizeof why) == 64 &&
          strcmp(why, "64 workers: 64 cores at 1 worker each (32G of memory at 1M per "
                      "task would allow 32768)") == 0);
    r.mem = 0;
    r.cpus = 2;
    CHECK(spits_res_plan(&r, h, 0, NULL, why, sizeof why) == 32 &&
          spits_res_worker_first_cpu(&r, 3) == 6);
    h->ngpus = 0;
    r.gpus = 1;
    CHECK(spits_res_plan(&r, h, 0, NULL, why, sizeof why) == 0 &&
          strcmp(why, "0 workers: 0 GPUs at 1 per task (64 cores at 2 per task "
                      "would allow 32)") == 0);

    /* A worker's cores as a cpulist: runs joined, a buffer too small
     * gives none. */
    {
        char list[16];
        size_t size = CPU_ALLOC_SIZE(SPITS_RES_CPUS_MAX);
        cpu_set_t *set = CPU_ALLOC(SPITS_RES_CPUS_MAX);
        CHECK(set);
        CPU_ZERO_S(size, set);
        static const int on[] = {0, 1, 2, 5, 7, 8, 4095};
        for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
            CPU_SET_S((size_t)on[i], size, set);
        size_t n = spits_res_cpulist(set, size, list, sizeof list);
        int small = spits_res_cpulist(set, size, list + 15, 1) == 0 && list[15] == '\0';
        CPU_FREE(set);
        CHECK(n == 14 && strcmp(list, "0-2,5,7-8,4095") == 0 && small);
    }

    /* This machine: at least one core, and memory known. */
    CHECK(spits_res_have_host(h, err, sizeof err) == 0 && h->ncpus >= 1 && h->mem > 0);
    json_decref(j);
    free(h);
    return 0;
fail:
    json_decref(j);
    free(h);
    return 1;
}
#endif /* SPITS_SELFTEST */
