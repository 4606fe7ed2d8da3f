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
 * (busy_s / (workers x time in the job)); then, for a job whose workers
 * owned GPUs, a lane per GPU (svgplot.h). The drawing is libspits'
 * svgplot.c (which the JM's report.html inlines too); FILE.png is that SVG
 * rendered by rsvg-convert (Debian's librsvg2-bin), run directly, without
 * a shell, through a pipe. Either is drawn in memory first and replaces
 * FILE whole (plot_write).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
"Options:\n"
"  -d, --jobdir DIR      the job's directory: reads DIR/report.json (./spits-job)\n"
"  -r, --report FILE     read this report.json instead\n"
"  -o, --output FILE     the .svg or .png to write (required)\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n"
"\n"
"Exit status:\n"
"  0   the drawing was written\n"
"  1   an error (no report, a report that does not parse, a file that\n"
"      cannot be written, rsvg-convert missing or failing)\n"
"  2   a usage error\n");
}

/* What goes to -o: the drawing (svg, len bytes) as it is, or as the PNG
 * rsvg-convert makes of it. why: a failure of our own, said in full
 * (else errno says it). */
typedef struct {
    const char *svg;
    size_t len;
    int png;
    char why[160];
} plot_out_t;

/* Pipes the drawing through rsvg-convert into f. 0, or -1. */
static int plot_render_png(plot_out_t *o, FILE *f)
{
    int p[2], status;
    pid_t pid;

    if (fflush(f) != 0 || pipe(p) != 0)
        return -1;
    if ((pid = fork()) < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        if (dup2(p[0], STDIN_FILENO) < 0 || dup2(fileno(f), STDOUT_FILENO) < 0)
            _exit(126);
        close(p[0]);
        close(p[1]);
        execlp("rsvg-convert", "rsvg-convert", "-f", "png", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    /* (a write fails with EPIPE, SIGPIPE being ignored, if it exits early:
     * its exit status says why) */
    for (size_t off = 0; off < o->len;) {
        ssize_t n = write(p[1], o->svg + off, o->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(p[1]);
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    errno = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(o->why, sizeof o->why, "a PNG needs rsvg-convert (Debian package "
                 "librsvg2-bin); -o FILE.svg needs nothing");
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(o->why, sizeof o->why, "rsvg-convert could not render the PNG");
        return -1;
    }
    return 0;
}

static int plot_fill(FILE *f, void *arg)
{
    plot_out_t *o = arg;
    if (o->png)
        return plot_render_png(o, f);
    return fwrite(o->svg, 1, o->len, f) == o->len ? 0 : -1;
}

/* Writes o to out. A file is replaced as a whole (a temporary file beside
 * it, renamed over it; through a symlink, beside its target), so that a
 * failure, a full disk say, leaves what was there as it was, and nothing
 * of the user's is removed. Something else that exists (a pipe,
 * /dev/stdout) is written in place. 0, or -1 with err set. */
static int plot_write(const char *out, plot_out_t *o, char *err, size_t errlen)
{
    struct stat st;
    char real[PATH_MAX];
    int exists = stat(out, &st) == 0;

    if (exists && !S_ISREG(st.st_mode)) {
        FILE *f = fopen(out, "w");
        int rc = -1;
        if (f) {
            errno = 0;
            rc = plot_fill(f, o);
            if (fclose(f) != 0)
                rc = -1;
        }
        if (rc != 0)
            snprintf(err, errlen, "cannot write %s: %s", out,
                     errno ? strerror(errno) : "the content could not be made");
        return rc;
    }
    mode_t mask = umask(0);
    umask(mask);
    return spits_file_write_atomic(realpath(out, real) ? real : out,
                                   exists ? (int)(st.st_mode & 07777)
                                          : (int)(0666 & ~mask),
                                   plot_fill, o, err, errlen);
}

/* Draws rep as SVG into memory, so that nothing is written when there
 * is nothing to draw. 0, -1 (no timeline) or -2 (out of memory). */
static int plot_draw(const json_t *rep, char **svg, size_t *len)
{
    FILE *m = open_memstream(svg, len);
    if (!m)
        return -2;
    int rc = spits_svgplot_write(rep, m);
    if (fclose(m) != 0)
        rc = -2;
    if (rc != 0) {
        free(*svg);
        *svg = NULL;
    }
    return rc;
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
    plot_out_t o = {.png = png};
    char *svg = NULL, err[PATH_MAX + 256];
    int rc;
    if ((rc = plot_draw(rep, &svg, &o.len)) != 0) {
        if (rc == -2)
            spits_error("out of memory drawing %s", report);
        else
            spits_error("%s has no timeline to draw (a report of spits 0.1 or "
                        "later is needed)", report);
        json_decref(rep);
        return 1;
    }
    json_decref(rep);
    o.svg = svg;
    signal(SIGPIPE, SIG_IGN);
    rc = plot_write(out, &o, err, sizeof err);
    if (rc != 0)
        spits_error("%s", o.why[0] ? o.why : err);
    free(svg);
    return rc != 0;
}
