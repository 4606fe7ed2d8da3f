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
 * nanoseconds, CLOCK_REALTIME) and an int64 sequence number.
 *
 * Byte order: the published 2.0 headers write every number big-endian
 * (network order, their htonll); other modules write their host's order.
 * The list tells which: it is read in the order in which all of it parses
 * (a count of 0 to MET_MAX, every name NUL-terminated, every type 0-3,
 * all inside the buffer). A count of 1 to MET_MAX has its non-zero bytes
 * at one end, so in the other order it reads as 2^48 or more: at most one
 * order fits. The records are read in the list's order.
 *
 * Layout of a record: told apart by the time. In the layout in use the
 * nanoseconds are below 10^9 and the seconds after 2001, which the other
 * reading cannot match (spits_metrics_value).
 *
 * Bounds: the module returns no length, but it allocates with malloc (its
 * spits_free_ptr frees with free), so malloc_usable_size bounds every
 * read. A list that does not parse to its last entry inside that bound
 * gives no metrics at all (spits_metrics_read returns JSON null): its
 * names cannot be trusted, and asking the module for garbage names is
 * worse than asking for none. A record that does not parse inside its
 * bound gives null for that one metric.
 *
 * The current (2021) interface returns C structures instead (the layouts
 * are the ABI doc's, declared here as met21_*): the list, then one call
 * of spits_get_metrics_history for every name. A history is taken from
 * the OLDEST end of the metric's ring, so a size of 1 would give the
 * oldest value kept: each metric is asked for its whole capacity, and
 * its last value is the entry with the highest sequence_no. They come
 * from the module's new[], so no bound can be asked of them: counts,
 * names, capacities and sizes are held to MET_MAX, MET_NAME_MAX,
 * MET_CAP_MAX and MET_BYTES_MAX instead (a metric over one is null,
 * never a value that may not be its last), and a history entry must echo
 * the name and type asked for and hold from 1 to the size asked for
 * values, else that metric is null. Its types are int, float, string
 * (NUL included in the size) and bytes; the older reader's double does
 * not exist.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define MET_MAX 4096          /* metrics read from one object, at most */
#define MET_BYTES_MAX (1 << 20)
#define MET_ENTRY_MIN 18      /* a list entry's size, at least: "x\0" cap type */
#define MET_NAME_MAX 4096     /* a 2021 metric's name, in bytes, at most */
#define MET_CAP_MAX (1 << 20) /* a 2021 metric's capacity, at most */

enum { MET_INT = 0, MET_FLOAT = 1, MET_DOUBLE = 2, MET_BYTES = 3 };
enum { MET21_INT = 0, MET21_FLOAT = 1, MET21_STRING = 2, MET21_BYTES = 3 };

/* The 2021 structures (DataType is an enum, int-sized: unsigned here). */
typedef struct { char *name; unsigned type; unsigned capacity; } met21_info_t;
typedef struct { unsigned quantity; met21_info_t *infos; } met21_infos_t;
typedef struct {
    union { unsigned char *c_data; int i_data; float f_data; } u;
    unsigned data_size;
    unsigned long seconds, nano_seconds;
    unsigned sequence_no;
} met21_value_t;
typedef struct {
    char *name;
    unsigned type;
    unsigned num_metrics;
    met21_value_t *metrics;
} met21_buffer_t;

/* A bounded reader: every read checks the bound; one that would pass it
 * sets bad, and every later read gives nothing. */
typedef struct {
    const unsigned char *p;
    size_t len, off;
    int be;                   /* big-endian, else the host's order */
    int bad;
} met_cur_t;

typedef struct {
    const char *name;         /* inside the list buffer */
    int64_t type;
} met_entry_t;

static const unsigned char *met_take(met_cur_t *c, size_t n)
{
    const unsigned char *r = c->p + c->off;
    if (c->bad || n > c->len - c->off) {
        c->bad = 1;
        return NULL;
    }
    c->off += n;
    return r;
}

/* An n-byte (4 or 8) unsigned number in the reader's byte order. */
static uint64_t met_uint(met_cur_t *c, size_t n)
{
    const unsigned char *q = met_take(c, n);
    uint64_t u = 0;
    uint32_t w;
    if (!q)
        return 0;
    if (c->be) {
        for (size_t i = 0; i < n; i++)
            u = u << 8 | q[i];
    } else if (n == 4) {
        memcpy(&w, q, 4);
        u = w;
    } else {
        memcpy(&u, q, 8);
    }
    return u;
}

static int64_t met_i64(met_cur_t *c)
{
    return (int64_t)met_uint(c, 8);
}

/* A non-empty NUL-terminated name, wholly inside the buffer. */
static const char *met_name(met_cur_t *c)
{
    const char *s = (const char *)c->p + c->off;
    size_t room = c->len - c->off, n;
    if (c->bad)
        return NULL;
    n = strnlen(s, room);
    if (n == 0 || n == room) {
        c->bad = 1;
        return NULL;
    }
    met_take(c, n + 1);
    return s;
}

/* n bytes (n > 0) as a string when they are one (NUL-terminated there
 * and not before, UTF-8), else as their size: {"bytes": n}. */
static json_t *met_text(const char *s, size_t n)
{
    if (s[n - 1] == '\0' && memchr(s, '\0', n) == s + n - 1) {
        json_t *j = json_string(s);
        if (j)
            return j;
    }
    return json_pack("{s:I}", "bytes", (json_int_t)n);
}

/* The value at the reader, a JSON value; NULL (and bad) if it does not
 * fit. */
static json_t *met_value(met_cur_t *c, int64_t type)
{
    switch (type) {
    case MET_INT:
        return c->bad ? NULL : json_integer(met_i64(c));
    case MET_FLOAT: {
        uint32_t u = (uint32_t)met_uint(c, 4);
        float f;
        memcpy(&f, &u, sizeof f);
        return c->bad ? NULL : json_real(f);
    }
    case MET_DOUBLE: {
        uint64_t u = met_uint(c, 8);
        double d;
        memcpy(&d, &u, sizeof d);
        return c->bad ? NULL : json_real(d);
    }
    default: {
        int64_t n = met_i64(c);
        const char *s;
        if (n <= 0 || n > MET_BYTES_MAX)
            c->bad = 1;
        if (!(s = (const char *)met_take(c, (size_t)n)))
            return NULL;
        return met_text(s, (size_t)n);
    }
    }
}

/* One record in one layout: [type] value sec nsec seq, all inside len. */
static json_t *met_record(const unsigned char *rec, size_t len, int64_t type,
                          int be, int typed)
{
    met_cur_t c = {rec, len, 0, be, 0};
    json_t *v;
    int64_t sec, nsec;
    if (typed && met_i64(&c) != type)
        return NULL;
    v = met_value(&c, type);
    sec = met_i64(&c);
    nsec = met_i64(&c);
    met_i64(&c);              /* the sequence number: it must be there */
    if (c.bad || !v || sec < 1000000000LL || sec >= 100000000000LL ||
        nsec < 0 || nsec >= 1000000000LL) {
        json_decref(v);
        return NULL;
    }
    return v;
}

json_t *spits_metrics_value(const unsigned char *rec, size_t len,
                            int64_t type, int be)
{
    json_t *v;
    if (type < MET_INT || type > MET_BYTES)
        return NULL;
    if ((v = met_record(rec, len, type, be, 0)))
        return v;
    return met_record(rec, len, type, be, 1);
}

/* The list's n entries; -1 if one does not parse inside the buffer. */
static int met_entries(met_cur_t *c, met_entry_t *e, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        e[i].name = met_name(c);
        met_i64(c);           /* the capacity */
        e[i].type = met_i64(c);
        if (c->bad || e[i].type < MET_INT || e[i].type > MET_BYTES)
            return -1;
    }
    return 0;
}

