/*
 * svgplot.c - a finished job drawn as SVG, from its report.json document.
 *
 * The commit timeline (tasks committed over time, as in the PY-PITS
 * paper's Figure 1) on axes with ticks, with each Task Manager's joins,
 * leaves and losses and each phase's start marked, and a legend; below it
 * one lane per Task Manager: from when it joined until it left, was lost
 * (marked) or the job ended, labelled with the tasks it did, and inside
 * it a darker bar as long as the share of that time its workers were busy
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
#define LEGEND_Y (PLOT_Y + PLOT_H + 52)   /* the legend's baseline */
#define LANES_Y (LEGEND_Y + 30)           /* the lanes' caption */

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

/* When the tms entry left or was lost (*lost set for the latter) after
 * start, or end. */
static double lane_end(const json_t *events, const json_t *tm, double start,
                       double end, int *lost)
{
    json_int_t pid = json_integer_value(json_object_get(tm, "pid"));
    const char *host = json_string_value(json_object_get(tm, "host"));
    *lost = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        double t = json_number_value(json_object_get(e, "t"));
        if (json_integer_value(json_object_get(e, "pid")) != pid || t < start ||
            !plot_is(e, "host", host))
            continue;
        if (plot_is(e, "event", "leave"))
            return t;
        if (plot_is(e, "event", "lost")) {
            *lost = 1;
            return t;
        }
    }
    return end;
}

/* A step of 1, 2 or 5 times a power of ten that cuts range into about
 * five to ten parts (range > 0). */
static double plot_step(double range)
{
    double raw = range / 6, mag = 1;
    while (mag * 10 <= raw)
        mag *= 10;
    while (mag > raw && mag > 1e-9)
        mag /= 10;
    double norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* The title: one sentence saying what the job did. */
static void plot_title(const json_t *rep, const plot_scale_t *s, FILE *f)
{
    json_t *c = json_object_get(rep, "counters");
    long long done = json_integer_value(json_object_get(c, "committed"));
    size_t ntm = json_array_size(json_object_get(rep, "tms"));
    json_t *tot = json_object_get(json_object_get(rep, "tm_totals"), "tms");
    if (json_is_integer(tot) && json_integer_value(tot) > (json_int_t)ntm)
        ntm = (size_t)json_integer_value(tot);
    fprintf(f, "<text class=\"caption\" x=\"%d\" y=\"17\" font-size=\"14\">The job "
               "committed %lld task%s in %.2f s with %zu task manager%s (", PLOT_X,
            done, done == 1 ? "" : "s", s->end, ntm, ntm == 1 ? "" : "s");
    spits_xml_escape(f, json_string_value(json_object_get(rep, "status")));
    fprintf(f, ").</text>\n<text x=\"%d\" y=\"31\" font-size=\"10\" fill=\"#555\">"
               "job ", PLOT_X);
    spits_xml_escape(f, json_string_value(json_object_get(rep, "job_id")));
    fputs("</text>\n", f);
}

/* The axes, with ticks, grid lines and their titles. */
static void plot_axes(const plot_scale_t *s, FILE *f)
{
    double xs = plot_step(s->end), ys = plot_step(s->maxn);
    fputs("<g class=\"ticks\" font-size=\"10\">\n", f);
    for (int i = 0; i * xs <= s->end * (1 + 1e-9) && i <= 20; i++) {
        double x = plot_x(s, i * xs);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                   "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                x, PLOT_Y, x, PLOT_Y + PLOT_H, x, PLOT_Y + PLOT_H, x,
                PLOT_Y + PLOT_H + 5, x, PLOT_Y + PLOT_H + 16, i * xs);
    }
    for (int i = 0; i * ys <= s->maxn * (1 + 1e-9) && i <= 20; i++) {
        double y = plot_y(s, i * ys);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                PLOT_X, y, PLOT_X + PLOT_W, y, PLOT_X - 5, y, PLOT_X, y,
                PLOT_X - 7, y + 3, i * ys);
    }
    fputs("</g>\n", f);
    fprintf(f, "<g stroke=\"black\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>\n",
            PLOT_X, PLOT_Y, PLOT_X, PLOT_Y + PLOT_H, PLOT_X, PLOT_Y + PLOT_H,
            PLOT_X + PLOT_W, PLOT_Y + PLOT_H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">seconds since the job "
               "started</text>\n", PLOT_X + PLOT_W / 2, PLOT_Y + PLOT_H + 30);
    fprintf(f, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 14 %d)\">tasks committed</text>\n",
            PLOT_Y + PLOT_H / 2, PLOT_Y + PLOT_H / 2);
}

