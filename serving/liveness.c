/*
 * liveness.c - the rules by which a hop loses a TM (see liveness.h).
 */
#include <stdio.h>

#include "liveness.h"
#include "log.h"

int liveness_stall(liveness_hop_t *h, int64_t before, int64_t now)
{
    int64_t stall = h->timeout_ms / 2 > 4 * h->tick_ms ? h->timeout_ms / 2
                                                      : 4 * h->tick_ms;
    if (now - before < stall)
        return 0;
    spits_warn("%s%s did not run for %.1f s (was it stopped, or starved of "
               "CPU?); the TMs get %.1f s to be heard from", h->prefix, h->loop,
               (now - before) / 1000.0, h->timeout_ms / 1000.0);
    h->heard_floor = now;
    return 1;
}

/* A TM silent past the timeout whose connection still brings bytes. */
static int liveness_busy(liveness_hop_t *h, const liveness_t *l, int64_t now,
                         int64_t quiet, const char *host, long pid)
{
    if (quiet < 0 || quiet > h->timeout_ms)
        return 0;
    if (!h->busy_logged_at || now - h->busy_logged_at >= LIVENESS_BUSY_LOG_MS) {
        spits_info("%sTM %s:%ld has sent no message for %.1f s, but its "
                   "connection is carrying data (a large transfer?)", h->prefix,
                   host, pid, (now - l->last_heard) / 1000.0);
        h->busy_logged_at = now;
    }
    return 1;
}

/* When silence counts from: the TM's last message, or the end of the
 * hop's own last stall if that is later. */
static int64_t liveness_since(const liveness_hop_t *h, const liveness_t *l)
{
    return l->last_heard > h->heard_floor ? l->last_heard : h->heard_floor;
}

int liveness_judge(liveness_hop_t *h, const liveness_t *l, int64_t now,
                   int probing, liveness_probe_fn *probe, void *arg,
                   const char *host, long pid)
{
    int64_t heard = liveness_since(h, l);
    if (now - heard > h->timeout_ms &&
        !liveness_busy(h, l, now, probe(l, arg), host, pid))
        return LIVENESS_LOST;
    if (probing || now - l->last_sent >= h->hb_ms)
        return LIVENESS_HEARTBEAT;
    return LIVENESS_FINE;
}

