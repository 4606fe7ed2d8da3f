/*
 * spits-plot.c - a picture of a finished job, from its report.json.
 *
 *   spits-plot [--jobdir DIR | --report FILE] -o FILE.svg|FILE.png
 *
 * Draws the commit timeline (tasks committed over time, as in the PY-PITS
 * paper's Figure 1) with each Task Manager's joins and leaves marked, and
 * below it one lane per Task Manager: from when it joined until it left
 * (or the job ended), labelled with the tasks it did, and inside it a
 * darker bar as long as the share of that time its workers were busy
 * (busy_s / (workers x time in the job)). The SVG is written by hand: no
 * plotting package is needed; FILE.png is that SVG rendered by rsvg-convert
 * (Debian's librsvg2-bin), run directly, without a shell.
 *
 * A damaged or hand-made report must not make an invalid SVG: a negative
 * time or count, which no job writes, is refused naming its field
 * (plot_check), and every coordinate is a share of the job's time or
 * tasks kept within [0, 1] (plot_share), so huge values cannot overflow
 * into inf or NaN.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "jobdir.h"
#include "log.h"

#define W 760
#define PLOT_X 70
#define PLOT_W 640
#define PLOT_Y 40
#define PLOT_H 260
#define LANE_H 22

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-plot [--jobdir DIR | --report FILE] -o FILE.svg|FILE.png\n"
"Draws a finished job's commit timeline and its task managers as SVG (or\n"
"PNG, through rsvg-convert from Debian's librsvg2-bin).\n"
"\n"
"  -d, --jobdir DIR      the job's directory: reads DIR/report.json (./spits-job)\n"
"  -r, --report FILE     read this report.json instead\n"
"  -o, --output FILE     the .svg or .png to write (required)\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n");
}

/* Renders the SVG file svg as the PNG file png with rsvg-convert.
 * 0, or -1 after saying why. */
static int render_png(const char *svg, const char *png)
{
    int status;
    pid_t pid = fork();
    if (pid < 0) {
        spits_error("cannot start rsvg-convert: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execlp("rsvg-convert", "rsvg-convert", "-f", "png", "-o", png, svg,
               (char *)NULL);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        spits_error("a PNG needs rsvg-convert (Debian package librsvg2-bin); "
                    "-o FILE.svg needs nothing");
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        spits_error("rsvg-convert could not render %s", png);
        return -1;
    }
    return 0;
}

/* r as a share in [0, 1]: inf is 1, NaN (inf / inf) 0. */
static double plot_share(double r)
{
    return r > 1 ? 1 : r >= 0 ? r : 0;
}

/* Finds a value no job writes: a negative time or count. Returns 0, or
 * -1 with what naming the field and its value. */
static int plot_check(json_t *rep, char *what, size_t len)
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
static int plot_is(json_t *o, const char *k, const char *want)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v && want && strcmp(v, want) == 0;
}

/* The tms entry's join time in seconds since the job started. */
static double lane_start(json_t *events, json_t *tm)
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

static double lane_end(json_t *events, json_t *tm, double start, double end)
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

static void text_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

