/*
 * loglimit.c - rate-limited event lines (see loglimit.h).
 */
#include "log.h"
#include "loglimit.h"

void jm_loglimit_flush(jm_loglimit_t *l, int64_t now_ms, int force)
{
    if (!force && now_ms - l->since < JM_LOGLIMIT_MS)
        return;
    if (l->quiet)
        spits_info("%llu more %s in the last %.0f s were not logged one by one",
                   (unsigned long long)l->quiet, l->what,
                   (now_ms - l->since) / 1000.0);
    l->since = now_ms;
    l->logged = 0;
    l->quiet = 0;
}

int jm_loglimit_allow(jm_loglimit_t *l, int64_t now_ms)
{
    jm_loglimit_flush(l, now_ms, 0);
    if (l->logged < JM_LOGLIMIT_LINES) {
        l->logged++;
        return 1;
    }
    l->quiet++;
    return 0;
}
