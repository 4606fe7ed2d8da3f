/*
 * conngen.c - generations of file descriptor numbers (see conngen.h; the
 * JM's dispatcher and a relay each keep one for their ROUTER socket).
 *
 * An array indexed by descriptor, grown (doubling) when a larger one is
 * closed; descriptors are small numbers below RLIMIT_NOFILE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conngen.h"

struct conngen {
    uint32_t *gen;
    size_t cap;
    int broken;      /* a close could not be recorded: trust nothing */
};

conngen_t *conngen_new(void)
{
    return calloc(1, sizeof(conngen_t));
}

void conngen_destroy(conngen_t **gp)
{
    if (!*gp)
        return;
    free((*gp)->gen);
    free(*gp);
    *gp = NULL;
}

uint32_t conngen_of(const conngen_t *g, int fd)
{
    return fd >= 0 && (size_t)fd < g->cap ? g->gen[fd] : 0;
}

int conngen_closed(conngen_t *g, int fd)
{
    if (fd < 0)
        return 0;
    if ((size_t)fd >= g->cap) {
        size_t cap = g->cap ? g->cap : 64;
        while (cap <= (size_t)fd)
            cap *= 2;
        uint32_t *gen = realloc(g->gen, cap * sizeof *gen);
        if (!gen) {
            g->broken = 1;
            return -1;
        }
        memset(gen + g->cap, 0, (cap - g->cap) * sizeof *gen);
        g->gen = gen;
        g->cap = cap;
    }
    g->gen[fd]++;
    return 0;
}

int conngen_same(const conngen_t *g, int fd, uint32_t gen)
{
    return fd >= 0 && !g->broken && conngen_of(g, fd) == gen;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "conngen selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); goto out; } } while (0)

int conngen_selftest(void)
{
    conngen_t *g = conngen_new();
    int ok = 0;

    CHECK(g);
    /* A TM's message on fd 7: recorded with its generation. */
    uint32_t a = conngen_of(g, 7);
    CHECK(a == 0 && conngen_same(g, 7, a));
    CHECK(!conngen_same(g, -1, 0));               /* no connection */
    /* fd 7 closes; the number comes back for another connection. */
    CHECK(conngen_closed(g, 7) == 0);
    CHECK(!conngen_same(g, 7, a));
    uint32_t b = conngen_of(g, 7);
    CHECK(b == a + 1 && conngen_same(g, 7, b));
    /* Other numbers are not touched, however large. */
    CHECK(conngen_same(g, 8, 0));
    CHECK(conngen_closed(g, 100000) == 0);
    CHECK(conngen_same(g, 7, b) && conngen_same(g, 99999, 0));
    CHECK(!conngen_same(g, 100000, 0) && conngen_same(g, 100000, 1));
    CHECK(conngen_closed(g, -3) == 0);
    ok = 1;
out:
    conngen_destroy(&g);
    return ok ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
