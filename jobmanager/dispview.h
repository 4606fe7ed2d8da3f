/*
 * dispview.h - what the dispatcher shows of the job (dispview.c): the
 * report.json parts here; the live snapshot and the STATUS document,
 * which only the dispatcher's thread builds, are in dispatch_int.h.
 */
#ifndef SPITS_JM_DISPVIEW_H
#define SPITS_JM_DISPVIEW_H

#include <jansson.h>
#include <stddef.h>

#include "jm.h"

/* After jm_disp_stop: per-TM totals as a JSON array (new reference), of
 * at most 1000 TMs (the table's, with the most tasks done)... */
json_t *jm_dispview_tms_json(const jm_disp_t *d);
/* ...and the sums over every TM, listed or not (listed: the array's
 * length): {tms, listed, left_out, truncated, reattaches, sent, done,
 * failed, busy_s, runs, lost_forgotten, behind_relays (the TMs behind
 * the relays alive, by their last STATS; a relay counts in tms as one)}.
 * A relay's entry of the array has its relay fields
 * (jm_status_relay_fields). */
json_t *jm_dispview_tm_totals_json(const jm_disp_t *d, size_t listed);
/* After jm_disp_stop: tasks resolved over time (points [seconds since
 * the job started, resolved]) and the TMs' joins and leaves. */
json_t *jm_dispview_timeline_json(const jm_disp_t *d);

#endif
