/*
 * hostile.c - a misbehaving peer for the security tests.
 *
 *   hostile garbage HOST PORT        raw TCP: 64 KiB of random bytes
 *   hostile silent HOST PORT N SEC   raw TCP: N connections that never speak
 *   hostile probe ENDPOINT [KEYFILE] ZeroMQ DEALER, plain or (with KEYFILE,
 *                                    a tm.key) CURVE: say HELLO, exit 0 if
 *                                    nothing comes back within 2 s, 3 if
 *                                    the JM answered
 *   hostile bighello ENDPOINT KEYFILE N  as probe, but its HELLO claims N
 *                                    workers
 *   hostile wrongkey ENDPOINT SERVERKEY  CURVE with the right server key but
 *                                    a client key of its own: as probe
 *   hostile abuse ENDPOINT [KEYFILE] as a (possibly authenticated) peer:
 *                                    an old and a future protocol version,
 *                                    results for tasks never sent, a
 *                                    truncated record, a multipart message,
 *                                    results whose parts do not match;
 *                                    exit 0 only if the JM then answers a
 *                                    STATUS request (it handled them all);
 *                                    then a 40 MB frame, for which the JM
 *                                    drops it (the test checks)
 *   hostile welcome ENDPOINT BYTES SEC  a JM of its own (plain ZeroMQ,
 *                                    ROUTER bound to ENDPOINT) that answers
 *                                    each HELLO for SEC seconds with a
 *                                    WELCOME claiming max_task_bytes BYTES
 *   (manyparts, bigstats, bigrelay, dupes: KEYFILE "-" for plain ZeroMQ, to a
 *   JM or relay of --insecure)
 *   hostile manyparts ENDPOINT KEYFILE N  an authenticated peer that says
 *                                    HELLO and, once welcomed, sends RESULTS
 *                                    whose N records each claim a part, with
 *                                    one part after them; exit 0 if the JM
 *                                    then answers a STATUS request
 *   hostile bigstats ENDPOINT KEYFILE MB  an authenticated peer that never
 *                                    says HELLO sends a STATS of MB MB of
 *                                    JSON (a JM or a relay: exit 0 once sent)
 *   hostile bigrelay ENDPOINT KEYFILE TMS [SEC]  an authenticated peer
 *                                    that says HELLO as a relay with 2^20
 *                                    workers and 2^24 slots (and TMS TMs
 *                                    behind it, if TMS >= 0); once welcomed,
 *                                    prints the workers the JM's STATUS
 *                                    gives it (with SEC: stays SEC seconds
 *                                    instead), then says BYE; exit 0 if it
 *                                    was welcomed
 *   hostile dupes ENDPOINT KEYFILE SEC  an authenticated peer that runs
 *                                    the bench module's tasks as its
 *                                    worker would, but answers each task
 *                                    with two records in one RESULTS, for
 *                                    SEC seconds at most or until END (then
 *                                    BYE); prints the tasks it answered;
 *                                    exit 0 if END came after it answered
 *                                    any, else 3
 *   hostile named ENDPOINT KEYFILE HOST SEC  an authenticated peer that says
 *                                    HELLO as host HOST (escape sequences,
 *                                    say; JSON takes valid UTF-8 only),
 *                                    then heartbeats for SEC seconds; exit
 *                                    0 if it was welcomed, else 3
 *
 * It never takes part in a job: it exists to show that the JM (or, as a
 * JM, the TM) ignores it and the job's result stays exact.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "keys.h"
#include "wire.h"

static int tcp_open(const char *host, int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("hostile: connect");
        exit(1);
    }
    return fd;
}

static void *dealer(void *ctx, const char *ep, const spits_keys_t *k,
                    const char *server_key)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (k) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, k->server_public, 41);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, k->client_public, 41);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, k->client_secret, 41);
    } else if (server_key) {
        char pub[41], sec[41];
        zmq_curve_keypair(pub, sec);
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_key, 41);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 41);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 41);
    }
    if (zmq_connect(s, ep) != 0) {
        fprintf(stderr, "hostile: zmq_connect %s: %s\n", ep, zmq_strerror(zmq_errno()));
        exit(1);
    }
    return s;
}

static void send_hello_as(void *s, const char *host, int pid, long workers)
{
    spits_buf_t b = {0};
    json_t *j = json_pack("{s:s, s:i, s:I, s:i, s:i, s:s}", "host", host,
                          "pid", pid, "workers", (json_int_t)workers, "slots", 4,
                          "held", 0, "job_id", "x");
    spits_wire_encode_json(&b, SPITS_MSG_HELLO, 0, j);
    zmq_send(s, b.data, b.len, ZMQ_DONTWAIT);
    json_decref(j);
    spits_buf_free(&b);
}

static void send_hello(void *s)
{
    send_hello_as(s, "hostile", 1, 1);
}

/* Says HELLO as host (each second until welcomed: a send before the
 * connection is up is dropped), else heartbeats, for sec seconds. 0 if a
 * WELCOME came, else 3. */
