/*
 * status-serve.c - spits-status --serve: one job's page over HTTP.
 *
 * GET /?token=T is the page: while the job runs, its state, a progress bar
 * with rate and ETA, and its Task Managers (the 50 with most tasks done),
 * drawn on the server so that it shows without JavaScript, plus a small
 * inline script that fetches /status.json?token=T every 2 s and updates
 * the page without reloading it. Once the job is over, the page is its
 * report (reporthtml.c). The data is what spits-status reads anyway (the
 * fetch callback): nothing here can send the JM anything but STATUS.
 *
 * Safe by default: libmicrohttpd parses HTTP (no parser of ours), the
 * address is 127.0.0.1 unless given, every request without the random
 * token printed in the URL gets 403 (compared in constant time), and only
 * GET and HEAD are served.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "reporthtml.h"
#include "status-serve.h"
#include "svgplot.h"
#include "util.h"

#define SERVE_TOKEN_BYTES 16
#define SERVE_TMS 50

typedef struct {
    status_fetch_fn fetch;
    void *arg;
    char token[2 * SERVE_TOKEN_BYTES + 1];
} serve_t;

static const char *serve_script =
    "(function(){var q=new URLSearchParams(location.search).get('token');"
    "function set(i,v){document.getElementById(i).textContent=v;}"
    "function row(m){var tr=document.createElement('tr');"
    "[m.host,m.pid,m.workers,m.busy,m.done,m.failed,(m.last_heard_s||0).toFixed(1)]"
    ".forEach(function(v){var td=document.createElement('td');td.textContent=v;"
    "tr.appendChild(td);});return tr;}"
    "function tick(){fetch('status.json?token='+encodeURIComponent(q))"
    ".then(function(r){return r.json();}).then(function(d){"
    "if(!d.tasks){location.reload();return;}var k=d.tasks;"
    "set('phase',d.phase);set('state',d.state);set('elapsed',d.elapsed_s.toFixed(1));"
    "set('committed',k.committed);set('failed',k.failed);set('total',k.total);"
    "var b=document.getElementById('bar');b.max=Math.max(k.total,1);b.value=k.committed;"
    "set('rate',Math.round(d.rate_per_s));"
    "set('eta',d.eta_s==null?'unknown':Math.round(d.eta_s)+' s');"
    "var t=(d.tms||[]).slice().sort(function(a,b){return b.done-a.done;});"
    "set('ntms',t.length);var tb=document.getElementById('tms');tb.textContent='';"
    "t.slice(0,50).forEach(function(m){tb.appendChild(row(m));});"
    "set('updated',new Date().toLocaleTimeString());})"
    ".catch(function(){set('updated','no answer');});}"
    "setInterval(tick,2000);})();";

static long long serve_int(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static double serve_num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static void serve_tms(const json_t *tms, FILE *f)
{
    json_t *top = spits_html_top_tms(tms, SERVE_TMS), *t;
    size_t i;
    json_array_foreach(top, i, t) {
        fputs("<tr><td>", f);
        spits_xml_escape(f, json_string_value(json_object_get(t, "host")));
        fprintf(f, "</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td>"
                   "<td>%lld</td><td>%.1f</td></tr>\n", serve_int(t, "pid"),
                serve_int(t, "workers"), serve_int(t, "busy"), serve_int(t, "done"),
                serve_int(t, "failed"), serve_num(t, "last_heard_s"));
    }
    json_decref(top);
}

/* The live page of a STATUS document. */
static void serve_live(const json_t *d, FILE *f)
{
    const json_t *k = json_object_get(d, "tasks"), *eta = json_object_get(d, "eta_s");
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>spits job (live)</title><style>body{font-family:sans-serif;"
          "margin:1.5em}td,th{padding:2px 8px;text-align:right}progress{width:30em}"
          "</style></head><body>\n<h1>spits job <span id=\"job-id\">", f);
    spits_xml_escape(f, json_string_value(json_object_get(d, "job_id")));
    fputs("</span> (live)</h1>\n<p>module <code>", f);
    spits_xml_escape(f, json_string_value(json_object_get(d, "module")));
    fprintf(f, "</code></p>\n<p>phase <span id=\"phase\">%lld</span>, <span id=\"state\">",
            serve_int(d, "phase"));
    spits_xml_escape(f, json_string_value(json_object_get(d, "state")));
    fprintf(f, "</span> for <span id=\"elapsed\">%.1f</span> s</p>\n<p><progress id=\"bar\" "
               "max=\"%lld\" value=\"%lld\"></progress><br><span id=\"committed\">%lld"
               "</span> of <span id=\"total\">%lld</span> committed, <span id=\"failed\">"
               "%lld</span> failed; <span id=\"rate\">%.0f</span> tasks/s, ETA "
               "<span id=\"eta\">", serve_num(d, "elapsed_s"),
            serve_int(k, "total") > 0 ? serve_int(k, "total") : 1,
            serve_int(k, "committed"), serve_int(k, "committed"), serve_int(k, "total"),
            serve_int(k, "failed"), serve_num(d, "rate_per_s"));
    if (json_is_number(eta))
        fprintf(f, "%.0f s", json_number_value(eta));
    else
        fputs("unknown", f);
    fprintf(f, "</span></p>\n<h2>Task Managers (<span id=\"ntms\">%zu</span>)</h2>\n"
               "<table><thead><tr><th>host</th><th>pid</th><th>workers</th><th>busy</th>"
               "<th>done</th><th>failed</th><th>last heard (s)</th></tr></thead>"
               "<tbody id=\"tms\">\n", json_array_size(json_object_get(d, "tms")));
    serve_tms(json_object_get(d, "tms"), f);
    fprintf(f, "</tbody></table>\n<p>updated <span id=\"updated\">now</span></p>\n"
               "<script>%s</script>\n</body></html>\n", serve_script);
}

