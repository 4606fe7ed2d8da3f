/*
 * parts.c - a message's parts as ZeroMQ frames (see parts.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"
#include "zmqutil.h"

uint64_t spits_parts_min(void)
{
#ifdef __SANITIZE_THREAD__
    return UINT64_MAX;
#else
    return SPITS_PART_MIN;
#endif
}

/* Room for `more` frames. zmq_msg_t is not to be copied bytewise, so a
 * larger array takes each frame with zmq_msg_move. */
static int parts_reserve(spits_parts_t *p, size_t more)
{
    if (p->cap - p->n >= more)
        return 0;
    size_t cap = p->cap ? p->cap : 4;
    while (cap - p->n < more)
        cap *= 2;
    zmq_msg_t *grown = malloc(cap * sizeof *grown);
    if (!grown)
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        zmq_msg_init(&grown[i]);
        zmq_msg_move(&grown[i], &p->msgs[i]);
        zmq_msg_close(&p->msgs[i]);
    }
    free(p->msgs);
    p->msgs = grown;
    p->cap = cap;
    return 0;
}

void spits_parts_free(spits_parts_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        zmq_msg_close(&p->msgs[i]);
    free(p->msgs);
    free(p->view);
    memset(p, 0, sizeof *p);
}

/* Room for one more received frame and its view. What a peer's records
 * claim sizes nothing: the arrays grow (doubling) with the frames that
 * came, which libzmq already holds. */
static int parts_reserve_view(spits_parts_t *p)
{
    if (p->n < p->cap && p->view)
        return 0;
    if (parts_reserve(p, 1) != 0)
        return -1;
    spits_part_t *view = realloc(p->view, p->cap * sizeof *view);
    if (!view)
        return -1;
    p->view = view;
    return 0;
}

int spits_parts_recv(spits_parts_t *out, void *sock, const spits_hdr_t *h,
                     zmq_msg_t *first, int type, const char **why)
{
    uint64_t want = h->parts;
    int more = zmq_msg_more(first), rc = 0;

    memset(out, 0, sizeof *out);
    if (!want && !more)
        return 0;
    *why = NULL;
    if (h->type != type || !want || !more) {
        *why = "frames that do not match its records";
        rc = -1;
    }
    while (rc == 0 && more && out->n < want) {
        if (parts_reserve_view(out) != 0) {
            rc = -2;
            break;
        }
        zmq_msg_t *m = &out->msgs[out->n];
        zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(m);
            *why = "a message cut short";
            rc = -1;
            more = 0;
            break;
        }
        more = zmq_msg_more(m);
        out->view[out->n++] = (spits_part_t){zmq_msg_data(m), zmq_msg_size(m)};
    }
    if (rc == 0 && (more || out->n < want)) {
        *why = more ? "more frames than its records have parts"
                    : "fewer frames than its records have parts";
        rc = -1;
    }
    if (rc == 0 && spits_wire_check_parts(zmq_msg_data(first), zmq_msg_size(first),
                                          out->view, out->n, why) == 0)
        return 0;
    if (more)
        spits_zmq_drop_frames(sock);
    spits_parts_free(out);
    return rc ? rc : -1;
}

int spits_parts_add(spits_parts_t *p, zmq_msg_t *m)
{
    if (parts_reserve(p, 1) != 0)
        return -1;
    zmq_msg_init(&p->msgs[p->n]);
    zmq_msg_move(&p->msgs[p->n++], m);
    return 0;
}

int spits_parts_add_record(spits_batch_t *b, spits_parts_t *p, uint64_t id, uint32_t status,
                           zmq_msg_t *m)
{
    uint32_t len = (uint32_t)zmq_msg_size(m);
    if (spits_parts_add(p, m) != 0)
        return -1;
    if (spits_batch_add_part(b, id, status, len) != 0) {
        zmq_msg_move(m, &p->msgs[--p->n]);   /* (m as it was) */
        zmq_msg_close(&p->msgs[p->n]);
        return -1;
    }
    return 0;
}

