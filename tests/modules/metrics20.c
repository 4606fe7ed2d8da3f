/*
 * metrics20.c - a SPITS 2.0 variant module: constructors take a trailing
 * metrics object, which must be one that its own spits_metrics_new made.
 * Prints "metrics20: sum=S" for S = 1 + ... + N.
 *
 * Its metrics can be read back (spits_get_metrics_list, _last_values,
 * spits_free_ptr, in the 2.0 serial form without a type word): every
 * object holds buffer_size (int, the size it was made with), ratio
 * (double 0.25) and variant (the string "metrics20").
 */
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

static unsigned char *put(unsigned char *p, const void *v, size_t n)
{
    memcpy(p, v, n);
    return p + n;
}

void *spits_get_metrics_list(void *metrics)
{
    int64_t n = 3, cap = ((metrics_t *)metrics)->size;
    unsigned char *b = malloc(256), *p = b;
    if (!b)
        return NULL;
    p = put(p, &n, 8);
    for (int i = 0; i < 3; i++) {
        p = put(p, names[i], strlen(names[i]) + 1);
        p = put(p, &cap, 8);
        p = put(p, &types[i], 8);
    }
    return b;
}

/* value, seconds, nanoseconds, sequence number: per name asked for */
void *spits_get_metrics_last_values(void *metrics, const char **list)
{
    metrics_t *m = metrics;
    struct timespec ts;
    unsigned char *b = malloc(256), *p = b;
    int64_t seq = 0, sec, nsec;
    clock_gettime(CLOCK_REALTIME, &ts);
    sec = ts.tv_sec;
    nsec = ts.tv_nsec;
    if (!b || !list || !list[0] || list[1]) {
        free(b);
        return NULL;
    }
    if (strcmp(list[0], "buffer_size") == 0) {
        int64_t v = m->size;
        p = put(p, &v, 8);
    } else if (strcmp(list[0], "ratio") == 0) {
        double v = 0.25;
        p = put(p, &v, 8);
    } else if (strcmp(list[0], "variant") == 0) {
        int64_t len = sizeof "metrics20";
        p = put(p, &len, 8);
        p = put(p, "metrics20", (size_t)len);
    } else {
        free(b);
        return NULL;
    }
    p = put(p, &sec, 8);
    p = put(p, &nsec, 8);
    put(p, &seq, 8);
    return b;
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
    const void *final;
    spitssize_t finalsz;
    int64_t sum;
    if (run(argc, argv, NULL, 0, &final, &finalsz) != 0 || finalsz != sizeof sum)
        return 1;
    memcpy(&sum, final, sizeof sum);
    printf("metrics20: sum=%lld\n", (long long)sum);
    return 0;
}
