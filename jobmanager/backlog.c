/*
 * backlog.c - the JM's send backlog (see backlog.h).
 */
#include <stdatomic.h>

#include "backlog.h"

static _Atomic uint64_t backlog_released;   /* (backlog.h: one count) */

void jm_backlog_left(uint64_t len)
{
    atomic_fetch_add_explicit(&backlog_released, len, memory_order_relaxed);
}

uint64_t jm_backlog_released(void)
{
    return atomic_load_explicit(&backlog_released, memory_order_relaxed);
}

void jm_backlog_reset(jm_backlog_t *b, uint64_t released)
{
    b->queued = b->released = released;
    b->tick_ms = 0;
    b->idle = 0;
}

int jm_backlog_tick(jm_backlog_t *b, int64_t now_ms, uint64_t released)
{
    if (now_ms - b->tick_ms < JM_BACKLOG_TICK_MS)
        return b->idle;
    b->idle = released == b->released && b->queued > released;
    b->released = released;
    b->tick_ms = now_ms;
    return b->idle;
}

uint64_t jm_backlog_queue(jm_backlog_t *b, uint64_t len, uint64_t released)
{
    uint64_t ahead = b->queued > released ? b->queued - released : 0;
    b->queued += len;
    return released + JM_BACKLOG_SLACK * ahead;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define BCHECK(c) do { if (!(c)) { fprintf(stderr, "backlog selftest: " \
    "%s:%d: %s\n", __FILE__, __LINE__, #c); return -1; } } while (0)

int jm_backlog_selftest(void)
{
    jm_backlog_t b;
    const uint64_t MiB = 1 << 20;

    /* Alone: stuck at once (it can only leave by being let go of). */
    jm_backlog_reset(&b, 0);
    BCHECK(jm_backlog_queue(&b, 8 * MiB, 0) == 0);
    /* Behind 100 parts of 8 MiB, 40 MiB of which went already: the 760
     * MiB ahead must go, JM_BACKLOG_SLACK times over. */
    for (int i = 1; i < 100; i++)
        jm_backlog_queue(&b, 8 * MiB, 0);
    BCHECK(jm_backlog_queue(&b, 8 * MiB, 40 * MiB) ==
           40 * MiB + JM_BACKLOG_SLACK * 760 * MiB);
    BCHECK(b.queued == 808 * MiB);
    /* Counted from where the process's count stood when it was made. */
    jm_backlog_reset(&b, 5000 * MiB);
    BCHECK(jm_backlog_queue(&b, MiB, 5000 * MiB) == 5000 * MiB);
    BCHECK(jm_backlog_queue(&b, MiB, 5000 * MiB) == 5000 * MiB + JM_BACKLOG_SLACK * MiB);
    /* Idle: a tick with parts waiting and none let go of. */
    BCHECK(jm_backlog_tick(&b, 1000, 5000 * MiB) == 1);
    BCHECK(jm_backlog_tick(&b, 1100, 5001 * MiB) == 0);
    BCHECK(jm_backlog_tick(&b, 1150, 5001 * MiB) == 0);   /* too soon */
    BCHECK(jm_backlog_tick(&b, 1200, 5001 * MiB) == 1);
    BCHECK(jm_backlog_tick(&b, 1300, 5002 * MiB) == 0);
    BCHECK(jm_backlog_tick(&b, 1400, 5002 * MiB) == 0);   /* none waits */
    return 0;
}
#endif
