/*
 * lateness.h - when a task copy is late: the scheduler's speculation rule.
 *
 * Spark's speculation is the model: a task is late once it has run longer
 * than a multiple of the median time of the finished tasks, and only once
 * a quantile of the tasks has finished (before that the median says
 * little). Here a task's time is what the hop sees, from a copy leaving
 * the hop (a large task's part may wait in the hop's own send backlog
 * first) to its result. That includes the wait in the TM's
 * prefetch queue, and so does the age of a copy still out, so the two
 * are measured alike: a copy is late when it has been out much longer
 * than copies take to come back on this job, whatever the TMs' prefetch
 * depth.
 *
 * The median is that of the last LATE_WINDOW samples, kept as counts
 * in logarithmic buckets (8 a doubling, so within 1/8 of the true value,
 * rounded up): O(1) a sample, fixed memory, no allocation.
 */
#ifndef SPITS_SERVING_LATENESS_H
#define SPITS_SERVING_LATENESS_H

#include <stdint.h>

#define LATE_MULTIPLIER 1.5   /* Spark's spark.speculation.multiplier */
#define LATE_QUANTILE 0.5     /* of the phase's tasks finished; Spark
                                    waits for 0.75, but re-running
                                    stragglers is this runtime's point */
#define LATE_FLOOR_MS 100     /* never late sooner (Spark: minTaskRuntime) */
#define LATE_WINDOW 1024      /* samples the median is taken over */
#define LATE_BUCKETS 240      /* 8 a doubling: up to 2^32 ms */
#define LATE_NEVER INT64_MAX  /* no copy is late (too few finished) */

typedef struct {
    uint32_t counts[LATE_BUCKETS];
    uint8_t recent[LATE_WINDOW];  /* bucket of each sample, oldest at */
    uint32_t at, n;                  /* ...recent[at] once n is full */
} late_t;

/* A zeroed late_t has no samples. */
void late_reset(late_t *l);
/* Values below 8 ms have a bucket each; above, a value's bucket is its
 * highest bit (the doubling) and the three bits below it. */
static inline unsigned late_bucket(int64_t ms)
{
    if (ms <= 0)
        return 0;
    uint64_t v = ms > 0xffffffffLL ? 0xffffffffu : (uint64_t)ms;
    if (v < 8)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);     /* 3 or more */
    return (e - 2) * 8 + (unsigned)((v >> (e - 3)) & 7);
}

/* A finished task took ms (send to result). Inline: once per result. */
static inline void late_sample(late_t *l, int64_t ms)
{
    unsigned b = late_bucket(ms);
    if (l->n == LATE_WINDOW)          /* the oldest sample leaves */
        l->counts[l->recent[l->at]]--;
    else
        l->n++;
    l->recent[l->at] = (uint8_t)b;
    l->at = (l->at + 1) % LATE_WINDOW;
    l->counts[b]++;
}

/* The median of the samples, rounded up to its bucket's top (0 if none). */
int64_t late_median(const late_t *l);
/* How long a copy must be out to be late, in ms: max(multiplier x median,
 * floor) once there is a sample and the finished tasks are at least the
 * quantile of finished plus in_flight; LATE_NEVER before. */
int64_t late_after(const late_t *l, uint64_t finished, uint64_t in_flight);

/* Copies of late tasks go only when there is no fresh work to send, and
 * none to come (scheduler.h: the JM's generator done, or waiting for
 * window room). A hop fed by another (a relay) cannot ask a generator:
 * its source fills the room it has as records go up, one round trip
 * later, so running dry is the rule there, not a sign that the work ran
 * out. It takes its source to be out of fresh work once a TM's room has
 * gone unfilled for want of work, and no new work came, for
 * LATE_STARVED_MS (the least time a copy can be late). Only new work
 * restarts the clock (room that opens later is not made to wait
 * again). */
#define LATE_STARVED_MS LATE_FLOOR_MS

typedef struct {
    int64_t since;             /* serves short of work since (ms; 0: not) */
} late_starve_t;

/* Whether the source is taken to be out of fresh work at now. */
static inline int late_starve_out(const late_starve_t *st, int64_t now)
{
    return st->since && now - st->since >= LATE_STARVED_MS;
}

/* A TM's room went unfilled at now for want of work: the clock starts,
 * unless it runs already. */
static inline void late_starve_note(late_starve_t *st, int64_t now)
{
    if (!st->since)
        st->since = now > 0 ? now : 1;
}

/* New work came from the source (or a new phase began). */
static inline void late_starve_fed(late_starve_t *st)
{
    st->since = 0;
}

#ifdef SPITS_SELFTEST
int late_selftest(void);
#endif

#endif
