/*
 * hopchain.c - loops of relays (see hopchain.h): a HELLO's "relay"
 * object checked against this relay's id, the relays heard lately, and
 * the "below" list of this relay's own HELLO.
 */
#include <stdio.h>
#include <string.h>

#include "hopchain.h"

/* Notes id as heard now; the oldest note makes room. */
static void hopchain_heard(hopchain_t *c, const char *id, int64_t now)
{
    hopchain_heard_t *slot = &c->heard[0];
    for (int k = 0; k < HOPCHAIN_BELOW_MAX; k++) {
        if (strcmp(c->heard[k].id, id) == 0) {
            slot = &c->heard[k];
            break;
        }
        if (c->heard[k].at < slot->at)
            slot = &c->heard[k];
    }
    snprintf(slot->id, sizeof slot->id, "%s", id);
    slot->at = now;
}

hopchain_verdict_t hopchain_check(hopchain_t *c, const char *me, const json_t *relay,
                                  int has_job, int64_t now, hopchain_place_t *place)
{
    const char *id = json_string_value(json_object_get(relay, "id"));
    json_t *list = json_object_get(relay, "below");
    int loop = 0;

    place->nbelow = 0;
    place->id[0] = 0;
    if (!id || strlen(id) >= HOPCHAIN_ID_MAX || (list && !json_is_array(list)))
        return HOPCHAIN_BAD;
    snprintf(place->id, sizeof place->id, "%s", id);
    if (strcmp(id, me) == 0)
        return HOPCHAIN_SELF;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *b = json_string_value(json_array_get(list, i));
        if (!b || strlen(b) >= HOPCHAIN_ID_MAX)
            continue;
        loop |= strcmp(b, me) == 0;
        if (place->nbelow < HOPCHAIN_BELOW_MAX)
            snprintf(place->below[place->nbelow++], HOPCHAIN_ID_MAX, "%s", b);
    }
    if (!loop) {
        hopchain_heard(c, id, now);
        for (int k = 0; k < place->nbelow; k++)
            hopchain_heard(c, place->below[k], now);
        return HOPCHAIN_OK;
    }
    if (!c->loop_since)
        c->loop_since = now;
    return !has_job && now - c->loop_since >= HOPCHAIN_FATAL_MS ? HOPCHAIN_FATAL
                                                                 : HOPCHAIN_LOOP;
}

void hopchain_job(hopchain_t *c)
{
    c->loop_since = 0;
}

int hopchain_list_place(json_t *list, const hopchain_place_t *p)
{
    if (json_array_size(list) < HOPCHAIN_BELOW_MAX)
        json_array_append_new(list, json_string(p->id));
    for (int k = 0; k < p->nbelow && json_array_size(list) < HOPCHAIN_BELOW_MAX; k++)
        json_array_append_new(list, json_string(p->below[k]));
    return json_array_size(list) >= HOPCHAIN_BELOW_MAX;
}

void hopchain_list_heard(const hopchain_t *c, json_t *list, int64_t now)
{
    for (int k = 0; k < HOPCHAIN_BELOW_MAX && json_array_size(list) < HOPCHAIN_BELOW_MAX; k++)
        if (c->heard[k].id[0] && now - c->heard[k].at < HOPCHAIN_HEARD_MS)
            json_array_append_new(list, json_string(c->heard[k].id));
}

#ifdef SPITS_SELFTEST
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "hopchain selftest: failed " \
    "at line %d: %s\n", __LINE__, #c); goto out; } } while (0)

/* The ids of list, joined by spaces, into buf. */
static const char *st_ids(const json_t *list, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(list) && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "",
                               json_string_value(json_array_get(list, i)));
    return buf;
}

