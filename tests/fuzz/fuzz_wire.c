/*
 * fuzz_wire.c - libFuzzer target: the wire decoder (spits_wire_parse, the
 * record reader, the JSON control bodies). Every frame a peer can send
 * goes through these, so any input must be either accepted with records
 * that lie inside the frame, or refused with a reason.
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
        uint64_t n = 0;
        spits_reader_init(&r, data, len);
        while (spits_reader_next(&r, &rec)) {
            if (rec.data < data || rec.data + rec.len > data + len)
                abort();                 /* a record outside the frame */
            n++;
        }
        if (n != h.count)
            abort();
    } else {
        json_t *j = spits_wire_decode_json(data, len, &why);
        json_decref(j);
    }
    return 0;
}