static int named(void *s, const char *host, int sec)
{
    unsigned char hdr[SPITS_HDR_SIZE], buf[SPITS_HDR_SIZE];
    int welcomed = 0;

    for (int i = 0; i < sec * 10; i++) {
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        if (i % 10 == 0 && !welcomed) {
            send_hello_as(s, host, (int)getpid(), 1);
        } else if (i % 10 == 0) {
            spits_wire_encode_empty(hdr, SPITS_MSG_HEARTBEAT, 1);
            zmq_send(s, hdr, sizeof hdr, ZMQ_DONTWAIT);
        }
        if (zmq_poll(&it, 1, 100) > 0 &&
            zmq_recv(s, buf, sizeof buf, 0) >= SPITS_HDR_SIZE &&
            buf[3] == SPITS_MSG_WELCOME)
            welcomed = 1;
    }
    if (!welcomed)
        fprintf(stderr, "hostile: no WELCOME\n");
    return welcomed ? 0 : 3;
}

/* 0 if nothing arrives within ms, else 3. */
static int expect_silence(void *s, int ms)
{
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, ms) > 0) {
        fprintf(stderr, "hostile: the job manager answered\n");
        return 3;
    }
    return 0;
}

/* zmq_send that must succeed; 1 if it did not. */
static int send_ok(void *s, const void *buf, size_t len, int flags)
{
    if (zmq_send(s, buf, len, flags) == (int)len)
        return 0;
    fprintf(stderr, "hostile: zmq_send: %s\n", zmq_strerror(zmq_errno()));
    return 1;
}

/* A relay's HELLO claiming all a relay may (tms < 0: no TM count). */
static void send_hello_relay(void *s, long tms)
{
    spits_buf_t b = {0};
    json_t *relay = json_pack("{s:s, s:s}", "endpoint", "tcp://127.0.0.1:1", "id",
                              "hostile-relay");
    if (tms >= 0)
        json_object_set_new(relay, "tms", json_integer(tms));
    json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:i, s:s, s:o}", "host", "hostile",
                          "pid", (int)getpid(), "workers", (json_int_t)SPITS_WORKERS_MAX,
                          "slots", (json_int_t)SPITS_SLOTS_MAX, "held", 0,
                          "job_id", "x", "relay", relay);
    spits_wire_encode_json(&b, SPITS_MSG_HELLO, 0, j);
    zmq_send(s, b.data, b.len, ZMQ_DONTWAIT);
    json_decref(j);
    spits_buf_free(&b);
}

/* Reads for up to ms until a message of type comes: its body (a new
 * zmq_msg_t the caller closes) in *out, 0; or 4. */
static int await_type(void *s, int type, int ms, zmq_msg_t *out)
{
    void *watch = zmq_stopwatch_start();
    int rc = 4;
    zmq_msg_init(out);
    for (;;) {
        long left = ms - (long)(zmq_stopwatch_intermediate(watch) / 1000);
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        if (left <= 0 || zmq_poll(&it, 1, left) <= 0)
            break;
        if (zmq_msg_recv(out, s, 0) >= SPITS_HDR_SIZE &&
            ((unsigned char *)zmq_msg_data(out))[3] == type) {
            rc = 0;
            break;
        }
    }
    zmq_stopwatch_stop(watch);
    return rc;
}

/* HELLO (send_hello, or a relay's), resent each second, until a WELCOME
 * comes (a send before the connection is up is dropped): 0, or 3. */
static int welcomed(void *s, long relay_tms, int relay)
{
    zmq_msg_t m;
    for (int i = 0; i < 10; i++) {
        if (relay)
            send_hello_relay(s, relay_tms);
        else
            send_hello_as(s, "hostile", (int)getpid(), 1);
        int rc = await_type(s, SPITS_MSG_WELCOME, 1000, &m);
        zmq_msg_close(&m);
        if (rc == 0)
            return 0;
    }
    fprintf(stderr, "hostile: no WELCOME\n");
    return 3;
}

