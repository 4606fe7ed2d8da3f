/*
 * model.c - the PY-PITS performance model (see model.h).
 *
 * N tasks, T the mean task time the TMs measured (STATS), W the most
 * workers alive at once, S the mean bytes moved per task (in + out), BW
 * the bytes the JM moved per second of its own CPU time: what it could
 * move saturated, which traffic seen from an unsaturated job cannot tell.
 * The larger bound says whether the job is worker- or JM-bound.
 */
#include "model.h"
#include "reporthtml.h"

json_t *jm_model_json(const jm_disp_stats_t *ds, const server_stats_t *ss, const json_t *totals,
                      const json_t *usage, uint64_t n, double measured_s,
                      char *line, size_t linelen)
{
    double busy = json_number_value(json_object_get(totals, "busy_s"));
    double runs = (double)json_integer_value(json_object_get(totals, "runs"));
    double bytes = (double)(ss->bytes_in + ss->bytes_out + ss->part_bytes_out + ds->bytes_out);
    double task_s = runs > 0 ? busy / runs : -1;
    double s = n ? bytes / (double)n : 0;
    double cpu = json_number_value(json_object_get(usage, "cpu_user_s")) +
                 json_number_value(json_object_get(usage, "cpu_system_s"));
    double bw = cpu > 0 && bytes > 0 ? bytes / cpu : -1;
    double wb = n && task_s >= 0 && ds->peak_workers > 0
                    ? (double)n * task_s / ds->peak_workers : -1;
    double bb = n && bw > 0 ? (double)n * s / bw : -1;
    double pred = wb < 0 || bb < 0 ? -1 : wb > bb ? wb : bb;
#define OR_NULL(x) ((x) >= 0 ? json_real(x) : json_null())
    json_t *m = json_pack("{s:I, s:o, s:I, s:f, s:o, s:o, s:o, s:o, s:f, s:o}",
        "tasks", (json_int_t)n, "task_s", OR_NULL(task_s),
        "workers", (json_int_t)ds->peak_workers, "bytes_per_task", s,
        "bandwidth_mb_s", bw > 0 ? json_real(bw / 1e6) : json_null(),
        "worker_bound_s", OR_NULL(wb), "bandwidth_bound_s", OR_NULL(bb),
        "predicted_s", OR_NULL(pred), "measured_s", measured_s,
        "bound", pred < 0 ? json_null()
                          : json_string(wb >= bb ? "workers" : "bandwidth"));
#undef OR_NULL
    if (line)
        spits_model_line(m, line, linelen);
    return m;
}
