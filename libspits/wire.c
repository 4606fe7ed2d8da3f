/*
 * wire.c - the spits wire codec (format described in wire.h).
 *
 * The batch writer appends records into one growable buffer, so building
 * a message costs no allocation per task once the buffer has grown. The
 * reader hands out pointers into the received frame: no copies.
 */
#define _GNU_SOURCE     /* (the self-test's cpu_set_t) */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "escape.h"
#include "resources.h"
#include "wire.h"

int spits_buf_reserve(spits_buf_t *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    unsigned char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

void spits_buf_free(spits_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int spits_buf_move(spits_buf_t *b, spits_buf_t *out)
{
    unsigned char *fresh = malloc(b->cap ? b->cap : 1);
    if (!fresh)
        return -1;
    *out = *b;
    /* (a buffer mostly empty gives its tail back: what is moved may wait
     * long in a queue) */
    if (out->len < out->cap / 2) {
        unsigned char *p = realloc(out->data, out->len ? out->len : 1);
        if (p) {
            out->data = p;
            out->cap = out->len;
        }
    }
    b->data = fresh;
    b->len = 0;
    return 0;
}

static void put_hdr(unsigned char *p, int type, uint32_t phase, uint64_t count)
{
    p[0] = 'S';
    p[1] = 'P';
    p[2] = SPITS_PROTO_VERSION;
    p[3] = (unsigned char)type;
    put_u32(p + 4, phase);
    put_u64(p + 8, count);
}

void spits_batch_begin(spits_batch_t *b, int type, uint32_t phase)
{
    b->buf.len = 0;
    b->count = 0;
    if (spits_buf_reserve(&b->buf, SPITS_HDR_SIZE) == 0) {
        put_hdr(b->buf.data, type, phase, 0);
        b->buf.len = SPITS_HDR_SIZE;
    }
}

int spits_batch_add_part(spits_batch_t *b, uint64_t id, uint32_t status,
                         uint32_t len)
{
    if (b->buf.len < SPITS_HDR_SIZE || spits_buf_reserve(&b->buf, SPITS_REC_MAX) != 0)
        return -1;
    unsigned char *p = spits_rec_head(b->buf.data + b->buf.len, id, status | SPITS_REC_PART, len);
    b->buf.len = (size_t)(p - b->buf.data);
    b->count++;
    return 0;
}

void spits_batch_seal(spits_batch_t *b)
{
    if (b->buf.len >= SPITS_HDR_SIZE)
        put_u64(b->buf.data + 8, b->count);
}

int spits_batch_move(spits_batch_t *b, spits_batch_t *out, uint32_t phase)
{
    if (b->buf.len < SPITS_HDR_SIZE || spits_buf_move(&b->buf, &out->buf) != 0)
        return -1;
    put_u32(out->buf.data + 4, phase);
    out->count = b->count;
    b->count = 0;
    return 0;
}

void spits_batch_free(spits_batch_t *b)
{
    spits_buf_free(&b->buf);
    b->count = 0;
}

int spits_wire_parse(const void *frame, size_t len, spits_hdr_t *h,
                     const char **why)
{
    const unsigned char *p = frame;

    if (len < SPITS_HDR_SIZE) {
        *why = "frame shorter than a header";
        return -1;
    }
    if (p[0] != 'S' || p[1] != 'P') {
        *why = "bad magic";
        return -1;
    }
    if (p[2] != SPITS_PROTO_VERSION) {
        *why = p[2] < SPITS_PROTO_VERSION ? "older protocol version"
                                          : "newer protocol version";
        return -1;
    }
    h->type = p[3];
    h->phase = get_u32(p + 4);
    h->count = get_u64(p + 8);
    h->parts = h->foreign = 0;
    if (h->type < 1 || h->type > SPITS_MSG_LAST) {
        *why = "unknown message type";
        return -1;
    }
    if (!spits_wire_has_records(h->type)) {
        if (h->count != 0) {
            *why = "record count on a control message";
            return -1;
        }
        if (len - SPITS_HDR_SIZE > spits_wire_body_max(h->type)) {
            *why = "a body larger than its message type allows";
            return -1;
        }
        return 0;
    }
    /* Walk every record header once: after this, the reader needs no checks. */
    const unsigned char *q = p + SPITS_HDR_SIZE, *end = p + len;
    /* The flags this type may not carry: a CANCEL has no parts, and only a
     * result can answer a copy sent elsewhere (foreign). */
    uint32_t banned = (h->type == SPITS_MSG_CANCEL ? SPITS_REC_PART : 0) |
                      (h->type != SPITS_MSG_RESULTS ? SPITS_REC_FOREIGN : 0);
    uint64_t n = 0, parts = 0, foreign = 0;
    while (q < end) {
        uint32_t lead = *q, rlen;
        uint64_t id;
        /* (a long header fits short of the frame's last few bytes) */
        if ((size_t)(end - q) < SPITS_REC_MAX &&
            (size_t)(end - q) < (lead & SPITS_REC_LONG ? SPITS_REC_MAX : SPITS_REC_SHORT)) {
            *why = "truncated record header";
            return -1;
        }
        q = spits_rec_read(q, &lead, &id, &rlen);
        if ((lead & SPITS_REC_LONG) && spits_rec_short(id, rlen)) {
            *why = "a long record header where a short one holds it";
            return -1;
        }
        uint32_t part = (lead & SPITS_REC_PART) != 0;
        if (lead & banned) {
            *why = lead & banned & SPITS_REC_PART
                       ? "a part in a CANCEL" : "a foreign record outside RESULTS";
            return -1;
        }
        size_t body = part ? 0 : rlen;
        if ((size_t)(end - q) < body) {
            *why = "record longer than the frame";
            return -1;
        }
        /* (bits 4-5 set make it one too) */
        if ((lead & ~(SPITS_REC_FLAGS | SPITS_REC_LONG)) > SPITS_ST_LAST) {
            *why = "unknown record status";
            return -1;
        }
        q += body;
        parts += part;
        foreign += (lead & SPITS_REC_FOREIGN) != 0;
        n++;
    }
    h->parts = parts;
    h->foreign = foreign;
    if (n != h->count) {
        *why = "record count does not match the frame";
        return -1;
    }
    return 0;
}

int spits_wire_check_parts(const void *frame, size_t len,
                           const spits_part_t *parts, size_t nparts,
                           const char **why)
{
    spits_reader_t r;
    spits_rec_t rec;
    size_t k = 0;

    spits_reader_init(&r, frame, len);
    while (spits_reader_next(&r, &rec)) {
        if (rec.part) {
            if (k == nparts) {
                *why = "fewer parts than records that have one";
                return -1;
            }
            if (parts[k++].len != rec.len) {
                *why = "a part whose size is not its record's";
                return -1;
            }
        }
    }
    if (k != nparts) {
        *why = "more parts than records that have one";
        return -1;
    }
    return 0;
}

void spits_reader_init(spits_reader_t *r, const void *frame, size_t len)
{
    r->p = (const unsigned char *)frame + SPITS_HDR_SIZE;
    r->end = (const unsigned char *)frame + len;
    r->parts = NULL;
}

void spits_reader_parts(spits_reader_t *r, const spits_part_t *parts)
{
    r->parts = parts;
}

int spits_wire_encode_json(spits_buf_t *out, int type, uint32_t phase,
                           const json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    if (!text)
        return -1;
    size_t n = strlen(text);
    out->len = 0;
    if (spits_buf_reserve(out, SPITS_HDR_SIZE + n) != 0) {
        free(text);
        return -1;
    }
    put_hdr(out->data, type, phase, 0);
    memcpy(out->data + SPITS_HDR_SIZE, text, n);
    out->len = SPITS_HDR_SIZE + n;
    free(text);
    return 0;
}

int spits_json_long(const json_t *j, const char *key, long min, long max,
                    long *out)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > max)
        return -1;
    *out = (long)json_integer_value(v);
    return 0;
}