/* bench's result of its task id: id, splitmix64(id) (modules/bench.c). */
static void bench_result(unsigned char *out, uint64_t id)
{
    uint64_t z = id + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    memcpy(out, &id, 8);
    memcpy(out + 8, &z, 8);
}

/* Answers every task twice in one RESULTS (see the top): 0 once END came
 * after it answered any, 3 otherwise. */
static int dupes(void *s, int sec)
{
    spits_batch_t b = {0};
    uint64_t answered = 0;
    int ended = 0;
    if (welcomed(s, 0, 0) != 0)
        return 3;
    void *watch = zmq_stopwatch_start();
    long next_hb = 1000;
    while (!ended) {
        long now = (long)(zmq_stopwatch_intermediate(watch) / 1000);
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        unsigned char hdr[SPITS_HDR_SIZE];
        if (now >= sec * 1000L)
            break;
        if (now >= next_hb) {
            spits_wire_encode_empty(hdr, SPITS_MSG_HEARTBEAT, 0);
            zmq_send(s, hdr, sizeof hdr, ZMQ_DONTWAIT);
            next_hb = now + 1000;
        }
        if (zmq_poll(&it, 1, 200) <= 0)
            continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < SPITS_HDR_SIZE || zmq_msg_more(&m)) {
            zmq_msg_close(&m);   /* (bench's small tasks come inline) */
            continue;
        }
        spits_hdr_t h;
        const char *why;
        const unsigned char *f = zmq_msg_data(&m);
        if (f[3] == SPITS_MSG_END) {
            ended = 1;
        } else if (f[3] == SPITS_MSG_TASKS &&
                   spits_wire_parse(f, zmq_msg_size(&m), &h, &why) == 0) {
            spits_reader_t rd;
            spits_rec_t rec;
            spits_batch_begin(&b, SPITS_MSG_RESULTS, h.phase);
            spits_reader_init(&rd, f, zmq_msg_size(&m));
            while (spits_reader_next(&rd, &rec)) {
                uint64_t id;
                if (rec.len < 8)
                    continue;
                memcpy(&id, rec.data, 8);
                for (int k = 0; k < 2; k++)
                    bench_result(spits_batch_add(&b, rec.id, SPITS_ST_OK, 16), id);
                answered++;
            }
            spits_batch_seal(&b);
            zmq_send(s, b.buf.data, b.buf.len, 0);
        }
        zmq_msg_close(&m);
    }
    zmq_stopwatch_stop(watch);
    unsigned char bye[SPITS_HDR_SIZE];
    spits_wire_encode_empty(bye, SPITS_MSG_BYE, 0);
    zmq_send(s, bye, sizeof bye, 0);
    zmq_setsockopt(s, ZMQ_LINGER, &(int){5000}, sizeof(int));
    spits_batch_free(&b);
    printf("%llu\n", (unsigned long long)answered);
    if (!ended)
        fprintf(stderr, "hostile: no END within %d s\n", sec);
    return ended && answered ? 0 : 3;
}

/* RESULTS claiming n parts (each 1 byte, a task never sent), one part
 * after it; then a STATUS request, which must be answered. */
static int manyparts(void *s, uint64_t n)
{
    spits_batch_t b = {0};
    unsigned char hdr[SPITS_HDR_SIZE];
    zmq_msg_t m;
    int rc = welcomed(s, 0, 0);
    spits_batch_begin(&b, SPITS_MSG_RESULTS, 1);
    for (uint64_t i = 0; rc == 0 && i < n; i++)
        if (spits_batch_add_part(&b, 3000000000u + i, SPITS_ST_OK, 1) != 0)
            rc = 1;
    spits_batch_seal(&b);
    if (rc == 0)
        rc = send_ok(s, b.buf.data, b.buf.len, ZMQ_SNDMORE) || send_ok(s, "x", 1, 0);
    spits_batch_free(&b);
    spits_wire_encode_empty(hdr, SPITS_MSG_STATUS, 0);
    if (rc == 0 && !(rc = send_ok(s, hdr, sizeof hdr, 0))) {
        rc = await_type(s, SPITS_MSG_STATUS, 60000, &m);
        zmq_msg_close(&m);
    }
    zmq_setsockopt(s, ZMQ_LINGER, &(int){0}, sizeof(int));
    return rc;
}

/* A STATS of mb MB: {"busy_s": 0, "runs": 0, "x": [0,0,...]}, which a
 * JSON parser would make into millions of values. */
