/*
 * wire.h - the spits wire codec: how a JM and its TMs talk.
 *
 * Every ZeroMQ message is one frame (the ROUTER adds the peer's routing id
 * in front on the JM's side). A frame starts with a 16-byte header:
 *
 *   offset  size  field
 *   0       2     magic "SP"
 *   2       1     protocol version (SPITS_PROTO_VERSION)
 *   3       1     message type (SPITS_MSG_*)
 *   4       4     phase id, little endian (0 = no phase)
 *   8       8     record count (TASKS, RESULTS), else 0
 *
 * TASKS and RESULTS carry a batch of records, so that one message moves
 * many tasks. Each record is a header, short (6 bytes) or long (13), then
 * its payload:
 *
 *   short  long   field
 *   0      0      lead, 1 byte:
 *                   bits 0-2  status (SPITS_ST_*; 0 in TASKS and CANCEL)
 *                   bit 3     SPITS_REC_LONG: the long header
 *                   bits 4-5  0
 *                   bit 6     SPITS_REC_FOREIGN
 *                   bit 7     SPITS_REC_PART
 *   1      1      task id, little endian: 4 bytes, or 8 in the long
 *   5      9      payload length, little endian: 1 byte, or 4 in the long
 *   6      13     payload bytes
 *
 * A record is long only when it must be (its id is over 2^32 - 1, or its
 * length over 255), so it has one form. The short header is there
 * because a record's bytes are most of the cost of an empty task under
 * CURVE (libsodium encrypts and authenticates each byte at each hop), and
 * fixed widths keep the reading of either to a few loads.
 *
 * Large payloads travel as frames of their own ("parts"), so that they
 * are sent without being copied into the batch: a TASKS or RESULTS record
 * whose lead has SPITS_REC_PART set has no payload bytes inline; its
 * payload is the next part, and its len is that part's size.
 * Parts follow the first frame in record order, one per such record, and
 * a message has exactly as many parts as it has such records. The JM sends
 * task payloads of SPITS_PART_MIN bytes or more as parts, where parts pay
 * (spits_parts_min). A TM sends results that large as parts only to a
 * hop whose WELCOME says "result_parts" with the TM's own routing id (a
 * relay passes its upstream's WELCOME on with that key taken out); to
 * any other they go inline.
 *
 * A RESULTS record whose lead has SPITS_REC_FOREIGN set answers no copy
 * sent to this peer: a relay forwards a result that a TM behind it held
 * when it joined the relay (its copy came from elsewhere, e.g. from the
 * JM before an outage), so the receiver gives no credit back for it;
 * otherwise it is a record like any other. Only RESULTS may carry it.
 *
 * CANCEL carries records too: the ids of task copies the JM no longer
 * needs (another copy was committed), with no payload.
 *
 * Control messages (HELLO, WELCOME, PHASE, BYE, STATS, and STATUS from the
 * JM) carry one JSON object as their body. HEARTBEAT, END, WHO, DRAIN and a
 * STATUS request have no body. A relay's WELCOME is its upstream's with
 * "relay": true added (a JM's has none), so a TM names what it joined.
 *
 * Every task copy a JM sends comes back as exactly one RESULTS record:
 * its result, a failure, or RETURNED unrun (phase change, drain, cancel).
 * That is how the JM counts a TM's free slots (a SPITS_REC_FOREIGN record
 * is none of these, and gives no slot back).
 *
 * Decoders check every length against the frame before reading, and a
 * frame must be consumed exactly: trailing bytes are an error.
 */
#ifndef SPITS_WIRE_H
#define SPITS_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define SPITS_PROTO_VERSION 3
#define SPITS_HDR_SIZE 16
/* A short record header, and a long one: the most a record takes besides
 * its payload. */
#define SPITS_REC_SHORT 6
#define SPITS_REC_MAX 13

