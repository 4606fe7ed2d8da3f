/*
 * spits-status.c - what a job is doing, asked of its live JM.
 *
 *   spits-status [--jobdir DIR] [--json] [--watch [SEC]] [--serve [ADDR:PORT]]
 *
 * Reads DIR/jm.json, connects to the JM the way a Task Manager does (with
 * the job's CurveZMQ keys from DIR/tm.key), sends one STATUS request and
 * prints the answer: a table, or with --json the JM's document as it is.
 * A job that is over is described from DIR/report.json instead, and one
 * whose JM died of a signal from DIR/crash.json (libspits/crash.h). --watch
 * asks again every SEC seconds (2) until the job is over. --serve shows
 * the same as a web page (status-serve.c), asking on each request.
 *
 * A damaged file does not hide what the other one says: with jm.json
 * damaged, a report.json is still shown (with one warning); with
 * report.json damaged and no answer from the JM, one error says both.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "crash.h"
#include "escape.h"
#include "jobdir.h"
#include "keys.h"
#include "log.h"
#include "status-serve.h"
#include "util.h"
#include "wire.h"
#include "zmqutil.h"

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-status [OPTIONS]\n"
"Shows what a SPITS job is doing, asking its running job manager.\n"
"\n"
"Options:\n"
"  -d, --jobdir DIR      the job's directory (./spits-job)\n"
"  -j, --json            print the job manager's JSON document (or, for a\n"
"                        job that is over, report.json)\n"
"  -w, --watch [SEC]     ask again every SEC seconds (2) until the job ends\n"
"  -t, --timeout SEC     how long to wait for the job manager's answer (5)\n"
"  -s, --serve [ADDR:PORT]  serve the job's page, live, on ADDR:PORT\n"
"                        (127.0.0.1:8765); the URL printed holds the token\n"
"                        every request needs; Ctrl-C stops it; beyond\n"
"                        loopback a warning says the token travels in\n"
"                        plain HTTP\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n"
"\n"
"Exit status:\n"
"  0   the job answered, or is over\n"
"  1   the job cannot be reached\n"
"  2   a usage error\n");
}

static void print_duration(double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        printf("%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        printf("%ld:%02ld", t / 60, t % 60);
}

static json_int_t num(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* A string field, escaped for the terminal (escape.h: the JM's document
 * carries what its peers said), or "?" when it has none. Valid until the
 * fourth call after. */
static const char *str(json_t *o, const char *k)
{
    static char buf[4][512];
    static unsigned next;
    const char *v = json_string_value(json_object_get(o, k));
    return v ? spits_escape(buf[next++ % 4], sizeof buf[0], v) : "?";
}

/* A relay's TMs, indented under its row: what its last STATS said (the
 * JM knows them only through it, so neither busy nor done). Nothing for
 * a row that is no relay. */
static void print_behind(json_t *r)
{
    json_t *b = json_object_get(r, "behind"), *list = json_object_get(b, "tms"), *x;
    size_t i;

    if (!json_is_true(json_object_get(r, "relay")))
        return;
    printf("    relay at %s: %lld TM(s) behind it, %lld joined, %lld left, "
           "%lld loss(es)\n", str(r, "endpoint"),
           (long long)num(b, "alive"), (long long)num(b, "joins"),
           (long long)num(b, "leaves"), (long long)num(b, "losses"));
    json_array_foreach(list, i, x)
        printf("    %-18.18s %8lld %7lld %15lld runs%s\n",
               str(x, "host"),
               (long long)num(x, "pid"), (long long)num(x, "workers"),
               (long long)num(x, "runs"),
               json_is_true(json_object_get(x, "relay")) ? " (a relay)" : "");
    if (json_is_true(json_object_get(b, "truncated")))
        printf("    (the first %zu listed)\n", json_array_size(list));
}

static void print_failed(json_t *doc);

