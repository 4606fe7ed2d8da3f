/*
 * cmdenv.c - the directory and environment a job's commands run in
 * (see cmdenv.h): written by spits-parallel, read by each worker once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmdenv.h"

/* 1 if entry (NAME=VALUE) is one the job never carries. */
static int cmdenv_local_only(const char *entry)
{
    return !strncmp(entry, "SLURM_", 6) || !strncmp(entry, "PARALLEL_SEQ=", 13) ||
           !strncmp(entry, "PWD=", 4);
}

static int cmdenv_has(char *const *env, const char *prefix)
{
    for (; *env; env++)
        if (!strncmp(*env, prefix, strlen(prefix)))
            return 1;
    return 0;
}

/* 1 if entry (carried) names a variable the TM set for this worker's own
 * resources (taskmanager/plan.c): its GPUs when base has SPITS_GPUS, its
 * thread counts when base has SPITS_CPUS_PER_TASK. The worker's win. */
static int cmdenv_worker_owns(const char *entry, char *const *base)
{
    static const char *const gpus[] = {"CUDA_VISIBLE_DEVICES=", "ROCR_VISIBLE_DEVICES=",
                                       "SPITS_GPUS=", NULL};
    static const char *const cpus[] = {"OMP_NUM_THREADS=", "MKL_NUM_THREADS=",
                                       "OPENBLAS_NUM_THREADS=", NULL};
    for (int i = 0; gpus[i]; i++)
        if (!strncmp(entry, gpus[i], strlen(gpus[i])))
            return cmdenv_has(base, "SPITS_GPUS=");
    for (int i = 0; cpus[i]; i++)
        if (!strncmp(entry, cpus[i], strlen(cpus[i])))
            return cmdenv_has(base, "SPITS_CPUS_PER_TASK=");
    return 0;
}

/* 1 if entry's name is in names. */
static int cmdenv_named(const char *entry, const char *const *names, size_t n)
{
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) : strlen(entry);
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncmp(entry, names[i], len))
            return 1;
    return 0;
}

int cmdenv_write(const char *path, const char *cwd, char *const *environ_in,
                 const char *const *names, size_t nnames)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -1;
    }
    int bad = fputs(CMDENV_MAGIC, f) < 0 || fwrite(cwd, strlen(cwd) + 1, 1, f) != 1;
    for (size_t i = 0; !bad && environ_in[i]; i++) {
        const char *e = environ_in[i];
        if (!strchr(e, '=') || cmdenv_local_only(e) ||
            (nnames && !cmdenv_named(e, names, nnames)))
            continue;
        bad = fwrite(e, strlen(e) + 1, 1, f) != 1;
    }
    int err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    errno = err;
    return bad ? -1 : 0;
}