int hopchain_selftest(void)
{
    hopchain_t c = {0};
    hopchain_place_t p;
    json_t *r = NULL, *list = NULL;
    char buf[2048], id[64];
    int rc = -1;

    /* Malformed: no id, an id too long, a below that is no array. */
    r = json_pack("{s:i}", "id", 5);
    CHECK(hopchain_check(&c, "me", r, 1, 1000, &p) == HOPCHAIN_BAD && p.nbelow == 0);
    json_decref(r);
    memset(id, 'x', HOPCHAIN_ID_MAX);
    id[HOPCHAIN_ID_MAX] = 0;
    r = json_pack("{s:s}", "id", id);
    CHECK(hopchain_check(&c, "me", r, 1, 1000, &p) == HOPCHAIN_BAD);
    json_decref(r);
    id[HOPCHAIN_ID_MAX - 1] = 0;   /* (the longest that fits) */
    r = json_pack("{s:s, s:s}", "id", id, "below", "b");
    CHECK(hopchain_check(&c, "me", r, 1, 1000, &p) == HOPCHAIN_BAD);
    json_decref(r);
    CHECK(c.heard[0].at == 0 && c.loop_since == 0);   /* (none heard) */

    /* Its own HELLO come back. */
    r = json_pack("{s:s}", "id", "me");
    CHECK(hopchain_check(&c, "me", r, 1, 1000, &p) == HOPCHAIN_SELF &&
          strcmp(p.id, "me") == 0);
    json_decref(r);

    /* No loop: its place (bad below ids skipped), and all of it heard. */
    r = json_pack("{s:s, s:[s, i, s, s]}", "id", id, "below", "b1", 7, "b2", "b3");
    CHECK(hopchain_check(&c, "me", r, 0, 1000, &p) == HOPCHAIN_OK);
    CHECK(strcmp(p.id, id) == 0 && p.nbelow == 3 && strcmp(p.below[0], "b1") == 0 &&
          strcmp(p.below[2], "b3") == 0);
    json_decref(r);
    list = json_array();
    hopchain_list_heard(&c, list, 1000 + HOPCHAIN_HEARD_MS - 1);
    CHECK(json_array_size(list) == 4);
    json_array_clear(list);
    hopchain_list_heard(&c, list, 1000 + HOPCHAIN_HEARD_MS);   /* (all too old) */
    CHECK(json_array_size(list) == 0);

    /* A place listed: its id, then its below. */
    CHECK(hopchain_list_place(list, &p) == 0);
    snprintf(buf, sizeof buf, "%s b1 b2 b3", id);
    char got[2048];
    CHECK(strcmp(st_ids(list, got, sizeof got), buf) == 0);

    /* A place with a stale id past its nbelow lists only its own. */
    snprintf(p.below[3], HOPCHAIN_ID_MAX, "stale");
    json_array_clear(list);
    CHECK(hopchain_list_place(list, &p) == 0 && json_array_size(list) == 4);

    /* A bad one says no place; a below id too long is skipped. */
    r = json_pack("{s:i}", "id", 1);
    CHECK(hopchain_check(&c, "me", r, 0, 1000, &p) == HOPCHAIN_BAD && p.id[0] == 0);
    json_decref(r);
    id[HOPCHAIN_ID_MAX - 1] = 'x';
    r = json_pack("{s:s, s:[s]}", "id", "a", "below", id);
    CHECK(hopchain_check(&c, "me", r, 0, 1000, &p) == HOPCHAIN_OK && p.nbelow == 0);
    json_decref(r);

    /* Heard again: one note per id, refreshed; the oldest makes room,
     * the first of equals first. */
    memset(&c, 0, sizeof c);
    for (int k = 0; k < 4; k++) {
        r = json_pack("{s:s}", "id", k == 0 || k == 3 ? "a" : "b");
        CHECK(hopchain_check(&c, "me", r, 0, 1000 + k, &p) == HOPCHAIN_OK);
        json_decref(r);
    }
    json_array_clear(list);
    hopchain_list_heard(&c, list, 1500);
    CHECK(strcmp(st_ids(list, got, sizeof got), "a b") == 0 && c.heard[0].at == 1003 &&
          c.heard[1].at == 1002);
    for (int k = 0; k < HOPCHAIN_BELOW_MAX; k++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", k);
        r = json_pack("{s:s}", "id", name);
        CHECK(hopchain_check(&c, "me", r, 0, k < 30 ? 2000 : 3000, &p) == HOPCHAIN_OK);
        json_decref(r);
    }
    json_array_clear(list);
    hopchain_list_heard(&c, list, 3000);
    CHECK(strcmp(st_ids(list, got, sizeof got), "n31 n30 n0 n1 n2 n3 n4 n5 n6 n7 n8 n9 n10 "
                 "n11 n12 n13 n14 n15 n16 n17 n18 n19 n20 n21 n22 n23 n24 n25 n26 n27 "
                 "n28 n29") == 0);
    /* ...as room in the list allows. */
    json_array_clear(list);
    json_array_append_new(list, json_string("first"));
    hopchain_list_heard(&c, list, 3000);
    CHECK(json_array_size(list) == HOPCHAIN_BELOW_MAX &&
          strcmp(json_string_value(json_array_get(list, 31)), "n28") == 0);

    /* A list holds HOPCHAIN_BELOW_MAX at most. */
    CHECK(hopchain_list_place(list, &p) == 1 && json_array_size(list) == HOPCHAIN_BELOW_MAX);
    json_array_clear(list);
    p.nbelow = HOPCHAIN_BELOW_MAX;
    for (int k = 0; k < p.nbelow; k++)
        snprintf(p.below[k], HOPCHAIN_ID_MAX, "q%d", k);
    CHECK(hopchain_list_place(list, &p) == 1 && json_array_size(list) == HOPCHAIN_BELOW_MAX);
    CHECK(strcmp(json_string_value(json_array_get(list, 31)), "q30") == 0);

    /* A loop: refused, and fatal only once it lasted with no job. The
     * loop is seen past the ids kept. */
    json_t *below = json_array();
    for (int k = 0; k < HOPCHAIN_BELOW_MAX + 2; k++)
        json_array_append_new(below, json_string(k == HOPCHAIN_BELOW_MAX + 1 ? "me" : "z"));
    r = json_pack("{s:s, s:o}", "id", "up", "below", below);
    CHECK(hopchain_check(&c, "me", r, 0, 20000, &p) == HOPCHAIN_LOOP &&
          p.nbelow == HOPCHAIN_BELOW_MAX && c.loop_since == 20000);
    CHECK(hopchain_check(&c, "me", r, 0, 20000 + HOPCHAIN_FATAL_MS - 1, &p) ==
          HOPCHAIN_LOOP);
    CHECK(hopchain_check(&c, "me", r, 1, 20000 + HOPCHAIN_FATAL_MS, &p) == HOPCHAIN_LOOP);
    CHECK(hopchain_check(&c, "me", r, 0, 20000 + HOPCHAIN_FATAL_MS, &p) == HOPCHAIN_FATAL);
    json_array_clear(list);
    hopchain_list_heard(&c, list, 20000);   /* (a loop is not heard) */
    CHECK(json_array_size(list) == 0);
    hopchain_job(&c);   /* (a job: the wait starts anew) */
    CHECK(hopchain_check(&c, "me", r, 0, 40000, &p) == HOPCHAIN_LOOP && c.loop_since == 40000);
    rc = 0;
out:
    json_decref(r);
    json_decref(list);
    return rc;
}
#endif /* SPITS_SELFTEST */
