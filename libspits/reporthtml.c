/*
 * reporthtml.c - a finished job as one self-contained web page, from its
 * report.json document: what a person checking a campaign from a laptop
 * wants first (the end state, the counts, the model line), then the
 * commit timeline (svgplot.c, inline), the Task Managers, their workers
 * (with a job's resource request: what each owned) and the failed tasks.
 * Inline CSS and SVG only: no script, no fetch, no font or image from
 * anywhere, so it opens offline. Every string from the report (the
 * module path, argv, host names, error text) is escaped. Long lists are
 * cut to a bound and say how many more report.json has, so the page of a
 * 10^7-task job on thousands of TMs stays small.
 */
#include <stdlib.h>
#include <string.h>

#include "jobdir.h"
#include "reporthtml.h"
#include "svgplot.h"

const char *const spits_html_css =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:64em}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}"
    "table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}th{text-align:left}"
    ".state{font-size:1.2em;font-weight:bold;padding:4px 8px;display:inline-block}"
    ".ok{background:#dfd}.bad{background:#fdd}.more{color:#666;font-style:italic}"
    "svg{max-width:100%;height:auto}code{word-break:break-all}";

static const char *html_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static long long html_int(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* "<tr><th>label</th><td class=n id=count-key>N</td></tr>" of counters. */
static void html_count(FILE *f, const json_t *c, const char *key, const char *label)
{
    fprintf(f, "<tr><th>%s</th><td class=\"n\" id=\"count-%s\">%lld</td></tr>\n",
            label, key, html_int(c, key));
}

/* "and N more (see report.json)" when a list was cut. */
static void html_more(FILE *f, size_t total, size_t shown, const char *what)
{
    if (total > shown)
        fprintf(f, "<p class=\"more\" id=\"more-%s\">and %zu more %s: see "
                   "report.json</p>\n", what, total - shown, what);
}

static void html_head(const json_t *rep, FILE *f)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>spits job ", f);
    spits_xml_escape(f, html_str(rep, "job_id"));
    fputs(": ", f);
    spits_xml_escape(f, html_str(rep, "status"));
    fprintf(f, "</title>\n<style>%s</style>\n</head><body>\n", spits_html_css);
}

/* The job, its end state and whether it can go on. */
static void html_summary(const json_t *rep, FILE *f)
{
    const char *status = html_str(rep, "status");
    int resumable = json_is_true(json_object_get(rep, "resumable"));
    fputs("<h1>spits job <span id=\"job-id\">", f);
    spits_xml_escape(f, html_str(rep, "job_id"));
    fprintf(f, "</span></h1>\n<p><span class=\"state %s\" id=\"status\">",
            strcmp(status, "ok") == 0 ? "ok" : "bad");
    spits_xml_escape(f, status);
    fprintf(f, "</span> exit status %lld; %s</p>\n", html_int(rep, "exit_code"),
            resumable ? "<b id=\"resumable\">resumable</b>: spits-jm --resume "
                        "continues it"
                      : "not resumable");
    if (json_is_string(json_object_get(rep, "error"))) {
        fputs("<p class=\"bad\" id=\"error\">", f);
        spits_xml_escape(f, html_str(rep, "error"));
        fputs("</p>\n", f);
    }
    fputs("<table id=\"job\"><tr><th>module</th><td><code id=\"module\">", f);
    spits_xml_escape(f, html_str(rep, "module"));
    fputs("</code></td></tr>\n<tr><th>started</th><td>", f);
    spits_xml_escape(f, html_str(rep, "started"));
    fputs("</td></tr>\n<tr><th>finished</th><td>", f);
    spits_xml_escape(f, html_str(rep, "finished"));
    fprintf(f, "</td></tr>\n<tr><th>seconds</th><td class=\"n\">%.2f%s</td></tr>\n"
               "</table>\n", json_number_value(json_object_get(rep, "seconds")),
            json_is_true(json_object_get(rep, "resumed")) ? " (resumed)" : "");
}

static void html_counts(const json_t *rep, FILE *f)
{
    const json_t *c = json_object_get(rep, "counters");
    char model[256];
    fputs("<h2>Counts</h2>\n<table id=\"counts\">\n", f);
    html_count(f, c, "committed", "tasks committed");
    html_count(f, c, "generated", "tasks generated");
    html_count(f, c, "failed", "tasks failed");
    html_count(f, c, "commit_errors", "commit errors");
    html_count(f, c, "resent", "tasks re-sent");
    html_count(f, c, "duplicates", "duplicate results");
    html_count(f, c, "tm_joins", "Task Managers (joins)");
    html_count(f, c, "tm_reattaches", "TM re-attaches");
    html_count(f, c, "tm_losses", "TM losses");
    html_count(f, c, "tm_leaves", "TM leaves");
    html_count(f, c, "tms_lost_for_good", "TMs lost for good");
    fputs("</table>\n", f);
    spits_model_line(json_object_get(rep, "model"), model, sizeof model);
    fputs("<p id=\"model\">", f);
    spits_xml_escape(f, model[0] ? model : "model: unknown (no task run reported)");
    fputs("</p>\n", f);
}

