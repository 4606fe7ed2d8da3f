/*
 * credit.c - a TM's credit on a hop: the rules that are more than one
 * line (see credit.h).
 */
#include <stdio.h>

#include "credit.h"

void credit_resize(credit_t *c, long workers, long slots)
{
    if (workers >= 0)
        c->workers = (int)workers;
    if (slots >= 0 && slots != c->asked) {
        long now = slots > c->asked ? c->slots : c->slots - (c->asked - slots);
        c->asked = (int)slots;
        c->slots = (int)(now > slots ? now : slots);
    }
}

int credit_grow(credit_t *c, int cap, int64_t turn_ms, uint64_t runs, double busy_s)
{
    int want = c->slots;
    if (c->outstanding == 0 && c->slots <= cap / 2)
        want = c->slots * 2;
    if (turn_ms > 0 && runs > 0 && busy_s > 0) {
        double task_ms = busy_s * 1000.0 / (double)runs;
        double need = 1.25 * c->workers * (double)turn_ms / (task_ms > 0.01 ? task_ms : 0.01);
        if (need > want)
            want = need < cap ? (int)need + 1 : cap;
    }
    if (want <= c->slots)   /* (want is within cap by both rules) */
        return 0;
    c->slots = want;
    return 1;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "credit selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); return -1; } } while (0)

int credit_selftest(void)
{
    credit_t c;

    /* A HELLO of 4 workers and 6 slots that holds 2 results from before. */
    credit_set(&c, 4, 6);
    credit_hold(&c, 2);
    CHECK(c.workers == 4 && c.slots == 6 && c.asked == 6 && c.outstanding == 2);
    CHECK(credit_room(&c) == 4 && credit_room_workers(&c) == 2);
    CHECK(credit_quick(&c, 0) && credit_quick(&c, 1) && !credit_quick(&c, 2));
    /* Holding more than its slots counts as its slots. */
    credit_hold(&c, 9);
    CHECK(c.outstanding == 6 && credit_room(&c) == 0 && credit_room_workers(&c) == 0);
    /* Records back, never below zero; copies spent; past the slots (a
     * relay's ask fell) the room is none, not negative. */
    credit_back(&c, 5);
    CHECK(c.outstanding == 1);
    credit_back(&c, 7);
    CHECK(c.outstanding == 0 && credit_room(&c) == 6 && credit_room_workers(&c) == 4);
    credit_spend(&c, 8);
    CHECK(c.outstanding == 8 && credit_room(&c) == 0 && credit_room_workers(&c) == 0);
    credit_back(&c, UINT64_MAX);
    CHECK(c.outstanding == 0);
    credit_spend(&c, 3);
    credit_gone(&c);
    CHECK(c.outstanding == 0);
    /* No workers said, or no prefetch: the room to fill first is all of it. */
    credit_set(&c, 0, 5);
    credit_hold(&c, 0);
    CHECK(credit_room_workers(&c) == 5 && !credit_quick(&c, 0));
    credit_set(&c, 7, 5);
    CHECK(credit_room_workers(&c) == 5);

    /* A relay's STATS: up to a larger ask at once, down by as much as the
     * ask fell (prefetch grown on top kept), never below the ask. */
    credit_set(&c, 8, 16);
    c.slots = 40;   /* (grown) */
    credit_resize(&c, 12, 24);
    CHECK(c.workers == 12 && c.asked == 24 && c.slots == 40);
    credit_resize(&c, -1, 20);
    CHECK(c.workers == 12 && c.asked == 20 && c.slots == 36);
    credit_resize(&c, 0, 0);
    CHECK(c.workers == 0 && c.asked == 0 && c.slots == 16);
    credit_resize(&c, 3, -1);
    CHECK(c.workers == 3 && c.asked == 0 && c.slots == 16);
    credit_set(&c, 2, 4);
    credit_resize(&c, 2, 50);
    CHECK(c.slots == 50);
    credit_resize(&c, 2, 10);
    CHECK(c.slots == 10);   /* (nothing grown: the ask) */

    /* Growth: ran dry doubles, while that stays within the cap... */
    credit_set(&c, 2, 4);
    credit_hold(&c, 0);
    CHECK(credit_grow(&c, 100, 0, 0, 0) == 1 && c.slots == 8);
    CHECK(credit_grow(&c, 16, 0, 0, 0) == 1 && c.slots == 16);
    CHECK(credit_grow(&c, 31, 0, 0, 0) == 0 && c.slots == 16);
    /* ...and not while it holds any. */
    credit_spend(&c, 1);
    CHECK(credit_grow(&c, 1000, 0, 0, 0) == 0 && c.slots == 16);
    /* Far away: 2 workers, a 100 ms turn, 10 ms tasks (10 runs in 0.1 s
     * of work): 1.25 * 2 * 100 / 10 = 25, one more: 26. */
    CHECK(credit_grow(&c, 1000, 100, 10, 0.1) == 1 && c.slots == 26);
    /* ...up to the cap, and never down. */
    CHECK(credit_grow(&c, 30, 1000, 10, 0.1) == 1 && c.slots == 30);
    CHECK(credit_grow(&c, 20, 1000, 10, 0.1) == 0 && c.slots == 30);
    /* Long tasks (1 s against a 100 ms turn) ask for nothing more. */
    CHECK(credit_grow(&c, 1000, 100, 10, 10.0) == 0 && c.slots == 30);
    /* Tasks of no time count as 0.01 ms, not a division by zero. */
    credit_set(&c, 1, 1);
    credit_spend(&c, 1);
    CHECK(credit_grow(&c, 500, 1, 1000000, 1e-9) == 1 && c.slots == 126);
    /* ...but a short task counts as its own time: 0.5 ms, 1.25 * 1 / 0.5,
     * 3. No work timed asks for nothing. */
    credit_set(&c, 1, 1);
    credit_spend(&c, 1);
    CHECK(credit_grow(&c, 1000, 100, 10, 0.0) == 0 && c.slots == 1);
    CHECK(credit_grow(&c, 1000, 1, 1, 0.0005) == 1 && c.slots == 3);
    /* One run of 1 s against a 7994 ms turn: 9.9925, so 10. */
    credit_set(&c, 1, 1);
    credit_spend(&c, 1);
    CHECK(credit_grow(&c, 1000, 7994, 1, 1.0) == 1 && c.slots == 10);
    /* A need of exactly the slots asks for no more; one of exactly the
     * cap gets the cap. */
    credit_set(&c, 4, 5);
    credit_spend(&c, 1);
    CHECK(credit_grow(&c, 1000, 100, 10, 1.0) == 0 && c.slots == 5);
    credit_set(&c, 4, 4);
    credit_spend(&c, 1);
    CHECK(credit_grow(&c, 5, 100, 10, 1.0) == 1 && c.slots == 5);
    return 0;
}

#endif /* SPITS_SELFTEST */
