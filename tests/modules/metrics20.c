/*
 * metrics20.c - a SPITS 2.0 variant module: constructors take a trailing
 * metrics object, which must be one that its own spits_metrics_new made.
 * Prints "metrics20: sum=S" for S = 1 + ... + N.
 *
 * Its metrics can be read back (spits_get_metrics_list, _last_values,
 * spits_free_ptr, in the 2.0 serial form without a type word, in buffers
 * malloc'd to their exact size so that reading past one is caught):
 * every object holds buffer_size (int, the size it was made with), ratio
 * (double 0.25) and variant (the string "metrics20").
 *
 * Built with -DMETRICS20_BE (metrics20be.so) it writes them as the
 * published 2.0 headers do: every number big-endian (an htonll) and a
 * type word ahead of each value; its variant is "metrics20be".
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define METRICS_MAGIC 0x5350495453ULL
typedef struct { uint64_t magic; unsigned size; } metrics_t;

void *spits_metrics_new(unsigned buffer_size)
{
    metrics_t *m = malloc(sizeof *m);
    m->magic = METRICS_MAGIC;
    m->size = buffer_size;
    return m;
}

static const char *names[] = {"buffer_size", "ratio", "variant"};
static const int64_t types[] = {0, 2, 3};    /* int, double, bytes */

#ifdef METRICS20_BE
#define VARIANT "metrics20be"
#define TYPED 1
#else
#define VARIANT "metrics20"
#define TYPED 0
#endif

static unsigned char *put(unsigned char *p, const void *v, size_t n)
{
    memcpy(p, v, n);
    return p + n;
}

/* A 64-bit number in the order the module writes. */
static unsigned char *put64(unsigned char *p, const void *v)
{
    uint64_t u;
    memcpy(&u, v, 8);
#ifdef METRICS20_BE
    if (htonl(1) != 1)           /* a little-endian host: swap */
        u = (uint64_t)htonl((uint32_t)u) << 32 | htonl((uint32_t)(u >> 32));
#endif
    return put(p, &u, 8);
}

void *spits_get_metrics_list(void *metrics)
{
    int64_t n = 3, cap = ((metrics_t *)metrics)->size;
    size_t size = 8;
    for (int i = 0; i < 3; i++)
        size += strlen(names[i]) + 1 + 16;
    unsigned char *b = malloc(size), *p = b;
    if (!b)
        return NULL;
    p = put64(p, &n);
    for (int i = 0; i < 3; i++) {
        p = put(p, names[i], strlen(names[i]) + 1);
        p = put64(p, &cap);
        p = put64(p, &types[i]);
    }
    return b;
}

/* [type,] value, seconds, nanoseconds, sequence number: per name asked
 * for */
void *spits_get_metrics_last_values(void *metrics, const char **list)
{
    metrics_t *m = metrics;
    struct timespec ts;
    unsigned char r[256], *p = r, *b;
    int64_t seq = 0, sec, nsec, v = m->size, len = sizeof VARIANT;
    double ratio = 0.25;
    int i = 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    sec = ts.tv_sec;
    nsec = ts.tv_nsec;
    if (!list || !list[0] || list[1])
        return NULL;
    while (i < 3 && strcmp(list[0], names[i]) != 0)
        i++;
    if (i == 3)
        return NULL;
    if (TYPED)
        p = put64(p, &types[i]);
    if (i == 0) {
        p = put64(p, &v);
    } else if (i == 1) {
        p = put64(p, &ratio);
    } else {
        p = put64(p, &len);
        p = put(p, VARIANT, (size_t)len);
    }
    p = put64(p, &sec);
    p = put64(p, &nsec);
    p = put64(p, &seq);
    if (!(b = malloc((size_t)(p - r))))
        return NULL;
    return memcpy(b, r, (size_t)(p - r));
}

void spits_free_ptr(void *p) { free(p); }

void spits_metrics_delete(void *p)
{
    metrics_t *m = p;
    if (!m || m->magic != METRICS_MAGIC)
        abort();                 /* not ours, or deleted twice */
    m->magic = 0;
    free(m);
}

static void check(const void *p)
{
    const metrics_t *m = p;
    if (!m || m->magic != METRICS_MAGIC || m->size == 0)
        abort();
}

#define SPITS_METRICS_VARIANT
#define METRICS_PARAM , const void *metrics
#define METRICS_CHECK(m) check(m)
#define SUM_F(op, i) ((void)(op), (i))
#include "common.h"

int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    int64_t sum;
    if (sum_run(argc, argv, run, &sum) != 0)
        return 1;
    printf("metrics20: sum=%lld\n", (long long)sum);
    return 0;
}