enum {
    SPITS_MSG_HELLO = 1,     /* TM -> JM: JSON, who I am and what I hold */
    SPITS_MSG_WELCOME = 2,   /* JM -> TM: JSON, the job and its current phase */
    SPITS_MSG_PHASE = 3,     /* JM -> TM: JSON, a new phase and its argv */
    SPITS_MSG_TASKS = 4,     /* JM -> TM: records */
    SPITS_MSG_RESULTS = 5,   /* TM -> JM: records */
    SPITS_MSG_HEARTBEAT = 6, /* both ways */
    SPITS_MSG_END = 7,       /* JM -> TM: the job is over, exit */
    SPITS_MSG_BYE = 8,       /* TM -> JM: I am leaving */
    SPITS_MSG_WHO = 9,       /* JM -> TM: I do not know you, say HELLO */
    SPITS_MSG_CANCEL = 10,   /* JM -> TM: records, copies no longer needed */
    SPITS_MSG_DRAIN = 11,    /* TM -> JM: send me no more tasks; JM -> TM,
                                empty: the answer, after the last task */
    SPITS_MSG_STATUS = 12,   /* spits-status -> JM: empty; JM -> it: JSON */
    SPITS_MSG_STATS = 13,    /* TM -> JM: JSON, its workers' busy time so far */
    SPITS_MSG_LAST = 13
};

/* Record status in RESULTS. */
enum {
    SPITS_ST_OK = 0,        /* payload is the result */
    SPITS_ST_FAILED = 1,    /* the worker returned non-zero; its payload
                               is that code (int32, little endian), then
                               the module's words on why (spits_worker_error,
                               at most SPITS_FAIL_TEXT_MAX bytes; none if it
                               said nothing), or empty when the code is
                               unknown (an older TM; a push the TM could
                               not keep). A JM of an earlier release reads
                               a payload of more than 4 bytes as no code. */
    SPITS_ST_RETURNED = 2,  /* not run: handed back (phase change, drain) */
    SPITS_ST_CRASHED = 3,   /* the worker process died running it */
    SPITS_ST_TIMEOUT = 4,   /* the worker ran past --task-timeout */
    SPITS_ST_LAST = 4
};

/* A record's status flags, as its lead carries them (see above): its
 * payload is the next part... */
#define SPITS_REC_PART 0x80u
/* ...and, in RESULTS only, it answers no copy sent to this peer. */
#define SPITS_REC_FOREIGN 0x40u
#define SPITS_REC_FLAGS (SPITS_REC_PART | SPITS_REC_FOREIGN)
/* The rest of the lead: the status, and whether the header is long. */
#define SPITS_REC_STATUS 0x07u
#define SPITS_REC_LONG 0x08u
/* Payloads this large or larger go as parts: below it, a copy into the
 * batch costs less than a frame of its own. */
#define SPITS_PART_MIN (64u << 10)

/* Whether a record type carries records (TASKS, RESULTS, CANCEL). */
int spits_wire_has_records(int type);

/* The largest body a message of each type can need, after its header:
 * a TM's control JSON (HELLO, STATS, BYE) SPITS_CONTROL_MAX; HEARTBEAT,
 * END, WHO and DRAIN none; the JM's WELCOME and PHASE (a phase's argv)
 * and STATUS (its answer lists the TMs), and records, only the socket's
 * ZMQ_MAXMSGSIZE. spits_wire_parse refuses a frame over its type's
 * bound, so each hop (the JM, a relay) drops it before parsing it. */
#define SPITS_CONTROL_MAX (64u << 10)
size_t spits_wire_body_max(int type);

typedef struct {
    int type;
    uint32_t phase;
    uint64_t count;
    uint64_t parts;          /* records whose payload is a part */
    uint64_t foreign;        /* records with SPITS_REC_FOREIGN (RESULTS) */
} spits_hdr_t;

/* One part of a message, as received. */
typedef struct {
    const unsigned char *data;
    size_t len;
} spits_part_t;

typedef struct {
    uint64_t id;
    uint32_t status;         /* SPITS_ST_*, without the flags */
    uint32_t len;
    const unsigned char *data;
    int foreign;             /* it had SPITS_REC_FOREIGN */
    int part;                /* it had SPITS_REC_PART: data is in a part */
} spits_rec_t;

/* A FAILED record's payload (above): the code the worker returned, then
 * up to SPITS_FAIL_TEXT_MAX bytes of why (cut there; NULL or "": none).
 * out holds 4 + SPITS_FAIL_TEXT_MAX bytes; returns the payload's length. */
