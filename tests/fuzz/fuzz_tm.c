/*
 * fuzz_tm.c - libFuzzer target: spits-tm's message handlers with live state.
 *
 * Each input runs a fresh TM set up as main() does (--connect, --insecure,
 * 2 workers, --module the bench module), its DEALER connected over inproc
 * to a ROUTER the harness owns, playing the JM: what the TM sends (HELLO,
 * RESULTS, STATS...) really arrives there and is read. The input is a
 * list of operations:
 *
 *   0 LEN16 BYTES      this frame from the JM, as it is (garbage included)
 *   1 PHASE FAIL       a valid WELCOME of job "fuzz" in phase PHASE % 4 + 1
 *   2 PHASE FAIL       a valid PHASE (FAIL < 32: bench fails task FAIL % 16)
 *   3 PHASE N ID...    a valid TASKS batch of N % 16 bench tasks (ID % 64;
 *                      an ID >= 128 gets a bad filler byte: its run fails)
 *   4 PHASE N ID...    a CANCEL of N % 16 ids
 *   5                  a turn of the loop: collect results, send, timers
 *
 * The invariant is the wire rule (libspits/wire.h): every task copy the
 * TM was sent comes back to the ROUTER as exactly one RESULTS record. A
 * record for a copy not out aborts at once; at the end of the input the
 * harness turns the loop (and answers a HELLO with WELCOME) for up to
 * 2 s, and a copy still out aborts. Not checked: after END or a fatal
 * error the TM leaves without its tasks (the JM counts them lost), and
 * a new job's WELCOME drops the old job's copies (job.c): those copies
 * are forgiven. Raw WELCOME/PHASE frames whose argv would make bench
 * sleep, wait for files, write files or allocate at will are not sent.
 *
 * The module: $SPITS_FUZZ_MODULE, else modules/.libs/bench.so two levels
 * above the fuzz binary (spits-logs/fuzz/); none aborts at start-up.
 */
#define _DEFAULT_SOURCE
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "image.h"
#include "log.h"
#include "tm_private.h"
#include "util.h"
#include "wake.h"

#define F_ENDPOINT "inproc://fuzz-tm"
#define F_COPIES 4096
#define F_DRAIN_MS 2000

/* Task copies the TM was sent, by (phase, id): how many are still out. */
typedef struct {
    uint32_t phase;
    uint64_t id;
    int out;
    int forgiven;             /* its job was dropped: late records are fine */
} fcopy_t;

static fcopy_t copies[F_COPIES];
static size_t ncopies;
static char module_path[PATH_MAX], module_hash[160];
static void *router;

static fcopy_t *copy_find(uint32_t phase, uint64_t id, int add)
{
    for (size_t i = 0; i < ncopies; i++)
        if (copies[i].phase == phase && copies[i].id == id)
            return &copies[i];
    if (!add || ncopies == F_COPIES)
        return NULL;
    copies[ncopies] = (fcopy_t){phase, id, 0, 0};
    return &copies[ncopies++];
}

/* Whether every record of a TASKS frame has room in the table. */
static int copies_room(const void *frame, size_t len)
{
    spits_hdr_t h;
    const char *why;
    if (spits_wire_parse(frame, len, &h, &why) != 0 || h.type != SPITS_MSG_TASKS)
        return 1;
    return h.count <= F_COPIES - ncopies;
}

/* The TM takes a TASKS frame: each record is a copy out. */
static void copies_sent(const void *frame, size_t len)
{
    spits_hdr_t h;
    spits_rec_t rec;
    spits_reader_t r;
    const char *why;
    /* (records of parts with no parts after them: a bad message, dropped) */
    if (spits_wire_parse(frame, len, &h, &why) != 0 || h.type != SPITS_MSG_TASKS ||
        h.parts)
        return;
    spits_reader_init(&r, frame, len);
    while (spits_reader_next(&r, &rec))
        copy_find(h.phase, rec.id, 1)->out++;
}

