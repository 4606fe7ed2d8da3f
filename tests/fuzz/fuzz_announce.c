/*
 * fuzz_announce.c - libFuzzer target: the parsers of the files a TM reads
 * from a job dir, jm.json (spits_announce_parse) and tm.key
 * (spits_keys_parse), fed any bytes as JSON.
 */
#include <stdlib.h>

#include "jobdir.h"
#include "keys.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    char err[512];
    spits_announce_t a;
    spits_keys_t k;
    json_t *doc = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, NULL);
    if (!doc)
        return 0;
    if (spits_announce_parse(doc, &a, err, sizeof err) == 0 &&
        (!a.job_id[0] || !a.endpoint[0] || a.pid <= 0))
        abort();                         /* accepted without its fields */
    if (spits_keys_parse(doc, &k, 0, "fuzz", err, sizeof err) == 0 &&
        (!spits_key_valid(k.server_public) || !spits_key_valid(k.client_secret)))
        abort();                         /* accepted a malformed key */
    json_decref(doc);
    return 0;
}