int spits_parts_move(spits_parts_t *dst, spits_parts_t *src)
{
    if (!src->n)
        return 0;
    if (parts_reserve(dst, src->n) != 0)
        return -1;
    for (size_t i = 0; i < src->n; i++) {
        zmq_msg_init(&dst->msgs[dst->n]);
        zmq_msg_move(&dst->msgs[dst->n++], &src->msgs[i]);
    }
    spits_parts_free(src);
    return 0;
}

int spits_parts_send_buf(void *sock, spits_buf_t *first, spits_parts_t *p, int flags)
{
    if (spits_zmq_send_buf(sock, first, flags | (p->n ? ZMQ_SNDMORE : 0)) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < p->n; i++) {
        int more = i + 1 < p->n ? ZMQ_SNDMORE : 0;
        if (spits_zmq_msg_send_more(&p->msgs[i], sock, flags | more) < 0) {
            rc = -2;
            break;
        }
    }
    spits_parts_free(p);   /* (sent frames are empty now) */
    return rc;
}

int spits_parts_inline(spits_batch_t *b, spits_parts_t *p)
{
    spits_part_t *view = malloc((p->n ? p->n : 1) * sizeof *view);
    spits_batch_t flat = {0};
    spits_reader_t r;
    spits_rec_t rec;
    spits_hdr_t h;
    const char *why;
    int ok = view != NULL;

    for (size_t i = 0; ok && i < p->n; i++)
        view[i] = (spits_part_t){zmq_msg_data(&p->msgs[i]), zmq_msg_size(&p->msgs[i])};
    /* (our own batch and its parts: checked all the same, as any that
     * do not match would be read past their ends) */
    ok = ok && spits_wire_parse(b->buf.data, b->buf.len, &h, &why) == 0 &&
         spits_wire_check_parts(b->buf.data, b->buf.len, view, p->n, &why) == 0;
    spits_batch_begin(&flat, ok ? h.type : SPITS_MSG_RESULTS, ok ? h.phase : 0);
    ok = ok && flat.buf.data &&
         spits_buf_reserve(&flat.buf, b->buf.len + spits_parts_bytes(p)) == 0;
    spits_reader_init(&r, b->buf.data, b->buf.len);
    spits_reader_parts(&r, view);
    while (ok && spits_reader_next(&r, &rec)) {
        uint32_t status = rec.status | (rec.foreign ? SPITS_REC_FOREIGN : 0);
        unsigned char *dst = spits_batch_add(&flat, rec.id, status, rec.len);
        ok = dst != NULL;
        if (ok && rec.len)
            memcpy(dst, rec.data, rec.len);
    }
    free(view);
    if (!ok) {
        spits_batch_free(&flat);
        return -1;
    }
    spits_batch_seal(&flat);
    spits_batch_free(b);
    spits_parts_free(p);
    *b = flat;
    return 0;
}

size_t spits_parts_bytes(const spits_parts_t *p)
{
    size_t bytes = 0;
    for (size_t i = 0; i < p->n; i++)
        bytes += zmq_msg_size((zmq_msg_t *)&p->msgs[i]);
    return bytes;
}

void spits_rx_part_free(void *data, void *hint)
{
    (void)data;
    spits_rx_release(hint, 1);
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "parts selftest: %s:%d: %s\n", __FILE__, __LINE__, #c); \
            goto out;                                                         \
        }                                                                     \
    } while (0)

static void free_bytes(void *data, void *hint)
{
    (void)hint;
    free(data);
}

static void count_free(void *data, void *hint)
{
    free(data);
    ++*(int *)hint;
}

/* A message's references: it goes with the last, its frame and parts
 * freed, whichever way they are dropped. */