/* Each phase after the first starts at a grey line, labelled. */
static void plot_phases(const json_t *rep, const plot_scale_t *s, FILE *f)
{
    json_t *phases = json_object_get(rep, "phases");
    for (size_t i = 1; i < json_array_size(phases); i++) {
        json_t *start = json_object_get(json_array_get(phases, i), "start_s");
        if (!json_is_number(start))
            continue;
        double x = plot_x(s, json_number_value(start));
        fprintf(f, "<line class=\"phase\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                   "stroke=\"#888\"/><text x=\"%.1f\" y=\"%d\" font-size=\"10\" "
                   "fill=\"#555\">phase %zu</text>\n",
                x, PLOT_Y, x, PLOT_Y + PLOT_H, x + 3, PLOT_Y + 10, i + 1);
    }
}

/* What each mark means, in one row under the axes. */
static void plot_legend(FILE *f)
{
    static const struct { const char *stroke, *dash, *label; } keys[] = {
        {"blue", "", "tasks committed"},
        {"green", "3,3", "task manager joined"},
        {"#999", "3,3", "left"},
        {"red", "3,3", "lost"},
        {"#888", "", "phase starts"},
    };
    int x = PLOT_X;
    fputs("<g class=\"legend\" font-size=\"11\">\n", f);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s%s%s/><text x=\"%d\" y=\"%d\">%s</text>\n",
                x, LEGEND_Y - 4, x + 18, LEGEND_Y - 4, keys[i].stroke,
                keys[i].dash[0] ? " stroke-dasharray=\"" : "", keys[i].dash,
                keys[i].dash[0] ? "\"" : "", x + 22, LEGEND_Y, keys[i].label);
        x += 34 + (int)strlen(keys[i].label) * 6;
    }
    fputs("</g>\n", f);
}

/* TM joins (green), leaves (grey) and losses (red), then the timeline
 * over them. */
static void plot_timeline(const json_t *tl, const plot_scale_t *s, FILE *f)
{
    json_t *pts = json_object_get(tl, "points"), *evs = json_object_get(tl, "tm_events");
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = json_array_get(evs, i);
        int join = plot_is(e, "event", "join"), lost = plot_is(e, "event", "lost");
        double x = plot_x(s, json_number_value(json_object_get(e, "t")));
        fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                   "stroke=\"%s\" stroke-dasharray=\"3,3\"/>\n",
                join ? "join" : lost ? "lost" : "leave", x, PLOT_Y, x, PLOT_Y + PLOT_H,
                join ? "green" : lost ? "red" : "#999");
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
    int lost;
    double st = lane_start(evs, t), e = lane_end(evs, t, st, s->end, &lost);
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
    /* (a lane that starts late is labelled on its left, inside the plot) */
    int left = x0 > PLOT_X + PLOT_W * 0.6;
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\"%s>%lld done, busy %.1f s "
               "(%.0f%%)%s</text>\n", left ? x0 - 4 : x0 + 4, y + 12,
            left ? " text-anchor=\"end\"" : "",
            (long long)json_integer_value(json_object_get(t, "done")), busy, share * 100,
            lost ? ", lost" : "");
    if (lost)
        fprintf(f, "<text class=\"lostmark\" x=\"%.1f\" y=\"%d\" fill=\"red\" "
                   "font-weight=\"bold\" text-anchor=\"middle\">&#215;</text>\n",
                x1, y + 15);
}

/* The GPU lanes of the tms list: one per GPU id of each of its TMs'
 * workers (worker_res), SPITS_SVG_GPU_LANES at most. Calls lane for each
 * (NULL: counts only); how many. */
typedef void plot_gpu_fn(const json_t *tm, const json_t *w, size_t worker,
                         const char *id, size_t n, void *arg);
