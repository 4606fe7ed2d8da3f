/*
 * behind.c - a relay's STATS "behind" (see behind.h): written by the
 * relay, checked and rebuilt by the JM.
 */
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "behind.h"
#include "escape.h"
#include "wire.h"

json_t *spits_behind_new(uint64_t alive, uint64_t joins, uint64_t leaves, uint64_t losses)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:[]}", "alive", (json_int_t)alive,
                     "joins", (json_int_t)joins, "leaves", (json_int_t)leaves,
                     "losses", (json_int_t)losses, "tms");
}

int spits_behind_add(json_t *behind, const spits_behind_tm_t *t, size_t *res_bytes)
{
    json_t *list = json_object_get(behind, "tms");
    if (json_array_size(list) >= SPITS_BEHIND_LISTED)
        return 0;
    json_t *e = json_pack("{s:s, s:I, s:i, s:I}", "host", t->host, "pid", (json_int_t)t->pid,
                          "workers", t->workers, "runs", (json_int_t)t->runs);
    if (e && t->relay)
        json_object_set_new(e, "relay", json_true());
    /* (a later one's does not go in once the budget is spent) */
    if (e && t->worker_res &&
        (*res_bytes += t->worker_res_bytes) <= SPITS_BEHIND_RES_BYTES)
        json_object_set(e, "worker_res", t->worker_res);
    return json_array_append_new(list, e) == 0;
}

/* One TM of a peer's list, checked, as the reader keeps it (a new
 * reference), or NULL with *why. */
static json_t *spits_behind_tm(const json_t *v, const char **why)
{
    const char *host = json_string_value(json_object_get(v, "host"));
    json_t *relay = json_object_get(v, "relay"), *res = json_object_get(v, "worker_res");
    long pid, workers, runs;
    char h[SPITS_BEHIND_HOST];

    *why = "a TM behind it with a bad host, pid, workers, runs or relay";
    if (!host || spits_json_long(v, "pid", 0, 1L << 40, &pid) ||
        spits_json_long(v, "workers", 0, SPITS_WORKERS_MAX, &workers) ||
        spits_json_long(v, "runs", 0, LONG_MAX, &runs) || (relay && !json_is_boolean(relay)))
        return NULL;
    if (res && spits_worker_res_check(res, workers, why) != 0)
        return NULL;
    json_t *o = json_pack("{s:s, s:I, s:i, s:I}", "host", spits_escape(h, sizeof h, host),
                          "pid", (json_int_t)pid, "workers", (int)workers,
                          "runs", (json_int_t)runs);
    if (o && json_is_true(relay))
        json_object_set_new(o, "relay", json_true());
    if (o && res)
        json_object_set_new(o, "worker_res", spits_worker_res_copy(res));
    if (!o)
        *why = "no memory";
    return o;
}

int spits_behind_parse(const json_t *v, json_t **out, const char **why)
{
    long alive, joins, leaves, losses;
    json_t *list = json_object_get(v, "tms"), *tms;

    *out = NULL;
    if (!v)
        return 0;
    *why = "a bad alive, joins, leaves, losses or tms";
    if (!json_is_object(v) || spits_json_long(v, "alive", 0, 1L << 40, &alive) ||
        spits_json_long(v, "joins", 0, LONG_MAX, &joins) ||
        spits_json_long(v, "leaves", 0, LONG_MAX, &leaves) ||
        spits_json_long(v, "losses", 0, LONG_MAX, &losses) || !json_is_array(list) ||
        !(tms = json_array()))
        return -1;
    /* (each is checked, the ones past the cut too: the frame bounds them) */
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *o = spits_behind_tm(json_array_get(list, i), why);
        if (!o) {
            json_decref(tms);
            return -1;
        }
        if (json_array_size(tms) < SPITS_BEHIND_LISTED)
            json_array_append_new(tms, o);
        else
            json_decref(o);
    }
    *out = json_pack("{s:I, s:I, s:I, s:I, s:o, s:b}", "alive", (json_int_t)alive,
                     "joins", (json_int_t)joins, "leaves", (json_int_t)leaves,
                     "losses", (json_int_t)losses, "tms", tms,
                     "truncated", json_array_size(list) > SPITS_BEHIND_LISTED);
    *why = "no memory";
    return *out ? 0 : -1;
}

#ifdef SPITS_SELFTEST
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "behind selftest: failed " \
    "at line %d: %s\n", __LINE__, #c); goto out; } } while (0)

/* Whether the JSON text of j is want (keys sorted, compact). */
static int st_is(const json_t *j, const char *want)
{
    char *got = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    int ok = got && strcmp(got, want) == 0;
    if (!ok)
        fprintf(stderr, "behind selftest: got %s\n  want %s\n", got ? got : "(null)", want);
    free(got);
    return ok;
}

/* v's "tms" entry k with field key set to val (a JSON text), parsed. */
static int st_bad_field(const json_t *v, size_t k, const char *key, const char *val)
{
    json_t *c = json_deep_copy(v), *out = (json_t *)1;
    const char *why = NULL;
    json_t *e = json_array_get(json_object_get(c, "tms"), k);
    json_object_set_new(e, key, json_loads(val, JSON_DECODE_ANY, NULL));
    int rc = spits_behind_parse(c, &out, &why);
    json_decref(c);
    return rc == -1 && out == NULL && why != NULL;
}