static int bigstats(void *s, size_t mb)
{
    static const char head[] = "{\"busy_s\": 0, \"runs\": 0, \"x\": [0";
    size_t pairs = ((mb << 20) - sizeof head) / 2;
    size_t len = SPITS_HDR_SIZE + sizeof head - 1 + 2 * pairs + 2;
    unsigned char *p = malloc(len), *q;
    if (!p || mb < 1)
        return 1;
    spits_wire_encode_empty(p, SPITS_MSG_STATS, 0);
    q = p + SPITS_HDR_SIZE;
    memcpy(q, head, sizeof head - 1);
    q += sizeof head - 1;
    for (size_t i = 0; i < pairs; i++, q += 2)
        memcpy(q, ",0", 2);
    memcpy(q, "]}", 2);
    int rc = send_ok(s, p, len, 0);
    free(p);
    /* (closing waits, 30 s at most, until it is out) */
    zmq_setsockopt(s, ZMQ_LINGER, &(int){30000}, sizeof(int));
    return rc;
}

/* A relay's HELLO claiming all it may; once welcomed, STATUS each 100 ms
 * (its answer is built at most once a tick) until it lists this peer,
 * whose workers it prints; then BYE. */
static int bigrelay(void *s, long tms, int hold_s)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    int rc = welcomed(s, tms, 1), found = 0;
    if (rc == 0 && hold_s > 0) {
        /* (behind a relay, which answers no STATUS: just stay a while) */
        for (int i = 0; i < hold_s; i++) {
            spits_wire_encode_empty(hdr, SPITS_MSG_HEARTBEAT, 0);
            zmq_send(s, hdr, sizeof hdr, ZMQ_DONTWAIT);
            sleep(1);
        }
        found = 1;
    }
    for (int i = 0; rc == 0 && !found && i < 100; i++) {
        zmq_msg_t m;
        spits_wire_encode_empty(hdr, SPITS_MSG_STATUS, 0);
        send_ok(s, hdr, sizeof hdr, 0);
        if (await_type(s, SPITS_MSG_STATUS, 1000, &m) == 0) {
            const char *why;
            json_t *j = spits_wire_decode_json(zmq_msg_data(&m), zmq_msg_size(&m), &why);
            json_t *tms = json_object_get(j, "tms"), *t;
            size_t k;
            json_array_foreach(tms, k, t) {
                if (!found && json_object_get(t, "workers") &&
                    strcmp(json_string_value(json_object_get(t, "host")) ?: "", "hostile") == 0 &&
                    json_integer_value(json_object_get(t, "pid")) == getpid()) {
                    printf("%lld\n", (long long)json_integer_value(json_object_get(t, "workers")));
                    found = 1;
                }
            }
            json_decref(j);
        }
        zmq_msg_close(&m);
        if (!found)
            usleep(100000);
    }
    if (rc == 0 && !found) {
        fprintf(stderr, "hostile: STATUS never listed this peer\n");
        rc = 4;
    }
    spits_wire_encode_empty(hdr, SPITS_MSG_BYE, 0);
    zmq_send(s, hdr, sizeof hdr, 0);
    zmq_setsockopt(s, ZMQ_LINGER, &(int){5000}, sizeof(int));
    return rc;
}

/* Reads until a STATUS answer comes (the JM reads a connection in order:
 * everything sent before the request was handled), or ms pass. 0 or 4. */
static int await_status(void *s, int ms)
{
    void *watch = zmq_stopwatch_start();
    for (;;) {
        long left = ms - (long)(zmq_stopwatch_intermediate(watch) / 1000);
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        unsigned char buf[SPITS_HDR_SIZE];
        if (left <= 0 || zmq_poll(&it, 1, left) <= 0)
            break;
        int n = zmq_recv(s, buf, sizeof buf, 0);
        if (n >= SPITS_HDR_SIZE && buf[3] == SPITS_MSG_STATUS) {
            zmq_stopwatch_stop(watch);
            return 0;
        }
    }
    zmq_stopwatch_stop(watch);
    fprintf(stderr, "hostile: no STATUS answer within %d ms\n", ms);
    return 4;
}

/* Sends every kind of bad message, checks the JM handled them all (a
 * STATUS answer comes after them), then an oversized frame (the test sees
 * the JM drop this peer for it). 0 when all of that went out, else
 * non-zero. */