static void print_table(json_t *doc)
{
    json_t *t = json_object_get(doc, "tasks"), *jm = json_object_get(doc, "jm");
    json_int_t total = num(t, "total"), committed = num(t, "committed");
    json_t *eta = json_object_get(doc, "eta_s");

    printf("job %s, phase %d, %s for ", str(doc, "job_id"), (int)num(doc, "phase"),
           str(doc, "state"));
    print_duration(json_number_value(json_object_get(doc, "elapsed_s")));
    printf("\n  module %s\n", str(doc, "module"));
    if (json_is_true(json_object_get(t, "generation_done")) && total > 0)
        printf("  tasks: %lld of %lld committed (%.1f%%)", (long long)committed,
               (long long)total, 100.0 * (double)committed / (double)total);
    else
        printf("  tasks: %lld committed of %lld generated so far", (long long)committed,
               (long long)num(t, "generated"));
    printf(", %lld failed, %lld running, %lld queued, %lld re-sent, %lld duplicates\n",
           (long long)num(t, "failed"), (long long)num(t, "running"),
           (long long)num(t, "queued"), (long long)num(t, "resent"),
           (long long)num(t, "duplicates"));
    if (num(t, "uncommitted") > 0)
        printf("  %lld result(s) received, not committed yet%s\n",
               (long long)num(t, "uncommitted"),
               json_is_true(json_object_get(t, "waiting_for_disk"))
                   ? ": waiting for the disk (the journal's sync)" : "");
    printf("  rate: %.0f tasks/s, ETA ", json_number_value(json_object_get(doc, "rate_per_s")));
    if (json_is_number(eta))
        print_duration(json_number_value(eta));
    else
        printf("unknown");
    printf("\n  JM: %.1f MB resident (peak %.1f MB), CPU %.1f s user + %.1f s system\n",
           num(jm, "rss_bytes") / 1e6, num(jm, "max_rss_bytes") / 1e6,
           json_number_value(json_object_get(jm, "cpu_user_s")),
           json_number_value(json_object_get(jm, "cpu_system_s")));
    json_t *tms = json_object_get(doc, "tms"), *tc = json_object_get(doc, "tm_counts");
    /* (a JM of an earlier release lists every TM, and has no tms_alive) */
    long long alive = json_object_get(doc, "tms_alive") ? (long long)num(doc, "tms_alive")
                                                        : (long long)json_array_size(tms);
    printf("  task managers: %lld alive, %lld joined, %lld re-attach(es), %lld loss(es), "
           "%lld lost now", alive, (long long)num(tc, "joins"),
           (long long)num(tc, "reattaches"), (long long)num(tc, "losses"),
           (long long)num(tc, "lost_now"));
    if (num(doc, "behind_relays") > 0)
        printf(", %lld behind relays", (long long)num(doc, "behind_relays"));
    printf("\n");
    /* (TMs that left refusing the job: why the job may be waiting) */
    json_t *refusals = json_object_get(doc, "refusals");
    if (refusals) {
        char safe[600];
        printf("  refused by %lld task manager(s); the last: %s\n",
               (long long)num(refusals, "count"),
               spits_escape(safe, sizeof safe, str(refusals, "last")));
    }
    printf("  %-20s %8s %7s %5s %6s %9s %7s %11s\n", "TASK MANAGER", "PID", "WORKERS",
           "BUSY", "QUEUED", "DONE", "FAILED", "LAST HEARD");
    for (size_t i = 0; i < json_array_size(tms); i++) {
        json_t *r = json_array_get(tms, i);
        printf("  %-20.20s %8lld %7lld %5lld %6lld %9lld %7lld %9.1f s%s\n",
               str(r, "host"), (long long)num(r, "pid"),
               (long long)num(r, "workers"), (long long)num(r, "busy"),
               (long long)num(r, "queued"),
               (long long)num(r, "done"), (long long)num(r, "failed"),
               json_number_value(json_object_get(r, "last_heard_s")),
               json_is_true(json_object_get(r, "draining")) ? " draining" : "");
        print_behind(r);
    }
    if (!json_array_size(tms))
        printf("  (no task manager connected)\n");
    else if ((long long)json_array_size(tms) < alive)
        printf("  (%lld more not listed: the job manager lists %zu, relays, draining and "
               "silent ones first, then those that did the most)\n",
               alive - (long long)json_array_size(tms), json_array_size(tms));
    print_failed(doc);
    json_t *al = json_object_get(doc, "alloc");
    if (al && !json_is_true(json_object_get(al, "done")))
        printf("  spits-alloc: %lld queued, %lld running, %lld submitted, %lld "
               "cancelled; last: %s\n", (long long)num(al, "queued"),
               (long long)num(al, "running"), (long long)num(al, "submitted"),
               (long long)num(al, "cancelled"),
               json_is_string(json_object_get(al, "last_decision"))
                   ? str(al, "last_decision") : "none");
}