static void copies_forgive(void)
{
    for (size_t i = 0; i < ncopies; i++) {
        copies[i].out = 0;
        copies[i].forgiven = 1;
    }
}

static size_t copies_out(int say)
{
    size_t n = 0;
    for (size_t i = 0; i < ncopies; i++) {
        n += (size_t)copies[i].out;
        if (say && copies[i].out)
            fprintf(stderr, "fuzz_tm: task %llu of phase %u: %d copy(ies) never "
                    "came back\n", (unsigned long long)copies[i].id,
                    copies[i].phase, copies[i].out);
    }
    return n;
}

/* One RESULTS record reached the JM: it must match a copy out. */
static void copy_back(uint32_t phase, const spits_rec_t *rec)
{
    fcopy_t *c = copy_find(phase, rec->id, 0);
    if (rec->status > SPITS_ST_LAST) {
        fprintf(stderr, "fuzz_tm: record status %u\n", rec->status);
        abort();
    }
    if (c && c->out > 0) {
        c->out--;
        return;
    }
    if (c && c->forgiven)
        return;
    fprintf(stderr, "fuzz_tm: a record for task %llu of phase %u, which has "
            "no copy out (came back twice?)\n", (unsigned long long)rec->id, phase);
    abort();
}

/* Reads what the TM sent the JM; 1 if it said HELLO. */
static int router_read(void)
{
    zmq_msg_t m;
    int hello = 0;
    zmq_msg_init(&m);
    while (zmq_msg_recv(&m, router, ZMQ_DONTWAIT) >= 0) {
        spits_hdr_t h;
        const char *why;
        if (zmq_msg_more(&m))
            continue;                  /* the routing id */
        if (spits_wire_parse(zmq_msg_data(&m), zmq_msg_size(&m), &h, &why) != 0) {
            fprintf(stderr, "fuzz_tm: the TM sent a bad frame (%s)\n", why);
            abort();
        }
        hello |= h.type == SPITS_MSG_HELLO;
        if (h.type == SPITS_MSG_RESULTS) {
            spits_reader_t r;
            spits_rec_t rec;
            spits_reader_init(&r, zmq_msg_data(&m), zmq_msg_size(&m));
            while (spits_reader_next(&r, &rec))
                copy_back(h.phase, &rec);
        }
    }
    zmq_msg_close(&m);
    return hello;
}

static void deliver(tm_t *tm, const void *frame, size_t len)
{
    zmq_msg_t m;
    if (zmq_msg_init_size(&m, len) != 0)
        abort();
    if (len)
        memcpy(zmq_msg_data(&m), frame, len);
    copies_sent(frame, len);
    tm_proto_on_message(tm, &m);
    zmq_msg_close(&m);
}

/* bench's options that sleep, wait for or write files, or size buffers. */
static int argv_risky(json_t *argv)
{
    static const char *const risky[] = {"-G", "-M", "-P", "-s", "-b", "-F", "-t", "-r"};
    for (size_t i = 0; i < json_array_size(argv); i++) {
        const char *s = json_string_value(json_array_get(argv, i));
        for (size_t k = 0; s && k < sizeof risky / sizeof *risky; k++)
            if (strcmp(s, risky[k]) == 0)
                return 1;
    }
    return 0;
}

static int frame_risky(const void *frame, size_t len)
{
    spits_hdr_t h;
    const char *why;
    if (spits_wire_parse(frame, len, &h, &why) != 0 ||
        (h.type != SPITS_MSG_WELCOME && h.type != SPITS_MSG_PHASE))
        return 0;
    json_t *body = spits_wire_decode_json(frame, len, &why);
    int risky = argv_risky(json_object_get(body, "argv"));
    json_decref(body);
    return risky;
}