static void html_phases(const json_t *rep, FILE *f)
{
    const json_t *phases = json_object_get(rep, "phases"), *p, *a;
    size_t i, j, n = json_array_size(phases);
    fputs("<h2>Phases</h2>\n<table id=\"phases\"><tr><th>phase</th><th>argv</th>"
          "<th>tasks</th><th>committed</th><th>failed</th><th>seconds</th></tr>\n", f);
    for (i = 0; i < n && i < SPITS_HTML_ROWS; i++) {
        p = json_array_get(phases, i);
        fprintf(f, "<tr><td class=\"n\">%lld</td><td><code>", html_int(p, "phase"));
        json_array_foreach(json_object_get(p, "argv"), j, a) {
            fputs(j ? " " : "", f);
            spits_xml_escape(f, json_string_value(a));
        }
        fprintf(f, "</code></td><td class=\"n\">%lld</td><td class=\"n\">%lld</td>"
                   "<td class=\"n\">%lld</td><td class=\"n\">%.2f</td></tr>\n",
                html_int(p, "tasks"), html_int(p, "committed"), html_int(p, "failed"),
                json_number_value(json_object_get(p, "seconds")));
    }
    fputs("</table>\n", f);
    html_more(f, n, i, "phases");
}

/* Most tasks done first. */
static int html_by_done(const void *a, const void *b)
{
    long long x = html_int(*(json_t *const *)a, "done");
    long long y = html_int(*(json_t *const *)b, "done");
    return x < y ? 1 : x > y ? -1 : 0;
}

json_t *spits_html_top_tms(const json_t *tms, size_t max)
{
    size_t n = json_array_size(tms);
    json_t **v = malloc((n ? n : 1) * sizeof *v), *top = json_array();
    if (!v || !top) {
        free(v);
        json_decref(top);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(tms, i);
    qsort(v, n, sizeof *v, html_by_done);
    for (size_t i = 0; i < n && i < max; i++)
        json_array_append(top, v[i]);
    free(v);
    return top;
}

static void html_tms(const json_t *top, size_t total, FILE *f)
{
    const json_t *t;
    size_t i;
    fprintf(f, "<h2>Task Managers (%zu)</h2>\n<table id=\"tms\"><tr><th>host</th>"
               "<th>pid</th><th>workers</th><th>joined</th><th>re-attaches</th>"
               "<th>sent</th><th>done</th><th>failed</th><th>busy s</th></tr>\n", total);
    json_array_foreach(top, i, t) {
        fputs("<tr class=\"tm\"><td>", f);
        spits_xml_escape(f, html_str(t, "host"));
        fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td><td>",
                html_int(t, "pid"), html_int(t, "workers"));
        spits_xml_escape(f, html_str(t, "joined"));
        fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td>"
                   "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>"
                   "<td class=\"n\">%.1f</td></tr>\n", html_int(t, "reattaches"),
                html_int(t, "sent"), html_int(t, "done"), html_int(t, "failed"),
                json_number_value(json_object_get(t, "busy_s")));
    }
    fputs("</table>\n", f);
    html_more(f, total, json_array_size(top), "TMs");
}

/* One worker's row: its TM, number, cores, GPUs, memory and work. */
static void html_worker(const json_t *t, const char *via, size_t i, const json_t *w,
                        FILE *f)
{
    const json_t *mem = json_object_get(w, "mem"), *busy = json_object_get(w, "busy_s");
    const char *cpus = json_string_value(json_object_get(w, "cpus"));
    const char *gpus = json_string_value(json_object_get(w, "gpus"));
    fputs("<tr class=\"worker\"><td>", f);
    spits_xml_escape(f, html_str(t, "host"));
    fprintf(f, ":%lld", html_int(t, "pid"));
    if (via) {
        fputs(" (via ", f);
        spits_xml_escape(f, via);
        fputs(")", f);
    }
    fprintf(f, "</td><td class=\"n\">%zu</td><td>", i);
    spits_xml_escape(f, cpus ? cpus : "shared");
    fputs("</td><td>", f);
    spits_xml_escape(f, gpus ? gpus : "none");
    if (json_is_integer(mem))
        fprintf(f, "</td><td class=\"n\">%.0f MiB", json_integer_value(mem) / 1048576.0);
    else
        fputs("</td><td class=\"n\">not limited", f);
    /* (a TM behind a relay: its counts stay with the relay) */
    if (json_is_number(busy))
        fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">%.1f</td></tr>\n",
                html_int(w, "runs"), json_number_value(busy));
    else
        fputs("</td><td class=\"n\"></td><td class=\"n\"></td></tr>\n", f);
}

