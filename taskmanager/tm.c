/*
 * tm.c - spits-tm: the Task Manager program and its network loop.
 *
 *   spits-tm [OPTIONS]  (--jobdir DIR or --connect ENDPOINT)
 *
 * Finds the JM (waiting for DIR/jm.json if need be), says HELLO with the
 * number of tasks it can hold (workers + prefetch), loads the module the
 * JM announces and starts the workers. Then it queues the tasks the JM
 * sends, ships results back in batches, and exits 0 when the JM says the
 * job is over.
 *
 * A JM that goes silent is looked for again: the TM re-reads jm.json (a
 * restarted or resumed JM may listen elsewhere), reconnects and says HELLO
 * again, keeping its queued tasks and unsent results meanwhile.
 *
 * SIGTERM or SIGINT drains the TM (what Slurm sends at a time limit): it
 * tells the JM to send nothing more (DRAIN), hands back its queued tasks,
 * lets running ones finish within --drain-timeout, sends their results,
 * says BYE and exits 0. A second signal kills it (SA_RESETHAND).
 */
#define _XOPEN_SOURCE 700   /* strptime */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "jobdir.h"
#include "keys.h"
#include "log.h"
#include "tm.h"
#include "util.h"
#include "wake.h"

enum { TM_CONNECTING, TM_READY, TM_LOST };

typedef struct {
    /* options */
    const char *jobdir, *connect, *module_override, *key_file;
    int insecure;
    spits_keys_t keys;           /* CURVE: the job's server key, client pair */
    long long max_task;          /* the JM's largest task or result */
    void *mon;                   /* the socket's monitor: failed handshakes */
    unsigned mon_gen;
    double wait, reconnect, task_timeout, drain_timeout, end_margin;
    const char *end_arg;         /* --end-time as given */
    int64_t end_ms;              /* walltime end, monotonic ms (0: none) */
    double end_wall;             /* the same, wall clock */
    int workers, prefetch, isolate;

    /* the main thread's own state */
    void *zctx, *sock;
    char endpoint[512];
    char rid[32];
    char job_id[64];
    char host[256];
    char module_path[PATH_MAX];
    int state, welcomed, done;
    unsigned job;                /* bumped when the JM runs another job */
    int64_t now, last_heard, last_sent, last_hello, last_look, last_stats;
    int64_t hb_ms, lost_ms;
    tm_phase_t *phases, *cur;
    spits_module_t *mod;
    tm_pool_t pool;
    int pool_started;
    int wake_fd;
    tm_seg_t *pending;           /* result segments not sent yet */
    size_t npending, cappending;
    tm_item_t *items;            /* scratch for one TASKS message */
    size_t capitems;
    int64_t bad_logged_at;
    uint64_t bad;
    int draining;                /* a signal asked us to leave */
    int64_t drain_deadline;
    uint64_t *cancel_ids;        /* scratch for one CANCEL message */
    size_t capcancel;
} tm_t;

/* The last SIGTERM/SIGINT (0: none): set by the handler, read by the loop.
 * Lock-free atomic: safe in a handler and across threads. */
static atomic_int tm_signal;
static atomic_int tm_wake_fd = -1;

static void on_signal(int sig)
{
    atomic_store(&tm_signal, sig);
    spits_wake_signal(atomic_load(&tm_wake_fd));
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: spits-tm [OPTIONS]\n"
"Runs a task manager: pulls tasks of a SPITS job into worker threads.\n"
"\n"
"  -d, --jobdir DIR           find the job manager through DIR/jm.json\n"
"  -c, --connect ENDPOINT     connect to this endpoint instead\n"
"  -w, --wait SEC             how long to wait for jm.json and for the job\n"
"                             manager's first answer (60)\n"
"      --reconnect-timeout SEC  how long to look for a job manager that\n"
"                             went silent before giving up (300)\n"
"  -n, --workers N            worker threads (online cores: %d)\n"
"  -p, --prefetch N           tasks queued beyond the workers (= workers)\n"
"      --isolate              run each worker in its own process: a task that\n"
"                             crashes or hangs costs only that process\n"
"      --task-timeout SEC     with --isolate: kill a task's process after SEC\n"
"                             seconds and report the task as timed out (none)\n"
"      --drain-timeout SEC    on SIGTERM/SIGINT, how long running tasks may\n"
"                             take to finish before the TM leaves anyway (25)\n"
"      --end-time WHEN        this TM must be gone by WHEN (+SEC, epoch seconds,\n"
"                             YYYY-MM-DDTHH:MM:SS local, or none): it drains\n"
"                             when twice a task's time plus --end-margin is\n"
"                             left. Default: the Slurm job's end (squeue)\n"
"      --end-margin SEC       time kept for the last results (10)\n"
"  -m, --module PATH          load this module file instead of the announced one\n"
"                             (its BLAKE2b hash must match the job manager's)\n"
"  -k, --key-file FILE        with --connect: the job's key file (spits-jm\n"
"                             --export-key); with --jobdir, DIR/tm.key is used\n"
"      --insecure             no CurveZMQ, for a job manager run --insecure\n"
"  -v, --verbose              more logging (repeat for more)\n"
"  -q, --quiet                errors only\n"
"  -h, --help                 this help\n"
"  -V, --version              print the version\n"
"\n"
"Exit status: 0 when the job is over or a drain finished, 1 on an error or\n"
"a drain that timed out, 2 on a usage error.\n",
            spits_online_cores());
}

enum { OPT_RECONNECT = 256, OPT_ISOLATE, OPT_TASK_TIMEOUT, OPT_DRAIN_TIMEOUT,
       OPT_INSECURE, OPT_END_TIME, OPT_END_MARGIN };