static json_t *phase_argv(unsigned fail)
{
    char id[8];
    if (fail >= 32)
        return json_pack("[s]", "bench");
    snprintf(id, sizeof id, "%u", fail % 16);
    return json_pack("[s, s, s]", "bench", "-f", id);
}

static void send_json(tm_t *tm, int type, uint32_t phase, json_t *body)
{
    spits_buf_t b = {0};
    if (!body || spits_wire_encode_json(&b, type, phase, body) != 0)
        abort();
    deliver(tm, b.data, b.len);
    json_decref(body);
    spits_buf_free(&b);
}

static void welcome(tm_t *tm, uint32_t phase, unsigned fail)
{
    send_json(tm, SPITS_MSG_WELCOME, phase,
              json_pack("{s:s, s:s, s:o, s:i, s:s, s:i}", "job_id", "fuzz",
                        "module", module_path, "argv", phase_argv(fail),
                        "heartbeat_ms", 1000, "module_hash", module_hash,
                        "max_task_bytes", 1 << 20));
}

/* TASKS (bench's: the id, u64 LE) or CANCEL of n ids. */
static void batch(tm_t *tm, int type, uint32_t phase, const unsigned char *ids,
                  size_t n)
{
    spits_batch_t b = {0};
    spits_batch_begin(&b, type, phase);
    for (size_t i = 0; i < n; i++) {
        uint64_t id = ids[i] % 64;
        uint32_t len = type == SPITS_MSG_TASKS ? (ids[i] >= 128 ? 9 : 8) : 0;
        unsigned char *p = spits_batch_add(&b, id, 0, len);
        if (!p)
            abort();
        if (len)
            memcpy(p, &id, 8);
        if (len == 9)
            p[8] = 0xee;
    }
    spits_batch_seal(&b);
    deliver(tm, b.buf.data, b.buf.len);
    spits_batch_free(&b);
}

/* What loop.c does each turn after reading the JM's messages. */
static void loop_turn(tm_t *tm)
{
    tm->now = spits_now_ms();
    spits_wake_drain(tm->wake_fd);
    tm_results_collect(tm);
    tm_results_send(tm);
    tm_link_timers(tm);
}

/* Runs one operation; returns the bytes it used, or 0 at the input's end. */
static size_t op_run(tm_t *tm, const unsigned char *d, size_t len)
{
    unsigned op = d[0] % 6;
    uint32_t phase = len > 1 ? d[1] % 4 + 1 : 1;
    size_t n;

    switch (op) {
    case 0:
        if (len < 3)
            return 0;
        n = (size_t)d[1] | (size_t)d[2] << 8;
        n = n > len - 3 ? len - 3 : n;
        if (copies_room(d + 3, n) && !frame_risky(d + 3, n))
            deliver(tm, d + 3, n);
        return 3 + n;
    case 1:
    case 2:
        if (len < 3)
            return 0;
        if (op == 1)
            welcome(tm, phase, d[2]);
        else
            send_json(tm, SPITS_MSG_PHASE, phase, json_pack("{s:o}", "argv",
                                                            phase_argv(d[2])));
        return 3;
    case 3:
    case 4:
        if (len < 3)
            return 0;
        n = d[2] % 16;
        n = n > len - 3 ? len - 3 : n;
        if (op == 4 || n <= F_COPIES - ncopies)
            batch(tm, op == 3 ? SPITS_MSG_TASKS : SPITS_MSG_CANCEL, phase, d + 3, n);
        return 3 + n;
    default:
        loop_turn(tm);
        return 1;
    }
}

