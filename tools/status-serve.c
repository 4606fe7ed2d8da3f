/*
 * status-serve.c - spits-status --serve: one job's page over HTTP.
 *
 * GET /?token=T is the page: while the job runs, its state, a progress bar
 * with rate and ETA, the counts, the performance model so far, the commit
 * timeline so far (with lanes for the busiest TMs and their GPUs), the
 * Task Managers (50 rows a page, sorted by any column: &sort=KEY&page=N),
 * their workers (reporthtml.c spits_html_workers) and the failed tasks,
 * all drawn on the server so that it shows without JavaScript. A small
 * inline script fetches /live (that part alone, same view) every 2 s and
 * swaps it in without reloading the page. /status.json is the document
 * itself. Once the job is over, the page is its report
 * (reporthtml.c) and /live answers 409. The data is what spits-status
 * reads anyway (the fetch callback): nothing here can send the JM
 * anything but STATUS.
 *
 * Safe by default: libmicrohttpd parses HTTP (no parser of ours), the
 * address is 127.0.0.1 unless given (a warning says when it is not, as
 * the token travels in plain HTTP), every request without the random
 * token printed in the URL gets 403 (compared in constant time) and its
 * connection closed, only GET and HEAD are served, and clients without
 * the token cannot hold the connections the token holder needs
 * (status-guard.c).
 *
 * Threads: the daemon has no thread of its own; status_serve's loop runs
 * it (MHD_run_wait), so every callback here and in status-guard.c, the
 * fetch included, runs in the thread that called status_serve, one at a
 * time, and the serve_t is that thread's alone.
 */
#define _GNU_SOURCE             /* qsort_r */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "reporthtml.h"
#include "status-guard.h"
#include "status-serve.h"
#include "svgplot.h"
#include "util.h"

#define SERVE_TOKEN_BYTES 16
#define SERVE_TMS 50            /* TM rows a page shows */
#define SERVE_LANES 20          /* TM lanes under the live timeline */
#define SERVE_TICK_MS 250       /* the loop's longest wait: signals, header deadlines */
#define SERVE_BACKLOG 64        /* listen(2)'s queue */
#define SERVE_LOG_QUIET_S 10    /* a libmicrohttpd message repeated within is counted */
#define SERVE_LOG_KINDS 4       /* ...each of its latest so many messages */

/* A libmicrohttpd message printed, when, and its repeats counted since. */
typedef struct {
    char text[512];
    int64_t at;
    long repeats;
} serve_logged_t;

typedef struct {
    status_fetch_fn fetch;
    void *arg;
    char token[2 * SERVE_TOKEN_BYTES + 1];
    status_guard_t *guard;
    serve_logged_t logged[SERVE_LOG_KINDS];  /* libmicrohttpd's messages */
} serve_t;

/* What one request asked to see: the TM table's order and page. */
typedef struct {
    const char *token;
    int sort;                   /* index in serve_sorts */
    long page;                  /* from 0 */
} serve_view_t;

/* The TM table's columns, in order: the status document's key, its
 * heading, and whether it sorts with the largest first. */
static const struct {
    const char *key, *label;
    int desc;
} serve_sorts[] = {
    {"host", "host", 0},
    {"pid", "pid", 0},
    {"workers", "workers", 1},
    {"busy", "busy now", 1},
    {"queued", "queued", 1},
    {"done", "done", 1},
    {"failed", "failed", 1},
    {"busy_s", "busy s", 1},
    {"last_heard_s", "last heard (s)", 1},
};
#define SERVE_NSORTS (sizeof serve_sorts / sizeof *serve_sorts)
#define SERVE_SORT_DEFAULT 5    /* done: the busiest TMs first */

/* Every 2 s the script asks for the live part again (the same view) and
 * swaps it in; once the job is over (409) it loads the page, which is
 * then the job's report. */