int liveness_quiet(const liveness_hop_t *h, const liveness_t *l, int64_t now,
                   liveness_probe_fn *probe, void *arg)
{
    int64_t heard = liveness_since(h, l);
    int64_t after = LIVENESS_QUIET_HBS * h->hb_ms;
    if (now - heard <= after)
        return 0;
    int64_t quiet = probe(l, arg);
    return quiet < 0 || quiet > after;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "liveness selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); return -1; } } while (0)

typedef struct {
    int64_t quiet;           /* what the probe answers */
    int asked;               /* how often it was asked */
} probe_fake_t;

static int64_t probe_fake(const liveness_t *l, void *arg)
{
    probe_fake_t *p = arg;
    (void)l;
    p->asked++;
    return p->quiet;
}

int liveness_selftest(void)
{
    liveness_hop_t h = {"selftest: ", "the loop", 2000, 200, 100, 0, 0};
    liveness_t l = {0};
    probe_fake_t p = {-1, 0};
    const int64_t t0 = 1000000;

    /* Heard and sent at t0: fine until a heartbeat is due at t0 + hb. */
    liveness_heard(&l, t0);
    l.last_sent = t0;
    liveness_conn(&l, 7, 3);
    CHECK(l.fd == 7 && l.fd_gen == 3);
    CHECK(liveness_judge(&h, &l, t0 + 199, 0, probe_fake, &p, "h", 1) == LIVENESS_FINE);
    CHECK(liveness_judge(&h, &l, t0 + 200, 0, probe_fake, &p, "h", 1) == LIVENESS_HEARTBEAT);
    CHECK(liveness_judge(&h, &l, t0 + 1, 1, probe_fake, &p, "h", 1) == LIVENESS_HEARTBEAT);
    /* Silent for exactly the timeout: not yet lost, and nothing probed. */
    CHECK(liveness_judge(&h, &l, t0 + 2000, 0, probe_fake, &p, "h", 1) == LIVENESS_HEARTBEAT);
    CHECK(p.asked == 0);
    /* Past it, with no connection to ask: lost. */
    CHECK(liveness_judge(&h, &l, t0 + 2001, 0, probe_fake, &p, "h", 1) == LIVENESS_LOST);
    CHECK(p.asked == 1);
    /* ...but alive while its connection brings bytes (quiet up to the
     * timeout), with one line a minute at most. */
    p.quiet = 0;
    CHECK(liveness_judge(&h, &l, t0 + 5000, 0, probe_fake, &p, "h", 1) == LIVENESS_HEARTBEAT);
    CHECK(h.busy_logged_at == t0 + 5000);
    p.quiet = 2000;
    CHECK(liveness_judge(&h, &l, t0 + 6000, 0, probe_fake, &p, "h", 1) == LIVENESS_HEARTBEAT);
    CHECK(h.busy_logged_at == t0 + 5000);
    p.quiet = 2001;
    CHECK(liveness_judge(&h, &l, t0 + 6000, 0, probe_fake, &p, "h", 1) == LIVENESS_LOST);
    /* (the next line once a full LIVENESS_BUSY_LOG_MS has passed) */
    p.quiet = 0;
    liveness_judge(&h, &l, t0 + 4999 + LIVENESS_BUSY_LOG_MS, 0, probe_fake, &p, "h", 1);
    CHECK(h.busy_logged_at == t0 + 5000);
    liveness_judge(&h, &l, t0 + 5000 + LIVENESS_BUSY_LOG_MS, 0, probe_fake, &p, "h", 1);
    CHECK(h.busy_logged_at == t0 + 5000 + LIVENESS_BUSY_LOG_MS);
    /* A busy TM whose heartbeat is not due yet is fine. */
    l.last_sent = t0 + 5900;
    p.quiet = 10;
    CHECK(liveness_judge(&h, &l, t0 + 6000, 0, probe_fake, &p, "h", 1) == LIVENESS_FINE);
    /* The loop stalled: a pause under max(timeout/2, 4 ticks) is none... */
    p.quiet = -1;
    CHECK(liveness_stall(&h, t0, t0 + 999) == 0 && h.heard_floor == 0);
    h.timeout_ms = 400;   /* (4 ticks are more than half of it) */
    CHECK(liveness_stall(&h, t0, t0 + 399) == 0 && h.heard_floor == 0);
    /* ...on either side of where the two cross... */
    h.timeout_ms = 900;
    CHECK(liveness_stall(&h, t0, t0 + 449) == 0 && h.heard_floor == 0);
    h.timeout_ms = 700;
    CHECK(liveness_stall(&h, t0, t0 + 399) == 0 && h.heard_floor == 0);
    h.timeout_ms = 900;
    CHECK(liveness_stall(&h, t0, t0 + 450) == 1 && h.heard_floor == t0 + 450);
    h.timeout_ms = 400;
    /* ...and one of exactly that is one. */
    CHECK(liveness_stall(&h, t0, t0 + 400) == 1 && h.heard_floor == t0 + 400);
    h.timeout_ms = 2000;
    CHECK(liveness_stall(&h, t0, t0 + 1000) == 1 && h.heard_floor == t0 + 1000);
    h.heard_floor = 0;
    /* ...one is: silence counts from its end, a full timeout. */
    CHECK(liveness_stall(&h, t0 + 1000, t0 + 10000) == 1 && h.heard_floor == t0 + 10000);
    CHECK(liveness_judge(&h, &l, t0 + 12000, 0, probe_fake, &p, "h", 1) == LIVENESS_HEARTBEAT);
    CHECK(liveness_judge(&h, &l, t0 + 12001, 0, probe_fake, &p, "h", 1) == LIVENESS_LOST);
    /* A TM heard after the stall counts from its own message. */
    liveness_heard(&l, t0 + 11000);
    CHECK(liveness_judge(&h, &l, t0 + 13000, 0, probe_fake, &p, "h", 1) != LIVENESS_LOST);
    CHECK(liveness_judge(&h, &l, t0 + 13001, 0, probe_fake, &p, "h", 1) == LIVENESS_LOST);
    /* Quiet past 3 heartbeat periods (600 ms) from its message or the
     * stall's end, whichever is later, unless its connection brings
     * bytes; the probe asked only then. */
    p.asked = 0;
    CHECK(!liveness_quiet(&h, &l, t0 + 11600, probe_fake, &p) && p.asked == 0);
    CHECK(liveness_quiet(&h, &l, t0 + 11601, probe_fake, &p) && p.asked == 1);
    p.quiet = 0;
    CHECK(!liveness_quiet(&h, &l, t0 + 11601, probe_fake, &p));
    p.quiet = 600;
    CHECK(!liveness_quiet(&h, &l, t0 + 11601, probe_fake, &p));
    p.quiet = 601;
    CHECK(liveness_quiet(&h, &l, t0 + 11601, probe_fake, &p));
    h.heard_floor = t0 + 11500;
    CHECK(!liveness_quiet(&h, &l, t0 + 12100, probe_fake, &p) &&
          liveness_quiet(&h, &l, t0 + 12101, probe_fake, &p));
    return 0;
}

#endif /* SPITS_SELFTEST */