/* The first poison tasks of a STATUS or report document, one line each:
 * how the last run ended, where, and the code the worker returned. */
static void print_failed(json_t *doc)
{
    json_t *failed = json_object_get(doc, "failed_tasks"), *f;
    size_t i;
    json_array_foreach(failed, i, f) {
        if (i == 10) {
            printf("  (%zu more failed tasks: --json lists them)\n",
                   json_array_size(failed) - 10);
            break;
        }
        json_t *rc = json_object_get(f, "return_code");
        printf("  failed: task %lld of phase %lld, %s on %s", (long long)num(f, "task"),
               (long long)num(f, "phase"), str(f, "reason"), str(f, "host"));
        if (json_is_integer(rc))
            printf(", the worker returned %lld", (long long)json_integer_value(rc));
        /* (the JM escaped the module's words: they print as one line) */
        if (json_is_string(json_object_get(f, "error")))
            printf(": %s", str(f, "error"));
        printf("\n");
    }
}

/* spits-alloc's record of its queue jobs (DIR/alloc.json), if it has one,
 * summed up into doc as "alloc": {queued, running, submitted, cancelled,
 * last_decision, done}. A missing or unreadable record adds nothing. */
static void alloc_attach(const char *dir, json_t *doc)
{
    char path[PATH_MAX];
    json_t *a, *jobs, *j;
    size_t i;
    long queued = 0, running = 0;

    snprintf(path, sizeof path, "%s/alloc.json", dir);
    if (!(a = json_load_file(path, 0, NULL)))
        return;
    jobs = json_object_get(a, "jobs");
    json_array_foreach(jobs, i, j) {
        const char *st = json_string_value(json_object_get(j, "state"));
        queued += st && strcmp(st, "queued") == 0;
        running += st && strcmp(st, "running") == 0;
    }
    if (json_is_array(jobs))
        json_object_set_new(doc, "alloc", json_pack("{s:i, s:i, s:O, s:O, s:O, s:O}",
            "queued", (int)queued, "running", (int)running,
            "submitted", json_object_get(a, "submitted"),
            "cancelled", json_object_get(a, "cancelled"),
            "last_decision", json_object_get(a, "last_decision"),
            "done", json_object_get(a, "done")));
    json_decref(a);
}

/* DIR/report.json (path gets its name), or NULL: err empty when there
 * is none, else saying what is wrong with it. */