#define SPITS_FAIL_TEXT_MAX 400
size_t spits_fail_payload(unsigned char *out, int32_t rc, const char *why);
/* The code and why of a FAILED record's payload, why escaped for a log
 * line or JSON (escape.h) into a NUL-terminated why of whylen bytes.
 * Returns 1, or 0 if the payload says no code (why is then ""). */
int spits_fail_parse(const spits_rec_t *rec, int32_t *rc, char *why,
                     size_t whylen);

/* A growable byte buffer; the batch writer builds messages in it. */
typedef struct {
    unsigned char *data;
    size_t len;
    size_t cap;
} spits_buf_t;

int spits_buf_reserve(spits_buf_t *b, size_t more);
void spits_buf_free(spits_buf_t *b);
/* Moves b's bytes to *out without a copy (out's own are not freed); b
 * gets an empty buffer of its capacity, for a next message of about the
 * same size. 0, or -1 when out of memory (b unchanged). */
int spits_buf_move(spits_buf_t *b, spits_buf_t *out);

/* Batch writer: a header, then records appended in place. */
typedef struct {
    spits_buf_t buf;
    uint64_t count;
} spits_batch_t;

void spits_batch_begin(spits_batch_t *b, int type, uint32_t phase);
/* Appends a record and returns where its len payload bytes go (NULL: out
 * of memory). The caller fills them in. status goes as it is, so a relay
 * ORs SPITS_REC_FOREIGN into it (here and in spits_batch_add_part). */
static inline unsigned char *spits_batch_add(spits_batch_t *b, uint64_t id,
                                             uint32_t status, uint32_t len);
/* Appends a record whose payload goes as a part, after the batch's frame
 * (the caller sends it). 0, or -1 when out of memory. */
int spits_batch_add_part(spits_batch_t *b, uint64_t id, uint32_t status,
                         uint32_t len);
/* Patches the record count into the header; the batch is then sendable. */
void spits_batch_seal(spits_batch_t *b);
/* Moves b's records, as a batch of phase, to *out without a copy
 * (spits_buf_move; out's own buffer is not freed); b is left empty, to be
 * begun again. 0, or -1 when out of memory or b was never begun (b
 * unchanged). */
int spits_batch_move(spits_batch_t *b, spits_batch_t *out, uint32_t phase);
void spits_batch_free(spits_batch_t *b);

/* Parses and validates a message's first frame: its header and, for
 * records, the layout of every record; h->parts says how many parts must
 * follow (only TASKS and RESULTS may have any), h->foreign how many
 * records are foreign. Returns 0, or -1 with *why naming the problem. */
int spits_wire_parse(const void *frame, size_t len, spits_hdr_t *h,
                     const char **why);
/* Checks the parts that came after a frame spits_wire_parse accepted:
 * exactly h->parts of them, each the size its record says. 0, or -1 with
 * *why. */
int spits_wire_check_parts(const void *frame, size_t len,
                           const spits_part_t *parts, size_t nparts,
                           const char **why);

/* Iterates the records of a frame that spits_wire_parse accepted (and,
 * if it has parts, whose parts spits_wire_check_parts accepted). A record
 * comes out with its status stripped of the flags: a part's, with its
 * payload in the part, or, with no parts given to the reader, with data
 * NULL (enough to name it); a foreign one with foreign set. */
typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    const spits_part_t *parts;
} spits_reader_t;

void spits_reader_init(spits_reader_t *r, const void *frame, size_t len);
/* The parts of the frame (checked), before the first spits_reader_next. */
void spits_reader_parts(spits_reader_t *r, const spits_part_t *parts);
static inline int spits_reader_next(spits_reader_t *r, spits_rec_t *rec);

/* Control messages: a header plus a JSON object. */
int spits_wire_encode_json(spits_buf_t *out, int type, uint32_t phase,
                           const json_t *body);
json_t *spits_wire_decode_json(const void *frame, size_t len,
                               const char **why);
/* An integer field of a JSON object within [min, max]: 0 with *out, or
 * -1 (absent, no integer, or out of range). */
int spits_json_long(const json_t *j, const char *key, long min, long max,
                    long *out);

/* The largest task or result: a record's length is 32 bits. WELCOME's
 * max_task_bytes (--max-task-bytes) is at most this. */
#define SPITS_TASK_BYTES_MAX 4294967295LL