/* The list read in one byte order: its count and entries (malloc'd, to
 * free), or -1 if it does not parse in that order. */
static int64_t met_list_in(const unsigned char *l, size_t len, int be,
                           met_entry_t **out)
{
    met_cur_t c = {l, len, 0, be, 0};
    int64_t n = met_i64(&c);
    met_entry_t *e;
    if (c.bad || n < 0 || n > MET_MAX || n > (int64_t)(len / MET_ENTRY_MIN))
        return -1;
    if (!(e = malloc((size_t)(n ? n : 1) * sizeof *e)))
        return -1;
    if (met_entries(&c, e, n) != 0) {
        free(e);
        return -1;
    }
    *out = e;
    return n;
}

/* The list in whichever byte order it parses in (see the top). */
static int64_t met_list(const unsigned char *l, size_t len, int *be,
                        met_entry_t **out)
{
    int64_t n;
    for (*be = 0; *be < 2; ++*be)
        if ((n = met_list_in(l, len, *be, out)) >= 0)
            return n;
    return -1;
}

json_t *spits_metrics_read(void *metrics, spits_met_list_fn list,
                           spits_met_last_fn last, spits_met_free_fn freep)
{
    unsigned char *l = list(metrics);
    met_entry_t *e;
    json_t *out;
    int be;
    if (!l)
        return json_object();
    int64_t n = met_list(l, malloc_usable_size(l), &be, &e);
    if (n < 0) {
        freep(l);
        return json_null();
    }
    out = json_object();
    for (int64_t i = 0; out && i < n; i++) {
        const char *ask[2] = {e[i].name, NULL};
        unsigned char *rec = last(metrics, ask);
        json_t *v = rec ? spits_metrics_value(rec, malloc_usable_size(rec),
                                              e[i].type, be) : NULL;
        json_object_set_new(out, e[i].name, v ? v : json_null());
        if (rec)
            freep(rec);
    }
    free(e);
    freep(l);
    return out;
}

