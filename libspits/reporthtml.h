/*
 * reporthtml.h - a finished job as one self-contained web page: DIR/report.html,
 * made from the report.json document (reporthtml.c). Inline CSS and SVG,
 * no script and no fetch, so the page can be copied off a cluster and
 * opened anywhere, offline.
 */
#ifndef SPITS_REPORTHTML_H
#define SPITS_REPORTHTML_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#define SPITS_REPORT_HTML_FILE "report.html"
/* The page stays bounded whatever the job's size: at most this many TMs
 * (those that did the most tasks), phases and failed tasks are listed,
 * and a line says how many more report.json has. The timeline is bounded
 * by the JM already (timeline.h). */
#define SPITS_HTML_TMS 50
#define SPITS_HTML_ROWS 100

/* Writes the page of report document rep to f. 0, or -1 on a write error. */
int spits_report_html(const json_t *rep, FILE *f);

/* Writes the page to path atomically (spits_file_write_atomic). 0, or -1
 * with err set. */
int spits_report_html_write(const char *path, const json_t *rep, char *err,
                            size_t errlen);

/* The max entries of a tms list that did the most tasks ("done"), in
 * that order: a new array holding references, or NULL without memory. */
json_t *spits_html_top_tms(const json_t *tms, size_t max);

/* The pages' style sheet (report.html and spits-status --serve's). */
extern const char *const spits_html_css;

/* The "Timeline" section of rep (job_id, status, seconds, timeline), with
 * a lane for each TM of top. */
void spits_html_timeline(const json_t *rep, json_t *top, FILE *f);

/* The "Workers" section: a row for each worker of top's TMs (their
 * "worker_res", and that of the TMs behind a relay of top), cut to
 * SPITS_HTML_ROWS; nothing when none says its workers. */
void spits_html_workers(const json_t *top, FILE *f);

/* The "Failed tasks" section of rep's failed_tasks, cut to
 * SPITS_HTML_ROWS, of total in all (0: as many as the list holds). */
void spits_html_failed(const json_t *rep, size_t total, FILE *f);

/* The performance model's line ("model: max(N*T/W, N*S/BW) = ..."), from
 * report.json's "model" object; empty when a term is unknown. */
void spits_model_line(const json_t *model, char *line, size_t len);

#ifdef SPITS_SELFTEST
int spits_reporthtml_selftest(void);
#endif

#endif
