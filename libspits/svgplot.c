/*
 * svgplot.c - a finished job drawn as SVG, from its report.json document.
 *
 * The commit timeline (tasks committed over time, as in the PY-PITS
 * paper's Figure 1) with each Task Manager's joins and leaves marked, and
 * below it one lane per Task Manager: from when it joined until it left
 * (or the job ended), labelled with the tasks it did, and inside it a
 * darker bar as long as the share of that time its workers were busy
 * (busy_s / (workers x time in the job)). Written by hand: no plotting
 * package is needed. Used by spits-plot and by the JM's report.html.
 *
 * A damaged or hand-made report must not make an invalid SVG: a negative
 * time or count, which no job writes, is refused naming its field
 * (spits_svgplot_check), and every coordinate is a share of the job's time
 * or tasks kept within [0, 1] (plot_share), so huge values cannot overflow
 * into inf or NaN. Every string from the report is escaped.
 */
#include <string.h>

#include "svgplot.h"

#define W 760
#define PLOT_X 70
#define PLOT_W 640
#define PLOT_Y 40
#define PLOT_H 260
#define LANE_H 22

/* The scales of one drawing: the job's length and the top of the count. */
typedef struct {
    double end, maxn;
} plot_scale_t;

/* r as a share in [0, 1]: inf is 1, NaN (inf / inf) 0. */
static double plot_share(double r)
{
    return r > 1 ? 1 : r >= 0 ? r : 0;
}

static double plot_x(const plot_scale_t *s, double t)
{
    return PLOT_X + plot_share(t / s->end) * PLOT_W;
}

static double plot_y(const plot_scale_t *s, double n)
{
    return PLOT_Y + PLOT_H - plot_share(n / s->maxn) * PLOT_H;
}

void spits_xml_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

int spits_svgplot_check(const json_t *rep, char *what, size_t len)
{
    json_t *tl = json_object_get(rep, "timeline"), *v;
    size_t i;
    json_array_foreach(json_object_get(tl, "points"), i, v) {
        double t = json_number_value(json_array_get(v, 0));
        double n = json_number_value(json_array_get(v, 1));
        if (t < 0 || n < 0) {
            snprintf(what, len, "timeline.points[%zu] is at %g s with %g task(s): "
                     "not a time and count of the job", i, t, n);
            return -1;
        }
    }
    json_array_foreach(json_object_get(tl, "tm_events"), i, v)
        if (json_number_value(json_object_get(v, "t")) < 0) {
            snprintf(what, len, "timeline.tm_events[%zu] is at %g s: not a time "
                     "in the job", i, json_number_value(json_object_get(v, "t")));
            return -1;
        }
    json_array_foreach(json_object_get(rep, "tms"), i, v)
        if (json_number_value(json_object_get(v, "busy_s")) < 0 ||
            json_integer_value(json_object_get(v, "workers")) < 0) {
            snprintf(what, len, "tms[%zu] has negative busy_s or workers", i);
            return -1;
        }
    return 0;
}

/* 1 if o's member k is the string want (a damaged report may lack it). */
static int plot_is(const json_t *o, const char *k, const char *want)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v && want && strcmp(v, want) == 0;
}

/* The tms entry's join time in seconds since the job started. */
static double lane_start(const json_t *events, const json_t *tm)
{
    json_int_t pid = json_integer_value(json_object_get(tm, "pid"));
    const char *host = json_string_value(json_object_get(tm, "host"));
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (json_integer_value(json_object_get(e, "pid")) == pid &&
            plot_is(e, "host", host) && plot_is(e, "event", "join"))
            return json_number_value(json_object_get(e, "t"));
    }
    return 0;
}

static double lane_end(const json_t *events, const json_t *tm, double start,
                       double end)
{
    json_int_t pid = json_integer_value(json_object_get(tm, "pid"));
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        double t = json_number_value(json_object_get(e, "t"));
        if (json_integer_value(json_object_get(e, "pid")) == pid && t >= start &&
            plot_is(e, "event", "leave"))
            return t;
    }
    return end;
}

/* The title, the axes and their ends. */
static void plot_axes(const json_t *rep, const plot_scale_t *s, FILE *f)
{
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\">job ", PLOT_X);
    spits_xml_escape(f, json_string_value(json_object_get(rep, "job_id")));
    fputs(": ", f);
    spits_xml_escape(f, json_string_value(json_object_get(rep, "status")));
    fprintf(f, ", %.2f s</text>\n", s->end);
    fprintf(f, "<g stroke=\"black\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>\n",
            PLOT_X, PLOT_Y, PLOT_X, PLOT_Y + PLOT_H, PLOT_X, PLOT_Y + PLOT_H,
            PLOT_X + PLOT_W, PLOT_Y + PLOT_H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f</text>\n",
            PLOT_X - 4, PLOT_Y + 4, s->maxn);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n",
            PLOT_X - 4, PLOT_Y + PLOT_H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.1f s</text>\n",
            PLOT_X + PLOT_W, PLOT_Y + PLOT_H + 16, s->end);
    fprintf(f, "<text x=\"%d\" y=\"%d\">tasks committed over time</text>\n",
            PLOT_X + 6, PLOT_Y + 14);
}