static json_t *report_load(const char *dir, char *path, char *err, size_t errlen)
{
    json_error_t jerr;
    snprintf(path, PATH_MAX, "%s/%s", dir, SPITS_REPORT_FILE);
    err[0] = '\0';
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return NULL;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) {
        snprintf(err, errlen, "%s is damaged: %s (line %d)", path, jerr.text, jerr.line);
        return NULL;
    }
    if (!json_is_string(json_object_get(doc, "job_id")) ||
        !json_is_string(json_object_get(doc, "status"))) {
        snprintf(err, errlen, "%s is damaged: it has no job_id or status", path);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* A job that is over: its report (doc, read from path). */
static void print_report(json_t *doc, const char *path, int as_json)
{
    if (as_json) {
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("\n");
        return;
    }
    json_t *c = json_object_get(doc, "counters");
    printf("job %s is over: %s (exit %lld) after ", str(doc, "job_id"),
           str(doc, "status"),
           (long long)num(doc, "exit_code"));
    print_duration(json_number_value(json_object_get(doc, "seconds")));
    printf("\n  %lld committed, %lld commit error(s), %lld failed, %lld re-sent, "
           "%lld duplicates, %lld task manager(s) (%lld re-attach(es), %lld loss(es), "
           "%lld lost for good); details in %s\n",
           (long long)num(c, "committed"), (long long)num(c, "commit_errors"),
           (long long)num(c, "failed"), (long long)num(c, "resent"),
           (long long)num(c, "duplicates"), (long long)num(c, "tms"),
           (long long)num(c, "tm_reattaches"), (long long)num(c, "tm_losses"),
           (long long)num(c, "tms_lost_for_good"), path);
    print_failed(doc);
}

/* A job that is over: its report. When why (jm.json's problem) is given,
 * the report is shown after one warning saying so. 0, or -1 after saying
 * what is wrong. */
static int show_report(const char *dir, int as_json, const char *why)
{
    char path[PATH_MAX], err[PATH_MAX + 256];
    json_t *doc = report_load(dir, path, err, sizeof err);
    if (!doc) {
        if (why && err[0])
            spits_error("%s, and %s", why, err);
        else if (why || err[0])
            spits_error("%s", why ? why : err);
        else
            spits_error("%s: %s", path, strerror(ENOENT));
        return -1;
    }
    if (why)
        spits_warn("%s; showing %s instead (job %s is over)", why, path,
                   str(doc, "job_id"));
    print_report(doc, path, as_json);
    json_decref(doc);
    return 0;
}

/* A job whose JM died of a signal: its DIR/crash.json (libspits/crash.h),
 * instead of the report it could not write. 0 if it was shown, 1 if there
 * is none of this job (or it is damaged: said). */
static int show_crash(const char *dir, const spits_announce_t *a, int as_json)
{
    char path[PATH_MAX], err[PATH_MAX + 128], what[256];
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_CRASH_FILE);
    json_t *doc = spits_crash_read(path, err, sizeof err);
    if (!doc) {
        if (err[0])
            spits_warn("%s", err);
        return 1;
    }
    const char *id = json_string_value(json_object_get(doc, "job_id"));
    if (!id || strcmp(id, a->job_id) != 0) {
        json_decref(doc);   /* (an earlier run's) */
        return 1;
    }
    if (as_json) {
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("\n");
    } else {
        spits_crash_describe(doc, what, sizeof what);
        printf("job %s crashed: its job manager (spits-jm pid %lld on %s) was "
               "killed by %s; no report.json (details in %s)\n", id,
               (long long)num(doc, "pid"), str(doc, "host"), what, path);
    }
    json_decref(doc);
    return 0;
}

/* The job is not over by its report.json, so the JM is asked; but when
 * report.json is damaged, its end may be lost in it: one line says so
 * and 1 is returned, at once if the JM has exited (why NULL), else after
 * it did not answer (why). */
static int report_damaged(const char *dir, const spits_announce_t *a, const char *why)
{
    char path[PATH_MAX], err[PATH_MAX + 256], gone[1024];
    json_t *doc = report_load(dir, path, err, sizeof err);
    json_decref(doc);   /* (of an earlier job: this one's is not there) */
    if (doc || !err[0] || (!why && !spits_announce_jm_gone(a)))
        return 0;
    if (!why) {
        snprintf(gone, sizeof gone, "job %s: its job manager (spits-jm pid %ld "
                 "on %s) has exited", a->job_id, a->pid, a->host);
        why = gone;
    }
    spits_error("%s, and %s", why, err);
    return 1;
}