/* WHEN as +SEC, epoch seconds, local YYYY-MM-DDTHH:MM:SS (as Slurm
 * prints), or none. 0, or -1 if it is none of those. */
static int parse_end_time(tm_t *tm, const char *when)
{
    double wall, rel;
    long epoch;
    struct tm t;

    tm->end_wall = 0;
    if (strcmp(when, "none") == 0)
        return 0;
    if (when[0] == '+' && spits_parse_seconds(when + 1, 1e9, &rel) == 0) {
        wall = spits_wall_time() + rel;
    } else if (spits_parse_long(when, 1, LONG_MAX, &epoch) == 0) {
        wall = (double)epoch;
    } else {
        memset(&t, 0, sizeof t);
        const char *end = strptime(when, "%Y-%m-%dT%H:%M:%S", &t);
        if (!end || *end)
            return -1;
        t.tm_isdst = -1;
        wall = (double)mktime(&t);
    }
    tm->end_wall = wall;
    return 0;
}

/* Inside a Slurm job: its end time, from squeue (bounded by timeout). */
static void slurm_end_time(tm_t *tm)
{
    const char *job = getenv("SLURM_JOB_ID");
    char cmd[128], line[64] = "";
    long id;

    if (!job || spits_parse_long(job, 1, LONG_MAX, &id) != 0)
        return;
    snprintf(cmd, sizeof cmd, "timeout 10 squeue -h -j %ld -o %%e 2>/dev/null", id);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    pclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (line[0] && parse_end_time(tm, line) == 0 && tm->end_wall > 0)
        spits_info("Slurm job %ld ends at %s: this task manager leaves before then",
                   id, line);
}

