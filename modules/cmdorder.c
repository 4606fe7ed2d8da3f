/*
 * cmdorder.c - the --keep-order buffer of the command module (see
 * cmdorder.h). Built into cmd.so.
 */
#include <stdlib.h>
#include <string.h>

#include "cmdorder.h"

/* Room for index: the ring doubles until it spans next..index. */
static int cmdorder_grow(cmdorder_t *o, uint64_t index)
{
    size_t cap = o->cap ? o->cap : 64;
    while (index - o->next >= cap)
        cap *= 2;
    if (cap == o->cap)
        return 0;
    void **slot = calloc(cap, sizeof *slot);
    size_t *len = calloc(cap, sizeof *len);
    if (!slot || !len) {
        free(slot);
        free(len);
        return -1;
    }
    for (size_t i = 0; i < o->cap; i++) {
        uint64_t at = o->next + i;
        slot[at & (cap - 1)] = o->slot[at & (o->cap - 1)];
        len[at & (cap - 1)] = o->len[at & (o->cap - 1)];
    }
    free(o->slot);
    free(o->len);
    o->slot = slot;
    o->len = len;
    o->cap = cap;
    return 0;
}

int cmdorder_put(cmdorder_t *o, uint64_t index, void *p, size_t len)
{
    if (index < o->next)
        return 1;
    if ((index - o->next >= o->cap) && cmdorder_grow(o, index) != 0)
        return -1;
    size_t at = (size_t)(index & (o->cap - 1));
    if (o->slot[at])
        return 1;
    o->slot[at] = p;
    o->len[at] = len;
    o->held++;
    return 0;
}

void *cmdorder_take(cmdorder_t *o, int gaps, size_t *len)
{
    if (!o->held)
        return NULL;
    for (;;) {
        size_t at = (size_t)(o->next & (o->cap - 1));
        void *p = o->slot[at];
        if (!p && !gaps)
            return NULL;
        o->next++;
        if (p) {
            o->slot[at] = NULL;
            o->held--;
            *len = o->len[at];
            return p;
        }
    }
}

void cmdorder_clear(cmdorder_t *o, void (*free_fn)(void *))
{
    for (size_t i = 0; i < o->cap; i++)
        if (o->slot[i] && free_fn)
            free_fn(o->slot[i]);
    free(o->slot);
    free(o->len);
    memset(o, 0, sizeof *o);
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "cmdorder: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

/* Indices 0..N-1 put in a scrambled order (a spread up to 1000) come
 * out in order, each once; a gap is stepped over only when asked. */
int cmdorder_selftest(void)
{
    enum { N = 20000, SPREAD = 1000 };
    static char items[N];
    cmdorder_t o;
    size_t len, out = 0;
    uint64_t x = 88172645463325252ull;
    memset(&o, 0, sizeof o);
    for (uint64_t base = 0; base < N; base += SPREAD) {
        uint64_t perm[SPREAD];
        for (size_t i = 0; i < SPREAD; i++)
            perm[i] = base + i;
        for (size_t i = SPREAD - 1; i > 0; i--) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t j = (size_t)(x % (i + 1));
            uint64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (size_t i = 0; i < SPREAD; i++) {
            CHECK(cmdorder_put(&o, perm[i], &items[perm[i]], (size_t)perm[i]) == 0);
            CHECK(cmdorder_put(&o, perm[i], &items[perm[i]], 0) == 1);
            char *p;
            while ((p = cmdorder_take(&o, 0, &len))) {
                CHECK(p == &items[out] && len == out);
                out++;
            }
        }
    }
    CHECK(out == N && o.held == 0 && o.cap <= 2 * SPREAD);
    CHECK(cmdorder_put(&o, 5, &items[5], 5) == 1);          /* handed out */
    CHECK(cmdorder_put(&o, N + 3, &items[3], 3) == 0);
    CHECK(cmdorder_put(&o, N + 1, &items[1], 1) == 0);
    CHECK(cmdorder_take(&o, 0, &len) == NULL);
    CHECK(cmdorder_take(&o, 1, &len) == &items[1] && len == 1);
    CHECK(cmdorder_take(&o, 1, &len) == &items[3] && len == 3);
    CHECK(cmdorder_take(&o, 1, &len) == NULL && o.next == N + 4);
    cmdorder_clear(&o, NULL);
    return 0;
fail:
    cmdorder_clear(&o, NULL);
    return -1;
}
#endif