void spits_html_workers(const json_t *top, FILE *f)
{
    const json_t *t, *w, *b;
    size_t i, k, j, shown = 0, total = 0;
    json_array_foreach(top, i, t) {
        total += json_array_size(json_object_get(t, "worker_res"));
        json_array_foreach(json_object_get(json_object_get(t, "behind"), "tms"), j, b)
            total += json_array_size(json_object_get(b, "worker_res"));
    }
    if (total == 0)
        return;
    fputs("<h2>Workers</h2>\n<p>What each worker owned by the job's resource request "
          "(cores, GPUs, memory), and what it did.</p>\n<table id=\"workers\"><tr>"
          "<th>task manager</th><th>worker</th><th>cores</th><th>GPUs</th>"
          "<th>memory</th><th>tasks</th><th>busy s</th></tr>\n", f);
    json_array_foreach(top, i, t) {
        json_array_foreach(json_object_get(t, "worker_res"), k, w)
            if (shown++ < SPITS_HTML_ROWS)
                html_worker(t, NULL, k, w, f);
        json_array_foreach(json_object_get(json_object_get(t, "behind"), "tms"), j, b)
            json_array_foreach(json_object_get(b, "worker_res"), k, w)
                if (shown++ < SPITS_HTML_ROWS)
                    html_worker(b, html_str(t, "host"), k, w, f);
    }
    fputs("</table>\n", f);
    html_more(f, total, total < SPITS_HTML_ROWS ? total : SPITS_HTML_ROWS, "workers");
}