/* What a HELLO or a STATS may say a TM (or a relay) has. A relay may
 * have 0 workers and slots (no TM behind it yet); a TM has 1 at least. */
#define SPITS_WORKERS_MAX (1L << 20)
/* A TM's own (its --workers): one HELLO cannot claim more, so it widens
 * the JM's window (twice the workers alive) by 8,192 tasks at most. A
 * relay's is the sum of its TMs'. */
#define SPITS_TM_WORKERS_MAX 4096L
#define SPITS_SLOTS_MAX (1L << 24)
/* The TMs a relay may say are behind it (its own and its relays'). */
#define SPITS_RELAY_TMS_MAX (1L << 16)

/* A HELLO's body, as the JM and a relay take it: {host, pid (1..2^40),
 * workers (0..SPITS_WORKERS_MAX), slots (0..SPITS_SLOTS_MAX), held
 * (0..2^24), and optional pending (0..2^40), attach (>= 0), job_id, and
 * relay (an object: the sender is a relay, whose optional "tms" says how
 * many TMs are behind it: spits_relay_cap)}; without relay, workers and
 * slots are 1 at least. Strings and relay point into the document. */
typedef struct {
    const char *host;
    long pid, workers, slots, held;
    long pending;            /* 0 when absent */
    long attach;             /* -1 when absent (an older TM) */
    const char *job_id;      /* NULL when absent (an older TM) */
    json_t *relay;           /* NULL: no relay */
    long tms;                /* a relay's "tms" (0..SPITS_RELAY_TMS_MAX): the
                                TMs behind it; -1 when absent */
} spits_hello_t;
/* 0 with *h filled, or -1 with *why naming what is wrong. */
int spits_hello_parse(json_t *j, spits_hello_t *h, const char **why);

/* A STATS body: {busy_s (0..1e12), runs (>= 0), optional workers,
 * slots and tms (a relay's capacity, in HELLO's ranges, and the TMs it
 * comes from), and optional running and queued (a TM's tasks of the job
 * in its workers' hands and waiting for them, 0..SPITS_SLOTS_MAX): each
 * -1 when absent (an older TM, a relay).
 *
 * A TM that planned its workers by the job's resources (taskmanager/
 * plan.c) says what each owns in the STATS it sends as it joins (after
 * each WELCOME that joins it), and how busy each was in every STATS:
 * "worker_res" (spits_worker_res_check) and "worker_runs" (integers,
 * >= 0) with "worker_busy_s" (numbers, 0..1e12), one entry per worker
 * in worker order, for its first SPITS_WORKERS_LISTED workers at most
 * and never more than its "workers", which it then says too. Pointers
 * into the document; NULL when absent. */
#define SPITS_WORKERS_LISTED 64
typedef struct {
    double busy_s;
    long runs, workers, slots, tms;
    long running, queued;
    json_t *worker_res;
    json_t *worker_runs, *worker_busy;
} spits_stats_t;
int spits_stats_parse(const json_t *j, spits_stats_t *s, const char **why);

/* What worker_res may say: an array of at most SPITS_WORKERS_LISTED and
 * at most workers objects, worker i's at i, each with optional "cpus"
 * (its cores, a Linux cpulist: "0-3,8", ascending, each below
 * SPITS_RES_CPUS_MAX; absent: it shares the TM's), "gpus" (its GPU ids,
 * as --gpus lists them: resources.h; absent: none) and "mem" (its
 * --mem-per-task bytes, 1..2^50; absent: not limited). Other keys are
 * ignored (readers rebuild it from these: spits_worker_res_copy). 0, or
 * -1 with *why naming the problem. A relay passes a TM's array up as it
 * is, in its STATS's behind list. */
#define SPITS_CPULIST_MAX 10240   /* (any set of cores: every other one of 4096 is 9684) */
int spits_worker_res_check(const json_t *a, long workers, const char **why);
/* A checked worker_res rebuilt from its known keys only (a new
 * reference; NULL without memory). */
json_t *spits_worker_res_copy(const json_t *a);
/* Whether s is a cpulist as worker_res's "cpus" says. */
int spits_cpulist_ok(const char *s);