static const char *serve_script =
    "(function(){function tick(){fetch('live'+location.search)"
    ".then(function(r){if(r.status==409){location.reload();return null;}"
    "if(!r.ok)throw r.status;return r.text();}).then(function(h){if(h==null)return;"
    "document.getElementById('live').innerHTML=h;"
    "document.getElementById('updated').textContent=new Date().toLocaleTimeString();})"
    ".catch(function(){document.getElementById('updated').textContent='no answer';});}"
    "setInterval(tick,2000);})();";

static long long serve_int(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static double serve_num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static int serve_cmp(const void *a, const void *b, void *arg)
{
    int sort = *(const int *)arg;
    const json_t *ta = *(json_t *const *)a, *tb = *(json_t *const *)b;
    const json_t *x = json_object_get(ta, serve_sorts[sort].key);
    const json_t *y = json_object_get(tb, serve_sorts[sort].key);
    int c;
    if (json_is_string(x) || json_is_string(y)) {
        const char *sx = json_string_value(x), *sy = json_string_value(y);
        c = strcmp(sx ? sx : "", sy ? sy : "");
    } else {
        double dx = json_number_value(x), dy = json_number_value(y);
        c = dx < dy ? -1 : dx > dy;
    }
    if (serve_sorts[sort].desc)
        c = -c;
    if (c == 0) {
        /* ties in one order, host then pid, so a TM is on one page */
        const char *ha = json_string_value(json_object_get(ta, "host"));
        const char *hb = json_string_value(json_object_get(tb, "host"));
        long long pa = serve_int(ta, "pid"), pb = serve_int(tb, "pid");
        c = strcmp(ha ? ha : "", hb ? hb : "");
        if (c == 0)
            c = pa < pb ? -1 : pa > pb;
    }
    return c;
}

/* A link to this page in view v with sort and page changed. */
static void serve_link(FILE *f, const serve_view_t *v, int sort, long page,
                       const char *text)
{
    fprintf(f, "<a href=\"?token=%s&amp;sort=%s&amp;page=%ld\">", v->token,
            serve_sorts[sort].key, page);
    spits_xml_escape(f, text);
    fputs("</a>", f);
}

/* One page of the TMs, in the view's order: at thousands of TMs the
 * table stays SERVE_TMS rows, with links to sort by any column and to
 * page through the rest. */
static void serve_tms(const json_t *tms, long long alive, const serve_view_t *v, FILE *f)
{
    size_t n = json_array_size(tms), pages = (n + SERVE_TMS - 1) / SERVE_TMS;
    size_t page = (size_t)v->page < pages ? (size_t)v->page : pages ? pages - 1 : 0;
    json_t **row = malloc((n ? n : 1) * sizeof *row);
    if (!row) {
        fputs("<p class=\"bad\">out of memory listing the TMs</p>\n", f);
        return;
    }
    for (size_t i = 0; i < n; i++)
        row[i] = json_array_get(tms, i);
    qsort_r(row, n, sizeof *row, serve_cmp, (void *)&v->sort);
    fprintf(f, "<h2>Task Managers (<span id=\"ntms\">%lld</span>)</h2>\n",
            alive > (long long)n ? alive : (long long)n);
    if (alive > (long long)n)
        fprintf(f, "<p>%zu of %lld listed: relays, draining and silent ones first, "
                   "then those that did the most.</p>\n", n, alive);
    fputs("<table id=\"tms\"><thead><tr>", f);
    for (int c = 0; c < (int)SERVE_NSORTS; c++) {
        fputs(c == v->sort ? "<th class=\"sorted\">" : "<th>", f);
        serve_link(f, v, c, 0, serve_sorts[c].label);
        fputs("</th>", f);
    }
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = page * SERVE_TMS; i < n && i < (page + 1) * SERVE_TMS; i++) {
        fputs("<tr class=\"tm\"><td>", f);
        spits_xml_escape(f, json_string_value(json_object_get(row[i], "host")));
        fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td>"
                   "<td class=\"n\">%lld</td><td class=\"n\">%lld</td><td class=\"n\">%lld"
                   "</td><td class=\"n\">%lld</td><td class=\"n\">%.1f</td>"
                   "<td class=\"n\">%.1f</td></tr>\n",
                serve_int(row[i], "pid"), serve_int(row[i], "workers"),
                serve_int(row[i], "busy"), serve_int(row[i], "queued"),
                serve_int(row[i], "done"),
                serve_int(row[i], "failed"), serve_num(row[i], "busy_s"),
                serve_num(row[i], "last_heard_s"));
    }
    fputs("</tbody></table>\n", f);
    free(row);
    if (pages <= 1)
        return;
    fprintf(f, "<p id=\"pages\">page <span id=\"page\">%zu</span> of %zu ", page + 1, pages);
    if (page > 0)
        serve_link(f, v, v->sort, (long)page - 1, "previous");
    fputs(" ", f);
    if (page + 1 < pages)
        serve_link(f, v, v->sort, (long)page + 1, "next");
    fputs("</p>\n", f);
}