/* An optional integer field: 0 (absent, *out = dflt; or in range), or -1. */
static int json_opt_long(const json_t *j, const char *key, long min, long max,
                         long dflt, long *out)
{
    *out = dflt;
    return json_object_get(j, key) ? spits_json_long(j, key, min, max, out) : 0;
}

static int stats_worker_counts(const spits_stats_t *s);

int spits_hello_parse(json_t *j, spits_hello_t *h, const char **why)
{
    memset(h, 0, sizeof *h);
    h->host = json_string_value(json_object_get(j, "host"));
    h->relay = json_object_get(j, "relay");
    h->job_id = json_string_value(json_object_get(j, "job_id"));
    if (!h->host || spits_json_long(j, "pid", 1, 1L << 40, &h->pid) ||
        spits_json_long(j, "workers", 0, SPITS_WORKERS_MAX, &h->workers) ||
        spits_json_long(j, "slots", 0, SPITS_SLOTS_MAX, &h->slots) ||
        spits_json_long(j, "held", 0, 1L << 24, &h->held)) {
        *why = "HELLO without host/pid/workers/slots/held";
        return -1;
    }
    /* Results it computed while it had no JM, and its outage number. */
    if (json_opt_long(j, "pending", 0, 1L << 40, 0, &h->pending) ||
        json_opt_long(j, "attach", 0, LONG_MAX, -1, &h->attach)) {
        *why = "HELLO with a bad pending or attach count";
        return -1;
    }
    if (h->relay && !json_is_object(h->relay)) {
        *why = "HELLO with a relay that is no object";
        return -1;
    }
    if (json_opt_long(h->relay, "tms", 0, SPITS_RELAY_TMS_MAX, -1, &h->tms)) {
        *why = "HELLO with a relay's bad TM count";
        return -1;
    }
    if (!h->relay && !spits_tm_capacity_ok(h->workers, h->slots)) {
        *why = h->workers > SPITS_TM_WORKERS_MAX ? "HELLO of a TM with over 4096 workers"
                                                 : "HELLO of a TM with no worker or slot";
        return -1;
    }
    return 0;
}

int spits_tm_capacity_ok(long workers, long slots)
{
    return workers >= 1 && workers <= SPITS_TM_WORKERS_MAX && slots >= 1 &&
           slots <= SPITS_SLOTS_MAX;
}

int spits_stats_parse(const json_t *j, spits_stats_t *s, const char **why)
{
    json_t *busy = json_object_get(j, "busy_s");
    if (!json_is_number(busy) || json_number_value(busy) < 0 ||
        json_number_value(busy) > 1e12 ||
        spits_json_long(j, "runs", 0, LONG_MAX, &s->runs)) {
        *why = "STATS without busy_s/runs";
        return -1;
    }
    s->busy_s = json_number_value(busy);
    if (json_opt_long(j, "workers", 0, SPITS_WORKERS_MAX, -1, &s->workers) ||
        json_opt_long(j, "slots", 0, SPITS_SLOTS_MAX, -1, &s->slots) ||
        json_opt_long(j, "tms", 0, SPITS_RELAY_TMS_MAX, -1, &s->tms)) {
        *why = "STATS with bad workers, slots or tms";
        return -1;
    }
    if (json_opt_long(j, "running", 0, SPITS_SLOTS_MAX, -1, &s->running) ||
        json_opt_long(j, "queued", 0, SPITS_SLOTS_MAX, -1, &s->queued)) {
        *why = "STATS with bad running or queued";
        return -1;
    }
    s->worker_res = json_object_get(j, "worker_res");
    s->worker_runs = json_object_get(j, "worker_runs");
    s->worker_busy = json_object_get(j, "worker_busy_s");
    if (s->worker_res && spits_worker_res_check(s->worker_res, s->workers, why) != 0)
        return -1;
    if (stats_worker_counts(s) != 0) {
        *why = "STATS with bad worker_runs or worker_busy_s";
        return -1;
    }
    return 0;
}

/* worker_runs and worker_busy_s: both or neither, as long as each other,
 * SPITS_WORKERS_LISTED and workers at most. */
static int stats_worker_counts(const spits_stats_t *s)
{
    size_t i, n = json_array_size(s->worker_runs);
    json_t *v;
    if (!s->worker_runs && !s->worker_busy)
        return 0;
    if (!json_is_array(s->worker_runs) || !json_is_array(s->worker_busy) ||
        json_array_size(s->worker_busy) != n || n > SPITS_WORKERS_LISTED ||
        (long)n > s->workers)
        return -1;
    json_array_foreach(s->worker_runs, i, v)
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return -1;
    json_array_foreach(s->worker_busy, i, v)
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e12)
            return -1;
    return 0;
}

