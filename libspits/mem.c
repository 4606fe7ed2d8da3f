/*
 * mem.c - this process's memory as the kernel counts it (mem.h).
 *
 * The resident size comes from /proc/self/statm, which the kernel fills
 * from its counters without walking the address space: one open, one
 * read, one close (the JM's generator reads it); its peak, for reports,
 * from /proc/self/status. What the process may use is the smaller of the
 * machine's RAM and the tightest memory.max of cgroup v2 on its way to
 * the root: a batch system puts a job's limit on the job's cgroup and
 * the job's steps below it, so the process's own cgroup may have none.
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

uint64_t spits_mem_rss(void)
{
    char buf[128];
    unsigned long long size, resident;
    long page = sysconf(_SC_PAGESIZE);

    if (page <= 0 || read_small("/proc/self/statm", buf, sizeof buf) <= 0 ||
        sscanf(buf, "%llu %llu", &size, &resident) != 2)
        return 0;
    return (uint64_t)resident * (uint64_t)page;
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

/* The tightest memory.max from this process's cgroup (v2) up to the
 * root; UINT64_MAX when none is set or there is no cgroup v2. */
static uint64_t cgroup_max(void)
{
    char buf[PATH_MAX + 64], path[PATH_MAX + 64], text[64];
    uint64_t best = UINT64_MAX, v;

    if (read_small("/proc/self/cgroup", buf, sizeof buf) <= 0)
        return best;
    /* v2's line is "0::/PATH" (a v1 hierarchy's have other numbers). */
    char *line = strstr(buf, "0::/");
    if (line && line != buf && line[-1] != '\n')
        line = NULL;
    if (!line)
        return best;
    char *cg = line + 3, *nl = strchr(cg, '\n');
    if (nl)
        *nl = '\0';
    for (;;) {
        if (snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max",
                     strcmp(cg, "/") == 0 ? "" : cg) < (int)sizeof path &&
            read_small(path, text, sizeof text) > 0 &&
            spits_mem_parse_max(text, &v) == 0 && v < best)
            best = v;
        char *slash = strrchr(cg, '/');
        if (!slash || slash == cg)
            break;   /* (the root's own memory.max does not exist) */
        *slash = '\0';
    }
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
    uint64_t before = spits_mem_rss();
    CHECK(before > 0);
    size_t size = 64u << 20;
    block = malloc(size);
    CHECK(block);
    /* (volatile: the compiler may not move the stores past the read) */
    for (size_t i = 0; i < size; i += 4096)
        ((volatile unsigned char *)block)[i] = 0x5a;
    uint64_t after = spits_mem_rss();
    CHECK(after >= before + size / 2);
    uint64_t now, peak;
    spits_mem_usage(&now, &peak);
    CHECK(now >= before + size / 2 && peak >= now);
    free(block);
    block = NULL;

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