/* "<tr><th>label</th><td id=count-key>N</td></tr>" of an object's count. */
static void serve_count(FILE *f, const json_t *o, const char *key, const char *id,
                        const char *label)
{
    fprintf(f, "<tr><th>%s</th><td class=\"n\" id=\"count-%s\">%lld</td></tr>\n",
            label, id, serve_int(o, key));
}

/* The timeline so far, with lanes for the busiest TMs: the report's
 * drawing (reporthtml.c) of a document that says "running", with the
 * committed count where a report keeps it (its caption says it). */
static void serve_timeline(const json_t *d, FILE *f)
{
    json_int_t done = serve_int(json_object_get(d, "tasks"), "committed");
    json_t *view = json_pack("{s:O, s:s, s:f, s:O, s:{s:I}}", "job_id",
                             json_object_get(d, "job_id"), "status", "running",
                             "seconds", serve_num(d, "elapsed_s"),
                             "timeline", json_object_get(d, "timeline"),
                             "counters", "committed", done);
    /* (the TMs gone keep their lanes, as report.html's do) */
    json_t *all = json_deep_copy(json_object_get(d, "tms"));
    json_array_extend(all, json_object_get(d, "tms_gone"));
    json_t *top = spits_html_top_tms(all, SERVE_LANES);
    json_decref(all);
    if (view && top)
        spits_html_timeline(view, top, f);
    json_decref(view);
    json_decref(top);
}

/* The part of the live page the script refreshes: state, progress,
 * counts, the model so far, the timeline, the TMs and the failed tasks. */
static void serve_live_part(const json_t *d, const serve_view_t *v, FILE *f)
{
    const json_t *k = json_object_get(d, "tasks"), *eta = json_object_get(d, "eta_s");
    const json_t *tc = json_object_get(d, "tm_counts");
    long long total = serve_int(k, "total"), done = serve_int(k, "committed");
    char model[256];

    fprintf(f, "<p>phase <span id=\"phase\">%lld</span>, <span class=\"state ok\" "
               "id=\"state\">", serve_int(d, "phase"));
    spits_xml_escape(f, json_string_value(json_object_get(d, "state")));
    fprintf(f, "</span> for <span id=\"elapsed\">%.1f</span> s</p>\n<p><progress "
               "id=\"bar\" max=\"%lld\" value=\"%lld\"></progress> <span id=\"percent\">",
            serve_num(d, "elapsed_s"), total > 0 ? total : 1, done);
    if (total > 0)
        fprintf(f, "%.1f%%", 100.0 * (double)done / (double)total);
    else
        fputs("? % (generation goes on)", f);
    fprintf(f, "</span><br><span id=\"committed\">%lld</span> of <span id=\"total\">"
               "%lld</span> committed, <span id=\"failed\">%lld</span> failed; "
               "<span id=\"rate\">%.0f</span> tasks/s, ETA <span id=\"eta\">",
            done, total, serve_int(k, "failed"), serve_num(d, "rate_per_s"));
    if (json_is_number(eta))
        fprintf(f, "%.0f s", json_number_value(eta));
    else
        fputs("unknown", f);
    fputs("</span></p>\n<table id=\"counts\">\n", f);
    serve_count(f, k, "generated", "generated", "tasks generated");
    serve_count(f, k, "running", "running", "tasks running");
    serve_count(f, k, "queued", "queued", "tasks queued on the TMs");
    serve_count(f, k, "uncommitted", "uncommitted", "results not committed yet");
    serve_count(f, k, "resent", "resent", "tasks re-sent");
    serve_count(f, k, "duplicates", "duplicates", "duplicate results");
    serve_count(f, tc, "joins", "tm_joins", "Task Managers (joins)");
    serve_count(f, tc, "reattaches", "tm_reattaches", "TM re-attaches");
    serve_count(f, tc, "losses", "tm_losses", "TM losses");
    serve_count(f, tc, "leaves", "tm_leaves", "TM leaves");
    fputs("</table>\n<p id=\"model\">", f);
    spits_model_line(json_object_get(d, "model"), model, sizeof model);
    if (model[0]) {
        fputs("so far, ", f);
        spits_xml_escape(f, model);
    } else {
        fputs("model: unknown until a TM reports a task run", f);
    }
    fputs("</p>\n", f);
    const json_t *al = json_object_get(d, "alloc");
    if (al && !json_is_true(json_object_get(al, "done"))) {
        fprintf(f, "<p id=\"alloc\">spits-alloc: %lld queued, %lld running, %lld "
                   "submitted, %lld cancelled; last: ", serve_int(al, "queued"),
                serve_int(al, "running"), serve_int(al, "submitted"),
                serve_int(al, "cancelled"));
        spits_xml_escape(f, json_string_value(json_object_get(al, "last_decision")));
        fputs("</p>\n", f);
    }
    serve_timeline(d, f);
    serve_tms(json_object_get(d, "tms"), serve_int(d, "tms_alive"), v, f);
    spits_html_workers(json_object_get(d, "tms"), f);
    spits_html_failed(d, (size_t)serve_int(k, "failed"), f);
}