static enum MHD_Result serve_reply(struct MHD_Connection *c, unsigned code,
                                   char *body, size_t len, const char *type)
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
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result serve_text(struct MHD_Connection *c, unsigned code, const char *msg)
{
    char *body = strdup(msg);
    return body ? serve_reply(c, code, body, strlen(body), "text/plain") : MHD_NO;
}

static int serve_token_ok(const serve_t *s, struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    return t && strlen(t) == strlen(s->token) &&
           sodium_memcmp(t, s->token, strlen(t)) == 0;
}

/* The page or the JSON of the job now. */
static enum MHD_Result serve_job(serve_t *s, struct MHD_Connection *c, int json)
{
    char err[1024], *body = NULL;
    size_t len = 0;
    int live;
    json_t *doc = s->fetch(s->arg, &live, err, sizeof err);
    if (!doc)
        return serve_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, err);
    FILE *f = open_memstream(&body, &len);
    if (f) {
        if (json)
            json_dumpf(doc, f, JSON_COMPACT);
        else if (live)
            serve_live(doc, f);
        else
            spits_report_html(doc, f);
        fclose(f);
    }
    json_decref(doc);
    if (!f || !body)
        return serve_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return serve_reply(c, MHD_HTTP_OK, body, len,
                       json ? "application/json" : "text/html; charset=utf-8");
}

static enum MHD_Result serve_request(void *cls, struct MHD_Connection *c,
                                     const char *url, const char *method,
                                     const char *version, const char *upload,
                                     size_t *upload_size, void **state)
{
    serve_t *s = cls;
    (void)version; (void)upload; (void)upload_size; (void)state;
    /* Answered at the first call, on the headers: a body is never read. */
    if (!serve_token_ok(s, c))
        return serve_text(c, MHD_HTTP_FORBIDDEN, "forbidden: the URL needs the "
                          "token spits-status --serve printed\n");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return serve_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only\n");
    if (strcmp(url, "/") == 0)
        return serve_job(s, c, 0);
    if (strcmp(url, "/status.json") == 0)
        return serve_job(s, c, 1);
    return serve_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* "ADDR:PORT" as an IPv4 address. 0, or -1. */
static int serve_parse(const char *addr, struct sockaddr_in *sin)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    unsigned long port;
    char *end;
    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof host)
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || port > 65535)
        return -1;
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

int status_serve(const char *addr, status_fetch_fn fetch, void *arg)
{
    static serve_t s;
    struct sockaddr_in sin;
    sigset_t stop;
    int sig;

    if (serve_parse(addr, &sin) != 0)
        return spits_bad_option("--serve wants ADDR:PORT with an IPv4 address "
                                "(127.0.0.1:8765), not '%s'", addr);
    s.fetch = fetch;
    s.arg = arg;
    spits_random_hex(s.token, SERVE_TOKEN_BYTES);
    /* Blocked before the server's thread starts, so only sigwait sees them. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        serve_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)30, MHD_OPTION_END);
    if (!d) {
        spits_error("cannot listen on %s (in use, or not an address of this "
                    "host?): give another with --serve ADDR:PORT", addr);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip);
    printf("spits-status: serving on http://%s:%u/?token=%s\n", ip,
           info ? (unsigned)info->port : (unsigned)ntohs(sin.sin_port), s.token);
    fflush(stdout);
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    return 0;
}
