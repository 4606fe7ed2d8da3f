/*
 * protocol.c - spits-tm's handlers of the JM's messages.
 *
 * The loop (loop.c) hands each message the socket receives to
 * tm_proto_on_message, which checks its header (wire.h), notes that the
 * JM was heard from, and hands it to the handler of its type:
 *
 *   WELCOME    the JM took our HELLO: join its job (job.c), hand the
 *              workers its module the first time, take its heartbeat
 *              period
 *   PHASE      a new phase begins: later tasks run with its argv
 *   TASKS      tasks to queue for the workers (or hand back at once,
 *              through the outbox: outbox.c owns every record sent back)
 *   CANCEL     another copy of these tasks was committed: unqueue ours
 *              (a relay passes on those of copies behind it: relay.c)
 *   END        the job is over: leave
 *   WHO        the JM does not know us (it restarted): say HELLO again
 *   HEARTBEAT  nothing more than being heard from
 *
 * A malformed message, or one only a TM sends, is dropped and counted,
 * with a warning at most every 10 s. Replies go out through link.c.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tm_private.h"
#include "zmqutil.h"

static void bad_message(tm_t *tm, const char *why)
{
    tm->proto.bad++;
    if (tm->proto.bad_logged_at == 0 || tm->now - tm->proto.bad_logged_at >= 10000) {
        spits_warn("dropped a malformed message from the job manager (%s)", why);
        tm->proto.bad_logged_at = tm->now;
    }
}

/* The workers run the job's module from now on (their threads started
 * before HELLO), the first time the TM joins a job. A pool started
 * before HELLO (tm.c) takes the JM's limits now: no task was queued yet,
 * and a worker reads them only for a task it takes under the lock. */
static int start_workers(tm_t *tm)
{
    if (tm->pool_started && tm->pool_early) {
        tm->pool.opts.max_result = (uint64_t)tm->link.max_task;
        tm->pool_early = 0;
    }
    if (tm->pool_started)
        return 0;
    tm->pool.opts.max_result = (uint64_t)tm->link.max_task;
    tm->pool.opts.part_min = spits_parts_min();
    if (tm_pool_start(&tm->pool, tm->job.mod) != 0) {
        spits_error("cannot start %d worker threads: %s", tm->opts.workers,
                    strerror(errno));
        return -1;
    }
    tm->pool_started = 1;
    return 0;
}

