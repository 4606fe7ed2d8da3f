/*
 * util.c - clocks, strict option parsing, host name, random ids.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "selfexe.h"
#include "util.h"

int64_t spits_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double spits_wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void spits_iso_time(double t, char *out, size_t outlen)
{
    time_t secs = (time_t)t;
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int spits_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    /* (strtol would take leading blanks and a sign: an option's value
     * is refused unless it is all digits) */
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int spits_parse_seconds(const char *s, double max, double *out)
{
    char *end;
    double v;

    /* (nor blanks, a sign, hexadecimal, inf or nan, which strtod takes) */
    if (!s || !(isdigit((unsigned char)*s) || *s == '.') || strpbrk(s, "xX"))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > max)
        return -1;
    *out = v;
    return 0;
}

void spits_hostname(char *out, size_t outlen)
{
    if (gethostname(out, outlen) != 0 || !*out)
        snprintf(out, outlen, "localhost");
    out[outlen - 1] = '\0';
}

void spits_random_hex(char *out, size_t nbytes)
{
    unsigned char raw[64];
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    randombytes_buf(raw, nbytes);
    sodium_bin2hex(out, 2 * nbytes + 1, raw, nbytes);
}

int spits_find_beside(const char *selfname, const char *name, const char *env,
                      const char *subdir, int mode, char *out)
{
    char self[PATH_MAX], dir[PATH_MAX];
    const char *e = env ? getenv(env) : NULL;
    if (e && *e) {
        snprintf(out, PATH_MAX, "%s", e);
        return access(out, mode);
    }
    /* (in the relocatable bundle, /proc/self/exe is its loader) */
    if (spits_selfexe(selfname, self, sizeof self) != 0)
        return -1;
    snprintf(dir, sizeof dir, "%s", dirname(self));
    if (snprintf(out, PATH_MAX, "%s/%s", dir, name) < PATH_MAX && access(out, mode) == 0)
        return 0;
    if (snprintf(out, PATH_MAX, "%s/../%s/%s", dir, subdir, name) >= PATH_MAX)
        return -1;
    return access(out, mode);
}

int spits_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = 0;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int spits_online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void spits_malloc_tune(int arenas)
{
    /* Measured (perf, 1 MB tasks, insecure): without it a fifth of all
     * samples were page faults in the JM's memcpy of fresh buffers. The
     * threshold is glibc's largest; freed memory up to 256 MiB stays for
     * the next task. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (arenas > 0)
        mallopt(M_ARENA_MAX, arenas);
}

void spits_malloc_release(void)
{
    malloc_trim(0);
}

int spits_endpoint_check(const char *ep, int bind, char *err, size_t errlen)
{
    if (strncmp(ep, "ipc://", 6) == 0 && ep[6])
        return 0;
    if (strncmp(ep, "inproc://", 9) == 0) {
        snprintf(err, errlen, "%s is inside this one process, where no task "
                 "manager can reach it: use tcp://HOST:PORT", ep);
        return -1;
    }
    const char *port = strrchr(ep, ':');
    if (strncmp(ep, "tcp://", 6) != 0 || !port || port < ep + 7) {
        snprintf(err, errlen, "%s is not tcp://HOST:PORT or ipc://PATH", ep);
        return -1;
    }
    long v;
    port++;
    if ((bind && strcmp(port, "*") == 0) ||
        spits_parse_long(port, bind ? 0 : 1, 65535, &v) == 0)
        return 0;
    snprintf(err, errlen, "%s: '%s' is not a port (1-65535%s)", ep, port,
             bind ? ", or 0 or * for any free one" : "");
    return -1;
}

int spits_grow(void **arr, size_t *cap, size_t need, size_t elsize, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * elsize);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

#ifdef SPITS_SELFTEST
#define UCHECK(c) do { if (!(c)) { fprintf(stderr, "util selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); return -1; } } while (0)

int spits_util_selftest(void)
{
    static const char *bad_long[] = {"", " 4", "+4", "-4", "4 ", "\t4", "4x",
                                     "0x10", "99999999999999999999", "5"};
    static const char *bad_seconds[] = {"", " 1", "+1", "-0", "1 ", "0x10",
                                        "inf", "nan", "1e400", ".", "2"};
    long l;
    double d;

    UCHECK(spits_parse_long("4", 1, 4096, &l) == 0 && l == 4);
    UCHECK(spits_parse_long("0", 0, 1, &l) == 0 && l == 0);
    UCHECK(spits_parse_long("4096", 1, 4096, &l) == 0 && l == 4096);
    for (size_t i = 0; i < sizeof bad_long / sizeof *bad_long; i++)
        UCHECK(spits_parse_long(bad_long[i], 0, 4, &l) == -1);
    UCHECK(spits_parse_seconds("2.5", 10, &d) == 0 && d == 2.5);
    UCHECK(spits_parse_seconds(".5", 10, &d) == 0 && d == 0.5);
    UCHECK(spits_parse_seconds("1e1", 10, &d) == 0 && d == 10);
    UCHECK(spits_parse_seconds("0", 10, &d) == 0 && d == 0);
    for (size_t i = 0; i < sizeof bad_seconds / sizeof *bad_seconds; i++)
        UCHECK(spits_parse_seconds(bad_seconds[i], 1, &d) == -1);
    return 0;
}
#endif
