/*
 * model.h - the PY-PITS performance model, max(N*T/W, N*S/BW), next to a
 * measured time (model.c). The report applies it to the whole job; the
 * live status (spits-status, the dashboard) to the job so far.
 */
#ifndef SPITS_JM_MODEL_H
#define SPITS_JM_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"

/* The model of n tasks run here in measured_s seconds: T from totals'
 * busy_s / runs (jm_dispview_tm_totals_json), W the most workers alive at
 * once (ds) and S the bytes moved per task (the server's, ss, tasks'
 * parts included, and STATUS answers, ds's bytes_out), BW from the JM's
 * CPU time (usage, jm_usage_json). A new object {tasks, task_s, workers, bytes_per_task, bandwidth_mb_s,
 * worker_bound_s, bandwidth_bound_s, predicted_s, measured_s, bound},
 * unknown terms null; its one-line form (spits_model_line) goes to line,
 * empty when a term is unknown. */
json_t *jm_model_json(const jm_disp_stats_t *ds, const server_stats_t *ss, const json_t *totals,
                      const json_t *usage, uint64_t n, double measured_s,
                      char *line, size_t linelen);

#endif