static void on_welcome(tm_t *tm, const spits_hdr_t *hdr, zmq_msg_t *msg)
{
    const char *why = NULL;
    json_t *welcome = spits_wire_decode_json(zmq_msg_data(msg),
                                             zmq_msg_size(msg), &why);
    /* (jansson's getters take NULL, so a message that is no JSON fails
     * the check below too) */
    const char *job = json_string_value(json_object_get(welcome, "job_id"));
    const char *module = json_string_value(json_object_get(welcome, "module"));
    json_t *argv = json_object_get(welcome, "argv");
    json_int_t heartbeat_ms =
        json_integer_value(json_object_get(welcome, "heartbeat_ms"));
    const char *module_hash =
        json_string_value(json_object_get(welcome, "module_hash"));
    json_int_t max_task =
        json_integer_value(json_object_get(welcome, "max_task_bytes"));

    /* (max_task_bytes sizes our socket's ZMQ_MAXMSGSIZE, twice over) */
    if (!job || !module || heartbeat_ms <= 0 ||
        (hdr->phase && !json_is_array(argv)) || !module_hash || max_task <= 0 ||
        max_task > SPITS_TASK_BYTES_MAX) {
        bad_message(tm, why ? why : "WELCOME without job_id/module/module_hash/"
                                    "heartbeat/max_task_bytes (1 to 4294967295)/argv");
        json_decref(welcome);
        return;
    }
    spits_res_req_t req;
    if (spits_res_req_parse(json_object_get(welcome, "resources"), &req, &why) != 0) {
        bad_message(tm, why);
        json_decref(welcome);
        return;
    }
    json_t *attach = json_object_get(welcome, "attach");
    if (json_is_integer(attach) && json_integer_value(attach) < tm->link.status.attach) {
        /* It answers a HELLO from before our latest outage: what it sent
         * since may be lost, so wait for the answer to our latest. */
        spits_debug("ignored a WELCOME to an older HELLO");
        json_decref(welcome);
        return;
    }
    /* Our socket would drop its larger messages: raise our limit (and
     * reconnect; its next WELCOME is answered then). */
    int raised = tm_link_raise_max(tm, max_task);
    if (raised != 0) {
        json_decref(welcome);
        if (raised < 0)
            tm->done = -1;
        return;
    }
    /* (before the module loads: it may read the variables the plan sets;
     * a relay runs no task, it passes the request on; --simulate's
     * virtual workers own nothing) */
    char refusal[sizeof tm->job.refused];
    if (!tm->relay && !tm->pool.opts.virtual_ns &&
        (tm->pool_started || tm->plan.planned
             ? tm_plan_same(tm, job, &req, refusal, sizeof refusal)
             : tm_plan_apply(tm, job, &req, refusal, sizeof refusal)) != 0) {
        if (refusal[0])   /* (its BYE says why: the JM logs it) */
            tm_job_refuse(tm, "%s", refusal);
        tm->done = -1;
        json_decref(welcome);
        return;
    }
    if (tm_job_join(tm, job, module, module_hash) != 0) {
        tm->done = -1;
        json_decref(welcome);
        return;
    }
    if (hdr->phase && (!tm->job.current || tm->job.current->wire != hdr->phase) &&
        tm_job_enter_phase(tm, hdr->phase, argv) != 0) {
        tm->done = -1;
        json_decref(welcome);
        return;
    }
    if (start_workers(tm) != 0) {
        tm->done = -1;
        json_decref(welcome);
        return;
    }
    if (tm->relay)
        tm_relay_on_job(tm, SPITS_MSG_WELCOME, hdr->phase, welcome);
    /* (a relay says so in its WELCOME: --via may name the JM itself, and
     * --connect or jm.json a relay) */
    const char *hop = json_is_true(json_object_get(welcome, "relay")) ? " (relay)" : "";
    int joining = !tm_link_ready(tm) || !tm->link.status.welcomed;
    if (tm->relay && joining)
        spits_info("relay joined job %s at %s%s", job, tm->link.hops.endpoint, hop);
    else if (joining)
        spits_info("joined job %s at %s%s with %d worker(s)", job,
                   tm->link.hops.endpoint, hop,
                   tm->plan.planned ? tm->plan.workers : tm->opts.workers);
    /* (addressed to this TM: see wire.h) */
    tm_link_welcomed(tm, heartbeat_ms,
                     json_string_value(json_object_get(welcome, "result_parts")));
    /* (the JM sized our slots by HELLO's counts: the plan's, at once) */
    if (joining && tm->plan.planned)
        tm_link_send_join_stats(tm);
    json_decref(welcome);
}

static void on_phase(tm_t *tm, const spits_hdr_t *hdr, zmq_msg_t *msg)
{
    const char *why = NULL;
    json_t *body = spits_wire_decode_json(zmq_msg_data(msg), zmq_msg_size(msg), &why);
    json_t *argv = json_object_get(body, "argv");
    if (!json_is_array(argv) || hdr->phase == 0) {
        bad_message(tm, why ? why : "PHASE without argv");
    } else {
        spits_debug("phase %u begins", hdr->phase);
        if (tm_job_enter_phase(tm, hdr->phase, argv) != 0)
            tm->done = -1;
        else if (tm->relay)
            tm_relay_on_job(tm, SPITS_MSG_PHASE, hdr->phase, body);
    }
    json_decref(body);
}

/* Once per 10 s at most: out of memory may last, and every message then
 * goes back. */
