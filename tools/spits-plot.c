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
 * (busy_s / (workers x time in the job)). The drawing is libspits'
 * svgplot.c (which the JM's report.html inlines too); FILE.png is that SVG
 * rendered by rsvg-convert (Debian's librsvg2-bin), run directly, without
 * a shell.
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
#include "svgplot.h"

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
    if (spits_svgplot_check(rep, what, sizeof what) != 0) {
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
    int rc = spits_svgplot_write(rep, f);
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