/* One 2021 history entry's last value (the highest sequence_no), if it
 * is the one asked for (name, type) and holds 1 to asked values; else
 * NULL. */
static json_t *met21_value(const met21_buffer_t *b, const char *name,
                           unsigned type, unsigned asked)
{
    const met21_value_t *v = b->metrics;
    if (!b->name || strcmp(b->name, name) != 0 || b->type != type ||
        b->num_metrics == 0 || b->num_metrics > asked || !v)
        return NULL;
    for (unsigned i = 1; i < b->num_metrics; i++)
        if (b->metrics[i].sequence_no > v->sequence_no)
            v = &b->metrics[i];
    switch (type) {
    case MET21_INT:
        return json_integer(v->u.i_data);
    case MET21_FLOAT:
        return json_real(v->u.f_data);
    case MET21_STRING:
        if (!v->u.c_data || v->data_size == 0 || v->data_size > MET_BYTES_MAX)
            return NULL;
        return met_text((const char *)v->u.c_data, v->data_size);
    default:
        return json_pack("{s:I}", "bytes", (json_int_t)v->data_size);
    }
}

/* The list's names, for asking: NULL if one is missing or too long or
 * has a type that does not exist (then none can be trusted). */
static const char **met21_names(const met21_infos_t *l)
{
    const char **names = malloc((l->quantity ? l->quantity : 1) * sizeof *names);
    for (unsigned i = 0; names && i < l->quantity; i++) {
        const met21_info_t *e = &l->infos[i];
        if (!e->name || strnlen(e->name, MET_NAME_MAX) == MET_NAME_MAX ||
            e->type > MET21_BYTES) {
            free(names);
            return NULL;
        }
        names[i] = e->name;
    }
    return names;
}

json_t *spits_metrics_read21(void *metrics, const spits_met_api_t *api)
{
    met21_infos_t *l = api->list(metrics);
    const char **names;
    unsigned *sizes = NULL;
    met21_buffer_t *h = NULL;
    json_t *out = NULL;

    if (!l)
        return json_object();
    if (l->quantity > MET_MAX || (l->quantity && !l->infos) ||
        !(names = met21_names(l))) {
        api->free_list(l);
        return json_null();
    }
    if (l->quantity && (sizes = malloc(l->quantity * sizeof *sizes))) {
        /* The whole ring, since a history starts at its oldest value;
         * none of a ring too big to trust (that metric is null). */
        for (unsigned i = 0; i < l->quantity; i++)
            sizes[i] = l->infos[i].capacity > MET_CAP_MAX ? 0
                     : l->infos[i].capacity ? l->infos[i].capacity : 1;
        h = api->history(metrics, l->quantity, names, sizes);
    }
    out = json_object();
    for (unsigned i = 0; out && i < l->quantity; i++) {
        json_t *v = h ? met21_value(&h[i], names[i], l->infos[i].type,
                                    sizes[i]) : NULL;
        json_object_set_new(out, names[i], v ? v : json_null());
    }
    if (h)
        api->free_history(h, l->quantity);
    free(sizes);
    free(names);
    api->free_list(l);
    return out;
}