static void warn_no_room(tm_t *tm, uint64_t count)
{
    if (tm->proto.oom_logged_at && tm->now - tm->proto.oom_logged_at < 10000)
        return;
    spits_warn("out of memory queueing %llu task(s): handing them back",
               (unsigned long long)count);
    tm->proto.oom_logged_at = tm->now;
}

/* Queues the tasks the reader yields, in chunks (nothing is sized by the
 * message's claimed count); with no rx, or once the queue cannot grow,
 * the rest go back as RETURNED records (outbox.c): the JM counts every
 * task it sends as held until a record comes back. Returns how many were
 * queued. */
static size_t take_tasks(tm_t *tm, uint32_t wire, spits_reader_t *reader, spits_rx_t *rx)
{
    tm_item_t *items = tm->proto.items;
    spits_rec_t record;
    size_t n, queued = 0;
    int full = !rx;

    do {
        for (n = 0; n < TM_TASKS_CHUNK && spits_reader_next(reader, &record); n++)
            items[n] = (tm_item_t){record.id, record.data, record.len,
                                   tm->job.current, rx};
        if (!full && tm_pool_push(&tm->pool, items, n) == 0) {
            queued += n;
            continue;
        }
        full = 1;
        if (tm_outbox_return(&tm->pool, tm->job.joined, wire, items, n) != 0) {
            spits_error("out of memory handing back tasks; stopping, so that the "
                        "job manager sends them to another task manager");
            tm->done = -1;
            break;
        }
    } while (n == TM_TASKS_CHUNK);
    return queued;
}

/* The parts after a message's first frame (wire.h; only TASKS has any):
 * 0 with *out filled (empty when there are none), or -1: a bad message
 * (said), or no memory (*no_memory), with its other frames dropped. */
static int recv_parts(tm_t *tm, const spits_hdr_t *hdr, zmq_msg_t *first,
                      spits_parts_t *out, int *no_memory)
{
    const char *why;
    int rc = spits_parts_recv(out, tm->link.socket, hdr, first, SPITS_MSG_TASKS, &why);
    *no_memory = rc == -2;
    if (rc == -1)
        bad_message(tm, why);
    return rc ? -1 : 0;
}

/* Hands back every task of a TASKS message unrun (its parts, if any, are
 * not needed: the records name the tasks). */
static void hand_back(tm_t *tm, const spits_hdr_t *hdr, zmq_msg_t *msg)
{
    spits_reader_t reader;
    spits_reader_init(&reader, zmq_msg_data(msg), zmq_msg_size(msg));
    take_tasks(tm, hdr->phase, &reader, NULL);
}

/* Queues a TASKS message; the message lives until its last task is done. */
static void on_tasks(tm_t *tm, const spits_hdr_t *hdr, zmq_msg_t *msg)
{
    spits_reader_t reader;
    spits_parts_t parts;
    int no_memory;

    if (recv_parts(tm, hdr, msg, &parts, &no_memory) != 0) {
        /* Its records were read: each copy still goes back, as the rule
         * wants, however its parts went wrong. */
        if (no_memory)
            warn_no_room(tm, hdr->count);
        hand_back(tm, hdr, msg);
        return;
    }
    spits_rx_t *rx = NULL;
    if (hdr->count == 0) {
        /* (nothing to run) */
    } else if (tm->drain.active) {
        hand_back(tm, hdr, msg);   /* sent before the JM saw our DRAIN */
    } else if (!tm->job.current || hdr->phase != tm->job.current->wire ||
               !tm->pool_started) {
        spits_warn("handing back %llu task(s) of phase %u: not in that phase",
                   (unsigned long long)hdr->count, hdr->phase);
        hand_back(tm, hdr, msg);
    } else if (!(rx = malloc(sizeof *rx))) {
        warn_no_room(tm, hdr->count);
        hand_back(tm, hdr, msg);
    }
    if (!rx) {
        spits_parts_free(&parts);
        return;
    }
    zmq_msg_init(&rx->msg);
    zmq_msg_move(&rx->msg, msg);
    rx->parts = parts;
    /* (the parser checked count against the records: it fits the frame)
     * One reference per task, and ours while we read it. */
    atomic_init(&rx->refs, (size_t)hdr->count + 1);
    spits_reader_init(&reader, zmq_msg_data(&rx->msg), zmq_msg_size(&rx->msg));
    spits_reader_parts(&reader, rx->parts.view);
    /* (a relay takes them all: relay.c) */
    size_t queued = tm->relay ? tm_relay_take(tm, hdr, &reader, rx)
                              : take_tasks(tm, hdr->phase, &reader, rx);
    if (queued < hdr->count && !tm->done)
        warn_no_room(tm, hdr->count - queued);
    spits_rx_release(rx, (size_t)hdr->count + 1 - queued);
}

