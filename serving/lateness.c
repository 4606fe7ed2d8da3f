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

void late_reset(late_t *l)
{
    memset(l, 0, sizeof *l);
}

int64_t late_median(const late_t *l)
{
    uint32_t rank = (l->n + 1) / 2, seen = 0;
    if (!l->n)
        return 0;
    /* (the counts add up to n: a median not below the last bucket is in it) */
    for (unsigned b = 0; b < LATE_BUCKETS - 1; b++)
        if ((seen += l->counts[b]) >= rank)
            return late_top(b);
    return late_top(LATE_BUCKETS - 1);
}

int64_t late_after(const late_t *l, uint64_t finished, uint64_t in_flight)
{
    if (!l->n || (double)finished < LATE_QUANTILE * (double)(finished + in_flight))
        return LATE_NEVER;
    int64_t after = (int64_t)(LATE_MULTIPLIER * (double)late_median(l));
    return after > LATE_FLOOR_MS ? after : LATE_FLOOR_MS;
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

int late_selftest(void)
{
    static int64_t all[3 * LATE_WINDOW], win[LATE_WINDOW];
    late_t l;
    uint32_t rng = 12345;

    late_reset(&l);
    LCHECK(late_median(&l) == 0 && late_after(&l, 10, 0) == LATE_NEVER);
    for (unsigned b = 0; b < late_bucket(0xffffffffLL); b++)
        LCHECK(late_bucket(late_top(b)) == b && late_bucket(late_top(b) + 1) == b + 1);
    /* Over a sliding window of durations that change regime half way:
     * the median is within 1/8 above the exact one, never below. */
    for (unsigned i = 0; i < 3 * LATE_WINDOW; i++) {
        rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
        all[i] = (i < LATE_WINDOW * 3 / 2 ? 400 : 50000) + rng % 300;
        late_sample(&l, all[i]);
        unsigned n = i + 1 < LATE_WINDOW ? i + 1 : LATE_WINDOW;
        memcpy(win, all + i + 1 - n, n * sizeof *win);
        int64_t want = exact_median(win, n), got = late_median(&l);
        LCHECK(got >= want && got <= want + want / 8 + 1);
    }
    /* The quantile gate and the floor. */
    LCHECK(late_after(&l, 49, 51) == LATE_NEVER);
    LCHECK(late_after(&l, 50, 50) == (int64_t)(1.5 * (double)late_median(&l)));
    late_reset(&l);
    late_sample(&l, 3);
    LCHECK(late_median(&l) == 3 && late_after(&l, 1, 0) == LATE_FLOOR_MS);
    /* The first bucket and the last. */
    late_reset(&l);
    late_sample(&l, 0);
    LCHECK(late_median(&l) == 0);
    late_sample(&l, 0xffffffffLL);
    late_sample(&l, 0x1ffffffffLL);
    LCHECK(late_median(&l) == 0xffffffffLL);
    late_reset(&l);
    late_sample(&l, 0xe0000000LL);   /* (the last but one) */
    LCHECK(late_median(&l) == 0xefffffffLL);

    /* A fed hop's source is out of work LATE_STARVED_MS after a TM's
     * room first went unfilled (later notes do not restart the clock);
     * only new work stops it. */
    late_starve_t st = {0};
    LCHECK(!late_starve_out(&st, 1000000));
    late_starve_note(&st, 1000);
    late_starve_note(&st, 1000 + LATE_STARVED_MS - 1);
    LCHECK(!late_starve_out(&st, 1000 + LATE_STARVED_MS - 1));
    LCHECK(late_starve_out(&st, 1000 + LATE_STARVED_MS));
    late_starve_note(&st, 1000 + LATE_STARVED_MS);
    LCHECK(late_starve_out(&st, 1000 + 10 * LATE_STARVED_MS));
    late_starve_fed(&st);
    LCHECK(!late_starve_out(&st, 1000 + 10 * LATE_STARVED_MS));
    late_starve_note(&st, 5000);
    LCHECK(!late_starve_out(&st, 5000 + LATE_STARVED_MS / 2) &&
           late_starve_out(&st, 5000 + LATE_STARVED_MS));
    /* (a clock at 0 still starts it) */
    st.since = 0;
    late_starve_note(&st, 0);
    LCHECK(st.since && late_starve_out(&st, LATE_STARVED_MS + 1));
    return 0;
}
#endif