int spits_cpulist_ok(const char *s)
{
    long prev = -1;
    if (!s || !*s || strlen(s) > SPITS_CPULIST_MAX)
        return 0;
    for (;;) {
        long a = 0, b;
        int digits = 0;
        for (; *s >= '0' && *s <= '9' && digits < 5; s++, digits++)
            a = a * 10 + (*s - '0');
        if (!digits || a <= prev || a >= SPITS_RES_CPUS_MAX)
            return 0;
        b = a;
        if (*s == '-') {
            s++;
            b = 0;
            for (digits = 0; *s >= '0' && *s <= '9' && digits < 5; s++, digits++)
                b = b * 10 + (*s - '0');
            if (!digits || b <= a || b >= SPITS_RES_CPUS_MAX)
                return 0;
        }
        prev = b;
        if (*s == '\0')
            return 1;
        if (*s++ != ',')
            return 0;
    }
}

/* Whether g is a GPU list as --gpus takes it, "none" aside. */
static int gpulist_ok(const char *g, spits_res_have_t *h)
{
    char err[256];
    return g && strcmp(g, "none") != 0 && spits_res_gpus_list(g, h, err, sizeof err) == 0;
}

int spits_worker_res_check(const json_t *a, long workers, const char **why)
{
    size_t i;
    json_t *w;
    if (!json_is_array(a) || json_array_size(a) > SPITS_WORKERS_LISTED ||
        (long)json_array_size(a) > workers) {
        *why = "worker_res that is no array of at most 64 workers, and of its workers";
        return -1;
    }
    spits_res_have_t *h = malloc(sizeof *h);
    if (!h) {
        *why = "out of memory checking worker_res";
        return -1;
    }
    json_array_foreach(a, i, w) {
        json_t *cpus = json_object_get(w, "cpus"), *gpus = json_object_get(w, "gpus");
        long mem;
        if (!json_is_object(w) || (cpus && !spits_cpulist_ok(json_string_value(cpus))) ||
            (gpus && !gpulist_ok(json_string_value(gpus), h)) ||
            json_opt_long(w, "mem", 1, 1L << 50, 0, &mem) != 0) {
            *why = "worker_res with a bad worker (cpus, gpus or mem)";
            free(h);
            return -1;
        }
    }
    free(h);
    return 0;
}

json_t *spits_worker_res_copy(const json_t *a)
{
    size_t i;
    json_t *w, *out = json_array();
    json_array_foreach(a, i, w) {
        json_t *o = json_object(), *v;
        if (!o || json_array_append_new(out, o) != 0) {
            json_decref(out);
            return NULL;
        }
        static const char *const keys[] = {"cpus", "gpus", "mem"};
        for (size_t k = 0; k < 3; k++)
            if ((v = json_object_get(w, keys[k])))
                json_object_set(o, keys[k], v);
    }
    return out;
}

void spits_relay_cap(long tms, long *workers, long *slots)
{
    if (tms > SPITS_RELAY_TMS_MAX)
        tms = SPITS_RELAY_TMS_MAX;
    long most = tms > 0 ? tms * SPITS_TM_WORKERS_MAX : 0;
    if (*workers > most)
        *workers = most;
    if (tms <= 0 && *slots > 0)
        *slots = 0;
}

json_t *spits_wire_decode_json(const void *frame, size_t len, const char **why)
{
    json_error_t jerr;
    if (len <= SPITS_HDR_SIZE) {
        *why = "control message without a body";
        return NULL;
    }
    json_t *j = json_loadb((const char *)frame + SPITS_HDR_SIZE,
                           len - SPITS_HDR_SIZE, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        *why = "body is not valid JSON";
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        *why = "body is not a JSON object";
        return NULL;
    }
    return j;
}

size_t spits_wire_body_max(int type)
{
    switch (type) {
    case SPITS_MSG_HELLO:
    case SPITS_MSG_STATS:
    case SPITS_MSG_BYE:
        return SPITS_CONTROL_MAX;
    case SPITS_MSG_HEARTBEAT:
    case SPITS_MSG_END:
    case SPITS_MSG_WHO:
    case SPITS_MSG_DRAIN:
        return 0;
    default:
        return SIZE_MAX;
    }
}

int spits_wire_has_records(int type)
{
    return type == SPITS_MSG_TASKS || type == SPITS_MSG_RESULTS ||
           type == SPITS_MSG_CANCEL;
}

void spits_wire_encode_empty(unsigned char out[SPITS_HDR_SIZE], int type,
                             uint32_t phase)
{
    put_hdr(out, type, phase, 0);
}

const char *spits_wire_type_name(int type)
{
    static const char *names[] = {"?", "HELLO", "WELCOME", "PHASE", "TASKS",
                                  "RESULTS", "HEARTBEAT", "END", "BYE", "WHO",
                                  "CANCEL", "DRAIN", "STATUS", "STATS"};
    return type >= 1 && type <= SPITS_MSG_LAST ? names[type] : "?";
}

const char *spits_wire_status_name(uint32_t status)
{
    static const char *names[] = {"ok", "failed", "returned", "crashed",
                                  "timeout"};
    return status <= SPITS_ST_LAST ? names[status] : "?";
}

size_t spits_fail_payload(unsigned char *out, int32_t rc, const char *why)
{
    size_t n = why ? strlen(why) : 0;
    if (n > SPITS_FAIL_TEXT_MAX) {
        n = SPITS_FAIL_TEXT_MAX;   /* (cut before a character, not in one) */
        while (n > 0 && ((unsigned char)why[n] & 0xC0) == 0x80)
            n--;
    }
    put_u32(out, (uint32_t)rc);
    if (n)
        memcpy(out + 4, why, n);
    return 4 + n;
}

