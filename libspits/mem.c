/*
 * mem.c - this process's memory as the kernel counts it (mem.h).
 *
 * The resident size comes from /proc/self/statm, which the kernel fills
 * from its counters without walking the address space: one open, one
 * read, one close. The JM's generator reads its anonymous part: what
 * the process and its libraries allocated, not the pages of the files it
 * maps (its code, the module, a journal being replayed), which the
 * kernel can drop and read again. The whole and its peak, for reports,
 * from /proc/self/status. What the process may use is the smaller of the
 * machine's RAM and the tightest memory limit of its cgroups on their way
 * to the root, v2's memory.max and v1's memory.limit_in_bytes: a batch
 * system puts a job's limit on the job's cgroup and the job's steps below
 * it, so the process's own cgroup may have none.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem.h"

/* Reads a small file whole into buf (NUL-terminated). Length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    do
        n = read(fd, buf, size - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

uint64_t spits_mem_rss_anon(void)
{
    char buf[128];
    unsigned long long size, resident, shared;
    long page = sysconf(_SC_PAGESIZE);

    if (page <= 0 || read_small("/proc/self/statm", buf, sizeof buf) <= 0 ||
        sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 ||
        shared > resident)
        return 0;
    return (uint64_t)(resident - shared) * (uint64_t)page;
}

void spits_mem_usage(uint64_t *now, uint64_t *peak)
{
    char line[256];
    unsigned long kb;
    FILE *f = fopen("/proc/self/status", "re");

    *now = *peak = 0;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            *now = (uint64_t)kb * 1024;
        else if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
            *peak = (uint64_t)kb * 1024;
    }
    fclose(f);
    if (*peak < *now)
        *peak = *now;
}

int spits_mem_parse_max(const char *text, uint64_t *out)
{
    char *end;

    if (strcmp(text, "max") == 0 || strcmp(text, "max\n") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    if (*text < '0' || *text > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || (*end && strcmp(end, "\n") != 0))
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Is name one of the comma-separated controllers in list[0..len)? */
static int has_controller(const char *list, size_t len, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list, *end = list + len; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t l = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (l == n && memcmp(p, name, n) == 0)
            return 1;
        p += l + 1;
    }
    return 0;
}

/* Copies the path that ends a /proc/self/cgroup line (at p, after its
 * second colon) into out; NUL or a newline ends it. */
static void copy_path(const char *p, char *out, size_t outlen)
{
    size_t l = strcspn(p, "\n");
    if (l >= outlen)
        l = 0;    /* (too long to be a path here: none) */
    memcpy(out, p, l);
    out[l] = '\0';
}

void spits_mem_cgroup_paths(const char *text, char *v2, size_t v2len,
                            char *v1, size_t v1len)
{
    v2[0] = v1[0] = '\0';
    /* Each line is ID:CONTROLLERS:PATH; v2's is 0 with none. */
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2 && c2[1] == '/') {
            if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
                copy_path(c2 + 1, v2, v2len);
            else if (has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "memory"))
                copy_path(c2 + 1, v1, v1len);
        }
        line += len + (nl ? 1 : 0);
    }
}

/* The tightest limit in FILE of the cgroups from path up to the root of
 * the hierarchy mounted at root; UINT64_MAX when none is set. */
static uint64_t cgroup_walk(const char *root, char *path, const char *file)
{
    char at[PATH_MAX + 128], text[64];
    uint64_t best = UINT64_MAX, v;

    for (;;) {
        if (snprintf(at, sizeof at, "%s%s/%s", root, strcmp(path, "/") == 0 ? "" : path,
                     file) < (int)sizeof at &&
            read_small(at, text, sizeof text) > 0 &&
            spits_mem_parse_max(text, &v) == 0 && v < best)
            best = v;
        char *slash = strrchr(path, '/');
        if (!slash || slash == path) {
            if (strcmp(path, "/") == 0)
                break;
            strcpy(path, "/");    /* the hierarchy's root last (v1 has one) */
            continue;
        }
        *slash = '\0';
    }
    return best;
}

/* The tightest memory limit of this process's cgroups, v2 (memory.max)
 * and v1's memory controller (memory.limit_in_bytes, whose "none" is a
 * number near 2^63, above any RAM): UINT64_MAX when none is set. */