/* Whether a TM that is no relay may have this many workers and slots
 * (1..SPITS_TM_WORKERS_MAX, 1..SPITS_SLOTS_MAX): what its HELLO may say,
 * and a STATS that re-plans its workers too (taskmanager/plan.c). */
int spits_tm_capacity_ok(long workers, long slots);

/* What a relay may claim is what it shows: SPITS_TM_WORKERS_MAX workers
 * for each of the tms TMs it says are behind it (-1, not said: none),
 * and no slots with no TM. Clamps *workers and *slots; the JM and a
 * relay apply it to each relay's HELLO and STATS. */
void spits_relay_cap(long tms, long *workers, long *slots);

/* Header-only messages (HEARTBEAT, END, WHO). */
void spits_wire_encode_empty(unsigned char out[SPITS_HDR_SIZE], int type,
                             uint32_t phase);

const char *spits_wire_type_name(int type);
/* How a record's run ended, in a word: "ok", "failed", "returned",
 * "crashed", "timeout" (logs, report.json's failed tasks). */
const char *spits_wire_status_name(uint32_t status);

#ifdef SPITS_SELFTEST
int spits_wire_selftest(void);
#endif

/* The two calls made once per record, inline: a record is the runtime's
 * per-task unit, and a call each was a tenth of an empty task's cost. */
#include "bytes.h"

/* Whether a record of id and len takes the short header (the long one
 * only when it must: one form per record). */
static inline int spits_rec_short(uint64_t id, uint32_t len)
{
    return ((id >> 32) | (len >> 8)) == 0;
}

/* Writes a record's header at p (status: SPITS_ST_* and the flags);
 * returns the byte after it. */
static inline unsigned char *spits_rec_head(unsigned char *p, uint64_t id, uint32_t status,
                                            uint32_t len)
{
    assert((status & ~(SPITS_REC_STATUS | SPITS_REC_FLAGS)) == 0);
    if (spits_rec_short(id, len)) {
        p[0] = (unsigned char)status;
        put_u32(p + 1, (uint32_t)id);
        p[5] = (unsigned char)len;
        return p + SPITS_REC_SHORT;
    }
    p[0] = (unsigned char)(status | SPITS_REC_LONG);
    put_u64(p + 1, id);
    put_u32(p + 9, len);
    return p + SPITS_REC_MAX;
}

/* A record's header at p, which spits_wire_parse checked: its lead, in
 * *id and *len its id and length; returns the byte after it. */
static inline const unsigned char *spits_rec_read(const unsigned char *p, uint32_t *lead,
                                                  uint64_t *id, uint32_t *len)
{
    *lead = *p;
    if (!(*p & SPITS_REC_LONG)) {
        *id = get_u32(p + 1);
        *len = p[5];
        return p + SPITS_REC_SHORT;
    }
    *id = get_u64(p + 1);
    *len = get_u32(p + 9);
    return p + SPITS_REC_MAX;
}

static inline unsigned char *spits_batch_add(spits_batch_t *b, uint64_t id,
                                             uint32_t status, uint32_t len)
{
    size_t need = SPITS_REC_MAX + (size_t)len;
    if (b->buf.len < SPITS_HDR_SIZE ||
        (b->buf.cap - b->buf.len < need && spits_buf_reserve(&b->buf, need) != 0))
        return NULL;
    unsigned char *p = spits_rec_head(b->buf.data + b->buf.len, id, status, len);
    b->buf.len = (size_t)(p + len - b->buf.data);
    b->count++;
    return p;
}

static inline int spits_reader_next(spits_reader_t *r, spits_rec_t *rec)
{
    if (r->p == r->end)
        return 0;
    uint32_t lead;
    r->p = spits_rec_read(r->p, &lead, &rec->id, &rec->len);
    rec->foreign = (lead & SPITS_REC_FOREIGN) != 0;
    rec->part = (lead & SPITS_REC_PART) != 0;
    rec->status = lead & SPITS_REC_STATUS;
    if (rec->part) {
        if (r->parts) {
            rec->data = r->parts->data;   /* (checked: one per such record) */
            r->parts++;
        } else {
            rec->data = NULL;             /* (ids only: no parts given) */
        }
    } else {
        rec->data = r->p;
        r->p += rec->len;
    }
    return 1;
}

#endif
