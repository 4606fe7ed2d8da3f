/*
 * adopt.c - results that arrive before their task was sent (see adopt.h).
 *
 * A spits_hashtab_t (hashtab.h) keyed by SipHash: the ids are the ones
 * re-attaching TMs send, so none can pile its results into one probe run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "hashtab.h"

typedef struct {
    uint64_t hash;             /* (the table's) */
    uint64_t id;
    unsigned char *data;
    uint32_t len;
} slot_t;

/* What one kept result costs beyond its bytes: the slots the table may
 * hold for it. Counted in the byte bound, so that empty results are
 * bounded in number too. */
#define ADOPT_ENTRY_BYTES (SPITS_HASHTAB_SLOTS_PER_ENTRY * sizeof(slot_t))

struct jm_adopt {
    spits_hashtab_t t;
    size_t bytes, max_bytes;
};

jm_adopt_t *jm_adopt_new(size_t max_bytes)
{
    jm_adopt_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->max_bytes = max_bytes;
    if (spits_hashtab_init(&a->t, sizeof(slot_t), SPITS_HASHTAB_SIPHASH) != 0) {
        free(a);
        return NULL;
    }
    return a;
}

void jm_adopt_destroy(jm_adopt_t **ap)
{
    jm_adopt_t *a = *ap;
    if (!a)
        return;
    size_t i = 0;
    slot_t *s;
    while ((s = spits_hashtab_next(&a->t, &i)) != NULL)
        free(s->data);
    spits_hashtab_free(&a->t);
    free(a);
    *ap = NULL;
}

/* The slot of id (hash h), or NULL. */
static slot_t *find(const jm_adopt_t *a, uint64_t id, uint64_t h)
{
    size_t i = spits_hashtab_home(&a->t, h);
    slot_t *s;
    while ((s = spits_hashtab_probe(&a->t, h, &i)) && s->id != id)
        ;
    return s;
}

int jm_adopt_put(jm_adopt_t *a, uint64_t id, const void *data, uint32_t len)
{
    uint64_t h = spits_hashtab_hash_id(&a->t, id);
    if (a->bytes + len + ADOPT_ENTRY_BYTES > a->max_bytes || find(a, id, h))
        return 1;
    unsigned char *copy = NULL;
    if (len && !(copy = malloc(len)))
        return -1;
    if (len)
        memcpy(copy, data, len);
    slot_t *s = spits_hashtab_insert(&a->t, h);
    if (!s) {
        free(copy);
        return -1;
    }
    s->id = id;
    s->data = copy;
    s->len = len;
    a->bytes += len + ADOPT_ENTRY_BYTES;
    return 0;
}

int jm_adopt_take(jm_adopt_t *a, uint64_t id, unsigned char **data,
                  uint32_t *len)
{
    slot_t *s = jm_adopt_count(a) ? find(a, id, spits_hashtab_hash_id(&a->t, id)) : NULL;
    if (!s)
        return 0;
    *data = s->data;
    *len = s->len;
    a->bytes -= s->len + ADOPT_ENTRY_BYTES;
    spits_hashtab_remove(&a->t, s);
    return 1;
}

size_t jm_adopt_count(const jm_adopt_t *a)
{
    return spits_hashtab_count(&a->t);
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "adopt selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); goto out; } } while (0)

int jm_adopt_selftest(void)
{
    jm_adopt_t *a = jm_adopt_new(1 << 20);
    unsigned char *d;
    uint32_t len;
    int ok = 0;

    CHECK(a);
    /* Many ids, so the table grows and probe runs wrap around. */
    for (uint64_t id = 0; id < 5000; id++)
        CHECK(jm_adopt_put(a, id * 7919, &id, sizeof id) == 0);
    CHECK(jm_adopt_put(a, 7919, "x", 1) == 1);          /* held already */
    CHECK(jm_adopt_count(a) == 5000);
    /* Take every other one, then check the rest are all still found. */
    for (uint64_t id = 0; id < 5000; id += 2) {
        CHECK(jm_adopt_take(a, id * 7919, &d, &len) == 1);
        CHECK(len == sizeof id && memcmp(d, &id, sizeof id) == 0);
        free(d);
    }
    CHECK(jm_adopt_take(a, 0, &d, &len) == 0);
    for (uint64_t id = 1; id < 5000; id += 2) {
        CHECK(jm_adopt_take(a, id * 7919, &d, &len) == 1);
        CHECK(len == sizeof id && memcmp(d, &id, sizeof id) == 0);
        free(d);
    }
    CHECK(jm_adopt_count(a) == 0);
    /* The byte bound, each entry's slot counted. */
    jm_adopt_destroy(&a);
    CHECK((a = jm_adopt_new(10 + 2 * ADOPT_ENTRY_BYTES)) != NULL);
    CHECK(jm_adopt_put(a, 1, "0123456789", 10) == 0);
    CHECK(jm_adopt_put(a, 2, "z", 1) == 1);
    CHECK(jm_adopt_put(a, 3, NULL, 0) == 0);
    CHECK(jm_adopt_put(a, 4, NULL, 0) == 1);              /* full */
    CHECK(jm_adopt_take(a, 3, &d, &len) == 1 && d == NULL && len == 0);
    CHECK(jm_adopt_put(a, 4, NULL, 0) == 0);              /* room again */
    /* Empty results are bounded in number: 1 MiB holds at most
     * 1 MiB / ADOPT_ENTRY_BYTES of them. */
    jm_adopt_destroy(&a);
    CHECK((a = jm_adopt_new(1 << 20)) != NULL);
    size_t kept = 0;
    for (uint64_t id = 0; id < (1 << 20); id++)
        if (jm_adopt_put(a, id, NULL, 0) == 0)
            kept++;
    CHECK(kept == (1 << 20) / ADOPT_ENTRY_BYTES);
    CHECK(jm_adopt_count(a) == kept);
    ok = 1;
out:
    jm_adopt_destroy(&a);
    return ok ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