static int selftest_rx(void)
{
    int freed = 0, rc = -1;
    spits_rx_t *rx = calloc(1, sizeof *rx);
    void *bytes = malloc(8), *part = malloc(8);
    zmq_msg_t m;
    CHECK(rx && bytes && part);
    zmq_msg_init_data(&rx->msg, bytes, 8, count_free, &freed);
    zmq_msg_init_data(&m, part, 8, count_free, &freed);
    bytes = part = NULL;
    CHECK(spits_parts_add(&rx->parts, &m) == 0);
    atomic_init(&rx->refs, 2);
    spits_rx_hold(rx, 2);
    spits_rx_release(rx, 0);
    spits_rx_release(rx, 2);
    spits_rx_part_free(NULL, rx);
    CHECK(freed == 0);
    spits_rx_part_free(NULL, rx);
    rx = NULL;
    CHECK(freed == 2);
    rc = 0;
out:
    free(bytes);
    free(part);
    free(rx);
    return rc;
}

/* Sends batch's frame and n parts of base + step * i bytes, then a
 * one-frame "next". 0, or -1. */
static int selftest_send(void *a, spits_batch_t *batch, spits_parts_t *out,
                         unsigned n, size_t base, size_t step)
{
    zmq_msg_t m;
    for (unsigned i = 0; i < n; i++) {
        if (zmq_msg_init_size(&m, base + step * i) != 0)
            return -1;
        int added = spits_parts_add(out, &m);
        zmq_msg_close(&m);
        if (added != 0)
            return -1;
    }
    if (spits_parts_send_buf(a, &batch->buf, out, 0) != 0)
        return -1;
    return zmq_send(a, "next", 4, 0) == 4 ? 0 : -1;
}