int spits_fail_parse(const spits_rec_t *rec, int32_t *rc, char *why,
                     size_t whylen)
{
    char raw[SPITS_FAIL_TEXT_MAX + 1];
    why[0] = '\0';
    if (rec->status != SPITS_ST_FAILED || rec->len < 4 || !rec->data)
        return 0;
    *rc = (int32_t)get_u32(rec->data);
    size_t n = rec->len - 4 < SPITS_FAIL_TEXT_MAX ? rec->len - 4 : SPITS_FAIL_TEXT_MAX;
    memcpy(raw, rec->data + 4, n);
    raw[n] = '\0';   /* (a TM sends no NUL: one a peer sent ends it) */
    spits_escape(why, whylen, raw);
    return 1;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "wire selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); return -1; } } while (0)
#include <stdio.h>

/* A planned TM's STATS: its workers' resources and counts round-trip;
 * every bad field, and every truncation of the frame, is refused. */
static int worker_res_selftest(void)
{
    const char *why = NULL;
    spits_stats_t st;
    spits_buf_t out = {0};
    spits_hdr_t h;
    json_t *j = json_loads("{\"busy_s\":2.5,\"runs\":7,\"workers\":2,\"slots\":4,"
        "\"worker_res\":[{\"cpus\":\"0-1,6\",\"gpus\":\"0,GPU-9b\",\"mem\":1024,"
        "\"later\":1},{\"cpus\":\"2\"}],\"worker_runs\":[3,4],"
        "\"worker_busy_s\":[1.5,1]}", 0, NULL);
    CHECK(j && spits_stats_parse(j, &st, &why) == 0 && st.worker_res &&
          json_array_size(st.worker_res) == 2 && json_array_size(st.worker_runs) == 2);
    json_t *copy = spits_worker_res_copy(st.worker_res);
    char *text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(text && strcmp(text, "[{\"cpus\":\"0-1,6\",\"gpus\":\"0,GPU-9b\","
                               "\"mem\":1024},{\"cpus\":\"2\"}]") == 0);
    free(text);
    json_decref(copy);
    /* every truncation of the frame: no JSON object, or no STATS */
    CHECK(spits_wire_encode_json(&out, SPITS_MSG_STATS, 1, j) == 0);
    for (size_t cut = 0; cut < out.len; cut++) {
        json_t *t = NULL;
        int ok = spits_wire_parse(out.data, cut, &h, &why) == 0 &&
                 (t = spits_wire_decode_json(out.data, cut, &why)) &&
                 spits_stats_parse(t, &st, &why) == 0;
        json_decref(t);
        CHECK(!ok);
    }
    spits_buf_free(&out);
    /* bad workers: each one refused, naming worker_res */
    static const char *const bad[] = {
        "{\"cpus\":\"1-0\"}", "{\"cpus\":\"0,0\"}", "{\"cpus\":\"2,1\"}",
        "{\"cpus\":\"a\"}", "{\"cpus\":\"4096\"}", "{\"cpus\":\"0-\"}",
        "{\"cpus\":\",1\"}", "{\"cpus\":\"1,\"}", "{\"cpus\":\"\"}",
        "{\"cpus\":\"000001\"}", "{\"cpus\":3}", "{\"gpus\":\"none\"}",
        "{\"gpus\":\"0,,1\"}", "{\"gpus\":\"0,0\"}", "{\"gpus\":\"0 1\"}",
        "{\"gpus\":[0]}", "{\"mem\":0}", "{\"mem\":\"1G\"}", "{\"mem\":1.5}", "[]", "3"};
    json_t *res = json_object_get(j, "worker_res");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_array_set_new(res, 1, json_loads(bad[i], JSON_DECODE_ANY, NULL));
        CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_res"));
    }
    json_array_set_new(res, 1, json_pack("{s:s}", "cpus", "4095"));
    CHECK(spits_stats_parse(j, &st, &why) == 0);
    /* more workers listed than it has, or than a STATS lists */
    json_object_set_new(j, "workers", json_integer(1));
    CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_res"));
    json_object_del(j, "workers");
    CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_res"));
    json_object_set_new(j, "workers", json_integer(SPITS_TM_WORKERS_MAX));
    for (int i = 2; i < SPITS_WORKERS_LISTED; i++)
        json_array_append_new(res, json_object());
    json_object_del(j, "worker_runs");
    json_object_del(j, "worker_busy_s");
    CHECK(spits_stats_parse(j, &st, &why) == 0);
    json_array_append_new(res, json_object());
    CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_res"));
    json_object_set_new(j, "worker_res", json_object());
    CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_res"));
    json_object_del(j, "worker_res");
    /* the counts: both, of one length, whole runs, busy in range */
    static const char *const counts[][2] = {
        {"[1]", NULL}, {NULL, "[1]"}, {"[1,2]", "[1]"}, {"[-1]", "[1]"},
        {"[1.5]", "[1]"}, {"[1]", "[-1]"}, {"[1]", "[1e13]"}, {"[1]", "[\"1\"]"},
        {"{}", "{}"}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        json_object_del(j, "worker_runs");
        json_object_del(j, "worker_busy_s");
        if (counts[i][0])
            json_object_set_new(j, "worker_runs", json_loads(counts[i][0], 0, NULL));
        if (counts[i][1])
            json_object_set_new(j, "worker_busy_s", json_loads(counts[i][1], 0, NULL));
        CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_runs"));
    }
    json_object_set_new(j, "worker_runs", json_loads("[0,9]", 0, NULL));
    json_object_set_new(j, "worker_busy_s", json_loads("[0,1e12]", 0, NULL));
    CHECK(spits_stats_parse(j, &st, &why) == 0 && st.worker_res == NULL &&
          json_integer_value(json_array_get(st.worker_runs, 1)) == 9);
    json_object_set_new(j, "workers", json_integer(1));
    CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "worker_runs"));
    json_decref(j);
    CHECK(spits_cpulist_ok("0-4095") && spits_cpulist_ok("1,3,5-7") &&
          !spits_cpulist_ok(NULL) && !spits_cpulist_ok("1-1"));
    /* what a TM writes (resources.h), every other core of 4096 too, is
     * what this takes */
    {
        static char list[SPITS_CPULIST_MAX + 1];
        size_t size = CPU_ALLOC_SIZE(SPITS_RES_CPUS_MAX);
        cpu_set_t *set = CPU_ALLOC(SPITS_RES_CPUS_MAX);
        CHECK(set);
        CPU_ZERO_S(size, set);
        for (int c = 0; c < SPITS_RES_CPUS_MAX; c += 2)
            CPU_SET_S((size_t)c, size, set);
        size_t n = spits_res_cpulist(set, size, list, sizeof list);
        CPU_FREE(set);
        CHECK(n > 0 && spits_cpulist_ok(list) && strncmp(list, "0,2,4,", 6) == 0);
    }
    return 0;
}

/* A FAILED record's payload: code and words, cut between characters,
 * escaped on the way in; a bare code, and none at all. */
