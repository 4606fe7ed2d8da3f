/*
 * lateness.c - when a task copy is late (see lateness.h).
 */
#include <string.h>

#include "lateness.h"

/* The largest value in bucket b. */
static int64_t late_top(unsigned b)
{
    if (b < 8)
        return b;
    unsigned e = b / 8 + 2, frac = b % 8;
    return (int64_t)(((uint64_t)(9 + frac) << (e - 3)) - 1);
}

void jm_late_reset(jm_late_t *l)
{
    memset(l, 0, sizeof *l);
}

int64_t jm_late_median(const jm_late_t *l)
{
    uint32_t rank = (l->n + 1) / 2, seen = 0;
    if (!l->n)
        return 0;
    for (unsigned b = 0; b < JM_LATE_BUCKETS; b++)
        if ((seen += l->counts[b]) >= rank)
            return late_top(b);
    return late_top(JM_LATE_BUCKETS - 1);
}

int64_t jm_late_after(const jm_late_t *l, uint64_t finished, uint64_t in_flight)
{
    if (!l->n || (double)finished < JM_LATE_QUANTILE * (double)(finished + in_flight))
        return JM_LATE_NEVER;
    int64_t after = (int64_t)(JM_LATE_MULTIPLIER * (double)jm_late_median(l));
    return after > JM_LATE_FLOOR_MS ? after : JM_LATE_FLOOR_MS;
}

/* --- self-test --------------------------------------------------------- */
#ifdef SPITS_SELFTEST
#include <stdio.h>
#include <stdlib.h>

#define LCHECK(c) do { if (!(c)) { fprintf(stderr, "lateness selftest: " \
    "%s:%d: %s\n", __FILE__, __LINE__, #c); return -1; } } while (0)

static int cmp_ms(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The exact median (the lower one of an even count) of v[0..n-1]. */
static int64_t exact_median(int64_t *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_ms);
    return v[(n - 1) / 2];
}

int jm_late_selftest(void)
{
    static int64_t all[3 * JM_LATE_WINDOW], win[JM_LATE_WINDOW];
    jm_late_t l;
    uint32_t rng = 12345;

    jm_late_reset(&l);
    LCHECK(jm_late_median(&l) == 0 && jm_late_after(&l, 10, 0) == JM_LATE_NEVER);
    for (unsigned b = 0; b < jm_late_bucket(0xffffffffLL); b++)
        LCHECK(jm_late_bucket(late_top(b)) == b && jm_late_bucket(late_top(b) + 1) == b + 1);
    /* Over a sliding window of durations that change regime half way:
     * the median is within 1/8 above the exact one, never below. */
    for (unsigned i = 0; i < 3 * JM_LATE_WINDOW; i++) {
        rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
        all[i] = (i < JM_LATE_WINDOW * 3 / 2 ? 400 : 50000) + rng % 300;
        jm_late_sample(&l, all[i]);
        unsigned n = i + 1 < JM_LATE_WINDOW ? i + 1 : JM_LATE_WINDOW;
        memcpy(win, all + i + 1 - n, n * sizeof *win);
        int64_t want = exact_median(win, n), got = jm_late_median(&l);
        LCHECK(got >= want && got <= want + want / 8 + 1);
    }
    /* The quantile gate and the floor. */
    LCHECK(jm_late_after(&l, 49, 51) == JM_LATE_NEVER);
    LCHECK(jm_late_after(&l, 50, 50) == (int64_t)(1.5 * (double)jm_late_median(&l)));
    jm_late_reset(&l);
    jm_late_sample(&l, 3);
    LCHECK(jm_late_median(&l) == 3 && jm_late_after(&l, 1, 0) == JM_LATE_FLOOR_MS);
    return 0;
}
#endif
