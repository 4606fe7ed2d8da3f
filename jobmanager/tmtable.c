/*
 * tmtable.c - the registry of Task Managers (see tmtable.h).
 *
 * Entries live in an array indexed by slot; an open-addressing hash table
 * of slot numbers finds a TM from the routing id on each message.
 */
#include <stdlib.h>
#include <string.h>

#include "tmtable.h"

struct jm_tmtab {
    jm_tm_t **tms;
    size_t n, cap;
    int32_t *hash;           /* slot, or -1 */
    size_t hcap;             /* power of two, > 2 * n */
};

static uint64_t rid_hash(const unsigned char *rid, size_t len)
{
    uint64_t h = 1469598103934665603ULL;     /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ rid[i]) * 1099511628211ULL;
    return h;
}

jm_tmtab_t *jm_tmtab_new(void)
{
    jm_tmtab_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->hcap = 64;
    t->hash = malloc(t->hcap * sizeof *t->hash);
    if (!t->hash) {
        free(t);
        return NULL;
    }
    memset(t->hash, 0xff, t->hcap * sizeof *t->hash);
    return t;
}

void jm_tmtab_destroy(jm_tmtab_t **tp)
{
    jm_tmtab_t *t = *tp;
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->tms[i]);
    free(t->tms);
    free(t->hash);
    free(t);
    *tp = NULL;
}

jm_tm_t *jm_tmtab_find(const jm_tmtab_t *t, const void *rid, size_t len)
{
    size_t mask = t->hcap - 1;
    for (size_t i = rid_hash(rid, len) & mask; t->hash[i] >= 0; i = (i + 1) & mask) {
        jm_tm_t *tm = t->tms[t->hash[i]];
        if (tm->ridlen == len && memcmp(tm->rid, rid, len) == 0)
            return tm;
    }
    return NULL;
}

static void hash_insert(int32_t *hash, size_t hcap, const jm_tm_t *tm)
{
    size_t mask = hcap - 1, i = rid_hash(tm->rid, tm->ridlen) & mask;
    while (hash[i] >= 0)
        i = (i + 1) & mask;
    hash[i] = tm->slot;
}

jm_tm_t *jm_tmtab_add(jm_tmtab_t *t, const void *rid, size_t len)
{
    if (len == 0 || len > JM_RID_MAX)
        return NULL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        jm_tm_t **tms = realloc(t->tms, cap * sizeof *tms);
        if (!tms)
            return NULL;
        t->tms = tms;
        t->cap = cap;
    }
    if (2 * (t->n + 1) >= t->hcap) {
        size_t hcap = t->hcap * 2;
        int32_t *hash = malloc(hcap * sizeof *hash);
        if (!hash)
            return NULL;
        memset(hash, 0xff, hcap * sizeof *hash);
        for (size_t i = 0; i < t->n; i++)
            hash_insert(hash, hcap, t->tms[i]);
        free(t->hash);
        t->hash = hash;
        t->hcap = hcap;
    }
    jm_tm_t *tm = calloc(1, sizeof *tm);
    if (!tm)
        return NULL;
    memcpy(tm->rid, rid, len);
    tm->ridlen = len;
    tm->slot = (int)t->n;
    t->tms[t->n++] = tm;
    hash_insert(t->hash, t->hcap, tm);
    return tm;
}

size_t jm_tmtab_count(const jm_tmtab_t *t)
{
    return t->n;
}

jm_tm_t *jm_tmtab_at(const jm_tmtab_t *t, size_t slot)
{
    return slot < t->n ? t->tms[slot] : NULL;
}