static int fail_selftest(void)
{
    unsigned char p[4 + SPITS_FAIL_TEXT_MAX];
    char long_why[SPITS_FAIL_TEXT_MAX + 8], why[4 * SPITS_FAIL_TEXT_MAX + 1];
    int32_t rc = 0;
    spits_rec_t rec = {.id = 1, .status = SPITS_ST_FAILED, .data = p};

    rec.len = (uint32_t)spits_fail_payload(p, -7, "ValueError: bad\n\x1b[2J");
    CHECK(rec.len == 4 + 20 && get_u32(p) == (uint32_t)-7);
    CHECK(spits_fail_parse(&rec, &rc, why, sizeof why) == 1 && rc == -7 &&
          strcmp(why, "ValueError: bad\\x0a\\x1b[2J") == 0);
    rec.len = (uint32_t)spits_fail_payload(p, 3, NULL);
    CHECK(rec.len == 4 && spits_fail_parse(&rec, &rc, why, sizeof why) == 1 &&
          rc == 3 && why[0] == '\0');
    /* 399 ASCII bytes then a 2-byte character: the cut comes before it */
    memset(long_why, 'a', SPITS_FAIL_TEXT_MAX - 1);
    strcpy(long_why + SPITS_FAIL_TEXT_MAX - 1, "\xc3\xa9zz");
    CHECK(spits_fail_payload(p, 1, long_why) == 4 + SPITS_FAIL_TEXT_MAX - 1);
    memset(long_why, 'a', SPITS_FAIL_TEXT_MAX + 4);
    long_why[SPITS_FAIL_TEXT_MAX + 4] = '\0';
    rec.len = (uint32_t)spits_fail_payload(p, 1, long_why);
    CHECK(rec.len == 4 + SPITS_FAIL_TEXT_MAX &&
          spits_fail_parse(&rec, &rc, why, sizeof why) == 1 &&
          strlen(why) == SPITS_FAIL_TEXT_MAX);
    /* a peer's NUL ends the words; short or other payloads say no code */
    memcpy(p + 4, "ab\0cd", 5);
    rec.len = 9;
    CHECK(spits_fail_parse(&rec, &rc, why, sizeof why) == 1 && strcmp(why, "ab") == 0);
    rec.len = 3;
    CHECK(spits_fail_parse(&rec, &rc, why, sizeof why) == 0 && why[0] == '\0');
    rec.len = 4;
    rec.status = SPITS_ST_CRASHED;
    CHECK(spits_fail_parse(&rec, &rc, why, sizeof why) == 0);
    /* a plain TM's capacity, in HELLO and in a re-planning STATS */
    CHECK(spits_tm_capacity_ok(1, 1) && spits_tm_capacity_ok(4096, SPITS_SLOTS_MAX));
    CHECK(!spits_tm_capacity_ok(0, 1) && !spits_tm_capacity_ok(1, 0) &&
          !spits_tm_capacity_ok(4097, 8) && !spits_tm_capacity_ok(1, SPITS_SLOTS_MAX + 1));
    return 0;
}

/* spits_buf_move: the bytes move as they are, the source keeps its
 * capacity, and a mostly empty buffer moves trimmed to its bytes. */
static int buf_move_selftest(void)
{
    spits_buf_t b = {0}, out = {0};
    CHECK(spits_buf_reserve(&b, 5000) == 0 && b.cap == 8192);
    memset(b.data, 'm', 5000);
    b.len = 5000;
    unsigned char *was = b.data;
    CHECK(spits_buf_move(&b, &out) == 0);
    CHECK(out.data == was && out.len == 5000 && out.cap == 8192);
    CHECK(b.data && b.data != was && b.len == 0 && b.cap == 8192);
    spits_buf_free(&out);
    memcpy(b.data, "abc", 3);
    b.len = 3;
    CHECK(spits_buf_move(&b, &out) == 0);
    CHECK(out.len == 3 && out.cap == 3 && memcmp(out.data, "abc", 3) == 0);
    CHECK(b.len == 0 && b.cap == 8192);
    spits_buf_free(&out);
    spits_buf_free(&b);
    return 0;
}

/* A record header, short and long, at the edges of each, both ways and
 * in a frame (as a part's, so that no payload need follow); each cut
 * short; a long one that a short one holds, and bits 4-5 set, refused. */
static int wire_rec_selftest(void)
{
    static const uint64_t ids[] = {0, 7, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX};
    static const uint32_t lens[] = {0, 1, 0xff, 0x100, UINT32_MAX};
    unsigned char f[SPITS_HDR_SIZE + SPITS_REC_MAX];
    spits_hdr_t h;
    const char *why;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            uint64_t id;
            uint32_t lead, len;
            int longer = ids[i] > UINT32_MAX || lens[k] > 0xff;
            spits_wire_encode_empty(f, SPITS_MSG_TASKS, 0);
            f[8] = 1;
            unsigned char *end = spits_rec_head(f + SPITS_HDR_SIZE, ids[i],
                                                SPITS_REC_PART | SPITS_ST_OK, lens[k]);
            CHECK(end - f == SPITS_HDR_SIZE + (longer ? SPITS_REC_MAX : SPITS_REC_SHORT));
            CHECK(spits_rec_read(f + SPITS_HDR_SIZE, &lead, &id, &len) == end &&
                  id == ids[i] && len == lens[k] &&
                  lead == (SPITS_REC_PART | (longer ? SPITS_REC_LONG : 0)));
            CHECK(spits_wire_parse(f, (size_t)(end - f), &h, &why) == 0 && h.parts == 1);
            for (size_t cut = SPITS_HDR_SIZE + 1; cut < (size_t)(end - f); cut++)
                CHECK(spits_wire_parse(f, cut, &h, &why) == -1 && strstr(why, "truncated"));
        }
    /* long where short would do: id 2^32 - 1 and length 255; either one
     * past it makes it right */
    static const unsigned char lng[SPITS_REC_MAX] = {SPITS_REC_LONG | SPITS_REC_PART,
                                                     0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
                                                     0xff, 0, 0, 0};
    spits_wire_encode_empty(f, SPITS_MSG_TASKS, 0);
    f[8] = 1;
    memcpy(f + SPITS_HDR_SIZE, lng, sizeof lng);
    size_t n = SPITS_HDR_SIZE + SPITS_REC_MAX;
    CHECK(spits_wire_parse(f, n, &h, &why) == -1 && strstr(why, "short one"));
    f[SPITS_HDR_SIZE + 5] = 1;   /* (id 2^32 + 2^32 - 1) */
    CHECK(spits_wire_parse(f, n, &h, &why) == 0);
    f[SPITS_HDR_SIZE + 5] = 0;
    f[SPITS_HDR_SIZE + 10] = 1;   /* (length 511) */
    CHECK(spits_wire_parse(f, n, &h, &why) == 0);
    /* bits 4-5: no status has them */
    memcpy(f + SPITS_HDR_SIZE, (const unsigned char[]){0x10, 1, 0, 0, 0, 0}, 6);
    CHECK(spits_wire_parse(f, SPITS_HDR_SIZE + 6, &h, &why) == -1 && strstr(why, "status"));
    f[SPITS_HDR_SIZE] = 0x20;
    CHECK(spits_wire_parse(f, SPITS_HDR_SIZE + 6, &h, &why) == -1 && strstr(why, "status"));
    f[SPITS_HDR_SIZE] = 0;
    CHECK(spits_wire_parse(f, SPITS_HDR_SIZE + 6, &h, &why) == 0);
    return 0;
}