static uint64_t cgroup_max(void)
{
    enum { TEXT_MAX = 64 << 10 };   /* (a line per v1 hierarchy) */
    char v2[PATH_MAX], v1[PATH_MAX];
    char *text = malloc(TEXT_MAX);
    uint64_t best = UINT64_MAX, v;

    if (!text)
        return best;
    if (read_small("/proc/self/cgroup", text, TEXT_MAX) > 0) {
        spits_mem_cgroup_paths(text, v2, sizeof v2, v1, sizeof v1);
        if (v2[0] && (v = cgroup_walk("/sys/fs/cgroup", v2, "memory.max")) < best)
            best = v;
        if (v1[0] && (v = cgroup_walk("/sys/fs/cgroup/memory", v1,
                                      "memory.limit_in_bytes")) < best)
            best = v;
    }
    free(text);
    return best;
}

uint64_t spits_mem_available(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t cg = cgroup_max();

    if (!ram)
        return cg == UINT64_MAX ? 0 : cg;
    return cg < ram ? cg : ram;
}

#ifdef SPITS_SELFTEST
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "mem: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

int spits_mem_selftest(void)
{
    uint64_t v = 0;
    unsigned char *block = NULL;

    CHECK(spits_mem_parse_max("max\n", &v) == 0 && v == UINT64_MAX);
    CHECK(spits_mem_parse_max("max", &v) == 0 && v == UINT64_MAX);
    CHECK(spits_mem_parse_max("1073741824\n", &v) == 0 && v == 1073741824u);
    CHECK(spits_mem_parse_max("0\n", &v) == 0 && v == 0);
    CHECK(spits_mem_parse_max("", &v) == -1);
    CHECK(spits_mem_parse_max("maximum\n", &v) == -1);
    CHECK(spits_mem_parse_max("-1\n", &v) == -1);
    CHECK(spits_mem_parse_max("12 34\n", &v) == -1);
    CHECK(spits_mem_parse_max("99999999999999999999999\n", &v) == -1);

    /* 64 MiB touched shows in the resident size (what the JM's limit
     * counts), at least most of it, whatever else moves meanwhile. */
    uint64_t before = spits_mem_rss_anon();
    CHECK(before > 0);
    size_t size = 64u << 20;
    block = malloc(size);
    CHECK(block);
    /* (volatile: the compiler may not move the stores past the read) */
    for (size_t i = 0; i < size; i += 4096)
        ((volatile unsigned char *)block)[i] = 0x5a;
    uint64_t after = spits_mem_rss_anon();
    CHECK(after >= before + size / 2);
    uint64_t now, peak;
    spits_mem_usage(&now, &peak);
    CHECK(now >= before + size / 2 && peak >= now);
    free(block);
    block = NULL;

    /* v2 alone, hybrid (v1 memory and v2), and v1 with a joint
     * controller; a path that is only "/"; lines that are no cgroup. */
    char v2[64], v1[64];
    spits_mem_cgroup_paths("0::/user.slice/job_7/step_0\n", v2, sizeof v2, v1, sizeof v1);
    CHECK(strcmp(v2, "/user.slice/job_7/step_0") == 0 && v1[0] == '\0');
    spits_mem_cgroup_paths("9:name=systemd:/\n4:memory:/slurm/uid_1/job_7\n"
                           "1:cpu:/\n0::/\n", v2, sizeof v2, v1, sizeof v1);
    CHECK(strcmp(v2, "/") == 0 && strcmp(v1, "/slurm/uid_1/job_7") == 0);
    spits_mem_cgroup_paths("3:cpuacct,memory:/a\n", v2, sizeof v2, v1, sizeof v1);
    CHECK(v2[0] == '\0' && strcmp(v1, "/a") == 0);
    spits_mem_cgroup_paths("5:memoryx:/b\ngarbage\n10::/c", v2, sizeof v2, v1, sizeof v1);
    CHECK(v1[0] == '\0' && v2[0] == '\0');
    spits_mem_cgroup_paths("0::/c", v2, sizeof v2, v1, sizeof v1);
    CHECK(strcmp(v2, "/c") == 0);

    uint64_t avail = spits_mem_available();
    CHECK(avail > 0);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    CHECK(avail <= (uint64_t)pages * (uint64_t)page);
    return 0;
fail:
    free(block);
    return -1;
}
#endif
