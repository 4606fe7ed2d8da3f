/*
 * fuzz_wire.c - libFuzzer target: the wire decoder (spits_wire_parse, the
 * record reader, the JSON control bodies). Every frame a peer can send
 * goes through these, so any input must be either accepted with records
 * that lie inside the frame, or refused with a reason. An accepted frame
 * has one form: its records written again are the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    spits_hdr_t h;
    const char *why = NULL;

    if (spits_wire_parse(data, len, &h, &why) != 0) {
        if (!why)
            abort();                     /* a refusal must say why */
        return 0;
    }
    if (spits_wire_has_records(h.type)) {
        spits_reader_t r;
        spits_rec_t rec;
        uint64_t n = 0, nparts = 0;
        spits_reader_init(&r, data, len);
        while (spits_reader_next(&r, &rec)) {
            if (!rec.data)
                nparts++;                /* a part's record, read without parts */
            else if (rec.data < data || rec.data + rec.len > data + len)
                abort();                 /* a record outside the frame */
            if (rec.status > SPITS_ST_LAST)
                abort();
            n++;
        }
        if (n != h.count || nparts != h.parts)
            abort();
        spits_batch_t b = {0};
        spits_batch_begin(&b, h.type, h.phase);
        spits_reader_init(&r, data, len);
        while (spits_reader_next(&r, &rec)) {
            uint32_t st = rec.status | (rec.foreign ? SPITS_REC_FOREIGN : 0);
            unsigned char *dst = NULL;
            if (rec.part ? spits_batch_add_part(&b, rec.id, st, rec.len) != 0
                         : !(dst = spits_batch_add(&b, rec.id, st, rec.len)))
                abort();
            if (dst && rec.len)
                memcpy(dst, rec.data, rec.len);
        }
        spits_batch_seal(&b);
        if (b.buf.len != len || memcmp(b.buf.data, data, len) != 0)
            abort();
        spits_batch_free(&b);
        /* Parts of the sizes the records say pass; one fewer fails. */
        if (h.parts && h.parts <= 4096) {
            static spits_part_t parts[4096];
            size_t k = 0;
            spits_reader_init(&r, data, len);
            while (spits_reader_next(&r, &rec))
                if (!rec.data)
                    parts[k++] = (spits_part_t){NULL, rec.len};
            if (spits_wire_check_parts(data, len, parts, k, &why) != 0 ||
                spits_wire_check_parts(data, len, parts, k - 1, &why) == 0)
                abort();
        }
    } else {
        json_t *j = spits_wire_decode_json(data, len, &why);
        json_decref(j);
    }
    return 0;
}