/* main()'s set-up, with the JM's ROUTER bound first on the same context. */
static void tm_start(tm_t *tm)
{
    memset(tm, 0, sizeof *tm);
    tm->opts.connect = F_ENDPOINT;
    tm->opts.module_override = module_path;
    tm->opts.insecure = 1;
    tm->opts.wait = 60;
    tm->opts.reconnect = 300;
    tm->opts.drain_timeout = 25;
    tm->opts.end_margin = 10;
    tm->opts.workers = 2;
    tm->opts.prefetch = -1;
    tm->opts.end_arg = "none";
    tm_opts_complete(&tm->opts);
    tm_link_init(tm, tm_results_pending);
    if (tm_link_find_jm(tm) != 0 || (tm->wake_fd = spits_wake_open()) < 0 ||
        !(tm->link.context = zmq_ctx_new()) ||
        tm_pool_init(&tm->pool, tm->opts.workers, tm->wake_fd) != 0)
        abort();
    router = zmq_socket(tm->link.context, ZMQ_ROUTER);
    if (!router || zmq_setsockopt(router, ZMQ_ROUTER_HANDOVER, &(int){1}, sizeof(int)) ||
        zmq_setsockopt(router, ZMQ_LINGER, &(int){0}, sizeof(int)) ||
        zmq_bind(router, F_ENDPOINT) != 0 || tm_link_connect(tm) != 0)
        abort();
    tm->link.status.state = TM_READY;
    tm->now = spits_now_ms();
    tm->link.live.last_heard = tm->now;
    tm_link_send_hello(tm);
}

/* Turns the loop until every copy is back, or F_DRAIN_MS. */
static void tm_settle(tm_t *tm)
{
    int64_t end = spits_now_ms() + F_DRAIN_MS;
    uint32_t phase = tm_job_wire(&tm->job);

    while (copies_out(0) && spits_now_ms() < end) {
        if (tm->link.status.state != TM_READY)    /* the JM answers its HELLO */
            welcome(tm, phase ? phase : 1, 255);
        loop_turn(tm);
        router_read();
        struct pollfd p = {tm->wake_fd, POLLIN, 0};
        if (copies_out(0))
            poll(&p, 1, 10);
    }
    if (copies_out(1))
        abort();
}

static void tm_stop(tm_t *tm)
{
    if (tm->pool_started && tm_pool_stop(&tm->pool, F_DRAIN_MS) != 0) {
        fprintf(stderr, "fuzz_tm: a worker still runs after %d ms\n", F_DRAIN_MS);
        abort();
    }
    tm_link_close(tm, 1);
    zmq_close(router);
    tm_free(tm);
}

static void find_module(const char *argv0)
{
    char exe[PATH_MAX], err[1024], path[PATH_MAX + 64];
    const char *env = getenv("SPITS_FUZZ_MODULE");
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    exe[n > 0 ? n : 0] = '\0';
    if (n <= 0)
        snprintf(exe, sizeof exe, "%s", argv0);
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(path, sizeof path, "%s/../../modules/.libs/bench.so", slash ? exe : ".");
    if (!realpath(env ? env : path, module_path)) {
        fprintf(stderr, "fuzz_tm: no bench module at %s: build the tree (make) "
                "or set SPITS_FUZZ_MODULE\n", env ? env : path);
        exit(1);
    }
    spits_image_t *img = spits_image_read(module_path, err, sizeof err);
    if (!img) {
        fprintf(stderr, "fuzz_tm: %s\n", err);
        exit(1);
    }
    snprintf(module_hash, sizeof module_hash, "%s", spits_image_hash(img));
    spits_image_free(&img);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    if (sodium_init() < 0)
        abort();
    spits_log_init("fuzz_tm", -1);
    find_module((*argv)[0]);
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    tm_t tm;
    size_t used;

    ncopies = 0;
    tm_start(&tm);
    unsigned joined = tm.job.joined;
    for (size_t i = 0; i < len && !tm.done; i += used) {
        router_read();                 /* before a job change forgives */
        if (!(used = op_run(&tm, data + i, len - i)))
            break;
        if (tm.job.joined != joined) {
            joined = tm.job.joined;
            copies_forgive();
        }
        router_read();
    }
    if (!tm.done)
        tm_settle(&tm);
    tm_stop(&tm);
    return 0;
}