static size_t plot_gpus(const json_t *tms, plot_gpu_fn *lane, void *arg)
{
    size_t n = 0, i, k;
    const json_t *t, *w;
    json_array_foreach(tms, i, t) {
        json_array_foreach(json_object_get(t, "worker_res"), k, w) {
            const char *g = json_string_value(json_object_get(w, "gpus"));
            char id[SPITS_SVG_GPU_ID];
            while (g && *g && n < SPITS_SVG_GPU_LANES) {
                size_t len = strcspn(g, ",");
                snprintf(id, sizeof id, "%.*s", (int)len, g);
                if (lane)
                    lane(t, w, k, id, n, arg);
                n++;
                g += len + (g[len] == ',');
            }
        }
    }
    return n;
}

typedef struct {
    const json_t *evs;
    const plot_scale_t *s;
    int y;
    FILE *f;
} plot_gpu_ctx_t;

/* One GPU's lane: its TM's time in the job, and the share of it the
 * worker that owned the GPU was busy, with the tasks it ran. */
static void plot_gpu_lane(const json_t *t, const json_t *w, size_t worker,
                          const char *id, size_t n, void *arg)
{
    plot_gpu_ctx_t *c = arg;
    int lost, y = c->y + (int)n * LANE_H;
    double st = lane_start(c->evs, t), e = lane_end(c->evs, t, st, c->s->end, &lost);
    double x0 = plot_x(c->s, st), x1 = plot_x(c->s, e);
    double busy = json_number_value(json_object_get(w, "busy_s"));
    double share = plot_share(e > st ? busy / (e - st) : 0);
    fprintf(c->f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">",
            PLOT_X - 4, y + 12);
    spits_xml_escape(c->f, json_string_value(json_object_get(t, "host")));
    fprintf(c->f, ":%lld GPU ", (long long)json_integer_value(json_object_get(t, "pid")));
    spits_xml_escape(c->f, id);
    fprintf(c->f, "</text>\n<rect class=\"gpulane\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                  "height=\"%d\" fill=\"#cfc\"/>\n", x0, y + 2, x1 - x0 > 1 ? x1 - x0 : 1,
            LANE_H - 4);
    fprintf(c->f, "<rect class=\"gpubusy\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                  "height=\"%d\" fill=\"#393\"/>\n", x0, y + 14,
            x1 > x0 ? (x1 - x0) * share : 0, 5);
    int left = x0 > PLOT_X + PLOT_W * 0.6;
    fprintf(c->f, "<text class=\"gpulabel\" x=\"%.1f\" y=\"%d\" font-size=\"10\"%s>"
                  "worker %zu: %lld tasks, busy %.1f s (%.0f%%)</text>\n",
            left ? x0 - 4 : x0 + 4, y + 12, left ? " text-anchor=\"end\"" : "", worker,
            (long long)json_integer_value(json_object_get(w, "runs")), busy, share * 100);
}

int spits_svgplot_write(const json_t *rep, FILE *f)
{
    json_t *tl = json_object_get(rep, "timeline");
    json_t *pts = json_object_get(tl, "points"), *tms = json_object_get(rep, "tms");
    plot_scale_t s = {json_number_value(json_object_get(rep, "seconds")), 1};
    size_t ntm = json_array_size(tms), ngpu = plot_gpus(tms, NULL, NULL);
    int gpus_y = LANES_Y + 8 + (int)ntm * LANE_H + 30;
    int h = ngpu ? gpus_y + 8 + (int)ngpu * LANE_H + 10 : LANES_Y + 8 + (int)ntm * LANE_H + 10;

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
    plot_title(rep, &s, f);
    plot_axes(&s, f);
    plot_phases(rep, &s, f);
    plot_timeline(tl, &s, f);
    plot_legend(f);
    int y = LANES_Y + 8;
    fprintf(f, "<text x=\"%d\" y=\"%d\">Each task manager's lane runs from its join "
            "to when it left, was lost (&#215;) or the job ended;</text>\n"
            "<text x=\"%d\" y=\"%d\">the dark bar is the share of that time its "
            "workers were busy.</text>\n", 8, LANES_Y - 14, 8, LANES_Y);
    for (size_t i = 0; i < ntm; i++, y += LANE_H)
        plot_lane(json_array_get(tms, i), json_object_get(tl, "tm_events"), &s, y, f);
    if (ngpu) {
        plot_gpu_ctx_t c = {json_object_get(tl, "tm_events"), &s, gpus_y + 8, f};
        fprintf(f, "<text x=\"%d\" y=\"%d\">Each GPU's lane runs with its task "
                "manager's; the dark bar is the share of that time the worker</text>\n"
                "<text x=\"%d\" y=\"%d\">that owned it was busy.</text>\n",
                8, gpus_y - 14, 8, gpus_y);
        plot_gpus(tms, plot_gpu_lane, &c);
    }
    fprintf(f, "</svg>\n");
    return 0;
}