void spits_html_failed(const json_t *rep, size_t total, FILE *f)
{
    const json_t *failed = json_object_get(rep, "failed_tasks"), *t;
    size_t i, n = json_array_size(failed);
    if (total < n)
        total = n;
    fprintf(f, "<h2>Failed tasks (%zu)</h2>\n", total);
    if (n == 0) {
        fputs("<p id=\"failed-none\">none</p>\n", f);
        return;
    }
    fputs("<table id=\"failed\"><tr><th>phase</th><th>task</th><th>reason</th>"
          "<th>return code</th><th>error</th><th>host</th></tr>\n", f);
    for (i = 0; i < n && i < SPITS_HTML_ROWS; i++) {
        t = json_array_get(failed, i);
        const json_t *rc = json_object_get(t, "return_code");
        fprintf(f, "<tr class=\"failed-task\"><td class=\"n\">%lld</td>"
                   "<td class=\"n\">%lld</td><td>", html_int(t, "phase"), html_int(t, "task"));
        spits_xml_escape(f, html_str(t, "reason"));
        /* (an older JM's report, or a code not said: empty cells) */
        if (json_is_integer(rc))
            fprintf(f, "</td><td class=\"n\">%lld</td><td>", (long long)json_integer_value(rc));
        else
            fputs("</td><td class=\"n\"></td><td>", f);
        spits_xml_escape(f, html_str(t, "error"));
        fputs("</td><td>", f);
        spits_xml_escape(f, html_str(t, "host"));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    html_more(f, total, i, "failed tasks");
}

void spits_html_timeline(const json_t *rep, json_t *top, FILE *f)
{
    char what[256];
    json_t *view = json_copy((json_t *)rep);
    fputs("<h2>Timeline</h2>\n<div id=\"timeline\">\n", f);
    if (spits_svgplot_check(rep, what, sizeof what) != 0) {
        fputs("<p class=\"bad\">no timeline: ", f);
        spits_xml_escape(f, what);
        fputs("</p>\n", f);
    } else if (!view || json_object_set(view, "tms", top) != 0 ||
               spits_svgplot_write(view, f) != 0) {
        fputs("<p>no timeline to draw</p>\n", f);
    }
    json_decref(view);
    fputs("</div>\n", f);
}

int spits_report_html(const json_t *rep, FILE *f)
{
    const json_t *tms = json_object_get(rep, "tms");
    json_t *top = spits_html_top_tms(tms, SPITS_HTML_TMS);
    if (!top)
        return -1;
    html_head(rep, f);
    html_summary(rep, f);
    html_counts(rep, f);
    spits_html_timeline(rep, top, f);
    html_tms(top, json_array_size(tms), f);
    spits_html_workers(top, f);
    spits_html_failed(rep, 0, f);
    html_phases(rep, f);
    fprintf(f, "<p class=\"more\">written by spits %s; every number is in "
               "report.json next to this file</p>\n</body></html>\n", PACKAGE_VERSION);
    json_decref(top);
    return ferror(f) ? -1 : 0;
}

static int html_fill(FILE *f, void *rep)
{
    return spits_report_html(rep, f);
}

int spits_report_html_write(const char *path, const json_t *rep, char *err,
                            size_t errlen)
{
    return spits_file_write_atomic(path, 0644, html_fill, (void *)rep, err, errlen);
}

void spits_model_line(const json_t *model, char *line, size_t len)
{
    const json_t *pred = json_object_get(model, "predicted_s");
    double wb = json_number_value(json_object_get(model, "worker_bound_s"));
    double bb = json_number_value(json_object_get(model, "bandwidth_bound_s"));
    line[0] = '\0';
    if (json_is_number(pred))
        snprintf(line, len, "model: max(N*T/W, N*S/BW) = max(%.3g, %.3g) s "
                 "= %.3g s (%s-bound); measured %.3g s", wb, bb,
                 json_number_value(pred), wb >= bb ? "worker" : "bandwidth",
                 json_number_value(json_object_get(model, "measured_s")));
}

#ifdef SPITS_SELFTEST
/* A hostile report: markup in the module path, argv and error; more TMs
 * and failed tasks than the page lists. Everything is escaped, the lists
 * are cut and say so, and the busiest TM comes first. */
int spits_reporthtml_selftest(void)
{
    json_t *rep = json_pack("{s:s, s:s, s:s, s:i, s:b, s:f, s:s, s:{s:I}, s:[],"
                            " s:[{s:i, s:[s]}], s:{s:[[f, i], [f, i]], s:[]}}",
        "job_id", "j1", "module", "/m/<script>x.so", "status", "error",
        "exit_code", 1, "resumable", 1, "seconds", 2.0, "error", "a \"b\" & <c>",
        "counters", "committed", (json_int_t)12345, "failed_tasks",
        "phases", "phase", 1, "argv", "<i>",
        "timeline", "points", 0.0, 0, 2.0, 5, "tm_events");
    json_t *tms = json_array(), *failed = json_object_get(rep, "failed_tasks");
    for (int i = 0; i < SPITS_HTML_TMS + 7; i++)
        json_array_append_new(tms, json_pack("{s:s, s:i, s:i}", "host", "h", "pid", i,
                                             "done", i == 30 ? 1000 : i));
    /* the busiest TM's workers: more than the page lists, with markup */
    json_t *workers = json_array();
    for (int i = 0; i < SPITS_HTML_ROWS + 3; i++)
        json_array_append_new(workers, json_pack("{s:s, s:i, s:i, s:f}", "cpus", "<b>",
                                                 "mem", 1 << 21, "runs", i, "busy_s", 0.5));
    json_object_set_new(json_array_get(tms, 30), "worker_res", workers);
    for (int i = 0; i < SPITS_HTML_ROWS + 3; i++)
        json_array_append_new(failed, json_pack("{s:i, s:i, s:s}", "phase", 1,
                                                "task", i, "reason", "crashed"));
    json_object_set_new(rep, "tms", tms);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int bad = !f || spits_report_html(rep, f) != 0;
    if (f)
        fclose(f);
    bad = bad || !buf || len > 65536 || strstr(buf, "<script") ||
          strstr(buf, "<i>") || strstr(buf, "<c>") || !strstr(buf, "/m/&lt;script&gt;x.so") ||
          !strstr(buf, "a &quot;b&quot; &amp; &lt;c&gt;") ||
          !strstr(buf, "id=\"count-committed\">12345<") ||
          !strstr(buf, "and 7 more TMs") || !strstr(buf, "and 3 more failed tasks") ||
          !strstr(buf, "<polyline class=\"timeline\"") || !strstr(buf, "resumable</b>") ||
          strstr(buf, "<b>") || !strstr(buf, "and 3 more workers") ||
          !strstr(buf, "<tr class=\"worker\"><td>h:30</td><td class=\"n\">99</td>"
                       "<td>&lt;b&gt;</td><td>none</td><td class=\"n\">2 MiB</td>"
                       "<td class=\"n\">99</td><td class=\"n\">0.5</td></tr>") ||
          strstr(buf, "<td class=\"n\">100</td><td>&lt;b&gt;") ||
          strstr(buf, "<tr class=\"tm\"><td>h</td><td class=\"n\">30<") !=
              strstr(buf, "<tr class=\"tm\">");
    free(buf);
    json_decref(rep);
    return bad ? -1 : 0;
}
#endif
