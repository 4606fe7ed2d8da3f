/*
 * timeline.c - the job's history for report.json (see timeline.h).
 */
#include <stdio.h>
#include <string.h>

#include "timeline.h"
#include "util.h"

void jm_timeline_init(jm_timeline_t *tl, double started)
{
    memset(tl, 0, sizeof *tl);
    tl->started = started;
    tl->every_ms = 1000;
}

void jm_timeline_sample(jm_timeline_t *tl, int64_t now_ms, uint64_t resolved)
{
    if (now_ms < tl->next_ms)
        return;
    if (tl->npoints == JM_TIMELINE_POINTS) {
        for (size_t i = 0; i < JM_TIMELINE_POINTS / 2; i++)
            tl->points[i] = tl->points[2 * i + 1];
        tl->npoints = JM_TIMELINE_POINTS / 2;
        tl->every_ms *= 2;
    }
    tl->points[tl->npoints].t = (float)(spits_wall_time() - tl->started);
    tl->points[tl->npoints++].resolved = resolved;
    tl->next_ms = now_ms + tl->every_ms;
}

void jm_timeline_event(jm_timeline_t *tl, jm_tl_kind_t kind, const jm_tm_t *tm)
{
    if (tl->nevents == JM_TIMELINE_EVENTS) {
        tl->dropped++;
        return;
    }
    tl->events[tl->nevents].t = (float)(spits_wall_time() - tl->started);
    tl->events[tl->nevents].kind = kind;
    tl->events[tl->nevents].pid = tm->sv.proc.pid;
    snprintf(tl->events[tl->nevents++].host, sizeof tl->events[0].host, "%.63s",
             tm->sv.proc.host);
}

json_t *jm_timeline_json(const jm_timeline_t *tl, uint64_t resolved,
                         size_t max_events)
{
    static const char *const kinds[] = {"join", "leave", "lost"};
    json_t *pts = json_array(), *evs = json_array();
    size_t first = tl->nevents > max_events ? tl->nevents - max_events : 0;
    for (size_t i = 0; i < tl->npoints; i++)
        json_array_append_new(pts, json_pack("[f, I]", (double)tl->points[i].t,
                                             (json_int_t)tl->points[i].resolved));
    json_array_append_new(pts, json_pack("[f, I]", spits_wall_time() - tl->started,
                                         (json_int_t)resolved));
    for (size_t i = first; i < tl->nevents; i++) {
        json_array_append_new(evs, json_pack("{s:f, s:s, s:s, s:I}",
            "t", (double)tl->events[i].t,
            "event", kinds[tl->events[i].kind],
            "host", tl->events[i].host, "pid", (json_int_t)tl->events[i].pid));
    }
    return json_pack("{s:f, s:o, s:o, s:I}", "interval_s", tl->every_ms / 1000.0,
                     "points", pts, "tm_events", evs,
                     "tm_events_dropped", (json_int_t)(tl->dropped + first));
}