int cmdenv_load(cmdenv_t *e, const char *path, char *const *base, char *err,
                size_t errlen)
{
    struct stat st;
    size_t mlen = strlen(CMDENV_MAGIC), nbase = 0, ncar = 0, k = 0;
    memset(e, 0, sizeof *e);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !(e->buf = malloc((size_t)st.st_size + 1))) {
        snprintf(err, errlen, "cannot read the job's environment %s: %s", path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t len = 0;
    ssize_t n;
    while (len < (size_t)st.st_size &&
           ((n = read(fd, e->buf + len, (size_t)st.st_size - len)) > 0 ||
            (n < 0 && errno == EINTR)))
        len += n > 0 ? (size_t)n : 0;
    close(fd);
    e->buf[len] = '\0';
    if (len < mlen + 1 || memcmp(e->buf, CMDENV_MAGIC, mlen) || e->buf[len - 1] != '\0') {
        snprintf(err, errlen, "the job's environment %s is damaged", path);
        cmdenv_clear(e);
        return -1;
    }
    e->cwd = e->buf + mlen;
    for (const char *p = e->cwd + strlen(e->cwd) + 1; p < e->buf + len; p += strlen(p) + 1)
        ncar++;
    while (base[nbase])
        nbase++;
    char *pwd = malloc(strlen(e->cwd) + 5);
    if (!pwd || !(e->env = malloc((nbase + ncar + 2) * sizeof *e->env))) {
        free(pwd);
        snprintf(err, errlen, "out of memory reading %s", path);
        cmdenv_clear(e);
        return -1;
    }
    /* The TM's own entries that the job does not set, then the job's. */
    const char *first = e->cwd + strlen(e->cwd) + 1;
    for (size_t i = 0; i < nbase; i++) {
        int over = !strncmp(base[i], "PWD=", 4);
        for (const char *p = first; !over && p < e->buf + len; p += strlen(p) + 1) {
            const char *eq = strchr(p, '=');
            over = eq && !strncmp(base[i], p, (size_t)(eq - p) + 1) &&
                   !cmdenv_worker_owns(p, base);
        }
        if (!over)
            e->env[k++] = base[i];
    }
    for (const char *p = first; p < e->buf + len; p += strlen(p) + 1)
        if (!cmdenv_worker_owns(p, base))
            e->env[k++] = (char *)p;
    e->env[k++] = strcat(strcpy(pwd, "PWD="), e->cwd);
    e->env[k] = NULL;
    return 0;
}

void cmdenv_clear(cmdenv_t *e)
{
    if (e->env) {
        /* PWD, the last entry, is the one string of its own */
        size_t k = 0;
        while (e->env[k])
            k++;
        if (k)
            free(e->env[k - 1]);
    }
    free(e->env);
    free(e->buf);
    memset(e, 0, sizeof *e);
}

#ifdef SPITS_SELFTEST
/* A job's file written from one environment and read over another: the
 * exact merged list, --env's filter, and a damaged file refused. */
int cmdenv_selftest(void)
{
    char path[] = "/tmp/cmdenv-selftest-XXXXXX", err[256];
    char *sub[] = {"A=1", "SLURM_JOB_ID=7", "PWD=/sub", "B=x=y", "C=", NULL};
    char *tm[] = {"A=tm", "SLURM_JOB_ID=9", "PWD=/", "D=4", NULL};
    const char *want[] = {"SLURM_JOB_ID=9", "D=4", "A=1", "B=x=y", "C=", "PWD=/w d"};
    const char *names[] = {"B", "SLURM_JOB_ID"};
    cmdenv_t e;
    int fd = mkstemp(path), bad = 0;
    if (fd < 0)
        return -1;
    close(fd);
    bad |= cmdenv_write(path, "/w d", sub, NULL, 0) != 0 ||
           cmdenv_load(&e, path, tm, err, sizeof err) != 0;
    for (size_t i = 0; !bad && i < sizeof want / sizeof want[0]; i++)
        bad |= !e.env[i] || strcmp(e.env[i], want[i]) != 0;
    bad |= !bad && (e.env[6] != NULL || strcmp(e.cwd, "/w d") != 0);
    cmdenv_clear(&e);
    /* --env B SLURM_JOB_ID: B only (SLURM_* is never carried) */
    bad |= cmdenv_write(path, "/", sub, names, 2) != 0 ||
           cmdenv_load(&e, path, tm, err, sizeof err) != 0;
    bad |= !bad && (strcmp(e.env[0], "A=tm") || strcmp(e.env[3], "B=x=y") ||
                    strcmp(e.env[4], "PWD=/") || e.env[5]);
    cmdenv_clear(&e);
    /* A worker's own GPUs and thread counts win over the carried ones;
     * without the TM's marks, the carried ones win as any do. */
    char *sub2[] = {"CUDA_VISIBLE_DEVICES=0,1", "OMP_NUM_THREADS=8", "E=1", NULL};
    char *gpu[] = {"CUDA_VISIBLE_DEVICES=3", "SPITS_GPUS=3", "OMP_NUM_THREADS=2",
                   "SPITS_CPUS_PER_TASK=2", NULL};
    char *plain[] = {"CUDA_VISIBLE_DEVICES=3", "OMP_NUM_THREADS=2", NULL};
    bad |= cmdenv_write(path, "/", sub2, NULL, 0) != 0 ||
           cmdenv_load(&e, path, gpu, err, sizeof err) != 0;
    bad |= !bad && (strcmp(e.env[0], "CUDA_VISIBLE_DEVICES=3") ||
                    strcmp(e.env[2], "OMP_NUM_THREADS=2") || strcmp(e.env[4], "E=1") ||
                    strcmp(e.env[5], "PWD=/") || e.env[6]);
    cmdenv_clear(&e);
    bad |= cmdenv_load(&e, path, plain, err, sizeof err) != 0;
    bad |= !bad && (strcmp(e.env[0], "CUDA_VISIBLE_DEVICES=0,1") ||
                    strcmp(e.env[1], "OMP_NUM_THREADS=8") || strcmp(e.env[2], "E=1") ||
                    e.env[4]);
    cmdenv_clear(&e);
    fd = open(path, O_WRONLY | O_TRUNC);
    bad |= fd < 0 || write(fd, "spits-env 1\n/x", 14) != 14;
    if (fd >= 0)
        close(fd);
    bad |= cmdenv_load(&e, path, tm, err, sizeof err) == 0 || !strstr(err, "damaged");
    unlink(path);
    if (bad)
        fprintf(stderr, "cmdenv: the merged environment is wrong\n");
    return bad ? -1 : 0;
}
#endif