json_t *spits_metrics_json(const spits_met_api_t *api, void *metrics)
{
    if (api->list && api->last && api->free_ptr)
        return spits_metrics_read(metrics, api->list, api->last, api->free_ptr);
    if (api->list && api->history && api->free_list && api->free_history)
        return spits_metrics_read21(metrics, api);
    return NULL;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#include <stdio.h>
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "metrics selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); return -1; } } while (0)

/* An n-byte (4 or 8) number, big-endian or in the host's order. */
static size_t st_num(unsigned char *p, uint64_t v, size_t n, int be)
{
    uint32_t w = (uint32_t)v;
    for (size_t i = 0; be && i < n; i++)
        p[i] = (unsigned char)(v >> 8 * (n - 1 - i));
    if (!be)
        memcpy(p, n == 4 ? (void *)&w : (void *)&v, n);
    return n;
}

/* One record: [type] value sec nsec seq; v holds a number's bits, s and
 * sn a bytes value. */
static size_t st_record(unsigned char *b, int be, int typed, int64_t type,
                        uint64_t v, const char *s, size_t sn)
{
    size_t k = 0;
    if (typed)
        k += st_num(b + k, (uint64_t)type, 8, be);
    if (type == MET_BYTES) {
        k += st_num(b + k, sn, 8, be);
        memcpy(b + k, s, sn);
        k += sn;
    } else {
        k += st_num(b + k, v, type == MET_FLOAT ? 4 : 8, be);
    }
    k += st_num(b + k, 1795000000, 8, be);
    k += st_num(b + k, 999999999, 8, be);
    return k + st_num(b + k, 7, 8, be);
}

/* The record's value; NULL as well if any shorter prefix of it (each in
 * a buffer of exactly that size, for ASan) is not rejected. */
static json_t *st_value(const unsigned char *b, size_t k, int64_t type, int be)
{
    for (size_t j = 0; j < k; j++) {
        unsigned char *t = malloc(j ? j : 1);
        json_t *v;
        if (!t)
            return NULL;
        memcpy(t, b, j);
        v = spits_metrics_value(t, j, type, be);
        free(t);
        if (v) {
            json_decref(v);
            return NULL;
        }
    }
    return spits_metrics_value(b, k, type, be);
}

static uint64_t st_bits(double d, int single)
{
    float f = (float)d;
    uint32_t w;
    uint64_t u;
    if (single) {
        memcpy(&w, &f, 4);
        return w;
    }
    memcpy(&u, &d, 8);
    return u;
}

/* Every type in one byte order and record layout, exact. */
static int st_records(int be, int typed)
{
    unsigned char b[256];
    size_t k = st_record(b, be, typed, MET_INT, 3, NULL, 0);
    json_t *j = st_value(b, k, MET_INT, be);   /* 3: a type word too */
    CHECK(json_is_integer(j) && json_integer_value(j) == 3);
    json_decref(j);
    k = st_record(b, be, typed, MET_FLOAT, st_bits(1.5, 1), NULL, 0);
    j = st_value(b, k, MET_FLOAT, be);
    CHECK(json_is_real(j) && json_real_value(j) == 1.5);
    json_decref(j);
    k = st_record(b, be, typed, MET_DOUBLE, st_bits(-2.25, 0), NULL, 0);
    j = st_value(b, k, MET_DOUBLE, be);
    CHECK(json_is_real(j) && json_real_value(j) == -2.25);
    json_decref(j);
    k = st_record(b, be, typed, MET_BYTES, 0, "ok!", 3);   /* no NUL */
    j = st_value(b, k, MET_BYTES, be);
    CHECK(json_integer_value(json_object_get(j, "bytes")) == 3);
    json_decref(j);
    k = st_record(b, be, typed, MET_BYTES, 0, "abc", 4);
    j = st_value(b, k, MET_BYTES, be);
    CHECK(json_is_string(j) && strcmp(json_string_value(j), "abc") == 0);
    json_decref(j);
    return 0;
}

static const char *st_names[] = {"count", "ratio", "speed", "label"};
static const int64_t st_types[] = {MET_INT, MET_DOUBLE, MET_FLOAT, MET_BYTES};
static unsigned char st_list_buf[128];
static size_t st_list_len;

/* A list of the four metrics above. */
static size_t st_list(unsigned char *b, int be)
{
    size_t k = st_num(b, 4, 8, be);
    for (int i = 0; i < 4; i++) {
        memcpy(b + k, st_names[i], strlen(st_names[i]) + 1);
        k += strlen(st_names[i]) + 1;
        k += st_num(b + k, 10, 8, be);
        k += st_num(b + k, (uint64_t)st_types[i], 8, be);
    }
    return k;
}

/* A module's functions as the published 2.0 headers write them:
 * big-endian, typed records, buffers malloc'd to their exact size. */
static void *st_mod_list(void *m)
{
    unsigned char *b = malloc(st_list_len);
    (void)m;
    return b ? memcpy(b, st_list_buf, st_list_len) : NULL;
}

static void *st_mod_last(void *m, const char **names)
{
    static const uint64_t v[] = {42, 0x3fd0000000000000ULL /* 0.25 */,
                                 0x40200000 /* 2.5f */, 0};
    unsigned char r[128], *b;
    size_t k = 0;
    (void)m;
    for (int i = 0; i < 4; i++)
        if (strcmp(names[0], st_names[i]) == 0)
            k = st_record(r, 1, 1, st_types[i], v[i], "big", 4);
    if (!k || !(b = malloc(k)))
        return NULL;
    return memcpy(b, r, k);
}

/* The list: exact in both orders; any prefix, or one in the other order,
 * rejected. */
static int st_lists(void)
{
    unsigned char b[128];
    met_entry_t *e;
    int be;
    for (int order = 0; order < 2; order++) {
        size_t k = st_list(b, order);
        for (size_t j = 0; j < k; j++) {
            unsigned char *t = malloc(j ? j : 1);
            CHECK(t);
            memcpy(t, b, j);
            int64_t n = met_list(t, j, &be, &e);
            free(t);
            CHECK(n == -1);
        }
        CHECK(met_list_in(b, k, !order, &e) == -1);
        CHECK(met_list(b, k, &be, &e) == 4 && be == order);
        for (int i = 0; i < 4; i++)
            CHECK(strcmp(e[i].name, st_names[i]) == 0 &&
                  e[i].type == st_types[i]);
        free(e);
    }
    return 0;
}

/* A whole read through a big-endian module; then one with a bad type. */
static int st_read(void)
{
    json_t *want = json_pack("{s:I,s:f,s:f,s:s}", "count", (json_int_t)42,
                             "ratio", 0.25, "speed", 2.5, "label", "big");
    st_list_len = st_list(st_list_buf, 1);
    json_t *j = spits_metrics_read(NULL, st_mod_list, st_mod_last, free);
    CHECK(want && json_equal(j, want));
    json_decref(j);
    json_decref(want);
    st_list_buf[st_list_len - 1] = 7;        /* label's type: none */
    j = spits_metrics_read(NULL, st_mod_list, st_mod_last, free);
    CHECK(json_is_null(j));
    json_decref(j);
    return 0;
}

/* A 2021 module's list and history, static; the frees count calls. */
static met21_info_t st21_info[4] = {
    {"count", MET21_INT, 10}, {"speed", MET21_FLOAT, 3},
    {"label", MET21_STRING, 1}, {"blob", MET21_BYTES, 10}};
static met21_infos_t st21_list = {4, st21_info};
static met21_value_t st21_count[3], st21_val[4];
static met21_buffer_t st21_hist[4];
static int st21_frees, st21_asked;

static void *st21_get_list(void *m) { (void)m; return &st21_list; }
static void st21_free_list(void *l) { st21_frees += l == &st21_list; }
static void st21_free_hist(void *h, unsigned n) { st21_frees += h == st21_hist && n == 4; }

/* Asked for each metric's capacity (0 for one too big to trust). */
static void *st21_history(void *m, unsigned n, const char **names,
                          unsigned *sizes)
{
    (void)m;
    st21_asked = n == 4;
    for (unsigned i = 0; i < n; i++)
        st21_asked &= names[i] == st21_info[i].name &&
            sizes[i] == (st21_info[i].capacity > MET_CAP_MAX ? 0
                         : st21_info[i].capacity);
    return st21_hist;
}

/* The 2021 reader: the value with the highest sequence_no, wherever it
 * is in the history; a wrong echo or count (none, or more than asked),
 * or a string without its NUL, read as such; a capacity too big asks
 * for nothing; a list with a type that does not exist gives null without
 * asking for history. */
static int st_read21(void)
{
    static const spits_met_api_t api = {st21_get_list, NULL, NULL,
        st21_history, st21_free_list, st21_free_hist};
    static unsigned char label[] = "ok", blob[5];
    json_t *want, *j;
    for (int i = 0; i < 4; i++)
        st21_hist[i] = (met21_buffer_t){st21_info[i].name, st21_info[i].type,
                                        1, &st21_val[i]};
    /* count's ring, oldest first, as HEAD returns it: -1, -3, then -7
     * (sequence numbers 5, 6, 7), shuffled here: order must not count */
    st21_count[0].u.i_data = -3;
    st21_count[0].sequence_no = 6;
    st21_count[1].u.i_data = -7;
    st21_count[1].sequence_no = 7;
    st21_count[2].u.i_data = -1;
    st21_count[2].sequence_no = 5;
    st21_hist[0] = (met21_buffer_t){st21_info[0].name, MET21_INT, 3, st21_count};
    st21_val[1].u.f_data = 1.5f;
    st21_val[2].u.c_data = label;
    st21_val[2].data_size = sizeof label;
    st21_val[3].u.c_data = blob;
    st21_val[3].data_size = sizeof blob;
    want = json_pack("{s:I,s:f,s:s,s:{s:I}}", "count", (json_int_t)-7,
                     "speed", 1.5, "label", "ok", "blob", "bytes", (json_int_t)5);
    j = spits_metrics_json(&api, NULL);
    CHECK(want && json_equal(j, want) && st21_asked && st21_frees == 2);
    json_decref(j);
    json_decref(want);
    st21_info[0].capacity = 2;             /* 3 values, when 2 were asked */
    st21_hist[1].num_metrics = 0;          /* no value yet */
    st21_val[2].data_size = 2;             /* "ok" without its NUL */
    st21_info[3].capacity = MET_CAP_MAX + 1;
    st21_hist[3].num_metrics = 0;          /* (as a module asked for 0) */
    want = json_pack("{s:n,s:n,s:{s:I},s:n}", "count", "speed", "label",
                     "bytes", (json_int_t)2, "blob");
    j = spits_metrics_json(&api, NULL);
    CHECK(want && json_equal(j, want) && st21_asked);
    json_decref(j);
    json_decref(want);
    st21_info[0].capacity = 10;
    st21_hist[0].type = MET21_FLOAT;       /* not the type listed */
    j = spits_metrics_json(&api, NULL);
    CHECK(json_is_null(json_object_get(j, "count")));
    json_decref(j);
    st21_info[3].type = 4;
    st21_asked = 0;
    st21_frees = 0;
    j = spits_metrics_json(&api, NULL);
    CHECK(json_is_null(j) && !st21_asked && st21_frees == 1);
    json_decref(j);
    return 0;
}

int spits_metrics_selftest(void)
{
    unsigned char b[64] = {0};
    for (int be = 0; be < 2; be++)
        for (int typed = 0; typed < 2; typed++)
            if (st_records(be, typed) != 0)
                return -1;
    /* Neither layout: no time where one must be. */
    CHECK(spits_metrics_value(b, sizeof b, MET_INT, 0) == NULL);
    CHECK(spits_metrics_value(b, sizeof b, 9, 0) == NULL);
    return st_lists() == 0 && st_read() == 0 && st_read21() == 0 ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