/* The live page of a STATUS document: drawn on the server, so it shows
 * without JavaScript; the script only refreshes #live. */
static void serve_live(const json_t *d, const serve_view_t *v, FILE *f)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<title>spits job (live)</title><style>%sprogress{width:30em}"
               "th.sorted a{font-weight:bold}</style></head><body>\n<h1>spits job "
               "<span id=\"job-id\">", spits_html_css);
    spits_xml_escape(f, json_string_value(json_object_get(d, "job_id")));
    fputs("</span> (live)</h1>\n<p>module <code id=\"module\">", f);
    spits_xml_escape(f, json_string_value(json_object_get(d, "module")));
    fputs("</code></p>\n<div id=\"live\">\n", f);
    serve_live_part(d, v, f);
    fprintf(f, "</div>\n<p>updated <span id=\"updated\">now</span></p>\n"
               "<script>%s</script>\n</body></html>\n", serve_script);
}

/* Sends body (freed here) with code; hdr and val, when hdr is not NULL,
 * one more response header. */
static enum MHD_Result serve_reply(struct MHD_Connection *c, unsigned code,
                                   char *body, size_t len, const char *type,
                                   const char *hdr, const char *val)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body,
                                                             MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'");
    if (hdr)
        MHD_add_response_header(r, hdr, val);
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result serve_text(struct MHD_Connection *c, unsigned code, const char *msg,
                                  const char *hdr, const char *val)
{
    char *body = strdup(msg);
    return body ? serve_reply(c, code, body, strlen(body), "text/plain", hdr, val) : MHD_NO;
}

static int serve_token_ok(const serve_t *s, struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    return t && status_guard_token(s->guard, t, strlen(t));
}

enum { SERVE_PAGE, SERVE_PART, SERVE_JSON };

/* The view a request asks for: an unknown sort or a bad page is the
 * default (the token was checked, and only hex goes back into links). */
static void serve_view(const serve_t *s, struct MHD_Connection *c, serve_view_t *v)
{
    const char *sort = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sort");
    const char *page = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "page");
    char *end;
    v->token = s->token;
    v->sort = SERVE_SORT_DEFAULT;
    v->page = 0;
    for (int i = 0; sort && i < (int)SERVE_NSORTS; i++)
        if (strcmp(sort, serve_sorts[i].key) == 0)
            v->sort = i;
    if (page) {
        long p = strtol(page, &end, 10);
        if (*page && !*end && p > 0 && p < 1000000)
            v->page = p;
    }
}