static int abuse(void *s)
{
    unsigned char hdr[SPITS_HDR_SIZE];
    spits_batch_t b = {0};
    int bad = 0;

    send_hello(s);
    /* Other protocol versions. */
    spits_wire_encode_empty(hdr, SPITS_MSG_HEARTBEAT, 1);
    hdr[2] = 0;
    bad |= send_ok(s, hdr, sizeof hdr, 0);
    hdr[2] = 200;
    bad |= send_ok(s, hdr, sizeof hdr, 0);
    /* Results for tasks never sent, in this phase (1) and others. */
    for (uint32_t phase = 0; phase < 3; phase++) {
        spits_batch_begin(&b, SPITS_MSG_RESULTS, phase);
        for (uint64_t id = 0; id < 50; id++)
            memcpy(spits_batch_add(&b, 1000000000 + id * 1000003, SPITS_ST_OK, 8), "forged!!", 8);
        spits_batch_seal(&b);
        bad |= send_ok(s, b.buf.data, b.buf.len, 0);
    }
    /* A truncated record: the header promises more than the frame has. */
    bad |= send_ok(s, b.buf.data, b.buf.len - 3, 0);
    /* A message type only a JM sends, and an unknown one. */
    spits_wire_encode_empty(hdr, SPITS_MSG_END, 1);
    bad |= send_ok(s, hdr, sizeof hdr, 0);
    hdr[3] = 99;
    bad |= send_ok(s, hdr, sizeof hdr, 0);
    /* Multipart. */
    bad |= send_ok(s, hdr, sizeof hdr, ZMQ_SNDMORE);
    bad |= send_ok(s, hdr, sizeof hdr, 0);
    /* Results of phase 1 whose records of parts do not match the frames
     * after them (one 70,000 bytes, one missing): malformed, and their 2
     * records (of tasks never sent) taken as copies handed back. */
    spits_batch_begin(&b, SPITS_MSG_RESULTS, 1);
    spits_batch_add_part(&b, 2000000001, SPITS_ST_OK, 70000);
    spits_batch_add_part(&b, 2000000002, SPITS_ST_OK, 70000);
    spits_batch_seal(&b);
    bad |= send_ok(s, b.buf.data, b.buf.len, ZMQ_SNDMORE);
    bad |= send_ok(s, "short part", 10, 0);
    /* All of it handled? */
    spits_wire_encode_empty(hdr, SPITS_MSG_STATUS, 0);
    bad |= send_ok(s, hdr, sizeof hdr, 0);
    int rc = bad ? 1 : await_status(s, 30000);
    /* A frame over any sane limit: the JM's libzmq drops the connection. */
    size_t big = 40u << 20;
    unsigned char *p = calloc(1, big);
    if (!rc && p) {
        memcpy(p, b.buf.data, SPITS_HDR_SIZE);
        rc = send_ok(s, p, big, 0);
    }
    free(p);
    spits_batch_free(&b);
    /* Closing waits (30 s at most) until the frame is out or the JM has
     * dropped the connection. */
    zmq_setsockopt(s, ZMQ_LINGER, &(int){30000}, sizeof(int));
    return rc;
}