int spits_behind_selftest(void)
{
    json_t *b = NULL, *out = NULL, *res = NULL, *c = NULL;
    const char *why = NULL;
    size_t bytes = 0;
    int rc = -1;

    /* Written: the counts, then each TM, a relay flagged, worker_res
     * while its budget lasts. */
    res = json_pack("[{s:s}]", "cpus", "0-1");
    CHECK(res && (b = spits_behind_new(3, 5, 1, 2)));
    spits_behind_tm_t t = {"n1", 11, 2, 7, 0, res, SPITS_BEHIND_RES_BYTES};
    CHECK(spits_behind_add(b, &t, &bytes) == 1 && bytes == SPITS_BEHIND_RES_BYTES);
    t = (spits_behind_tm_t){"r\n", 12, 4096, 0, 1, res, 1};
    CHECK(spits_behind_add(b, &t, &bytes) == 1);   /* (over budget: no worker_res) */
    CHECK(st_is(b, "{\"alive\":3,\"joins\":5,\"leaves\":1,\"losses\":2,\"tms\":["
                   "{\"host\":\"n1\",\"pid\":11,\"runs\":7,\"worker_res\":[{\"cpus\":\"0-1\"}],"
                   "\"workers\":2},"
                   "{\"host\":\"r\\n\",\"pid\":12,\"relay\":true,\"runs\":0,\"workers\":4096}]}"));
    /* Read back: the same, its host escaped, not truncated. */
    CHECK(spits_behind_parse(b, &out, &why) == 0 && out);
    CHECK(st_is(out, "{\"alive\":3,\"joins\":5,\"leaves\":1,\"losses\":2,\"tms\":["
                     "{\"host\":\"n1\",\"pid\":11,\"runs\":7,\"worker_res\":[{\"cpus\":\"0-1\"}],"
                     "\"workers\":2},"
                     "{\"host\":\"r\\\\x0a\",\"pid\":12,\"relay\":true,\"runs\":0,"
                     "\"workers\":4096}],\"truncated\":false}"));
    json_decref(out);
    out = NULL;
    /* Absent: nothing, and no error. */
    CHECK(spits_behind_parse(NULL, &out, &why) == 0 && out == NULL);

    /* Each bad field refuses the whole of it. */
    CHECK(st_bad_field(b, 0, "pid", "-1") && st_bad_field(b, 0, "pid", "1099511627777"));
    CHECK(st_bad_field(b, 1, "workers", "1048577") && st_bad_field(b, 0, "workers", "-1"));
    CHECK(st_bad_field(b, 0, "runs", "-1") && st_bad_field(b, 0, "host", "7"));
    CHECK(st_bad_field(b, 1, "relay", "\"yes\"") && st_bad_field(b, 0, "runs", "1.5"));
    CHECK(st_bad_field(b, 0, "worker_res", "[{\"cpus\":\"x\"}]"));
    CHECK(st_bad_field(b, 0, "worker_res", "[{}, {}, {}]"));   /* (more than its workers) */
    c = json_deep_copy(b);
    json_array_append_new(json_object_get(c, "tms"), json_integer(1));
    CHECK(spits_behind_parse(c, &out, &why) == -1 && !out && why);
    json_decref(c);
    const char *counts[] = {"alive", "joins", "leaves", "losses"};
    for (size_t k = 0; k < 4; k++) {
        c = json_deep_copy(b);
        json_object_set_new(c, counts[k], json_integer(-1));
        CHECK(spits_behind_parse(c, &out, &why) == -1 && !out);
        json_object_del(c, counts[k]);
        CHECK(spits_behind_parse(c, &out, &why) == -1 && !out);
        json_decref(c);
    }
    c = json_deep_copy(b);
    json_object_set_new(c, "alive", json_integer(1L << 40));
    CHECK(spits_behind_parse(c, &out, &why) == 0 && out);
    json_decref(out);
    json_object_set_new(c, "alive", json_integer((1L << 40) + 1));
    CHECK(spits_behind_parse(c, &out, &why) == -1 && !out);
    json_object_set_new(c, "alive", json_integer(1));
    json_object_set_new(c, "tms", json_object());
    CHECK(spits_behind_parse(c, &out, &why) == -1 && !out);
    json_decref(c);
    c = json_array();
    CHECK(spits_behind_parse(c, &out, &why) == -1 && !out);
    json_decref(c);
    c = NULL;

    /* The writer lists SPITS_BEHIND_LISTED; the reader cuts there and
     * says so, every entry checked still. */
    json_decref(b);
    b = spits_behind_new(100, 100, 0, 0);
    bytes = 0;
    t = (spits_behind_tm_t){"h", 1, 1, 1, 0, NULL, 0};
    for (int k = 0; k < SPITS_BEHIND_LISTED; k++)
        CHECK(spits_behind_add(b, &t, &bytes) == 1);
    CHECK(spits_behind_add(b, &t, &bytes) == 0 && bytes == 0);
    CHECK(json_array_size(json_object_get(b, "tms")) == SPITS_BEHIND_LISTED);
    CHECK(spits_behind_parse(b, &out, &why) == 0 &&
          json_is_false(json_object_get(out, "truncated")));
    json_decref(out);
    json_array_append_new(json_object_get(b, "tms"),
                          json_pack("{s:s, s:i, s:i, s:i}", "host", "z", "pid", 2,
                                    "workers", 1, "runs", 0));
    CHECK(spits_behind_parse(b, &out, &why) == 0 &&
          json_is_true(json_object_get(out, "truncated")) &&
          json_array_size(json_object_get(out, "tms")) == SPITS_BEHIND_LISTED);
    json_decref(out);
    out = NULL;
    CHECK(st_bad_field(b, SPITS_BEHIND_LISTED, "pid", "-5"));
    rc = 0;
out:
    json_decref(b);
    json_decref(out);
    json_decref(res);
    json_decref(c);
    return rc;
}
#endif /* SPITS_SELFTEST */