/* One STATUS round trip. The answer (new reference), or NULL with err. */
static json_t *ask(void *ctx, const spits_announce_t *a, const spits_keys_t *k,
                   double timeout, char *err, size_t errlen)
{
    unsigned char req[SPITS_HDR_SIZE];
    char rid[32] = "status-";
    int linger = 0;
    json_t *doc = NULL;
    void *s = zmq_socket(ctx, ZMQ_DEALER);

    if (!s) {
        /* (out of file descriptors, say: ulimit -n) */
        snprintf(err, errlen, "cannot open a ZeroMQ socket: %s", zmq_strerror(errno));
        return NULL;
    }
    spits_random_hex(rid + 7, 8);
    zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, strlen(rid));
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (a->curve) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, k->server_public, SPITS_Z85_KEY);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, k->client_public, SPITS_Z85_KEY);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, k->client_secret, SPITS_Z85_KEY);
    }
    if (spits_zmq_connect(s, a->endpoint) != 0) {
        snprintf(err, errlen, "cannot connect to %s: %s", a->endpoint, zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    spits_wire_encode_empty(req, SPITS_MSG_STATUS, 0);
    zmq_send(s, req, sizeof req, 0);
    int64_t deadline = spits_now_ms() + (int64_t)(timeout * 1000);
    for (;;) {
        int64_t left = deadline - spits_now_ms();
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        if (left <= 0 || zmq_poll(&it, 1, (long)left) <= 0) {
            snprintf(err, errlen, "the job manager at %s did not answer within "
                     "%.0f s", a->endpoint, timeout);
            break;
        }
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) >= 0) {
            spits_hdr_t h;
            const char *why;
            if (spits_wire_parse(zmq_msg_data(&m), zmq_msg_size(&m), &h, &why) == 0 &&
                h.type == SPITS_MSG_STATUS)
                doc = spits_wire_decode_json(zmq_msg_data(&m), zmq_msg_size(&m), &why);
        }
        zmq_msg_close(&m);
        if (doc)
            break;
    }
    zmq_close(s);
    return doc;
}

/* What --serve shows. */
typedef struct {
    void *ctx;
    const char *dir;
    double timeout;
} serve_job_t;

/* For --serve: the live JM's answer, or the report of a job that is over.
 * Without either, why: the JM's silence (stopped, or gone without a
 * report) or a damaged jm.json is not "no job yet". */