/* The page, its live part or the JSON of the job now. */
static enum MHD_Result serve_job(serve_t *s, struct MHD_Connection *c, int what)
{
    char err[1024], *body = NULL;
    size_t len = 0;
    int live;
    serve_view_t v;
    json_t *doc = s->fetch(s->arg, &live, err, sizeof err);
    if (!doc)
        return serve_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, err, NULL, NULL);
    if (what == SERVE_PART && !live) {
        json_decref(doc);
        return serve_text(c, MHD_HTTP_CONFLICT, "the job is over: load the page\n", NULL, NULL);
    }
    serve_view(s, c, &v);
    FILE *f = open_memstream(&body, &len);
    if (f) {
        if (what == SERVE_JSON)
            json_dumpf(doc, f, JSON_COMPACT);
        else if (what == SERVE_PART)
            serve_live_part(doc, &v, f);
        else if (live)
            serve_live(doc, &v, f);
        else
            spits_report_html(doc, f);
        fclose(f);
    }
    json_decref(doc);
    if (!f || !body)
        return serve_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
    return serve_reply(c, MHD_HTTP_OK, body, len,
                       what == SERVE_JSON ? "application/json" : "text/html; charset=utf-8",
                       NULL, NULL);
}

static enum MHD_Result serve_request(void *cls, struct MHD_Connection *c,
                                     const char *url, const char *method,
                                     const char *version, const char *upload,
                                     size_t *upload_size, void **state)
{
    serve_t *s = cls;
    (void)version; (void)upload; (void)upload_size;
    /* Answered at the first call, on the headers: a body is never read.
     * The header is in: the guard's deadline no longer applies. */
    status_guard_arrived(*state);
    /* Closed after the 403: a client without the token keeps no slot. */
    if (!serve_token_ok(s, c))
        return serve_text(c, MHD_HTTP_FORBIDDEN, "forbidden: the URL needs the "
                          "token spits-status --serve printed\n", "Connection", "close");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return serve_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET or HEAD\n",
                          "Allow", "GET, HEAD");
    if (strcmp(url, "/") == 0)
        return serve_job(s, c, SERVE_PAGE);
    if (strcmp(url, "/live") == 0)
        return serve_job(s, c, SERVE_PART);
    if (strcmp(url, "/status.json") == 0)
        return serve_job(s, c, SERVE_JSON);
    return serve_text(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL, NULL);
}

/* "ADDR:PORT" as an IPv4 address: NULL, or what is wrong with it. The
 * port is digits only: strtoul would take " 80" and "+80" for 80. */
static const char *serve_parse(const char *addr, struct sockaddr_in *sin)
{
    char host[64];
    const char *colon = strrchr(addr, ':'), *port = colon ? colon + 1 : NULL;
    size_t ndigits = port ? strspn(port, "0123456789") : 0;
    if (addr[strcspn(addr, " \t\r\n\v\f")])
        return "it has a space";
    if (!colon)
        return "it has no :PORT";
    if (colon == addr)
        return "it has no ADDR before the :PORT";
    if (!*port || port[ndigits] || ndigits > 5 || atol(port) > 65535)
        return "the port is not a number from 0 to 65535";
    if ((size_t)(colon - addr) >= sizeof host)
        return "ADDR is not an IPv4 address";
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)atol(port));
    if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
        return "ADDR is not an IPv4 address";
    return NULL;
}

/* A listening socket on sin, or -1 after one line naming addr and why:
 * made here, not by libmicrohttpd, which would only say it could not
 * bind "port 0" when given an address. */
