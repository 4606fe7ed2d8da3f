/*
 * loglimit.c - rate-limited event lines (see loglimit.h).
 */
#include "log.h"
#include "loglimit.h"

void loglimit_flush(loglimit_t *l, int64_t now_ms, int force)
{
    if (!force && now_ms - l->since < LOGLIMIT_MS)
        return;
    if (l->quiet)
        spits_info("%llu more %s in the last %.0f s were not logged one by one",
                   (unsigned long long)l->quiet, l->what,
                   (now_ms - l->since) / 1000.0);
    l->since = now_ms;
    l->logged = 0;
    l->quiet = 0;
}

int loglimit_allow(loglimit_t *l, int64_t now_ms)
{
    loglimit_flush(l, now_ms, 0);
    if (l->logged < LOGLIMIT_LINES) {
        l->logged++;
        return 1;
    }
    l->quiet++;
    return 0;
}

int loglimit_every(int64_t *logged_at, int64_t now_ms, int64_t every_ms)
{
    if (*logged_at && now_ms - *logged_at < every_ms)
        return 0;
    *logged_at = now_ms;
    return 1;
}