int spits_parts_selftest(void)
{
    if (selftest_rx() != 0)
        return -1;
    int rc = -1;
    void *ctx = zmq_ctx_new(), *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
    spits_parts_t out = {0}, got = {0}, more = {0};
    spits_batch_t batch = {0};
    zmq_msg_t first, m;
    spits_hdr_t h;
    spits_reader_t r;
    spits_rec_t rec;
    const char *why;

    zmq_msg_init(&first);
    CHECK(ctx && a && b);
    CHECK(zmq_bind(a, "inproc://parts-selftest") == 0);
    CHECK(zmq_connect(b, "inproc://parts-selftest") == 0);

    /* Ten records, every third a part of 1,000 + i bytes (i its id),
     * the frames added across two lists and moved into one (more than
     * the first capacity, so the array grows by moving frames). */
    spits_batch_begin(&batch, SPITS_MSG_RESULTS, 7);
    for (unsigned i = 0; i < 10; i++) {
        if (i % 3) {
            unsigned char *dst = spits_batch_add(&batch, i, 0, 3);
            CHECK(dst);
            memcpy(dst, "abc", 3);
            continue;
        }
        unsigned char *bytes = malloc(1000 + i);
        CHECK(bytes);
        memset(bytes, (int)i, 1000 + i);
        CHECK(zmq_msg_init_data(&m, bytes, 1000 + i, free_bytes, NULL) == 0);
        if (i < 5) {
            CHECK(spits_parts_add_record(&batch, &out, i, 0, &m) == 0);
        } else {
            CHECK(spits_batch_add_part(&batch, i, 0, 1000 + i) == 0);
            CHECK(spits_parts_add(&more, &m) == 0);
        }
        CHECK(zmq_msg_size(&m) == 0);
        zmq_msg_close(&m);
    }
    /* ...a record and its frame go in together or not at all: a batch
     * never begun takes neither, and the frame keeps its bytes. */
    spits_batch_t unbegun = {0};
    CHECK(zmq_msg_init_size(&m, 5) == 0);
    memset(zmq_msg_data(&m), 'z', 5);
    CHECK(spits_parts_add_record(&unbegun, &out, 99, 0, &m) == -1 && out.n == 2);
    CHECK(zmq_msg_size(&m) == 5 && ((const char *)zmq_msg_data(&m))[4] == 'z');
    CHECK(unbegun.count == 0 && unbegun.buf.len == 0);
    zmq_msg_close(&m);
    CHECK(spits_parts_move(&out, &more) == 0 && more.n == 0 && out.n == 4);
    CHECK(spits_parts_bytes(&out) == 1000 + 1003 + 1006 + 1009);
    spits_batch_seal(&batch);
    CHECK(spits_parts_send_buf(a, &batch.buf, &out, 0) == 0);
    CHECK(out.n == 0 && out.msgs == NULL);

    /* Received: four parts, each its record's bytes. */
    CHECK(zmq_msg_recv(&first, b, 0) >= 0);
    CHECK(spits_wire_parse(zmq_msg_data(&first), zmq_msg_size(&first), &h, &why) == 0);
    CHECK(h.count == 10 && h.parts == 4);
    CHECK(spits_parts_recv(&got, b, &h, &first, SPITS_MSG_RESULTS, &why) == 0);
    CHECK(got.n == 4);
    unsigned n = 0;
    spits_reader_init(&r, zmq_msg_data(&first), zmq_msg_size(&first));
    spits_reader_parts(&r, got.view);
    while (spits_reader_next(&r, &rec)) {
        CHECK(rec.id == n++);
        if (rec.id % 3) {
            CHECK(rec.len == 3 && memcmp(rec.data, "abc", 3) == 0);
        } else {
            CHECK(rec.len == 1000 + rec.id);
            CHECK(rec.data[0] == rec.id && rec.data[rec.len - 1] == rec.id);
        }
    }
    CHECK(n == 10);
    spits_parts_free(&got);

    /* Inline, for a peer that takes no parts: the same records, the
     * parts' bytes in the frame, a foreign flag kept. */
    spits_batch_begin(&batch, SPITS_MSG_RESULTS, 9);
    for (unsigned i = 0; i < 3; i++) {
        unsigned char *bytes = malloc(70000);
        CHECK(bytes);
        memset(bytes, 'a' + (int)i, 70000);
        CHECK(zmq_msg_init_data(&m, bytes, 70000, free_bytes, NULL) == 0);
        CHECK(spits_parts_add(&out, &m) == 0);
        zmq_msg_close(&m);
        CHECK(spits_batch_add_part(&batch, 10 + i, i == 1 ? SPITS_REC_FOREIGN : 0, 70000) == 0);
        CHECK(spits_batch_add(&batch, 20 + i, SPITS_ST_RETURNED, 0));
    }
    spits_batch_seal(&batch);
    CHECK(spits_parts_inline(&batch, &out) == 0 && out.n == 0);
    CHECK(spits_wire_parse(batch.buf.data, batch.buf.len, &h, &why) == 0);
    CHECK(h.type == SPITS_MSG_RESULTS && h.phase == 9 && h.count == 6 && h.parts == 0 && h.foreign == 1);
    spits_reader_init(&r, batch.buf.data, batch.buf.len);
    for (unsigned i = 0; i < 3; i++) {
        CHECK(spits_reader_next(&r, &rec) && rec.id == 10 + i && rec.len == 70000 && !rec.part);
        CHECK(rec.status == SPITS_ST_OK && rec.foreign == (i == 1));
        CHECK(rec.data[0] == 'a' + i && rec.data[69999] == 'a' + i);
        CHECK(spits_reader_next(&r, &rec) && rec.id == 20 + i && rec.status == SPITS_ST_RETURNED);
    }
    CHECK(!spits_reader_next(&r, &rec));
    /* Parts that do not match their records: refused, both untouched. */
    spits_batch_begin(&batch, SPITS_MSG_RESULTS, 9);
    CHECK(spits_batch_add_part(&batch, 1, 0, 70000) == 0);
    CHECK(spits_batch_add_part(&batch, 2, 0, 70000) == 0);
    spits_batch_seal(&batch);
    CHECK(zmq_msg_init_size(&m, 70000) == 0);
    CHECK(spits_parts_add(&out, &m) == 0);
    zmq_msg_close(&m);
    size_t before = batch.buf.len;
    CHECK(spits_parts_inline(&batch, &out) == -1 && out.n == 1 && batch.buf.len == before);
    spits_parts_free(&out);
    /* (the frames below reuse the first batch's layout) */
    spits_batch_begin(&batch, SPITS_MSG_RESULTS, 7);
    for (unsigned i = 0; i < 10; i++) {
        unsigned char *dst;
        if (i % 3) {
            CHECK((dst = spits_batch_add(&batch, i, 0, 3)));
            memcpy(dst, "abc", 3);
        } else {
            CHECK(spits_batch_add_part(&batch, i, 0, 1000 + i) == 0);
        }
    }

    /* The same message where only TASKS may have parts: refused, its
     * frames dropped, so the next message reads clean. (Its frame is
     * small, so it goes as a copy: the batch stays whole for the next.) */
    spits_batch_seal(&batch);
    CHECK(batch.buf.len < SPITS_ZMQ_MOVE_MIN);
    CHECK(selftest_send(a, &batch, &out, 4, 1000, 3) == 0);
    CHECK(zmq_msg_recv(&first, b, 0) >= 0);
    CHECK(spits_wire_parse(zmq_msg_data(&first), zmq_msg_size(&first), &h, &why) == 0);
    CHECK(spits_parts_recv(&got, b, &h, &first, SPITS_MSG_TASKS, &why) == -1);
    CHECK(strcmp(why, "frames that do not match its records") == 0 && got.n == 0);
    CHECK(zmq_msg_recv(&first, b, 0) == 4 && memcmp(zmq_msg_data(&first), "next", 4) == 0);

    /* One frame short: the record's sizes do not match. */
    for (unsigned i = 0; i < 4; i++) {
        CHECK(zmq_msg_init_size(&m, 1000 + 3 * i + (i == 2)) == 0);
        CHECK(spits_parts_add(&out, &m) == 0);
        zmq_msg_close(&m);
    }
    CHECK(spits_parts_send_buf(a, &batch.buf, &out, 0) == 0);
    CHECK(zmq_msg_recv(&first, b, 0) >= 0);
    CHECK(spits_wire_parse(zmq_msg_data(&first), zmq_msg_size(&first), &h, &why) == 0);
    CHECK(spits_parts_recv(&got, b, &h, &first, SPITS_MSG_RESULTS, &why) == -1 && got.n == 0);

    /* What a message's records claim sizes nothing: 100,000 records of
     * parts with one frame after them is refused as "fewer frames" (the
     * lists grow with the frames that came); one with more frames than
     * parts, as "more frames"; either way the next message reads clean.
     * 100 frames that match: the lists grew with them, doubling. */
    for (int round = 0; round < 3; round++) {
        unsigned claim = round == 0 ? 100000 : round == 1 ? 2 : 100;
        unsigned frames = round == 0 ? 1 : round == 1 ? 3 : 100;
        spits_batch_begin(&batch, SPITS_MSG_RESULTS, 7);
        for (unsigned i = 0; i < claim; i++)
            CHECK(spits_batch_add_part(&batch, i, 0, 1) == 0);
        spits_batch_seal(&batch);
        CHECK(selftest_send(a, &batch, &out, frames, 1, 0) == 0);
        CHECK(zmq_msg_recv(&first, b, 0) >= 0);
        CHECK(spits_wire_parse(zmq_msg_data(&first), zmq_msg_size(&first), &h, &why) == 0);
        CHECK(h.parts == claim);
        rc = spits_parts_recv(&got, b, &h, &first, SPITS_MSG_RESULTS, &why);
        if (round == 2) {
            CHECK(rc == 0 && got.n == 100 && got.cap == 128 && got.view[99].len == 1);
            spits_parts_free(&got);
        } else {
            CHECK(rc == -1 && got.n == 0 && got.msgs == NULL && got.view == NULL);
            CHECK(strcmp(why, round == 0 ? "fewer frames than its records have parts"
                                         : "more frames than its records have parts") == 0);
        }
        rc = -1;
        CHECK(zmq_msg_recv(&first, b, 0) == 4 && memcmp(zmq_msg_data(&first), "next", 4) == 0);
    }
    rc = 0;
out:
    spits_parts_free(&out);
    spits_parts_free(&more);
    spits_parts_free(&got);
    spits_batch_free(&batch);
    zmq_msg_close(&first);
    if (a)
        zmq_close(a);
    if (b)
        zmq_close(b);
    if (ctx)
        zmq_ctx_term(ctx);
    return rc;
}
#endif