static int parse_args(tm_t *tm, int argc, char **argv, int *verbosity)
{
    static const struct option longopts[] = {
        {"jobdir", required_argument, NULL, 'd'},
        {"connect", required_argument, NULL, 'c'},
        {"wait", required_argument, NULL, 'w'},
        {"reconnect-timeout", required_argument, NULL, OPT_RECONNECT},
        {"workers", required_argument, NULL, 'n'},
        {"prefetch", required_argument, NULL, 'p'},
        {"module", required_argument, NULL, 'm'},
        {"isolate", no_argument, NULL, OPT_ISOLATE},
        {"key-file", required_argument, NULL, 'k'},
        {"insecure", no_argument, NULL, OPT_INSECURE},
        {"end-time", required_argument, NULL, OPT_END_TIME},
        {"end-margin", required_argument, NULL, OPT_END_MARGIN},
        {"task-timeout", required_argument, NULL, OPT_TASK_TIMEOUT},
        {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    long v;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:c:w:n:p:m:k:vqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': tm->jobdir = optarg; break;
        case 'c': tm->connect = optarg; break;
        case 'm': tm->module_override = optarg; break;
        case 'w':
            if (spits_parse_seconds(optarg, 1e7, &tm->wait))
                return spits_bad_option("--wait wants seconds, not '%s'", optarg);
            break;
        case OPT_RECONNECT:
            if (spits_parse_seconds(optarg, 1e7, &tm->reconnect))
                return spits_bad_option("--reconnect-timeout wants seconds, not '%s'", optarg);
            break;
        case 'n':
            if (spits_parse_long(optarg, 1, 4096, &v))
                return spits_bad_option("--workers wants a number from 1 to 4096, not '%s'", optarg);
            tm->workers = (int)v;
            break;
        case 'p':
            if (spits_parse_long(optarg, 0, 1 << 20, &v))
                return spits_bad_option("--prefetch wants a number from 0 to 1048576, not '%s'", optarg);
            tm->prefetch = (int)v;
            break;
        case OPT_ISOLATE: tm->isolate = 1; break;
        case 'k': tm->key_file = optarg; break;
        case OPT_INSECURE: tm->insecure = 1; break;
        case OPT_END_TIME:
            tm->end_arg = optarg;
            if (parse_end_time(tm, optarg) != 0)
                return spits_bad_option("--end-time wants +SEC, epoch seconds, "
                                        "YYYY-MM-DDTHH:MM:SS or none, not '%s'", optarg);
            break;
        case OPT_END_MARGIN:
            if (spits_parse_seconds(optarg, 1e6, &tm->end_margin))
                return spits_bad_option("--end-margin wants seconds, not '%s'", optarg);
            break;
        case OPT_TASK_TIMEOUT:
            if (spits_parse_seconds(optarg, 1e7, &tm->task_timeout) ||
                tm->task_timeout < 0.001)
                return spits_bad_option("--task-timeout wants seconds (at least 0.001), not '%s'", optarg);
            break;
        case OPT_DRAIN_TIMEOUT:
            if (spits_parse_seconds(optarg, 1e7, &tm->drain_timeout))
                return spits_bad_option("--drain-timeout wants seconds, not '%s'", optarg);
            break;
        case 'v': (*verbosity)++; break;
        case 'q': *verbosity = SPITS_LOG_ERROR; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("spits-tm %s\n", PACKAGE_VERSION); return 0;
        case ':': return spits_bad_option("option '%s' needs a value", argv[optind - 1]);
        default: return spits_bad_option("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return spits_bad_option("unexpected argument '%s'", argv[optind]);
    if (!tm->jobdir && !tm->connect)
        return spits_bad_option("%s", "give --jobdir DIR or --connect ENDPOINT");
    if (tm->jobdir && tm->connect)
        return spits_bad_option("%s", "give --jobdir or --connect, not both");
    if (tm->connect && !tm->key_file && !tm->insecure)
        return spits_bad_option("%s", "--connect needs --key-file FILE (made by "
                                "spits-jm --export-key), or --insecure for a job "
                                "manager run --insecure");
    if (tm->key_file && tm->insecure)
        return spits_bad_option("%s", "give --key-file or --insecure, not both");
    if (tm->task_timeout > 0 && !tm->isolate)
        return spits_bad_option("%s", "--task-timeout needs --isolate: a "
                                "worker thread cannot be stopped, a process can");
    return -1;
}

/* --- connection -------------------------------------------------------- */

/* Security from the job dir: jm.json says whether the JM runs CURVE; the
 * keys come from DIR/tm.key (or --key-file). A mismatch is an error here,
 * with the fix in it, rather than a handshake that never completes. */
static int security_from_announce(tm_t *tm, const spits_announce_t *a)
{
    char path[PATH_MAX], err[1024];

    if (!a->curve) {
        if (!tm->insecure) {
            spits_error("the job manager of %s runs --insecure (no CurveZMQ): "
                        "start this task manager with --insecure too", tm->jobdir);
            return -1;
        }
        return 0;
    }
    if (tm->insecure) {
        spits_error("the job manager of %s requires CurveZMQ: drop --insecure",
                    tm->jobdir);
        return -1;
    }
    if (tm->key_file)
        snprintf(path, sizeof path, "%s", tm->key_file);
    else
        snprintf(path, sizeof path, "%s/%s", tm->jobdir, SPITS_TM_KEY_FILE);
    if (spits_keys_read(path, &tm->keys, 0, err, sizeof err) != 0) {
        spits_error("%s", err);
        return -1;
    }
    if (strcmp(tm->keys.server_public, a->server_key) != 0) {
        spits_error("%s does not match the server key in %s/%s (a stale key "
                    "file?)", path, tm->jobdir, SPITS_ANNOUNCE_FILE);
        return -1;
    }
    return 0;
}

/* Watches the socket for failed handshakes (wrong keys, or a JM that does
 * not speak CURVE, or speaks it while we do not) and for a dropped
 * connection: a JM that died is looked for at once, not after --wait's
 * silence (a resumed JM announces a new endpoint in jm.json). */
static int monitor_start(tm_t *tm)
{
    char ep[64];
    if (tm->mon)
        zmq_close(tm->mon);
    tm->mon = NULL;
    snprintf(ep, sizeof ep, "inproc://spits-tm-monitor-%u", ++tm->mon_gen);
    if (zmq_socket_monitor(tm->sock, ep, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                           ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(tm->mon = zmq_socket(tm->zctx, ZMQ_PAIR)) ||
        zmq_setsockopt(tm->mon, ZMQ_RCVHWM, &(int){0}, sizeof(int)) != 0 ||
        zmq_connect(tm->mon, ep) != 0) {
        spits_error("cannot monitor the socket: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_setsockopt(tm->mon, ZMQ_LINGER, &(int){0}, sizeof(int));
    return 0;
}

static void on_monitor(tm_t *tm)
{
    zmq_msg_t ev;
    zmq_msg_init(&ev);
    while (zmq_msg_recv(&ev, tm->mon, ZMQ_DONTWAIT) >= 0) {
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), 2);
        while (zmq_msg_more(&ev))
            zmq_msg_recv(&ev, tm->mon, 0);
        if (!event)
            continue;
        if (event == ZMQ_EVENT_DISCONNECTED) {
            if (tm->state == TM_READY && !tm->done) {
                spits_warn("lost the connection to the job manager at %s; "
                           "looking for it", tm->endpoint);
                tm->state = TM_LOST;
                tm->last_look = 0;
            }
            continue;
        }
        const char *why = event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
            ? "it does not accept this task manager's key (a key file of "
              "another job?)"
            : tm->insecure ? "it requires CurveZMQ: drop --insecure and give "
                             "--key-file"
                           : "wrong server key, or it runs --insecure";
        if (!tm->welcomed) {
            spits_error("the job manager at %s refused the handshake: %s",
                        tm->endpoint, why);
            tm->done = -1;
        } else {
            spits_warn("the job manager at %s refused the handshake: %s; "
                       "looking for it", tm->endpoint, why);
        }
    }
    zmq_msg_close(&ev);
}

static int tm_connect(tm_t *tm)
{
    int one = 1, linger = 1000, ivl = 100, ivl_max = 2000, hwm = 100000;
    int64_t maxmsg = 2 * tm->max_task + (16LL << 20);

    if (tm->sock)
        zmq_close(tm->sock);
    tm->sock = zmq_socket(tm->zctx, ZMQ_DEALER);
    if (!tm->sock) {
        spits_error("cannot make a ZeroMQ socket: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_setsockopt(tm->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (!tm->insecure &&
        (zmq_setsockopt(tm->sock, ZMQ_CURVE_SERVERKEY, tm->keys.server_public,
                        strlen(tm->keys.server_public) + 1) != 0 ||
         zmq_setsockopt(tm->sock, ZMQ_CURVE_PUBLICKEY, tm->keys.client_public,
                        strlen(tm->keys.client_public) + 1) != 0 ||
         zmq_setsockopt(tm->sock, ZMQ_CURVE_SECRETKEY, tm->keys.client_secret,
                        strlen(tm->keys.client_secret) + 1) != 0)) {
        spits_error("cannot set up CurveZMQ: %s", zmq_strerror(errno));
        return -1;
    }
    if (monitor_start(tm) != 0)
        return -1;
    /* The routing id is how the JM knows us again after a reconnect. */
    if (zmq_setsockopt(tm->sock, ZMQ_ROUTING_ID, tm->rid, strlen(tm->rid)) != 0) {
        spits_error("cannot set the socket's routing id: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_setsockopt(tm->sock, ZMQ_LINGER, &linger, sizeof linger);
    /* Queue nothing on a connection that is not up: unsent results stay in
     * our own list, and HELLO goes out only on a live connection. */
    zmq_setsockopt(tm->sock, ZMQ_IMMEDIATE, &one, sizeof one);
    zmq_setsockopt(tm->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(tm->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    zmq_setsockopt(tm->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(tm->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (zmq_connect(tm->sock, tm->endpoint) != 0) {
        spits_error("cannot connect to %s: %s", tm->endpoint, zmq_strerror(errno));
        return -1;
    }
    tm->state = TM_CONNECTING;
    tm->last_hello = 0;
    return 0;
}

static int tm_send(tm_t *tm, const void *buf, size_t len)
{
    if (zmq_send(tm->sock, buf, len, ZMQ_DONTWAIT) < 0)
        return -1;
    tm->last_sent = tm->now;
    return 0;
}

static void send_hello(tm_t *tm)
{
    spits_buf_t buf = {0};
    size_t held = tm->pool_started ? tm_pool_held(&tm->pool) : 0;
    uint64_t pending = 0;
    for (size_t i = 0; i < tm->npending; i++)
        if (tm->pending[i].phase->job == tm->job)
            pending += tm->pending[i].batch.count;
    json_t *j = json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:s}",
                          "host", tm->host, "pid", (json_int_t)getpid(),
                          "workers", tm->workers,
                          "slots", tm->workers + tm->prefetch,
                          "held", (json_int_t)held, "pending", (json_int_t)pending,
                          "job_id", tm->job_id);
    if (j && spits_wire_encode_json(&buf, SPITS_MSG_HELLO, 0, j) == 0 &&
        tm_send(tm, buf.data, buf.len) == 0)
        tm->last_hello = tm->now;
    else
        tm->last_hello = tm->now - 900;   /* not connected yet: retry soon */
    json_decref(j);
    spits_buf_free(&buf);
}

/* STATS: the workers' busy time and runs so far (this process's life),
 * once a second when idle, ahead of results (at most 10 a second) and
 * before BYE: the JM's per-TM busy time and its performance model's task
 * time come from these. */
static void send_stats(tm_t *tm)
{
    spits_buf_t buf = {0};
    long long busy = atomic_load_explicit(&tm->pool.busy_ns, memory_order_relaxed);
    long long runs = atomic_load_explicit(&tm->pool.runs, memory_order_relaxed);
    json_t *j = json_pack("{s:f, s:I}", "busy_s", busy / 1e9, "runs", (json_int_t)runs);
    tm->last_stats = tm->now;
    if (j && spits_wire_encode_json(&buf, SPITS_MSG_STATS, tm->cur ? tm->cur->wire : 0, j) == 0)
        tm_send(tm, buf.data, buf.len);
    json_decref(j);
    spits_buf_free(&buf);
}

/* Looks at the job dir again: the job may be over, or the JM elsewhere. */
static void look_for_jm(tm_t *tm)
{
    spits_announce_t a;
    char err[512];

    tm->last_look = tm->now;
    if (!tm->jobdir)
        return;
    /* A JM stopped by a signal told its TMs to stop; one that missed it
     * stops too (a resumed JM gets new TMs, or the ones that kept going). */
    if (tm->job_id[0] && spits_jobdir_finished(tm->jobdir, tm->job_id, 1)) {
        spits_info("job %s is over (report.json written)", tm->job_id);
        tm->done = 1;
        return;
    }
    if (spits_announce_read(tm->jobdir, &a, err, sizeof err) == 0 &&
        (strcmp(a.endpoint, tm->endpoint) != 0 ||
         strcmp(a.server_key, tm->keys.server_public) != 0)) {
        spits_info("job manager now at %s", a.endpoint);
        snprintf(tm->endpoint, sizeof tm->endpoint, "%s", a.endpoint);
        if (security_from_announce(tm, &a) != 0 || tm_connect(tm) != 0)
            tm->done = -1;
    }
}

/* --- phases and module ------------------------------------------------- */

static tm_phase_t *phase_new(tm_t *tm, uint32_t wire, json_t *argv)
{
    tm_phase_t *ph = calloc(1, sizeof *ph);
    size_t n = json_array_size(argv);
    if (!ph || !(ph->argv = calloc(n + 1, sizeof *ph->argv)))
        goto oom;
    ph->wire = wire;
    ph->job = tm->job;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(argv, i));
        if (!(ph->argv[i] = strdup(s ? s : "")))
            goto oom;
        ph->argc++;
    }
    ph->next = tm->phases;
    tm->phases = ph;
    return ph;
oom:
    spits_error("out of memory");
    abort();
}

static void phase_switch(tm_t *tm, tm_phase_t *ph)
{
    tm->cur = ph;
    if (tm->pool_started) {
        size_t n = tm_pool_drop_others(&tm->pool, ph, 1);
        if (n)
            spits_debug("phase %u: handed back %zu queued task(s) of an "
                        "earlier phase", ph->wire, n);
    }
}

/* Loads the module the JM names (or --module's copy), refusing a file
 * whose hash differs from the JM's: a stale copy on a node-local disk must
 * not run the job. */
static int load_module(tm_t *tm, const char *announced, const char *want_hash)
{
    char err[1024];
    const char *path = tm->module_override ? tm->module_override : announced;
    spits_image_t *img;

    if (!realpath(path, tm->module_path)) {
        spits_error("cannot load module %s: %s", path, strerror(errno));
        return -1;
    }
    /* The copy whose hash is checked is the one loaded (and the one
     * --isolate's children load): the file may change in between. */
    if (!(img = spits_image_read(tm->module_path, err, sizeof err))) {
        spits_error("%s", err);
        return -1;
    }
    if (strcmp(spits_image_hash(img), want_hash) != 0) {
        spits_error("module %s differs from the job manager's %s (BLAKE2b "
                    "%.16s... here, %.16s... there): refusing to run it",
                    tm->module_path, announced, spits_image_hash(img), want_hash);
        spits_image_free(&img);
        return -1;
    }
    tm->mod = spits_module_load(&img, err, sizeof err);
    if (!tm->mod) {
        spits_error("%s", err);
        return -1;
    }
    return 0;
}

/* --- messages ---------------------------------------------------------- */

static void bad_message(tm_t *tm, const char *why)
{
    tm->bad++;
    if (tm->bad_logged_at == 0 || tm->now - tm->bad_logged_at >= 10000) {
        spits_warn("dropped a malformed message from the job manager (%s)", why);
        tm->bad_logged_at = tm->now;
    }
}

static void on_welcome(tm_t *tm, const spits_hdr_t *h, zmq_msg_t *msg)
{
    const char *why = NULL;
    json_t *j = spits_wire_decode_json(zmq_msg_data(msg), zmq_msg_size(msg), &why);
    const char *job = j ? json_string_value(json_object_get(j, "job_id")) : NULL;
    const char *module = j ? json_string_value(json_object_get(j, "module")) : NULL;
    json_t *argv = j ? json_object_get(j, "argv") : NULL;
    json_int_t hb = j ? json_integer_value(json_object_get(j, "heartbeat_ms")) : 0;
    const char *mhash = j ? json_string_value(json_object_get(j, "module_hash")) : NULL;
    json_int_t max_task = j ? json_integer_value(json_object_get(j, "max_task_bytes")) : 0;

    if (!job || !module || hb <= 0 || (h->phase && !json_is_array(argv)) ||
        !mhash || max_task <= 0) {
        bad_message(tm, why ? why : "WELCOME without job_id/module/module_hash/"
                                    "heartbeat/max_task_bytes/argv");
        json_decref(j);
        return;
    }
    if (max_task > tm->max_task) {
        /* Our socket would drop its larger messages: raise our limit. */
        tm->max_task = max_task;
        json_decref(j);
        if (tm_connect(tm) != 0)
            tm->done = -1;
        return;
    }
    if (tm->job_id[0] && strcmp(tm->job_id, job) != 0) {
        spits_info("the job manager now runs job %s (was %s)", job, tm->job_id);
        if (tm->pool_started)
            tm_pool_drop_others(&tm->pool, NULL, 0);
        tm->job++;    /* results of the old job are dropped, never sent */
        tm->cur = NULL;
    }
    snprintf(tm->job_id, sizeof tm->job_id, "%s", job);
    if (!tm->mod) {
        if (load_module(tm, module, mhash) != 0) {
            tm->done = -1;
            json_decref(j);
            return;
        }
    } else if (!tm->module_override && strcmp(module, tm->module_path) != 0) {
        spits_error("the job manager now runs module %s, not %s; start a new "
                    "task manager for it", module, tm->module_path);
        tm->done = -1;
        json_decref(j);
        return;
    }
    if (h->phase && (!tm->cur || tm->cur->wire != h->phase))
        phase_switch(tm, phase_new(tm, h->phase, argv));
    tm->hb_ms = hb;
    tm->lost_ms = 5 * hb < 3000 ? 3000 : 5 * hb;
    if (!tm->pool_started) {
        tm->pool.max_result = (uint64_t)tm->max_task;
        if (tm_pool_start(&tm->pool, tm->mod) != 0) {
            spits_error("cannot start %d worker threads", tm->workers);
            tm->done = -1;
            json_decref(j);
            return;
        }
        tm->pool_started = 1;
    }
    if (!tm->welcomed || tm->state != TM_READY)
        spits_info("joined job %s at %s with %d worker(s)", job, tm->endpoint,
                   tm->workers);
    tm->welcomed = 1;
    tm->state = TM_READY;
    json_decref(j);
}

static void on_phase(tm_t *tm, const spits_hdr_t *h, zmq_msg_t *msg)
{
    const char *why = NULL;
    json_t *j = spits_wire_decode_json(zmq_msg_data(msg), zmq_msg_size(msg), &why);
    json_t *argv = j ? json_object_get(j, "argv") : NULL;
    if (!json_is_array(argv) || h->phase == 0) {
        bad_message(tm, why ? why : "PHASE without argv");
    } else {
        spits_debug("phase %u begins", h->phase);
        phase_switch(tm, phase_new(tm, h->phase, argv));
    }
    json_decref(j);
}

/* Tasks the TM cannot take go straight back as RETURNED records: the JM
 * counts every task it sends as held until a record comes back. */
static void return_tasks(tm_t *tm, const spits_hdr_t *h, zmq_msg_t *msg)
{
    spits_reader_t r;
    spits_rec_t rec;
    spits_batch_t b = {0};

    spits_batch_begin(&b, SPITS_MSG_RESULTS, h->phase);
    spits_reader_init(&r, zmq_msg_data(msg), zmq_msg_size(msg));
    while (spits_reader_next(&r, &rec))
        if (!spits_batch_add(&b, rec.id, SPITS_ST_RETURNED, 0))
            abort();
    spits_batch_finish(&b);
    if (tm_send(tm, b.buf.data, b.buf.len) != 0)
        spits_debug("could not hand back %llu task(s)", (unsigned long long)h->count);
    spits_batch_free(&b);
}

/* Queues a TASKS message; the message lives until its last task is done. */
static void on_tasks(tm_t *tm, const spits_hdr_t *h, zmq_msg_t *msg)
{
    spits_reader_t r;
    spits_rec_t rec;
    size_t n = 0;

    if (h->count == 0)
        return;
    if (tm->draining) {
        return_tasks(tm, h, msg);   /* sent before the JM saw our DRAIN */
        return;
    }
    if (!tm->cur || h->phase != tm->cur->wire || !tm->pool_started) {
        spits_warn("handing back %llu task(s) of phase %u: not in that phase",
                   (unsigned long long)h->count, h->phase);
        return_tasks(tm, h, msg);
        return;
    }
    if (h->count > tm->capitems) {
        tm_item_t *it = realloc(tm->items, (size_t)h->count * sizeof *it);
        if (!it) {
            spits_error("out of memory receiving tasks");
            abort();
        }
        tm->items = it;
        tm->capitems = (size_t)h->count;
    }
    tm_rx_t *rx = malloc(sizeof *rx);
    if (!rx) {
        spits_error("out of memory receiving tasks");
        abort();
    }
    zmq_msg_init(&rx->msg);
    zmq_msg_move(&rx->msg, msg);
    atomic_init(&rx->refs, (size_t)h->count);
    spits_reader_init(&r, zmq_msg_data(&rx->msg), zmq_msg_size(&rx->msg));
    while (spits_reader_next(&r, &rec)) {
        tm_item_t *it = &tm->items[n++];
        it->id = rec.id;
        it->data = rec.data;
        it->len = rec.len;
        it->phase = tm->cur;
        it->rx = rx;
    }
    tm_pool_push(&tm->pool, tm->items, n);
}

/* Another copy of these tasks was committed: queued copies go back unrun.
 * A running copy finishes; the JM discards its result as a duplicate. */
static void on_cancel(tm_t *tm, const spits_hdr_t *h, zmq_msg_t *msg)
{
    spits_reader_t r;
    spits_rec_t rec;
    size_t n = 0;

    if (!tm->cur || h->phase != tm->cur->wire || !tm->pool_started || !h->count)
        return;
    if (h->count > tm->capcancel) {
        uint64_t *ids = realloc(tm->cancel_ids, (size_t)h->count * sizeof *ids);
        if (!ids)
            return;   /* the copies run; their results are duplicates */
        tm->cancel_ids = ids;
        tm->capcancel = (size_t)h->count;
    }
    spits_reader_init(&r, zmq_msg_data(msg), zmq_msg_size(msg));
    while (spits_reader_next(&r, &rec))
        tm->cancel_ids[n++] = rec.id;
    size_t dropped = tm_pool_cancel(&tm->pool, tm->cur, tm->cancel_ids, n);
    spits_debug("cancel: %zu of %zu copies were still queued and go back",
                dropped, n);
}

static void on_message(tm_t *tm, zmq_msg_t *msg)
{
    spits_hdr_t h;
    const char *why;

    if (spits_wire_parse(zmq_msg_data(msg), zmq_msg_size(msg), &h, &why) != 0) {
        bad_message(tm, why);
        return;
    }
    tm->last_heard = tm->now;
    if (tm->state == TM_LOST) {
        spits_info("the job manager answers again");
        tm->state = TM_READY;
    }
    switch (h.type) {
    case SPITS_MSG_WELCOME: on_welcome(tm, &h, msg); break;
    case SPITS_MSG_PHASE: on_phase(tm, &h, msg); break;
    case SPITS_MSG_TASKS: on_tasks(tm, &h, msg); break;
    case SPITS_MSG_CANCEL: on_cancel(tm, &h, msg); break;
    case SPITS_MSG_HEARTBEAT: break;
    case SPITS_MSG_END:
        spits_debug("the job manager says the job is over");
        tm->done = 1;
        break;
    case SPITS_MSG_WHO:
        tm->state = TM_CONNECTING;
        send_hello(tm);
        break;
    default:
        bad_message(tm, "a TM-to-JM message sent to a TM");
    }
}

/* --- results ----------------------------------------------------------- */

static void collect_results(tm_t *tm)
{
    size_t n;
    tm_seg_t *segs = tm_pool_take_out(&tm->pool, &n);
    if (!n) {
        free(segs);
        return;
    }
    if (tm->cappending - tm->npending < n) {
        size_t cap = tm->cappending ? tm->cappending : 8;
        while (cap - tm->npending < n)
            cap *= 2;
        tm_seg_t *p = realloc(tm->pending, cap * sizeof *p);
        if (!p) {
            spits_error("out of memory keeping results");
            abort();
        }
        tm->pending = p;
        tm->cappending = cap;
    }
    memcpy(tm->pending + tm->npending, segs, n * sizeof *segs);
    tm->npending += n;
    free(segs);
}

static void send_results(tm_t *tm)
{
    size_t sent = 0;
    if (tm->state != TM_READY)
        return;
    /* Stats ahead of results (10 a second at most): when the last result
     * ends the job, the JM already has the time spent on it. */
    if (tm->npending && tm->pool_started && tm->now - tm->last_stats >= 100)
        send_stats(tm);
    for (; sent < tm->npending; sent++) {
        tm_seg_t *seg = &tm->pending[sent];
        if (seg->phase->job != tm->job) {
            spits_batch_free(&seg->batch);   /* a job that is gone */
            continue;
        }
        spits_batch_finish(&seg->batch);
        if (tm_send(tm, seg->batch.buf.data, seg->batch.buf.len) != 0)
            break;
        spits_batch_free(&seg->batch);
    }
    if (sent) {
        memmove(tm->pending, tm->pending + sent,
                (tm->npending - sent) * sizeof *tm->pending);
        tm->npending -= sent;
    }
}

/* --- draining ----------------------------------------------------------- */

static void drain_begin(tm_t *tm, const char *why)
{
    unsigned char drain[SPITS_HDR_SIZE];
    size_t handed = 0, running = 0;

    tm->draining = 1;
    tm->drain_deadline = tm->now + (int64_t)(tm->drain_timeout * 1000);
    spits_wire_encode_empty(drain, SPITS_MSG_DRAIN, tm->cur ? tm->cur->wire : 0);
    if (tm->state == TM_READY)
        tm_send(tm, drain, sizeof drain);
    if (tm->pool_started) {
        handed = tm_pool_drain(&tm->pool);
        running = tm_pool_running(&tm->pool);
    }
    spits_info("%s: draining: %zu queued task(s) handed back, waiting "
               "up to %.0f s for %zu running", why, handed,
               tm->drain_timeout, running);
}

/* 1 when the drain is over: nothing runs and every result went out. */
static int drain_done(tm_t *tm)
{
    size_t held = tm->pool_started ? tm_pool_held(&tm->pool) : 0;
    /* Read held before collecting: a worker hands back its results and
     * stops counting as running under one lock, so none can slip by. */
    if (tm->pool_started)
        collect_results(tm);
    send_results(tm);
    if (held == 0 && tm->npending == 0) {
        spits_info("drained: every started task finished and its result was sent");
        return 1;
    }
    if (tm->now >= tm->drain_deadline) {
        spits_warn("drain timed out after %.0f s: %zu task(s) still running and "
                   "%zu result batch(es) unsent are left to the job manager",
                   tm->drain_timeout, held, tm->npending);
        tm->done = -1;
        return 1;
    }
    return 0;
}

/* --- the loop ---------------------------------------------------------- */

/* Walltime: drain once what is left cannot fit another task or two and
 * the last results. Task time is what the workers last measured. */
static void walltime_check(tm_t *tm)
{
    if (!tm->end_ms || tm->draining || !tm->pool_started)
        return;
    int64_t task_ms = (int64_t)(atomic_load_explicit(&tm->pool.task_ns,
                                                     memory_order_relaxed) / 1000000);
    int64_t left = tm->end_ms - tm->now;
    if (left > 2 * task_ms + (int64_t)(tm->end_margin * 1000))
        return;
    char why[128];
    snprintf(why, sizeof why, "walltime: %.0f s left, a task takes about %.1f s",
             left / 1000.0, task_ms / 1000.0);
    drain_begin(tm, why);
    /* Leave by the end, whatever --drain-timeout says. */
    int64_t by = tm->end_ms - 1000;
    if (by < tm->drain_deadline)
        tm->drain_deadline = by > tm->now ? by : tm->now;
}

static void tm_timers(tm_t *tm)
{
    if (tm->state == TM_READY) {
        if (tm->now - tm->last_heard > tm->lost_ms) {
            spits_warn("the job manager has been silent for %.1f s; looking "
                       "for it", (tm->now - tm->last_heard) / 1000.0);
            tm->state = TM_LOST;
        } else if (tm->pool_started && tm->now - tm->last_stats >= 1000) {
            send_stats(tm);    /* (it serves as a heartbeat too) */
        } else if (tm->now - tm->last_sent >= tm->hb_ms) {
            unsigned char hb[SPITS_HDR_SIZE];
            spits_wire_encode_empty(hb, SPITS_MSG_HEARTBEAT, tm->cur ? tm->cur->wire : 0);
            tm_send(tm, hb, sizeof hb);
        }
        return;
    }
    /* Looking (LOST) or reconnecting (CONNECTING) alike: a JM unheard of
     * for --reconnect-timeout is given up. */
    if (tm->welcomed && tm->now - tm->last_heard > (int64_t)(tm->reconnect * 1000)) {
        spits_error("lost the job manager at %s: silent for %.0f s", tm->endpoint,
                    tm->reconnect);
        tm->done = -1;
        return;
    }
    if (tm->now - tm->last_look >= 1000) {
        look_for_jm(tm);
        if (tm->done)
            return;
        if (tm->state == TM_LOST) {
            tm->state = TM_CONNECTING;
            tm->last_hello = 0;
        }
    }
    if (tm->state == TM_CONNECTING && tm->now - tm->last_hello >= 1000)
        send_hello(tm);
}

static int tm_loop(tm_t *tm)
{
    int64_t first_deadline = spits_now_ms() + (int64_t)(tm->wait * 1000);

    tm->now = spits_now_ms();
    tm->last_look = tm->now;
    send_hello(tm);
    while (!tm->done) {
        zmq_pollitem_t items[3] = {
            {tm->sock, 0, ZMQ_POLLIN, 0},
            {NULL, tm->wake_fd, ZMQ_POLLIN, 0},
            {tm->mon, 0, ZMQ_POLLIN, 0},
        };
        if (tm->npending && tm->state == TM_READY)
            items[0].events |= ZMQ_POLLOUT;
        if (zmq_poll(items, 3, 100) < 0 && errno != EINTR) {
            spits_error("zmq_poll: %s", zmq_strerror(errno));
            return 1;
        }
        tm->now = spits_now_ms();
        if (items[1].revents & ZMQ_POLLIN)
            spits_wake_drain(tm->wake_fd);
        if (items[2].revents & ZMQ_POLLIN) {
            on_monitor(tm);
            if (tm->done)
                break;
        }
        for (int i = 0; i < 256 && !tm->done; i++) {
            zmq_msg_t msg;
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, tm->sock, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&msg);
                break;
            }
            on_message(tm, &msg);
            zmq_msg_close(&msg);
        }
        if (tm_signal && !tm->draining) {
            char why[32];
            snprintf(why, sizeof why, "signal %d", (int)tm_signal);
            drain_begin(tm, why);
        }
        walltime_check(tm);
        if (tm->pool_started)
            collect_results(tm);
        send_results(tm);
        if (tm->draining && !tm->done && drain_done(tm)) {
            if (!tm->done)
                tm->done = 1;
            break;
        }
        if (!tm->welcomed && tm->now > first_deadline && !tm->draining) {
            spits_error("no job manager answered at %s within %.0f s",
                        tm->endpoint, tm->wait);
            return 1;
        }
        tm_timers(tm);
    }
    return tm->done < 0 ? 1 : 0;
}

/* Waits for DIR/jm.json; returns 0, or an exit status. */
static int find_jm(tm_t *tm)
{
    spits_announce_t a;
    char err[1024];
    int64_t deadline = spits_now_ms() + (int64_t)(tm->wait * 1000);

    if (tm->connect) {
        snprintf(tm->endpoint, sizeof tm->endpoint, "%s", tm->connect);
        if (tm->key_file &&
            spits_keys_read(tm->key_file, &tm->keys, 0, err, sizeof err) != 0) {
            spits_error("%s", err);
            return 1;
        }
        return 0;
    }
    for (;;) {
        int rc = spits_announce_read(tm->jobdir, &a, err, sizeof err);
        if (rc == 0)
            break;
        if (rc < 0) {
            spits_error("%s", err);
            return 1;
        }
        if (spits_now_ms() > deadline) {
            spits_error("no %s appeared in %s within %.0f s", SPITS_ANNOUNCE_FILE,
                        tm->jobdir, tm->wait);
            return 1;
        }
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (spits_jobdir_finished(tm->jobdir, a.job_id, 0)) {
        spits_info("job %s in %s is already over", a.job_id, tm->jobdir);
        return -1;
    }
    snprintf(tm->endpoint, sizeof tm->endpoint, "%s", a.endpoint);
    snprintf(tm->job_id, sizeof tm->job_id, "%s", a.job_id);
    return security_from_announce(tm, &a) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    tm_t tm;
    int verbosity = SPITS_LOG_INFO, rc;

    /* A worker process of --isolate: the same binary, another role. */
    if (argc >= 2 && strcmp(argv[1], "--worker-child") == 0)
        return tm_child_main(argc, argv);

    spits_malloc_tune();
    memset(&tm, 0, sizeof tm);
    tm.wait = 60;
    tm.reconnect = 300;
    tm.drain_timeout = 25;
    tm.end_margin = 10;
    tm.max_task = 1LL << 30;
    tm.workers = spits_online_cores();
    tm.prefetch = -1;
    tm.wake_fd = -1;
    spits_log_init("spits-tm", SPITS_LOG_INFO);
    rc = parse_args(&tm, argc, argv, &verbosity);
    if (rc >= 0)
        return rc;
    spits_log_init("spits-tm", verbosity > SPITS_LOG_TRACE ? SPITS_LOG_TRACE : verbosity);
    if (tm.prefetch < 0)
        tm.prefetch = tm.workers;
    if (!tm.end_arg)
        slurm_end_time(&tm);
    if (tm.end_wall > 0)
        tm.end_ms = spits_now_ms() + (int64_t)((tm.end_wall - spits_wall_time()) * 1000);
    if (sodium_init() < 0) {
        spits_error("cannot initialise libsodium");
        return 1;
    }
    spits_hostname(tm.host, sizeof tm.host);
    snprintf(tm.rid, sizeof tm.rid, "tm-");
    spits_random_hex(tm.rid + 3, 8);
    tm.hb_ms = 1000;
    tm.lost_ms = 5000;

    rc = find_jm(&tm);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    tm.wake_fd = spits_wake_open();
    tm.zctx = zmq_ctx_new();
    if (tm.wake_fd < 0 || !tm.zctx ||
        tm_pool_init(&tm.pool, tm.workers, tm.wake_fd) != 0) {
        spits_error("cannot set up: %s", strerror(errno));
        return 1;
    }
    tm.pool.isolate = tm.isolate;
    tm.pool.task_timeout_ms = (int64_t)(tm.task_timeout * 1000);

    /* A dead --isolate child must not kill us through its pipe. */
    signal(SIGPIPE, SIG_IGN);
    tm_wake_fd = tm.wake_fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (tm_connect(&tm) != 0)
        return 1;
    rc = tm_loop(&tm);

    /* Busy workers run tasks nobody needs any more: don't wait long. */
    int busy = tm.pool_started ? tm_pool_stop(&tm.pool, tm.draining ? 100 : 2000) : 0;
    if (tm.sock) {
        if (rc == 0 || tm.draining) {
            unsigned char bye[SPITS_HDR_SIZE];
            if (tm.pool_started && tm.state == TM_READY)
                send_stats(&tm);
            spits_wire_encode_empty(bye, SPITS_MSG_BYE, 0);
            zmq_send(tm.sock, bye, sizeof bye, ZMQ_DONTWAIT);
        }
        int linger = tm.draining ? 2000 : 200;   /* a drain's last results */
        zmq_setsockopt(tm.sock, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(tm.sock);
    }
    if (busy) {
        spits_debug("leaving %d busy worker(s) behind", busy);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    if (tm.mon)
        zmq_close(tm.mon);
    zmq_ctx_term(tm.zctx);
    tm_pool_destroy(&tm.pool);
    for (size_t i = 0; i < tm.npending; i++)
        spits_batch_free(&tm.pending[i].batch);
    free(tm.pending);
    free(tm.items);
    free(tm.cancel_ids);
    while (tm.phases) {
        tm_phase_t *next = tm.phases->next;
        for (int i = 0; i < tm.phases->argc; i++)
            free(tm.phases->argv[i]);
        free(tm.phases->argv);
        free(tm.phases);
        tm.phases = next;
    }
    spits_module_close(&tm.mod);
    spits_wake_close(&tm.wake_fd);
    return rc;
}
