/*
 * joins.c - what a HELLO is to the hop that gets it (see joins.h).
 */
#include <stdio.h>
#include <string.h>

#include "joins.h"

joins_kind_t joins_kind(const joins_known_t *k, const spits_hello_t *h)
{
    if (!k->alive)
        return JOINS_NEW;
    if (k->pid == h->pid &&
        ((h->attach >= 0 && h->attach <= k->attach) || !k->sent_since))
        return JOINS_AGAIN;
    return JOINS_RECONNECT;
}

static int joins_other_job(const spits_hello_t *h, const char *job_id)
{
    return h->job_id && strcmp(h->job_id, job_id) != 0;
}

long joins_held(const spits_hello_t *h, const char *job_id)
{
    return joins_other_job(h, job_id) ? 0 : h->held;
}

long joins_pending(const spits_hello_t *h, const char *job_id)
{
    return joins_other_job(h, job_id) ? 0 : h->pending;
}

void joins_settle_begin(joins_settle_t *s, long pending, int64_t now, int64_t timeout_ms)
{
    int64_t wait = timeout_ms / 4 > 2000 ? timeout_ms / 4 : 2000;
    s->until = pending > 0 ? now + wait : 0;
    s->records = pending;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "joins selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); return -1; } } while (0)

int joins_selftest(void)
{
    spits_hello_t h = {"node1", 100, 4, 6, 3, 2, 5, "job-a", NULL, -1};
    joins_known_t k = {0, 100, 5, 1};

    /* No live entry: a join, whatever it says. */
    CHECK(joins_kind(&k, &h) == JOINS_NEW);
    k.pid = 7;
    CHECK(joins_kind(&k, &h) == JOINS_NEW);
    /* Live, the same process, the outage it last said or an older one: a
     * repeat, sent to or not. */
    k = (joins_known_t){1, 100, 5, 1};
    CHECK(joins_kind(&k, &h) == JOINS_AGAIN);
    k.attach = 9;
    CHECK(joins_kind(&k, &h) == JOINS_AGAIN);
    /* A new outage with copies sent since: a reconnect... */
    k.attach = 4;
    CHECK(joins_kind(&k, &h) == JOINS_RECONNECT);
    /* ...but with nothing sent since, nothing was lost: a repeat. */
    k.sent_since = 0;
    CHECK(joins_kind(&k, &h) == JOINS_AGAIN);
    /* A new process on the same routing id: a reconnect, sent to or not. */
    k = (joins_known_t){1, 99, 5, 1};
    CHECK(joins_kind(&k, &h) == JOINS_RECONNECT);
    k.sent_since = 0;
    CHECK(joins_kind(&k, &h) == JOINS_RECONNECT);
    /* An older TM (no attach): a reconnect when sent to since, else a
     * repeat. */
    h.attach = -1;
    k = (joins_known_t){1, 100, -1, 1};
    CHECK(joins_kind(&k, &h) == JOINS_RECONNECT);
    k.sent_since = 0;
    CHECK(joins_kind(&k, &h) == JOINS_AGAIN);

    /* Attach 0 is an outage said like any other. */
    h.attach = 0;
    k = (joins_known_t){1, 100, 0, 1};
    CHECK(joins_kind(&k, &h) == JOINS_AGAIN);

    /* What it holds counts on this job only. */
    CHECK(joins_held(&h, "job-a") == 3 && joins_pending(&h, "job-a") == 2);
    CHECK(joins_held(&h, "job-b") == 0 && joins_pending(&h, "job-b") == 0);
    h.job_id = NULL;   /* (an older TM) */
    CHECK(joins_held(&h, "job-b") == 3 && joins_pending(&h, "job-b") == 2);

    /* Settling: open with nothing pending; else shut until the results
     * are in or the wait (a quarter of the timeout, 2 s at least) ends. */
    joins_settle_t s;
    joins_settle_begin(&s, 0, 1000, 60000);
    CHECK(s.until == 0 && joins_settle_open(&s, 1000));
    joins_settle_begin(&s, 5, 1000, 60000);
    CHECK(s.until == 16000 && !joins_settle_open(&s, 1000));
    CHECK(!joins_settle_open(&s, 15999) && joins_settle_open(&s, 16000));
    joins_settle_results(&s, 3);
    CHECK(s.records == 2 && !joins_settle_open(&s, 1001));
    joins_settle_results(&s, 2);
    CHECK(s.until == 0 && joins_settle_open(&s, 1001));
    joins_settle_results(&s, 4);   /* (more after: stays open) */
    CHECK(s.until == 0);
    joins_settle_begin(&s, 1, 1000, 4000);
    CHECK(s.until == 3000 && s.records == 1);
    joins_settle_begin(&s, 1, 0, 7000);     /* (a quarter is 1750: 2 s) */
    CHECK(s.until == 2000);
    joins_settle_begin(&s, 1, 0, 8004);     /* (a quarter is 2001) */
    CHECK(s.until == 2001);
    joins_settle_results(&s, 7);
    CHECK(s.until == 0 && joins_settle_open(&s, 1000));
    return 0;
}

#endif /* SPITS_SELFTEST */