static int serve_listen(const struct sockaddr_in *sin, const char *addr)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
        bind(fd, (const struct sockaddr *)sin, sizeof *sin) == 0 &&
        listen(fd, SERVE_BACKLOG) == 0)
        return fd;
    spits_error("cannot listen on %s: %s (give another with --serve ADDR:PORT)",
                addr, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

static void serve_log_repeats(serve_logged_t *l)
{
    if (l->repeats)
        spits_warn("libmicrohttpd: (%ld more: %s)", l->repeats, l->text);
    l->repeats = 0;
}

/* libmicrohttpd's messages, with the program's prefix, one line each. A
 * client can make it say the same things at will (a too big header, a
 * connection dropped: a slowloris makes it alternate between a few), so
 * each of its SERVE_LOG_KINDS latest messages repeated within
 * SERVE_LOG_QUIET_S is counted, not printed; the counts are said as the
 * window ends or the message makes room for another, and at exit. */
static void serve_mhd_log(void *cls, const char *fmt, va_list ap)
{
    serve_t *s = cls;
    serve_logged_t *l = NULL, *oldest = &s->logged[0];
    char line[sizeof oldest->text];
    int64_t now = spits_now_ms();
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    for (int k = 0; k < SERVE_LOG_KINDS && !l; k++) {
        if (strcmp(line, s->logged[k].text) == 0)
            l = &s->logged[k];
        else if (s->logged[k].at < oldest->at)
            oldest = &s->logged[k];
    }
    if (l && now - l->at < SERVE_LOG_QUIET_S * 1000) {
        l->repeats++;
        return;
    }
    if (!l) {
        l = oldest;
        serve_log_repeats(l);
        memcpy(l->text, line, sizeof line);
    } else {
        serve_log_repeats(l);
    }
    spits_warn("libmicrohttpd: %s", line);
    l->at = now;
}

int status_serve(const char *addr, status_fetch_fn fetch, void *arg)
{
    static serve_t s;
    struct sockaddr_in sin;
    struct MHD_OptionItem guard[STATUS_GUARD_NOPTIONS];
    const struct timespec now = {0, 0};
    const char *bad = serve_parse(addr, &sin);
    sigset_t stop;
    int fd;

    if (bad) {
        char fmt[256];
        snprintf(fmt, sizeof fmt, "--serve wants ADDR:PORT with an IPv4 address "
                 "(127.0.0.1:8765), not '%%s': %s", bad);
        return spits_bad_option(fmt, addr);
    }
    /* Blocked and polled, not handled: the loop stops between two runs. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    s.fetch = fetch;
    s.arg = arg;
    spits_random_hex(s.token, SERVE_TOKEN_BYTES);
    s.guard = status_guard_new(s.token);
    if (!s.guard) {
        spits_error("out of memory starting the page");
        return 1;
    }
    if ((fd = serve_listen(&sin, addr)) < 0) {
        status_guard_free(s.guard);
        return 1;
    }
    if ((ntohl(sin.sin_addr.s_addr) >> 24) != 127)
        spits_warn("serving on %s, beyond this host's loopback: the page and its "
                   "token travel in plain HTTP (tunnel to 127.0.0.1 with ssh -L instead)",
                   addr);
    status_guard_options(s.guard, guard);
    /* The logger first, or libmicrohttpd may print before it is set. */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0, NULL, NULL, serve_request, &s,
        MHD_OPTION_EXTERNAL_LOGGER, serve_mhd_log, &s, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_ARRAY, guard, MHD_OPTION_END);
    if (!d) {
        /* (fd was given to libmicrohttpd: it is not ours to close) */
        spits_error("cannot serve on %s: libmicrohttpd would not start", addr);
        status_guard_free(s.guard);
        return 1;
    }
    socklen_t slen = sizeof sin;
    getsockname(fd, (struct sockaddr *)&sin, &slen);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip);
    printf("spits-status: serving on http://%s:%u/?token=%s\n", ip,
           (unsigned)ntohs(sin.sin_port), s.token);
    fflush(stdout);
    while (sigtimedwait(&stop, NULL, &now) < 0) {
        MHD_run_wait(d, SERVE_TICK_MS);
        status_guard_reap(s.guard);
    }
    MHD_stop_daemon(d);
    for (int k = 0; k < SERVE_LOG_KINDS; k++)
        serve_log_repeats(&s.logged[k]);
    status_guard_free(s.guard);
    return 0;
}
