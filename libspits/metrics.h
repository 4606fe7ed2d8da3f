/*
 * metrics.h - reading a SPITS 2.0 module's metrics back (metrics.c).
 */
#ifndef SPITS_METRICS_H
#define SPITS_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef void *(*spits_met_list_fn)(void *metrics);
typedef void *(*spits_met_last_fn)(void *metrics, const char **names);
typedef void (*spits_met_free_fn)(void *p);
typedef void *(*spits_met_history_fn)(void *metrics, unsigned n,
                                      const char **names, unsigned *sizes);
typedef void (*spits_met_free_history_fn)(void *history, unsigned n);

/* The functions a module exports to read its metrics back, of either
 * published generation; NULL where it exports none. The older (2020)
 * one is spits_get_metrics_list, spits_get_metrics_last_values and
 * spits_free_ptr over packed byte buffers; the current (2021) one is
 * spits_get_metrics_list, spits_get_metrics_history,
 * spits_free_metric_list and spits_free_metrics_history over C
 * structures (see metrics.c). */
typedef struct {
    spits_met_list_fn list;                   /* both */
    spits_met_last_fn last;                   /* 2020 */
    spits_met_free_fn free_ptr;               /* 2020 */
    spits_met_history_fn history;             /* 2021 */
    spits_met_free_fn free_list;              /* 2021 */
    spits_met_free_history_fn free_history;   /* 2021 */
} spits_met_api_t;

/* A metrics object's metrics and last values through whichever
 * interface api holds in full (the 2020 one first), as
 * spits_metrics_read describes; NULL when it holds neither. */
json_t *spits_metrics_json(const spits_met_api_t *api, void *metrics);

/* Every metric of a metrics object and its last value, as a JSON object
 * {name: value} (int, real, string, {"bytes": N}, or null when its record
 * cannot be read). New reference; an empty object when there are none,
 * JSON null when the list itself does not parse. The module's buffers
 * must come from malloc: their usable size bounds every read. */
json_t *spits_metrics_read(void *metrics, spits_met_list_fn list,
                           spits_met_last_fn last, spits_met_free_fn freep);
/* The same through the 2021 interface (api's history, free_list and
 * free_history): its structures come from the module's own allocator, so
 * counts and sizes are checked against limits, not against a buffer. */
json_t *spits_metrics_read21(void *metrics, const spits_met_api_t *api);
/* One last-value record of len bytes and the given type (0-3), in either
 * published layout, big-endian (be) or in the host's order; NULL if it
 * fits neither inside len. */
json_t *spits_metrics_value(const unsigned char *rec, size_t len,
                            int64_t type, int be);

#ifdef SPITS_SELFTEST
int spits_metrics_selftest(void);
#endif

#endif