#ifdef SPITS_SELFTEST
#include <stdlib.h>

/* A hostile report: a host name with markup, a huge count. The SVG
 * escapes the one and keeps the other's coordinates in the plot. Then a
 * plain one: its ticks, phases, lost TM, legend and caption. */
static int svgplot_selftest_marks(void)
{
    json_t *rep = json_loads("{\"job_id\":\"j1\",\"status\":\"ok\",\"seconds\":2,"
        "\"counters\":{\"committed\":1},\"phases\":[{\"start_s\":0},{\"start_s\":1}],"
        "\"timeline\":{\"points\":[[0,0],[2,40]],\"tm_events\":["
        "{\"t\":0,\"event\":\"join\",\"pid\":7,\"host\":\"a\"},"
        "{\"t\":0,\"event\":\"join\",\"pid\":8,\"host\":\"b\"},"
        "{\"t\":1.5,\"event\":\"lost\",\"pid\":8,\"host\":\"b\"}]},"
        "\"tms\":[{\"host\":\"a\",\"pid\":7,\"workers\":1,\"busy_s\":1,\"done\":1,"
        "\"worker_res\":[{\"cpus\":\"0\"},{\"gpus\":\"0,G<1>\",\"runs\":3,\"busy_s\":0.5}]},"
        "{\"host\":\"b\",\"pid\":8,\"workers\":1,\"busy_s\":1,\"done\":0}]}", 0, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int bad = !rep || !f || spits_svgplot_write(rep, f) != 0;
    if (f)
        fclose(f);
    /* x: 0, 0.5, ... 2 s (a step of 0.5); y: 0, 10, ... 40 tasks; phase 2
     * at 1 s (x 390); b's lane ends lost at 1.5 s (x 550). */
    bad = bad || !buf || !strstr(buf, ">1.5</text>") || !strstr(buf, ">30</text>") ||
          !strstr(buf, ">phase 2</text>") || !strstr(buf, "x1=\"390.0\"") ||
          !strstr(buf, "class=\"lost\" x1=\"550.0\"") ||
          !strstr(buf, "class=\"lostmark\" x=\"550.0\"") ||
          !strstr(buf, "0 done, busy 1.0 s (67%), lost") ||
          !strstr(buf, ">task manager joined</text>") ||
          !strstr(buf, "The job committed 1 task in 2.00 s with 2 task managers (ok).") ||
          strstr(buf, ">2.5</text>") || strstr(buf, ">50</text>");
    /* a's worker 1 owned two GPUs: a lane each, its busy share of a's 2 s */
    const char *g = buf ? strstr(buf, "class=\"gpulane\"") : NULL;
    bad = bad || !g || !strstr(buf, ">a:7 GPU 0</text>") ||
          !strstr(buf, ">a:7 GPU G&lt;1&gt;</text>") || strstr(buf, "G<1>") ||
          !strstr(g + 1, "class=\"gpulane\"") ||
          strstr(strstr(g + 1, "class=\"gpulane\"") + 1, "class=\"gpulane\"") ||
          !strstr(buf, "worker 1: 3 tasks, busy 0.5 s (25%)");
    free(buf);
    json_decref(rep);
    return bad ? -1 : 0;
}

int spits_svgplot_selftest(void)
{
    if (svgplot_selftest_marks() != 0)
        return -1;
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
