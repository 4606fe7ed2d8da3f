/*
 * metrics20.c - a SPITS 2.0 variant module: constructors take a trailing
 * metrics object, which must be one that its own spits_metrics_new made.
 * Prints "metrics20: sum=S" for S = 1 + ... + N.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define METRICS_MAGIC 0x5350495453ULL
typedef struct { uint64_t magic; unsigned size; } metrics_t;

void *spits_metrics_new(unsigned buffer_size)
{
    metrics_t *m = malloc(sizeof *m);
    m->magic = METRICS_MAGIC;
    m->size = buffer_size;
    return m;
}

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
