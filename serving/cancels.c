/*
 * cancels.c - CANCEL messages, one per TM (see cancels.h).
 *
 * The TM answers each cancelled copy with a RETURNED record (it was still
 * queued) or with its result, then a duplicate (it was running), so the
 * hop's slot accounting stays exact whichever happens.
 */
#include <stdlib.h>

#include "cancels.h"

static int cancels_by_slot(const void *a, const void *b)
{
    const sched_cancel_t *x = a, *y = b;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

size_t cancels_send(sched_cancel_t *c, size_t n, uint32_t phase, spits_batch_t *out,
                    const cancels_sink_t *sink)
{
    size_t sent = 0;
    if (n)   /* (c may be NULL then, which qsort does not take) */
        qsort(c, n, sizeof *c, cancels_by_slot);
    for (size_t i = 0; i < n;) {
        size_t j = i, named = 0;
        spits_batch_begin(out, SPITS_MSG_CANCEL, phase);
        for (; j < n && c[j].slot == c[i].slot; j++)
            named += spits_batch_add(out, sink->by_hash ? c[j].hash : c[j].id, 0, 0) != NULL;
        spits_batch_seal(out);
        if (named && sink->send(sink->arg, c[i].slot, out->buf.data, out->buf.len) == 0)
            sent += named;
        i = j;
    }
    return sent;
}

#ifdef SPITS_SELFTEST
#include <stdio.h>
#include <string.h>

/* A sink that keeps each message's slot and ids; slot 7 is gone. */
typedef struct {
    int slots[8];
    uint64_t ids[8][8];
    size_t nids[8], msgs;
} cancels_fake_t;

static int cancels_fake_send(void *arg, int slot, const void *buf, size_t len)
{
    cancels_fake_t *f = arg;
    spits_hdr_t h;
    const char *why;
    spits_reader_t r;
    spits_rec_t rec;
    if (slot == 7)
        return -1;
    if (f->msgs == 8 || spits_wire_parse(buf, len, &h, &why) != 0 ||
        h.type != SPITS_MSG_CANCEL || h.phase != 5)
        return -1;
    f->slots[f->msgs] = slot;
    spits_reader_init(&r, buf, len);
    while (spits_reader_next(&r, &rec) && f->nids[f->msgs] < 8) {
        if (rec.status != 0 || rec.len != 0)
            return -1;   /* (a CANCEL record is an id alone) */
        f->ids[f->msgs][f->nids[f->msgs]++] = rec.id;
    }
    f->msgs++;
    return 0;
}

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "cancels selftest: %s:%d: %s\n", __FILE__,        \
                    __LINE__, #c);                                            \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int cancels_selftest(void)
{
    spits_batch_t out;
    memset(&out, 0, sizeof out);
    sched_cancel_t lo = {1, 0, 0}, hi = {2, 0, 0};
    CHECK(cancels_by_slot(&lo, &hi) == -1 && cancels_by_slot(&hi, &lo) == 1 &&
          cancels_by_slot(&lo, &lo) == 0);
    for (int by_hash = 0; by_hash < 2; by_hash++) {
        /* slots interleaved: 3, 1, 3, 7 (gone), 1, 3 */
        sched_cancel_t c[] = {{3, 10, 110}, {1, 11, 111}, {3, 12, 112},
                              {7, 13, 113}, {1, 14, 114}, {3, 15, 115}};
        cancels_fake_t f;
        memset(&f, 0, sizeof f);
        cancels_sink_t sink = {cancels_fake_send, &f, by_hash};
        uint64_t k = by_hash ? 100 : 0;
        CHECK(cancels_send(c, 6, 5, &out, &sink) == 5);
        CHECK(f.msgs == 2);
        CHECK(f.slots[0] == 1 && f.nids[0] == 2);
        CHECK(f.slots[1] == 3 && f.nids[1] == 3);
        /* (qsort is not stable: the ids of a slot in any order) */
        CHECK(f.ids[0][0] + f.ids[0][1] == 2 * k + 11 + 14);
        CHECK(f.ids[0][0] == k + 11 || f.ids[0][0] == k + 14);
        CHECK(f.ids[1][0] + f.ids[1][1] + f.ids[1][2] == 3 * k + 10 + 12 + 15);
        for (size_t i = 0; i < 3; i++)
            CHECK(f.ids[1][i] == k + 10 || f.ids[1][i] == k + 12 || f.ids[1][i] == k + 15);
    }
    cancels_fake_t f;
    memset(&f, 0, sizeof f);
    cancels_sink_t sink = {cancels_fake_send, &f, 0};
    CHECK(cancels_send(NULL, 0, 5, &out, &sink) == 0 && f.msgs == 0);
    /* only the n given: the next entry, of the same slot, is not one */
    sched_cancel_t two[2] = {{0, 42, 0}, {0, 43, 0}};
    CHECK(cancels_send(two, 1, 5, &out, &sink) == 1);
    CHECK(f.msgs == 1 && f.slots[0] == 0 && f.nids[0] == 1 && f.ids[0][0] == 42);
    spits_batch_free(&out);
    return 0;
}
#endif