/* TM joins (green) and leaves (red), then the timeline over them. */
static void plot_timeline(const json_t *tl, const plot_scale_t *s, FILE *f)
{
    json_t *pts = json_object_get(tl, "points"), *evs = json_object_get(tl, "tm_events");
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = json_array_get(evs, i);
        int join = plot_is(e, "event", "join");
        double x = plot_x(s, json_number_value(json_object_get(e, "t")));
        fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                   "stroke=\"%s\" stroke-dasharray=\"3,3\"/>\n", join ? "join" : "leave",
                x, PLOT_Y, x, PLOT_Y + PLOT_H, join ? "green" : "red");
    }
    fprintf(f, "<polyline class=\"timeline\" fill=\"none\" stroke=\"blue\" "
               "stroke-width=\"2\" points=\"");
    for (size_t i = 0; i < json_array_size(pts); i++) {
        json_t *p = json_array_get(pts, i);
        fprintf(f, "%.1f,%.1f ", plot_x(s, json_number_value(json_array_get(p, 0))),
                plot_y(s, json_number_value(json_array_get(p, 1))));
    }
    fprintf(f, "\"/>\n");
}

/* One TM's lane at height y. */
static void plot_lane(const json_t *t, const json_t *evs, const plot_scale_t *s,
                      int y, FILE *f)
{
    double st = lane_start(evs, t), e = lane_end(evs, t, st, s->end);
    double x0 = plot_x(s, st), x1 = plot_x(s, e);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">",
            PLOT_X - 4, y + 12);
    spits_xml_escape(f, json_string_value(json_object_get(t, "host")));
    fprintf(f, ":%lld</text>\n", (long long)json_integer_value(json_object_get(t, "pid")));
    fprintf(f, "<rect class=\"lane\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
               "fill=\"#9cf\"/>\n", x0, y + 2, x1 - x0 > 1 ? x1 - x0 : 1, LANE_H - 4);
    double busy = json_number_value(json_object_get(t, "busy_s"));
    long long workers = json_integer_value(json_object_get(t, "workers"));
    /* (over 1 for a TM that re-attached: it counts its outage too) */
    double share = plot_share(e > st && workers > 0
                              ? busy / ((double)workers * (e - st)) : 0);
    fprintf(f, "<rect class=\"busy\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
               "fill=\"#36c\"/>\n", x0, y + 14, x1 > x0 ? (x1 - x0) * share : 0, 5);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\">%lld done, busy %.1f s "
               "(%.0f%%)</text>\n", x0 + 4, y + 12,
            (long long)json_integer_value(json_object_get(t, "done")), busy, share * 100);
}

int spits_svgplot_write(const json_t *rep, FILE *f)
{
    json_t *tl = json_object_get(rep, "timeline");
    json_t *pts = json_object_get(tl, "points"), *tms = json_object_get(rep, "tms");
    plot_scale_t s = {json_number_value(json_object_get(rep, "seconds")), 1};
    size_t ntm = json_array_size(tms);
    int h = PLOT_Y + PLOT_H + 60 + (int)ntm * LANE_H + 20;

    if (!json_is_array(pts) || json_array_size(pts) == 0 || !(s.end > 0))
        return -1;
    for (size_t i = 0; i < json_array_size(pts); i++) {
        double n = json_number_value(json_array_get(json_array_get(pts, i), 1));
        if (n > s.maxn)
            s.maxn = n;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, h, W, h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    plot_axes(rep, &s, f);
    plot_timeline(tl, &s, f);
    int y = PLOT_Y + PLOT_H + 40;
    fprintf(f, "<text x=\"%d\" y=\"%d\">task managers (joined to left or end; "
            "dark: the share of it their workers were busy)</text>\n",
            PLOT_X, y - 8);
    for (size_t i = 0; i < ntm; i++, y += LANE_H)
        plot_lane(json_array_get(tms, i), json_object_get(tl, "tm_events"), &s, y, f);
    fprintf(f, "</svg>\n");
    return 0;
}

#ifdef SPITS_SELFTEST
#include <stdlib.h>

/* A hostile report: a host name with markup, a huge count. The SVG
 * escapes the one and keeps the other's coordinates in the plot. */
int spits_svgplot_selftest(void)
{
    json_t *rep = json_loads("{\"job_id\":\"j<1>\",\"status\":\"ok\",\"seconds\":2,"
        "\"timeline\":{\"points\":[[0,0],[1,1e300]],\"tm_events\":"
        "[{\"t\":0.5,\"event\":\"join\",\"pid\":7,\"host\":\"h\\\"<x>\"}]},"
        "\"tms\":[{\"host\":\"h\\\"<x>\",\"pid\":7,\"workers\":1,\"busy_s\":1,"
        "\"done\":3}]}", 0, NULL);
    char *buf = NULL, what[128];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int bad = !rep || !f || spits_svgplot_check(rep, what, sizeof what) != 0 ||
              spits_svgplot_write(rep, f) != 0;
    if (f)
        fclose(f);
    bad = bad || !buf || strstr(buf, "<x>") || !strstr(buf, "j&lt;1&gt;") ||
          !strstr(buf, "h&quot;&lt;x&gt;:7") || strstr(buf, "inf") ||
          strstr(buf, "nan") || !strstr(buf, "390.0,40.0");
    json_array_set_new(json_array_get(json_object_get(json_object_get(rep, "timeline"),
                       "points"), 1), 0, json_real(-1));
    bad = bad || spits_svgplot_check(rep, what, sizeof what) != -1 ||
          !strstr(what, "points[1]");
    free(buf);
    json_decref(rep);
    return bad ? -1 : 0;
}
#endif
