/*
 * fuzz_journal.c - libFuzzer target: the journal reader that --resume
 * trusts (spits_journal_parse). Whatever the bytes, it must either refuse
 * them or return records that lie inside them, in phase order.
 */
#include <stdlib.h>

#include "journal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    char err[512];
    spits_jr_t jr;
    if (spits_journal_parse(data, len, "fuzz", &jr, err, sizeof err) != 0)
        return 0;
    if (jr.valid_len + jr.torn_bytes != len || !jr.job)
        abort();
    for (uint32_t i = 0; i < jr.nphases; i++) {
        const spits_jr_phase_t *p = &jr.phases[i];
        if (p->id != i + 1)
            abort();
        for (size_t r = 0; r < p->nresults; r++)
            if (p->results[r].data < data ||
                p->results[r].data + p->results[r].len > data + len)
                abort();
    }
    spits_journal_unload(&jr);
    return 0;
}