/* Another copy of these tasks was committed: queued copies go back unrun.
 * A running copy finishes; the JM discards its result as a duplicate. */
static void on_cancel(tm_t *tm, const spits_hdr_t *hdr, zmq_msg_t *msg)
{
    spits_reader_t reader;
    spits_rec_t record;
    size_t n = 0;

    if (!tm->job.current || hdr->phase != tm->job.current->wire ||
        !tm->pool_started || !hdr->count)
        return;
    /* (count is no more than the frame's bytes / SPITS_REC_SHORT: the
     * parser checked) */
    if (hdr->count > tm->proto.cap_cancel) {
        uint64_t *ids = realloc(tm->proto.cancel_ids, (size_t)hdr->count * sizeof *ids);
        if (!ids)
            return;   /* the copies run; their results are duplicates */
        tm->proto.cancel_ids = ids;
        tm->proto.cap_cancel = (size_t)hdr->count;
    }
    spits_reader_init(&reader, zmq_msg_data(msg), zmq_msg_size(msg));
    while (spits_reader_next(&reader, &record))
        tm->proto.cancel_ids[n++] = record.id;
    size_t dropped = tm_pool_cancel(&tm->pool, tm->job.current,
                                    tm->proto.cancel_ids, n);
    spits_debug("cancel: %zu of %zu copies were still queued and go back",
                dropped, n);
    if (tm->relay && dropped < n)   /* the others may be behind us */
        tm_relay_cancel(tm, tm->proto.cancel_ids, n);
}

void tm_proto_on_message(tm_t *tm, zmq_msg_t *msg)
{
    spits_hdr_t hdr;
    const char *why = NULL;

    if (spits_wire_parse(zmq_msg_data(msg), zmq_msg_size(msg), &hdr, &why) != 0 ||
        (hdr.type != SPITS_MSG_TASKS && (hdr.parts || zmq_msg_more(msg)))) {
        if (zmq_msg_more(msg))
            spits_zmq_drop_frames(tm->link.socket);
        bad_message(tm, why ? why : "frames that do not match its records");
        return;
    }
    tm_link_heard(tm, spits_zmq_msg_fd(msg));
    switch (hdr.type) {
    case SPITS_MSG_WELCOME: on_welcome(tm, &hdr, msg); break;
    case SPITS_MSG_PHASE: on_phase(tm, &hdr, msg); break;
    case SPITS_MSG_TASKS: on_tasks(tm, &hdr, msg); break;
    case SPITS_MSG_CANCEL: on_cancel(tm, &hdr, msg); break;
    case SPITS_MSG_HEARTBEAT: break;
    case SPITS_MSG_DRAIN:
        /* The answer to ours: every task sent before it is here. */
        tm->drain.acked = 1;
        break;
    case SPITS_MSG_END:
        spits_debug("the job manager says the job is over");
        tm->done = 1;
        tm->job_over = 1;
        break;
    case SPITS_MSG_WHO:
        tm_link_asked_who(tm);
        break;
    default:
        bad_message(tm, "a TM-to-JM message sent to a TM");
    }
}

void tm_proto_free(tm_proto_t *proto)
{
    free(proto->cancel_ids);
}