static int plot(json_t *rep, FILE *f)
{
    json_t *tl = json_object_get(rep, "timeline");
    json_t *pts = json_object_get(tl, "points"), *evs = json_object_get(tl, "tm_events");
    json_t *tms = json_object_get(rep, "tms");
    double end = json_number_value(json_object_get(rep, "seconds"));
    double maxn = 1;
    size_t ntm = json_array_size(tms);
    int h = PLOT_Y + PLOT_H + 60 + (int)ntm * LANE_H + 20;

    if (!json_is_array(pts) || json_array_size(pts) == 0 || end <= 0)
        return -1;
    for (size_t i = 0; i < json_array_size(pts); i++) {
        double n = json_number_value(json_array_get(json_array_get(pts, i), 1));
        if (n > maxn)
            maxn = n;
    }
#define X(t) (PLOT_X + plot_share((t) / end) * PLOT_W)
#define Y(n) (PLOT_Y + PLOT_H - plot_share((n) / maxn) * PLOT_H)
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\">job ", PLOT_X);
    text_escape(f, json_string_value(json_object_get(rep, "job_id")));
    fputs(": ", f);
    text_escape(f, json_string_value(json_object_get(rep, "status")));
    fprintf(f, ", %.2f s</text>\n", end);
    /* Axes and their ends. */
    fprintf(f, "<g stroke=\"black\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>\n",
            PLOT_X, PLOT_Y, PLOT_X, PLOT_Y + PLOT_H, PLOT_X, PLOT_Y + PLOT_H,
            PLOT_X + PLOT_W, PLOT_Y + PLOT_H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f</text>\n",
            PLOT_X - 4, PLOT_Y + 4, maxn);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n",
            PLOT_X - 4, PLOT_Y + PLOT_H);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.1f s</text>\n",
            PLOT_X + PLOT_W, PLOT_Y + PLOT_H + 16, end);
    fprintf(f, "<text x=\"%d\" y=\"%d\">tasks committed over time</text>\n",
            PLOT_X + 6, PLOT_Y + 14);
    /* TM joins (green) and leaves (red). */
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = json_array_get(evs, i);
        int join = plot_is(e, "event", "join");
        double x = X(json_number_value(json_object_get(e, "t")));
        fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                   "stroke=\"%s\" stroke-dasharray=\"3,3\"/>\n", join ? "join" : "leave",
                x, PLOT_Y, x, PLOT_Y + PLOT_H, join ? "green" : "red");
    }
    /* The timeline. */
    fprintf(f, "<polyline class=\"timeline\" fill=\"none\" stroke=\"blue\" stroke-width=\"2\" points=\"");
    for (size_t i = 0; i < json_array_size(pts); i++) {
        json_t *p = json_array_get(pts, i);
        fprintf(f, "%.1f,%.1f ", X(json_number_value(json_array_get(p, 0))),
                Y(json_number_value(json_array_get(p, 1))));
    }
    fprintf(f, "\"/>\n");
    /* One lane per TM. */
    int y = PLOT_Y + PLOT_H + 40;
    fprintf(f, "<text x=\"%d\" y=\"%d\">task managers (joined to left or end; "
            "dark: the share of it their workers were busy)</text>\n",
            PLOT_X, y - 8);
    for (size_t i = 0; i < ntm; i++, y += LANE_H) {
        json_t *t = json_array_get(tms, i);
        double s = lane_start(evs, t), e = lane_end(evs, t, s, end);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">", PLOT_X - 4, y + 12);
        text_escape(f, json_string_value(json_object_get(t, "host")));
        fprintf(f, ":%lld</text>\n", (long long)json_integer_value(json_object_get(t, "pid")));
        double lw = X(e) - X(s) > 1 ? X(e) - X(s) : 1;
        fprintf(f, "<rect class=\"lane\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#9cf\"/>\n",
                X(s), y + 2, lw, LANE_H - 4);
        double busy = json_number_value(json_object_get(t, "busy_s"));
        long long workers = json_integer_value(json_object_get(t, "workers"));
        /* (over 1 for a TM that re-attached: it counts its outage too) */
        double share = plot_share(e > s && workers > 0
                                  ? busy / ((double)workers * (e - s)) : 0);
        fprintf(f, "<rect class=\"busy\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#36c\"/>\n",
                X(s), y + 14, X(e) > X(s) ? (X(e) - X(s)) * share : 0, 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\">%lld done, busy %.1f s (%.0f%%)</text>\n",
                X(s) + 4, y + 12, (long long)json_integer_value(json_object_get(t, "done")),
                busy, share * 100);
    }
    fprintf(f, "</svg>\n");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"jobdir", required_argument, NULL, 'd'},
        {"report", required_argument, NULL, 'r'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *dir = "spits-job", *report = NULL, *out = NULL;
    char path[PATH_MAX];
    json_error_t jerr;
    int c;

    spits_log_init("spits-plot", SPITS_LOG_INFO);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:r:o:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'r': report = optarg; break;
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("spits-plot %s\n", PACKAGE_VERSION); return 0;
        case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
        default: return spits_bad_option("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return spits_bad_option("unexpected argument '%s'", argv[optind]);
    if (!out)
        return spits_bad_option("%s", "give -o FILE.svg or -o FILE.png");
    size_t olen = strlen(out);
    int png = olen > 4 && strcmp(out + olen - 4, ".png") == 0;
    if (!png && (olen <= 4 || strcmp(out + olen - 4, ".svg") != 0))
        return spits_bad_option("spits-plot writes SVG or PNG: give -o FILE.svg "
                                "or -o FILE.png, not '%s'", out);
    /* A PNG is drawn as SVG first, next to it. */
    char svg[PATH_MAX];
    if (png && snprintf(svg, sizeof svg, "%s.tmp.svg", out) >= (int)sizeof svg)
        return spits_bad_option("-o '%s' is too long", out);
    if (!report) {
        snprintf(path, sizeof path, "%s/%s", dir, SPITS_REPORT_FILE);
        report = path;
    }
    json_t *rep = json_load_file(report, 0, &jerr);
    if (!rep) {
        spits_error("cannot read %s: %s", report, jerr.text);
        return 1;
    }
    char what[256];
    if (plot_check(rep, what, sizeof what) != 0) {
        spits_error("%s: %s (a damaged report?)", report, what);
        json_decref(rep);
        return 1;
    }
    const char *draw = png ? svg : out;
    FILE *f = fopen(draw, "w");
    if (!f) {
        spits_error("cannot write %s: %s", draw, strerror(errno));
        json_decref(rep);
        return 1;
    }
    int rc = plot(rep, f);
    if (fclose(f) != 0 || rc != 0) {
        spits_error("%s has no timeline to draw (a report of spits 0.1 or later "
                    "is needed)", report);
        remove(draw);
        json_decref(rep);
        return 1;
    }
    json_decref(rep);
    if (png) {
        rc = render_png(svg, out);
        remove(svg);
        if (rc != 0) {
            remove(out);
            return 1;
        }
    }
    return 0;
}
