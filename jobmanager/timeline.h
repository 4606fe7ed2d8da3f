/*
 * timeline.h - the job's history for report.json (and spits-plot), and so
 * far for STATUS (the dashboard): tasks resolved over time, and the TMs'
 * joins and leaves.
 *
 * Points are taken once per interval; when the array fills, every other
 * point is dropped and the interval doubles, so a job of any length keeps
 * a bounded, evenly spaced history. Events beyond their bound are counted
 * as dropped. The dispatcher thread owns the timeline: it reads it for
 * STATUS itself, and the report reads it after the dispatcher has ended.
 */
#ifndef SPITS_JM_TIMELINE_H
#define SPITS_JM_TIMELINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tmtable.h"

#define JM_TIMELINE_POINTS 512
#define JM_TIMELINE_EVENTS 4096

/* What happened to a TM: report.json's "join", "leave" (it said BYE) and
 * "lost" (silent, disconnected, or replaced by its own new HELLO). */
typedef enum { JM_TL_JOIN, JM_TL_LEAVE, JM_TL_LOST } jm_tl_kind_t;

typedef struct {
    double started;                  /* the job's start, wall clock */
    struct { float t; uint64_t resolved; } points[JM_TIMELINE_POINTS];
    size_t npoints;
    int64_t every_ms, next_ms;       /* interval, and the next point's time */
    struct {                         /* the TM's name, copied: its table */
        float t;                     /* entry may be gone by the report */
        jm_tl_kind_t kind;
        long pid;
        char host[64];
    } events[JM_TIMELINE_EVENTS];
    size_t nevents;
    uint64_t dropped;                /* events past the bound */
} jm_timeline_t;

void jm_timeline_init(jm_timeline_t *tl, double started);
/* A point, if one is due at monotonic time now_ms: resolved so far. */
void jm_timeline_sample(jm_timeline_t *tl, int64_t now_ms, uint64_t resolved);
/* TM tm joined, left or was lost, now. */
void jm_timeline_event(jm_timeline_t *tl, jm_tl_kind_t kind, const jm_tm_t *tm);
/* {interval_s, points: [[t, resolved]...], tm_events, tm_events_dropped},
 * with a last point of resolved at the end, and the newest max_events
 * events (the older ones count as dropped). A new reference. */
json_t *jm_timeline_json(const jm_timeline_t *tl, uint64_t resolved,
                         size_t max_events);

#endif