static json_t *serve_fetch(void *arg, int *live, char *err, size_t errlen)
{
    serve_job_t *j = arg;
    spits_announce_t a;
    spits_keys_t k;
    char path[PATH_MAX], why[1024] = "";
    json_t *doc = NULL;

    *live = 0;
    if (spits_announce_read(j->dir, &a, why, sizeof why) == 0 &&
        !spits_jobdir_finished(j->dir, a.job_id, 1)) {
        snprintf(path, sizeof path, "%s/%s", j->dir, SPITS_TM_KEY_FILE);
        if (a.curve && spits_keys_read(path, &k, 0, err, errlen) != 0)
            return NULL;
        doc = ask(j->ctx, &a, &k, j->timeout, why, sizeof why);
        *live = doc != NULL;
        if (doc)
            alloc_attach(j->dir, doc);
    }
    if (!doc) {
        doc = report_load(j->dir, path, err, errlen);
        if (!doc && !err[0] && why[0])
            snprintf(err, errlen, "%s", why);
        else if (!doc && !err[0])
            snprintf(err, errlen, "no job in %s yet", j->dir);
    }
    return doc;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"jobdir", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"watch", optional_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 't'},
        {"serve", optional_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *dir = "spits-job", *serve = NULL;
    int as_json = 0, c;
    double watch = 0, timeout = 5;
    char err[1024], path[PATH_MAX], hint[PATH_MAX + 256];

    spits_log_init("spits-status", SPITS_LOG_INFO);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:jw::t:s::hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'j': as_json = 1; break;
        case 'w':
            watch = 2;
            /* (--watch SEC and -w SEC as well as --watch=SEC: the next
             * argument is the seconds when it starts as a number does;
             * spits-status takes no other arguments) */
            if (!optarg && optind < argc && (isdigit((unsigned char)argv[optind][0]) ||
                                             argv[optind][0] == '.'))
                optarg = argv[optind++];
            if (optarg && (spits_parse_seconds(optarg, 86400, &watch) || watch < 0.1))
                return spits_bad_option("--watch wants seconds (at least 0.1), not '%s'", optarg);
            break;
        case 't':
            if (spits_parse_seconds(optarg, 3600, &timeout) || timeout <= 0)
                return spits_bad_option("--timeout wants seconds, not '%s'", optarg);
            break;
        case 's':
            /* (--serve ADDR:PORT as well as --serve=ADDR:PORT) */
            serve = optarg ? optarg : optind < argc && argv[optind][0] != '-'
                                      ? argv[optind++] : "127.0.0.1:8765";
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("spits-status %s\n", PACKAGE_VERSION); return 0;
        case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
        default: return spits_bad_option("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return spits_bad_option("unexpected argument '%s'", argv[optind]);
    if (sodium_init() < 0)
        return 1;

    void *ctx = zmq_ctx_new();
    int rc;
    if (!ctx) {
        spits_error("cannot start ZeroMQ: %s", zmq_strerror(errno));
        return 1;
    }
    if (serve) {
        serve_job_t job = {ctx, dir, timeout};
        rc = status_serve(serve, serve_fetch, &job);
        spits_zmq_ctx_term(ctx);
        return rc;
    }
    for (;;) {
        spits_announce_t a;
        spits_keys_t k;
        rc = 1;
        int arc = spits_announce_read(dir, &a, err, sizeof err);
        if (arc != 0) {
            if (arc > 0)
                spits_error("no job in %s (no %s)", dir, SPITS_ANNOUNCE_FILE);
            else
                rc = show_report(dir, as_json, err) == 0 ? 0 : 1;
            break;
        }
        if (spits_jobdir_finished(dir, a.job_id, 1)) {
            rc = show_report(dir, as_json, NULL) == 0 ? 0 : 1;
            break;
        }
        if (show_crash(dir, &a, as_json) == 0) {
            rc = 0;
            break;
        }
        if (report_damaged(dir, &a, NULL))
            break;
        if (spits_announce_jm_gone(&a)) {
            /* (asking would only wait out --timeout) */
            spits_error("job %s: no job manager answers%s", a.job_id,
                        spits_jobdir_gone_hint(dir, &a, hint, sizeof hint));
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, SPITS_TM_KEY_FILE);
        if (a.curve && spits_keys_read(path, &k, 0, err, sizeof err) != 0) {
            spits_error("%s", err);
            break;
        }
        json_t *doc = ask(ctx, &a, &k, timeout, err, sizeof err);
        if (!doc) {
            /* It may have ended while we asked. */
            if (spits_jobdir_finished(dir, a.job_id, 1))
                rc = show_report(dir, as_json, NULL) == 0 ? 0 : 1;
            else if (!report_damaged(dir, &a, err))
                spits_error("%s%s", err, spits_jobdir_gone_hint(dir, &a, hint, sizeof hint));
            break;
        }
        alloc_attach(dir, doc);
        if (watch > 0 && !as_json && isatty(STDOUT_FILENO))
            printf("\033[H\033[J");
        if (as_json) {
            json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
            printf("\n");
        } else {
            print_table(doc);
        }
        fflush(stdout);
        json_decref(doc);
        rc = 0;
        if (watch <= 0)
            break;
        struct timespec ts = {(time_t)watch, (long)((watch - (long)watch) * 1e9)};
        nanosleep(&ts, NULL);
    }
    spits_zmq_ctx_term(ctx);
    return rc;
}
