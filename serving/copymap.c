/*
 * copymap.c - the paths of a relay's copy map (see copymap.h) that
 * entries with tombs take, and its self-test: the per-task ones are
 * inline in the header.
 */
#include <assert.h>

#include "copymap.h"

int copymap_hold_mapped(spits_idmap_t *m, uint64_t id, void *task, void **held)
{
    int tombs = 0;
    void *cur = NULL;
    int mapped = spits_idmap_get(m, id, &tombs, &cur);
    assert(mapped);   /* (copymap_hold's add found it) */
    (void)mapped;
    if (cur) {
        *held = cur;
        return 1;
    }
    return spits_idmap_put(m, id, tombs, task);
}

void copymap_release_tombs(spits_idmap_t *m, uint64_t id, void *task)
{
    int tombs;
    void *held;
    if (spits_idmap_get(m, id, &tombs, &held) && held == task)
        spits_idmap_put(m, id, tombs, NULL);   /* (to a smaller entry: no memory) */
}

int copymap_tomb(spits_idmap_t *m, uint64_t id)
{
    int tombs = 0;
    void *task = NULL;
    spits_idmap_get(m, id, &tombs, &task);
    return spits_idmap_put(m, id, tombs + 1, task);
}

int copymap_swallow(spits_idmap_t *m, uint64_t id)
{
    int tombs;
    void *task;
    if (!spits_idmap_get(m, id, &tombs, &task) || tombs == 0)
        return 0;
    if (tombs > 1 || task)
        spits_idmap_put(m, id, tombs - 1, task);
    else
        spits_idmap_del(m, id);
    return 1;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "copymap: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

/* id's entry is (tombs, task), or absent (tombs -1). */
static int cm_is(const spits_idmap_t *m, uint64_t id, int tombs, const void *task)
{
    int t;
    void *v;
    if (!spits_idmap_get(m, id, &t, &v))
        return tombs < 0;
    return t == tombs && v == task;
}

int copymap_selftest(void)
{
    spits_idmap_t *m = spits_idmap_new();
    int a, b, c;
    void *held = NULL;
    CHECK(m);

    /* A task held, found, held again (a repeat: unchanged), released. */
    CHECK(copymap_hold(m, 5, &a, &held) == 0 && copymap_task(m, 5) == &a);
    CHECK(copymap_hold(m, 5, &b, &held) == 1 && held == &a && cm_is(m, 5, 0, &a));
    copymap_release(m, 5, &a);
    CHECK(cm_is(m, 5, -1, NULL) && copymap_task(m, 5) == NULL);
    /* ...a record of an id with no tombs is nobody's to drop. */
    CHECK(copymap_swallow(m, 5) == 0 && copymap_swallow(m, 6) == 0);

    /* Two copies of a held task told to cancel: the task stays found
     * until released, the tombs after it; each record drops one. */
    CHECK(copymap_hold(m, 7, &a, &held) == 0);
    CHECK(copymap_tomb(m, 7) == 0 && copymap_tomb(m, 7) == 0 && cm_is(m, 7, 2, &a));
    CHECK(copymap_task(m, 7) == &a);
    copymap_release(m, 7, &a);
    CHECK(cm_is(m, 7, 2, NULL) && copymap_task(m, 7) == NULL);
    CHECK(copymap_swallow(m, 7) == 1 && cm_is(m, 7, 1, NULL));

    /* Upstream sends the task again while a tomb lasts: held, the tomb
     * kept beside it; a record dropped keeps the task. */
    CHECK(copymap_hold(m, 7, &b, &held) == 0 && cm_is(m, 7, 1, &b));
    CHECK(copymap_swallow(m, 7) == 1 && cm_is(m, 7, 0, &b));
    CHECK(copymap_swallow(m, 7) == 0 && copymap_task(m, 7) == &b);
    /* ...its release, with no tombs left, is the one probe's. */
    copymap_release(m, 7, &b);
    CHECK(cm_is(m, 7, -1, NULL));

    /* A tomb for a task held again, then the task released: the tomb
     * stays, alone; its record, the last, removes the entry. */
    CHECK(copymap_hold(m, 8, &a, &held) == 0 && copymap_tomb(m, 8) == 0);
    CHECK(copymap_hold(m, 8, &b, &held) == 1 && held == &a);
    copymap_release(m, 8, &a);
    CHECK(copymap_hold(m, 8, &b, &held) == 0 && cm_is(m, 8, 1, &b));
    copymap_release(m, 8, &b);
    CHECK(cm_is(m, 8, 1, NULL));
    CHECK(copymap_swallow(m, 8) == 1 && cm_is(m, 8, -1, NULL));

    /* Releasing a task not held for its id leaves the one held, with and
     * without tombs. */
    CHECK(copymap_hold(m, 9, &b, &held) == 0);
    copymap_release(m, 9, &a);
    CHECK(cm_is(m, 9, 0, &b));
    CHECK(copymap_tomb(m, 9) == 0 && cm_is(m, 9, 1, &b));
    copymap_release(m, 9, &b);
    CHECK(copymap_hold(m, 9, &c, &held) == 0);
    copymap_release(m, 9, &b);
    CHECK(cm_is(m, 9, 1, &c));
    CHECK(copymap_hold(m, 10, &a, &held) == 0 && cm_is(m, 10, 0, &a));
    /* ...releasing an id never mapped changes nothing; a tomb of one
     * is a tomb alone. */
    copymap_release(m, 11, &a);
    CHECK(cm_is(m, 11, -1, NULL) && spits_idmap_count(m) == 2);
    CHECK(copymap_tomb(m, 12) == 0 && cm_is(m, 12, 1, NULL));
    CHECK(copymap_swallow(m, 12) == 1 && cm_is(m, 12, -1, NULL));

    /* Ids far below the window take the table's paths alike. */
    for (uint64_t id = 100000; id < 100000 + 70000; id++)
        CHECK(copymap_hold(m, id, &a, &held) == 0);
    CHECK(copymap_tomb(m, 9) == 0 && cm_is(m, 9, 2, &c) && copymap_swallow(m, 9) == 1);
    copymap_release(m, 9, &c);
    CHECK(cm_is(m, 9, 1, NULL) && copymap_swallow(m, 9) == 1 && cm_is(m, 9, -1, NULL));
    spits_idmap_destroy(&m);
    return 0;
fail:
    spits_idmap_destroy(&m);
    return -1;
}
#endif