int spits_wire_selftest(void)
{
    spits_batch_t b = {0};
    spits_hdr_t h;
    const char *why = NULL;

    CHECK(buf_move_selftest() == 0);
    /* spits_copy: every length up to past its inline sizes, bytes around
     * the copy untouched. */
    for (size_t n = 0; n <= 40; n++) {
        unsigned char src[48], dst[48];
        for (size_t i = 0; i < sizeof src; i++) {
            src[i] = (unsigned char)(i * 13 + n);
            dst[i] = 0xa5;
        }
        spits_copy(dst + 3, src + 1, n);
        for (size_t i = 0; i < sizeof dst; i++)
            CHECK(dst[i] == (i >= 3 && i < 3 + n ? src[i - 2] : 0xa5));
    }

    /* A batch round-trips exactly, including an empty payload. */
    spits_batch_begin(&b, SPITS_MSG_RESULTS, 7);
    memcpy(spits_batch_add(&b, 42, SPITS_ST_OK, 3), "abc", 3);
    CHECK(spits_batch_add(&b, 43, SPITS_ST_FAILED, 0) != NULL);
    memcpy(spits_batch_add(&b, UINT64_MAX, SPITS_ST_RETURNED, 1), "z", 1);
    spits_batch_seal(&b);
    /* (two short headers and a long one: its id is past 32 bits) */
    CHECK(b.buf.len == SPITS_HDR_SIZE + 2 * SPITS_REC_SHORT + SPITS_REC_MAX + 4);
    static const unsigned char first[] = {
        SPITS_ST_OK, 42, 0, 0, 0, 3, 'a', 'b', 'c',
        SPITS_ST_FAILED, 43, 0, 0, 0, 0,
        SPITS_ST_RETURNED | SPITS_REC_LONG, 0xff};
    CHECK(memcmp(b.buf.data + SPITS_HDR_SIZE, first, sizeof first) == 0);
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == 0);
    CHECK(h.type == SPITS_MSG_RESULTS && h.phase == 7 && h.count == 3 &&
          h.foreign == 0);

    spits_reader_t r;
    spits_rec_t rec;
    spits_reader_init(&r, b.buf.data, b.buf.len);
    CHECK(spits_reader_next(&r, &rec) == 1);
    CHECK(rec.id == 42 && rec.status == SPITS_ST_OK && rec.len == 3 &&
          memcmp(rec.data, "abc", 3) == 0);
    CHECK(spits_reader_next(&r, &rec) == 1);
    CHECK(rec.id == 43 && rec.status == SPITS_ST_FAILED && rec.len == 0);
    CHECK(spits_reader_next(&r, &rec) == 1);
    CHECK(rec.id == UINT64_MAX && rec.status == SPITS_ST_RETURNED &&
          rec.len == 1 && rec.data[0] == 'z');
    CHECK(spits_reader_next(&r, &rec) == 0);

    /* Every truncation of a valid frame is rejected, never over-read. */
    for (size_t cut = 0; cut < b.buf.len; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, b.buf.data, cut);
        CHECK(spits_wire_parse(copy, cut, &h, &why) == -1);
        free(copy);
    }
    /* Trailing garbage, a wrong count, a huge length, a bad status. */
    size_t good = b.buf.len;
    CHECK(spits_buf_reserve(&b.buf, 1) == 0);
    b.buf.data[b.buf.len++] = 0;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1);
    b.buf.len = good;
    b.buf.data[8] = 4;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1 &&
          strstr(why, "count"));
    b.buf.data[8] = 3;
    b.buf.data[SPITS_HDR_SIZE + 5] = 0x7f;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1 &&
          strstr(why, "longer"));
    b.buf.data[SPITS_HDR_SIZE + 5] = 3;
    b.buf.data[SPITS_HDR_SIZE] = 7;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1 &&
          strstr(why, "status"));
    b.buf.data[SPITS_HDR_SIZE] = SPITS_ST_LAST + 1;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1 &&
          strstr(why, "status"));
    b.buf.data[SPITS_HDR_SIZE] = SPITS_ST_OK;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == 0);
    CHECK(wire_rec_selftest() == 0);

    /* Parts: a record between inline ones, read from its part. */
    spits_batch_t pb = {0};
    spits_batch_begin(&pb, SPITS_MSG_TASKS, 2);
    memcpy(spits_batch_add(&pb, 1, 0, 2), "hi", 2);
    CHECK(spits_batch_add_part(&pb, 2, 0, 5) == 0);
    memcpy(spits_batch_add(&pb, 3, 0, 1), "x", 1);
    CHECK(spits_batch_add_part(&pb, 4, 0, 0) == 0);
    spits_batch_seal(&pb);
    CHECK(pb.buf.len == SPITS_HDR_SIZE + 4 * SPITS_REC_SHORT + 3);
    CHECK(pb.buf.data[SPITS_HDR_SIZE + 8] == SPITS_REC_PART &&
          pb.buf.data[SPITS_HDR_SIZE + 13] == 5);
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == 0);
    CHECK(h.count == 4 && h.parts == 2);
    spits_part_t parts[3] = {{(const unsigned char *)"hello", 5},
                             {(const unsigned char *)"", 0},
                             {(const unsigned char *)"z", 1}};
    CHECK(spits_wire_check_parts(pb.buf.data, pb.buf.len, parts, 2, &why) == 0);
    CHECK(spits_wire_check_parts(pb.buf.data, pb.buf.len, parts, 1, &why) == -1 &&
          strstr(why, "fewer"));
    CHECK(spits_wire_check_parts(pb.buf.data, pb.buf.len, parts, 3, &why) == -1 &&
          strstr(why, "more"));
    parts[1].len = 1;
    CHECK(spits_wire_check_parts(pb.buf.data, pb.buf.len, parts, 2, &why) == -1 &&
          strstr(why, "size"));
    parts[1].len = 0;
    spits_reader_init(&r, pb.buf.data, pb.buf.len);
    spits_reader_parts(&r, parts);
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 1 && rec.len == 2 &&
          memcmp(rec.data, "hi", 2) == 0);
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 2 && rec.status == 0 &&
          rec.len == 5 && rec.data == parts[0].data);
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 3 && rec.data[0] == 'x');
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 4 && rec.len == 0);
    CHECK(spits_reader_next(&r, &rec) == 0);
    /* Without its parts a reader gives every record, parts' without data. */
    spits_reader_init(&r, pb.buf.data, pb.buf.len);
    CHECK(spits_reader_next(&r, &rec) == 1 && spits_reader_next(&r, &rec) == 1 &&
          rec.id == 2 && rec.len == 5 && rec.data == NULL);
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 3 &&
          spits_reader_next(&r, &rec) == 1 && rec.id == 4 &&
          spits_reader_next(&r, &rec) == 0);
    /* Each control type's body within its bound, never parsed past it:
     * a TM's control JSON SPITS_CONTROL_MAX bytes, header-only types none. */
    {
        size_t big = SPITS_HDR_SIZE + SPITS_CONTROL_MAX + 1;
        unsigned char *f = calloc(1, big);
        CHECK(f);
        spits_wire_encode_empty(f, SPITS_MSG_STATS, 0);
        memset(f + SPITS_HDR_SIZE, ' ', big - SPITS_HDR_SIZE);
        static const int bounded[] = {SPITS_MSG_HELLO, SPITS_MSG_STATS, SPITS_MSG_BYE};
        for (size_t i = 0; i < 3; i++) {
            f[3] = (unsigned char)bounded[i];
            CHECK(spits_wire_body_max(bounded[i]) == SPITS_CONTROL_MAX);
            CHECK(spits_wire_parse(f, big - 1, &h, &why) == 0 && h.type == bounded[i]);
            CHECK(spits_wire_parse(f, big, &h, &why) == -1 && strstr(why, "larger"));
        }
        static const int empty[] = {SPITS_MSG_HEARTBEAT, SPITS_MSG_END, SPITS_MSG_WHO,
                                    SPITS_MSG_DRAIN};
        for (size_t i = 0; i < 4; i++) {
            f[3] = (unsigned char)empty[i];
            CHECK(spits_wire_parse(f, SPITS_HDR_SIZE, &h, &why) == 0);
            CHECK(spits_wire_parse(f, SPITS_HDR_SIZE + 1, &h, &why) == -1 &&
                  strstr(why, "larger"));
        }
        /* The JM's WELCOME, PHASE and STATUS: the socket's bound only. */
        f[3] = SPITS_MSG_PHASE;
        CHECK(spits_wire_parse(f, big, &h, &why) == 0);
        free(f);
    }
    /* What a relay may claim: 4096 workers a TM it says it has, none
     * and no slots with none (or none said), the count itself bounded. */
    {
        long w = SPITS_WORKERS_MAX, sl = SPITS_SLOTS_MAX;
        spits_relay_cap(3, &w, &sl);
        CHECK(w == 3 * SPITS_TM_WORKERS_MAX && sl == SPITS_SLOTS_MAX);
        w = 10, sl = 20;
        spits_relay_cap(3, &w, &sl);
        CHECK(w == 10 && sl == 20);
        spits_relay_cap(0, &w, &sl);
        CHECK(w == 0 && sl == 0);
        w = 10, sl = 20;
        spits_relay_cap(-1, &w, &sl);
        CHECK(w == 0 && sl == 0);
        w = -1, sl = -1;   /* (not said: left so) */
        spits_relay_cap(0, &w, &sl);
        CHECK(w == -1 && sl == -1);
        w = LONG_MAX, sl = 5;
        spits_relay_cap(LONG_MAX, &w, &sl);
        CHECK(w == SPITS_RELAY_TMS_MAX * SPITS_TM_WORKERS_MAX && sl == 5);
    }

    /* No part in a CANCEL. */
    pb.buf.data[3] = SPITS_MSG_CANCEL;
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == -1 &&
          strstr(why, "CANCEL"));
    spits_batch_free(&pb);

    /* The foreign flag: in RESULTS, read back as foreign with the plain
     * status, inline or with a part; unknown flags still rejected; in
     * TASKS and CANCEL, rejected. */
    spits_batch_begin(&pb, SPITS_MSG_RESULTS, 3);
    memcpy(spits_batch_add(&pb, 10, SPITS_ST_FAILED | SPITS_REC_FOREIGN, 2), "no", 2);
    memcpy(spits_batch_add(&pb, 11, SPITS_ST_OK, 1), "y", 1);
    CHECK(spits_batch_add_part(&pb, 12, SPITS_ST_OK | SPITS_REC_FOREIGN, 5) == 0);
    spits_batch_seal(&pb);
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == 0);
    CHECK(h.count == 3 && h.parts == 1 && h.foreign == 2);
    CHECK(spits_wire_check_parts(pb.buf.data, pb.buf.len, parts, 1, &why) == 0);
    spits_reader_init(&r, pb.buf.data, pb.buf.len);
    spits_reader_parts(&r, parts);
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 10 && rec.foreign == 1 &&
          rec.status == SPITS_ST_FAILED && rec.len == 2 &&
          memcmp(rec.data, "no", 2) == 0);
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 11 && rec.foreign == 0 &&
          rec.status == SPITS_ST_OK && rec.data[0] == 'y');
    CHECK(spits_reader_next(&r, &rec) == 1 && rec.id == 12 && rec.foreign == 1 &&
          rec.status == SPITS_ST_OK && rec.len == 5 && rec.data == parts[0].data);
    CHECK(spits_reader_next(&r, &rec) == 0);
    unsigned char lead = pb.buf.data[SPITS_HDR_SIZE];
    CHECK(lead == (SPITS_REC_FOREIGN | SPITS_ST_FAILED));
    pb.buf.data[SPITS_HDR_SIZE] |= 0x10;   /* (bit 4: no status has it) */
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == -1 &&
          strstr(why, "status"));
    pb.buf.data[SPITS_HDR_SIZE] = lead | SPITS_REC_STATUS;   /* (7: unknown) */
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == -1 &&
          strstr(why, "status"));
    pb.buf.data[SPITS_HDR_SIZE] = (unsigned char)((lead & ~SPITS_REC_STATUS) | (SPITS_ST_LAST + 1));
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == -1 &&
          strstr(why, "status"));
    pb.buf.data[SPITS_HDR_SIZE] = lead;
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == 0);
    pb.buf.data[3] = SPITS_MSG_TASKS;
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == -1 &&
          strstr(why, "foreign"));
    spits_batch_begin(&pb, SPITS_MSG_CANCEL, 3);
    CHECK(spits_batch_add(&pb, 13, SPITS_REC_FOREIGN, 0) != NULL);
    spits_batch_seal(&pb);
    CHECK(spits_wire_parse(pb.buf.data, pb.buf.len, &h, &why) == -1 &&
          strstr(why, "foreign"));
    spits_batch_free(&pb);

    /* HELLO and STATS bodies. */
    {
        spits_hello_t hh;
        spits_stats_t st;
        json_t *j = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:s}", "host", "n1",
                              "pid", 7, "workers", 2, "slots", 4, "held", 1,
                              "attach", 3, "job_id", "J");
        CHECK(j && spits_hello_parse(j, &hh, &why) == 0 && strcmp(hh.host, "n1") == 0 &&
              hh.pid == 7 && hh.workers == 2 && hh.slots == 4 && hh.held == 1 &&
              hh.pending == 0 && hh.attach == 3 && strcmp(hh.job_id, "J") == 0 &&
              !hh.relay);
        json_object_set_new(j, "workers", json_integer(0));    /* a TM: 1 at least */
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "no worker"));
        json_object_set_new(j, "workers", json_integer(4097)); /* ...and 4096 at most */
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "over 4096"));
        json_object_set_new(j, "workers", json_integer(4096));
        CHECK(spits_hello_parse(j, &hh, &why) == 0 && hh.workers == 4096);
        json_object_set_new(j, "workers", json_integer(0));
        json_object_set_new(j, "relay", json_object());       /* a relay: 0 is fine */
        CHECK(spits_hello_parse(j, &hh, &why) == 0 && hh.workers == 0 && hh.relay &&
              hh.tms == -1);
        /* A relay's TM count: 0..SPITS_RELAY_TMS_MAX, an integer. */
        json_object_set_new(json_object_get(j, "relay"), "tms", json_integer(3));
        CHECK(spits_hello_parse(j, &hh, &why) == 0 && hh.tms == 3);
        json_object_set_new(json_object_get(j, "relay"), "tms",
                            json_integer(SPITS_RELAY_TMS_MAX + 1));
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "TM count"));
        json_object_set_new(json_object_get(j, "relay"), "tms", json_string("3"));
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "TM count"));
        json_object_set_new(j, "relay", json_string("x"));
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "relay"));
        json_object_del(j, "relay");
        json_object_set_new(j, "workers", json_integer(1));
        json_object_del(j, "attach");
        json_object_set_new(j, "pending", json_integer(-1));
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "pending"));
        json_object_set_new(j, "pending", json_integer(5));
        CHECK(spits_hello_parse(j, &hh, &why) == 0 && hh.attach == -1 && hh.pending == 5);
        json_object_set_new(j, "slots", json_integer(SPITS_SLOTS_MAX + 1));
        CHECK(spits_hello_parse(j, &hh, &why) == -1 && strstr(why, "slots"));
        json_decref(j);
        j = json_pack("{s:f, s:i}", "busy_s", 1.5, "runs", 9);
        CHECK(j && spits_stats_parse(j, &st, &why) == 0 && st.busy_s == 1.5 &&
              st.runs == 9 && st.workers == -1 && st.slots == -1);
        json_object_set_new(j, "workers", json_integer(3));
        json_object_set_new(j, "slots", json_integer(6));
        CHECK(spits_stats_parse(j, &st, &why) == 0 && st.workers == 3 && st.slots == 6 &&
              st.running == -1 && st.queued == -1);
        json_object_set_new(j, "running", json_integer(2));
        json_object_set_new(j, "queued", json_integer(110));
        CHECK(spits_stats_parse(j, &st, &why) == 0 && st.running == 2 && st.queued == 110);
        json_object_set_new(j, "queued", json_integer(-1));
        CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "queued"));
        json_object_del(j, "queued");
        CHECK(st.tms == -1);
        json_object_set_new(j, "tms", json_integer(2));
        CHECK(spits_stats_parse(j, &st, &why) == 0 && st.tms == 2);
        json_object_set_new(j, "tms", json_integer(-1));
        CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "tms"));
        json_object_del(j, "tms");
        json_object_set_new(j, "workers", json_integer(SPITS_WORKERS_MAX + 1));
        CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "workers"));
        json_object_del(j, "runs");
        CHECK(spits_stats_parse(j, &st, &why) == -1 && strstr(why, "runs"));
        json_decref(j);
    }

    if (worker_res_selftest() != 0)
        return -1;

    /* Versions and types. */
    b.buf.data[2] = SPITS_PROTO_VERSION + 1;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1 &&
          strstr(why, "newer"));
    b.buf.data[2] = 0;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1 &&
          strstr(why, "older"));
    b.buf.data[2] = SPITS_PROTO_VERSION;
    b.buf.data[3] = 0;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1);
    b.buf.data[3] = SPITS_MSG_LAST + 1;
    CHECK(spits_wire_parse(b.buf.data, b.buf.len, &h, &why) == -1);
    spits_batch_free(&b);

    /* JSON control messages. */
    spits_buf_t out = {0};
    json_t *j = json_pack("{s:s, s:i}", "host", "node1", "workers", 4);
    CHECK(spits_wire_encode_json(&out, SPITS_MSG_HELLO, 0, j) == 0);
    json_decref(j);
    CHECK(spits_wire_parse(out.data, out.len, &h, &why) == 0);
    CHECK(h.type == SPITS_MSG_HELLO);
    j = spits_wire_decode_json(out.data, out.len, &why);
    CHECK(j && json_integer_value(json_object_get(j, "workers")) == 4);
    json_decref(j);
    out.data[out.len - 1] = '[';
    CHECK(spits_wire_decode_json(out.data, out.len, &why) == NULL);
    spits_buf_free(&out);

    unsigned char hb[SPITS_HDR_SIZE];
    spits_wire_encode_empty(hb, SPITS_MSG_HEARTBEAT, 2);
    CHECK(spits_wire_parse(hb, sizeof hb, &h, &why) == 0 &&
          h.type == SPITS_MSG_HEARTBEAT && h.phase == 2);
    hb[8] = 1;
    CHECK(spits_wire_parse(hb, sizeof hb, &h, &why) == -1);
    return fail_selftest();
}

#endif /* SPITS_SELFTEST */
