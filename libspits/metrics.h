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

/* Every metric of a metrics object and its last value, as a JSON object
 * {name: value} (int, real, string, {"bytes": N}, or null when its record
 * cannot be read). New reference; an empty object when there are none,
 * JSON null when the list itself does not parse. The module's buffers
 * must come from malloc: their usable size bounds every read. */
json_t *spits_metrics_read(void *metrics, spits_met_list_fn list,
                           spits_met_last_fn last, spits_met_free_fn freep);
/* One last-value record of len bytes and the given type (0-3), in either
 * published layout, big-endian (be) or in the host's order; NULL if it
 * fits neither inside len. */
json_t *spits_metrics_value(const unsigned char *rec, size_t len,
                            int64_t type, int be);

#ifdef SPITS_SELFTEST
int spits_metrics_selftest(void);
#endif

#endif
