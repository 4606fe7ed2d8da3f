/*
 * metrics.c - reading a SPITS 2.0 module's metrics back, for report.json.
 *
 * A 2.0 module owns its metrics objects (module.c makes one per role
 * instance with the module's spits_metrics_new). Modules that also export
 * spits_get_metrics_list, spits_get_metrics_last_values and spits_free_ptr
 * let the runtime read them: the list is an int64 count, then per metric
 * its NUL-terminated name, an int64 capacity and an int64 type (0 int,
 * 1 float, 2 double, 3 bytes); the last values are one record per name
 * asked for. Published versions of that record differ: some start with
 * the int64 type, some do not; then the value (int64, float, double, or an
 * int64 size and the bytes), then the time (int64 seconds and
 * nanoseconds, CLOCK_REALTIME) and an int64 sequence number. The two are
 * told apart by the time: in the layout in use, the nanoseconds are below
 * 10^9 and the seconds after 2001, which the other reading cannot match
 * (spits_metrics_value).
 */
#include <stdint.h>
#include <string.h>

#include "metrics.h"

#define MET_MAX 4096          /* metrics read from one object, at most */
#define MET_NAME_MAX 4096     /* a name's length, at most */
#define MET_BYTES_MAX (1 << 20)

enum { MET_INT = 0, MET_FLOAT = 1, MET_DOUBLE = 2, MET_BYTES = 3 };

/* The module writes its own host's byte order, not the little-endian of
 * spits' formats (bytes.h): read it as the host's. */
static int64_t get64(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A (seconds, nanoseconds) pair as a metric records its time. */
static int plausible_time(const unsigned char *p)
{
    int64_t sec = get64(p), nsec = get64(p + 8);
    return sec >= 1000000000LL && sec < 100000000000LL && nsec >= 0 &&
           nsec < 1000000000LL;
}

/* The value at p (after any type word), a JSON value; NULL if bytes are
 * too many. */
static json_t *value_at(const unsigned char *p, int64_t type)
{
    switch (type) {
    case MET_INT:
        return json_integer(get64(p));
    case MET_FLOAT: {
        float f;
        memcpy(&f, p, sizeof f);
        return json_real(f);
    }
    case MET_DOUBLE: {
        double d;
        memcpy(&d, p, sizeof d);
        return json_real(d);
    }
    default: {
        int64_t n = get64(p);
        const char *s = (const char *)p + 8;
        if (n <= 0 || n > MET_BYTES_MAX)
            return NULL;
        /* A string (NUL-terminated, UTF-8) as itself, else its size. */
        if (s[n - 1] == '\0' && memchr(s, '\0', (size_t)n) == s + n - 1) {
            json_t *j = json_string(s);
            if (j)
                return j;
        }
        return json_pack("{s:I}", "bytes", (json_int_t)n);
    }
    }
}

/* Size of the value at p: the time follows it. */
static size_t value_size(const unsigned char *p, int64_t type)
{
    switch (type) {
    case MET_INT: case MET_DOUBLE: return 8;
    case MET_FLOAT: return 4;
    default: {
        int64_t n = get64(p);
        return n > 0 && n <= MET_BYTES_MAX ? 8 + (size_t)n : 0;
    }
    }
}

json_t *spits_metrics_value(const unsigned char *rec, int64_t type)
{
    size_t vs;
    if (type < MET_INT || type > MET_BYTES)
        return NULL;
    /* Without a type word: the value, then the time. */
    vs = value_size(rec, type);
    if (vs && plausible_time(rec + vs))
        return value_at(rec, type);
    /* With one: it must name the type. */
    if (get64(rec) != type)
        return NULL;
    vs = value_size(rec + 8, type);
    if (vs && plausible_time(rec + 8 + vs))
        return value_at(rec + 8, type);
    return NULL;
}

json_t *spits_metrics_read(void *metrics, spits_met_list_fn list,
                           spits_met_last_fn last, spits_met_free_fn freep)
{
    json_t *out = json_object();
    unsigned char *l = list(metrics);
    if (!out || !l)
        return out;
    int64_t n = get64(l);
    const unsigned char *p = l + 8;
    for (int64_t i = 0; i < n && i < MET_MAX; i++) {
        const char *name = (const char *)p;
        size_t len = strnlen(name, MET_NAME_MAX);
        if (len == 0 || len == MET_NAME_MAX)
            break;
        int64_t type = get64(p + len + 1 + 8);
        p += len + 1 + 16;
        const char *ask[2] = {name, NULL};
        unsigned char *rec = last(metrics, ask);
        json_t *v = rec ? spits_metrics_value(rec, type) : NULL;
        json_object_set_new(out, name, v ? v : json_null());
        if (rec)
            freep(rec);
    }
    freep(l);
    return out;
}

/* --- self-test --------------------------------------------------------- */

#include <stdio.h>
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "metrics selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); return -1; } } while (0)

static size_t put(unsigned char *p, const void *v, size_t n)
{
    memcpy(p, v, n);
    return n;
}

/* One record in either layout: [type] value sec nsec seq. */
static size_t record(unsigned char *b, int typed, int64_t type, const void *v,
                     size_t vn)
{
    int64_t sec = 1795000000, nsec = 999999999, seq = 7;
    size_t k = 0;
    if (typed)
        k += put(b + k, &type, 8);
    k += put(b + k, v, vn);
    k += put(b + k, &sec, 8);
    k += put(b + k, &nsec, 8);
    k += put(b + k, &seq, 8);
    return k;
}

int spits_metrics_selftest(void)
{
    unsigned char b[256];
    for (int typed = 0; typed < 2; typed++) {
        int64_t i = 3;   /* the int type's number too: a hard case */
        record(b, typed, MET_INT, &i, 8);
        json_t *j = spits_metrics_value(b, MET_INT);
        CHECK(json_is_integer(j) && json_integer_value(j) == 3);
        json_decref(j);
        float f = 1.5f;
        record(b, typed, MET_FLOAT, &f, 4);
        j = spits_metrics_value(b, MET_FLOAT);
        CHECK(json_is_real(j) && json_real_value(j) == 1.5);
        json_decref(j);
        double d = -2.25;
        record(b, typed, MET_DOUBLE, &d, 8);
        j = spits_metrics_value(b, MET_DOUBLE);
        CHECK(json_is_real(j) && json_real_value(j) == -2.25);
        json_decref(j);
        unsigned char s[8 + 4] = {0};
        int64_t three = 3;
        memcpy(s, &three, 8);
        memcpy(s + 8, "ok!", 3);     /* not NUL-terminated: its size */
        record(b, typed, MET_BYTES, s, 11);
        j = spits_metrics_value(b, MET_BYTES);
        CHECK(json_integer_value(json_object_get(j, "bytes")) == 3);
        json_decref(j);
        int64_t four = 4;
        memcpy(s, &four, 8);
        memcpy(s + 8, "abc", 4);
        record(b, typed, MET_BYTES, s, 12);
        j = spits_metrics_value(b, MET_BYTES);
        CHECK(json_is_string(j) && strcmp(json_string_value(j), "abc") == 0);
        json_decref(j);
    }
    /* Neither layout: no time where one must be. */
    memset(b, 0, sizeof b);
    CHECK(spits_metrics_value(b, MET_INT) == NULL);
    CHECK(spits_metrics_value(b, 9) == NULL);
    return 0;
}