/* As a JM: every HELLO gets a WELCOME with the given max_task_bytes. */
static int welcome(void *ctx, const char *endpoint, long long bytes, int sec)
{
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    int ms = sec * 1000, n = 0;
    if (!s || zmq_bind(s, endpoint) != 0) {
        fprintf(stderr, "hostile: cannot bind %s: %s\n", endpoint, zmq_strerror(errno));
        return 1;
    }
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &(int){100}, sizeof(int));
    /* As the JM's: a TM that reconnects (to raise its message size limit,
     * after this very WELCOME) comes back under the same routing id, and
     * must not be refused while its old connection is still known. */
    zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &(int){1}, sizeof(int));
    for (int waited = 0; waited < ms; waited += 100) {
        zmq_msg_t rid, body;
        zmq_msg_init(&rid);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&rid, s, 0) >= 0 && zmq_msg_more(&rid) &&
            zmq_msg_recv(&body, s, 0) >= 0) {
            spits_hdr_t h;
            const char *why;
            if (spits_wire_parse(zmq_msg_data(&body), zmq_msg_size(&body), &h, &why) == 0 &&
                h.type == SPITS_MSG_HELLO) {
                spits_buf_t buf = {0};
                json_t *w = json_pack("{s:s, s:s, s:s, s:i, s:I, s:[s]}", "job_id",
                                      "0123456789abcdef", "module", "/nonexistent.so",
                                      "module_hash", "00", "heartbeat_ms", 1000,
                                      "max_task_bytes", (json_int_t)bytes, "argv", "x");
                if (w && spits_wire_encode_json(&buf, SPITS_MSG_WELCOME, 1, w) == 0) {
                    zmq_send(s, zmq_msg_data(&rid), zmq_msg_size(&rid), ZMQ_SNDMORE);
                    zmq_send(s, buf.data, buf.len, 0);
                    n++;
                }
                json_decref(w);
                spits_buf_free(&buf);
            }
        }
        zmq_msg_close(&rid);
        zmq_msg_close(&body);
    }
    zmq_setsockopt(s, ZMQ_LINGER, &(int){0}, sizeof(int));
    zmq_close(s);
    return n > 0 ? 0 : 3;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "garbage") == 0) {
        int fd = tcp_open(argv[2], atoi(argv[3]));
        unsigned char buf[65536];
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (unsigned char)(rand() & 0xff);
        if (write(fd, buf, sizeof buf) < 0)
            perror("hostile: write");
        sleep(1);
        close(fd);
        return 0;
    }
    if (argc >= 6 && strcmp(argv[1], "silent") == 0) {
        int n = atoi(argv[4]);
        for (int i = 0; i < n; i++)
            tcp_open(argv[2], atoi(argv[3]));
        sleep((unsigned)atoi(argv[5]));
        return 0;
    }
    void *ctx = zmq_ctx_new();
    spits_keys_t k;
    char err[512];
    int rc = 2;
    if (argc >= 3 && (strcmp(argv[1], "probe") == 0 || strcmp(argv[1], "abuse") == 0)) {
        if (argc >= 4 && spits_keys_read(argv[3], &k, 0, err, sizeof err) != 0) {
            fprintf(stderr, "hostile: %s\n", err);
            return 1;
        }
        void *s = dealer(ctx, argv[2], argc >= 4 ? &k : NULL, NULL);
        if (argv[1][0] == 'p') {
            send_hello(s);
            rc = expect_silence(s, 2000);
        } else {
            rc = abuse(s);
        }
        zmq_close(s);
    } else if (argc >= 5 && (strcmp(argv[1], "bighello") == 0 ||
                             (argc >= 6 && strcmp(argv[1], "named") == 0))) {
        if (spits_keys_read(argv[3], &k, 0, err, sizeof err) != 0) {
            fprintf(stderr, "hostile: %s\n", err);
            return 1;
        }
        void *s = dealer(ctx, argv[2], &k, NULL);
        if (argv[1][0] == 'b') {
            send_hello_as(s, "hostile", 1, atol(argv[4]));
            rc = expect_silence(s, 2000);
        } else {
            rc = named(s, argv[4], atoi(argv[5]));
        }
        zmq_close(s);
    } else if (argc >= 5 && (strcmp(argv[1], "manyparts") == 0 ||
                             strcmp(argv[1], "bigstats") == 0 ||
                             strcmp(argv[1], "bigrelay") == 0 ||
                             strcmp(argv[1], "dupes") == 0)) {
        int plain = strcmp(argv[3], "-") == 0;
        if (!plain && spits_keys_read(argv[3], &k, 0, err, sizeof err) != 0) {
            fprintf(stderr, "hostile: %s\n", err);
            return 1;
        }
        void *s = dealer(ctx, argv[2], plain ? NULL : &k, NULL);
        if (argv[1][0] == 'd')
            rc = dupes(s, atoi(argv[4]));
        else if (argv[1][0] == 'm')
            rc = manyparts(s, strtoull(argv[4], NULL, 10));
        else if (argv[1][3] == 's')
            rc = bigstats(s, strtoul(argv[4], NULL, 10));
        else
            rc = bigrelay(s, atol(argv[4]), argc >= 6 ? atoi(argv[5]) : 0);
        zmq_close(s);
    } else if (argc >= 5 && strcmp(argv[1], "welcome") == 0) {
        rc = welcome(ctx, argv[2], atoll(argv[3]), atoi(argv[4]));
    } else if (argc >= 4 && strcmp(argv[1], "wrongkey") == 0) {
        void *s = dealer(ctx, argv[2], NULL, argv[3]);
        send_hello(s);
        rc = expect_silence(s, 2000);
        zmq_close(s);
    } else {
        fprintf(stderr, "usage: see tests/hostile.c\n");
    }
    zmq_ctx_term(ctx);
    return rc;
}
