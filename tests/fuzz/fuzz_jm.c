/*
 * fuzz_jm.c - libFuzzer target: the JM's message handlers with live state.
 *
 * Each input runs a fresh dispatcher (insecure, bound to inproc) in a
 * phase of 48 tasks, with three TMs connected as real DEALER sockets, so
 * the tasks the dispatcher sends really reach them. The input is a list
 * of operations:
 *
 *   0 K LEN16 BYTES   TM K sends this frame, as it is (garbage included)
 *   1 K SLOTS         TM K says a valid HELLO with SLOTS slots
 *   2 K N STATUS      TM K answers the first N copies it holds (it reads
 *                     its TASKS and CANCELs) with records of STATUS (0-4)
 *   3                 the dispatcher serves the TMs with room
 *   4 K               the dispatcher loses TM K
 *
 * After every operation: no task is committed twice (or committed and
 * given up), every unresolved task in flight has a copy out or waits in
 * the retry queue, and no task has more copies than --max-copies. A
 * crash, a sanitizer report or an abort() is a finding.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "committer.h"
#include "dispatch_int.h"
#include "generator.h"
#include "log.h"
#include "phase.h"
#include "zmqutil.h"

#define F_TASKS 48
#define F_TMS 3
#define F_HOLD 4096

typedef struct {
    void *sock;                        /* the TM's DEALER */
    char rid[8];
    uint64_t held[F_HOLD];             /* copies it holds, by task id */
    size_t nheld;
} ftm_t;

static int committed[F_TASKS], poisoned[F_TASKS];

/* The frame as TM k's message, through the dispatcher's handler. */
static void deliver(jm_disp_t *d, ftm_t *t, const void *frame, size_t len)
{
    zmq_msg_t rid;
    jm_rx_t *rx = jm_rx_new();
    if (!rx || zmq_msg_init_size(&rx->msg, len) != 0)
        abort();
    memcpy(zmq_msg_data(&rx->msg), frame, len);
    zmq_msg_init_size(&rid, strlen(t->rid));
    memcpy(zmq_msg_data(&rid), t->rid, strlen(t->rid));
    disp_on_message(d, &rid, rx);
    zmq_msg_close(&rid);
}

/* The TM reads what the dispatcher sent it: TASKS add held copies. */
static void tm_read(ftm_t *t)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (zmq_msg_recv(&m, t->sock, ZMQ_DONTWAIT) >= 0) {
        spits_hdr_t h;
        const char *why;
        if (spits_wire_parse(zmq_msg_data(&m), zmq_msg_size(&m), &h, &why) == 0 &&
            h.type == SPITS_MSG_TASKS) {
            spits_reader_t r;
            spits_rec_t rec;
            spits_reader_init(&r, zmq_msg_data(&m), zmq_msg_size(&m));
            while (spits_reader_next(&r, &rec) && t->nheld < F_HOLD)
                t->held[t->nheld++] = rec.id;
        }
    }
    zmq_msg_close(&m);
}

static void hello(jm_disp_t *d, ftm_t *t, int slots)
{
    spits_buf_t b = {0};
    json_t *j = json_pack("{s:s, s:i, s:i, s:i, s:I}", "host", "fuzz", "pid", 7,
                          "workers", 1, "slots", slots, "held",
                          (json_int_t)t->nheld);
    if (j && spits_wire_encode_json(&b, SPITS_MSG_HELLO, 1, j) == 0)
        deliver(d, t, b.data, b.len);
    json_decref(j);
    spits_buf_free(&b);
}

static void answer(jm_disp_t *d, ftm_t *t, size_t n, uint32_t status)
{
    spits_batch_t b = {0};
    if (n > t->nheld)
        n = t->nheld;
    spits_batch_begin(&b, SPITS_MSG_RESULTS, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = spits_batch_add(&b, t->held[i], status,
                                           status == SPITS_ST_OK ? 8 : 0);
        if (!p)
            abort();
        if (status == SPITS_ST_OK)
            memcpy(p, &t->held[i], 8);
    }
    spits_batch_seal(&b);
    memmove(t->held, t->held + n, (t->nheld - n) * sizeof *t->held);
    t->nheld -= n;
    deliver(d, t, b.buf.data, b.buf.len);
    spits_batch_free(&b);
}

/* What the committer was handed: each task at most once. */
static void drain_commits(jm_phase_t *p)
{
    pthread_mutex_lock(&p->cq.lock);
    for (size_t i = 0; i < p->cq.n; i++) {
        jm_commit_t *c = &p->cq.items[i];
        if (c->id >= F_TASKS || committed[c->id] || poisoned[c->id])
            abort();
        if (c->status == SPITS_ST_OK)
            committed[c->id] = 1;
        else
            poisoned[c->id] = 1;
        jm_commit_release(c);
    }
    p->cq.n = 0;
    pthread_mutex_unlock(&p->cq.lock);
}

static void check(jm_disp_t *d)
{
    for (uint64_t id = 0; id < F_TASKS; id++) {
        const jm_task_t *t = sched_task(d->sched, id);
        if (t && (committed[id] || poisoned[id] || t->copies > d->jm->opt.max_copies ||
                  (t->copies == 0 && !t->in_retry)))
            abort();
    }
}

static jm_task_t *make_tasks(jm_task_t **last)
{
    jm_task_t *head = NULL, **tail = &head;
    for (uint64_t id = 0; id < F_TASKS; id++) {
        jm_task_t *t = calloc(1, sizeof *t + 8);
        if (!t)
            abort();
        t->id = id;
        t->len = 8;
        memcpy(t->data, &id, 8);
        sched_task_init(t);
        *tail = t;
        tail = &t->next;
        *last = t;
    }
    return head;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    static int runs;
    static char bind[64];
    char err[512];
    jm_t jm;
    jm_phase_t *p = calloc(1, sizeof *p);
    ftm_t tms[F_TMS];
    static char *argv[] = {"fuzz", NULL};

    if (!p || sodium_init() < 0)   /* (the TM table's hash key) */
        abort();
    spits_log_init("fuzz_jm", -1);
    memset(&jm, 0, sizeof jm);
    memset(tms, 0, sizeof tms);
    memset(committed, 0, sizeof committed);
    memset(poisoned, 0, sizeof poisoned);
    snprintf(bind, sizeof bind, "inproc://fuzz-jm-%d", runs++);
    jm.opt.bind = bind;
    jm.opt.insecure = 1;
    jm.opt.io_threads = 1;
    jm.opt.max_copies = 2;
    jm.opt.max_attempts = 2;
    jm.opt.tm_timeout = 30;
    jm.opt.heartbeat = 1;
    jm.opt.window = 1024;
    jm.opt.window_bytes = 1 << 20;
    jm.opt.max_task = 1 << 16;
    strcpy(jm.job_id, "fuzz");
    jm_disp_t *d = jm_disp_new(&jm, err, sizeof err);
    if (!d) {
        fprintf(stderr, "fuzz_jm: run %d: cannot set up the dispatcher: %s\n",
                runs, err);
        abort();
    }
    for (int k = 0; k < F_TMS; k++) {
        snprintf(tms[k].rid, sizeof tms[k].rid, "tm%d", k);
        tms[k].sock = zmq_socket(d->net.zctx, ZMQ_DEALER);
        zmq_setsockopt(tms[k].sock, ZMQ_ROUTING_ID, tms[k].rid, strlen(tms[k].rid));
        zmq_setsockopt(tms[k].sock, ZMQ_LINGER, &(int){0}, sizeof(int));
        if (spits_zmq_connect(tms[k].sock, bind) != 0)   /* (libFuzzer's timer: EINTR) */
            abort();
    }
    p->st.id = 1;
    p->st.argc = 1;
    p->st.argv = argv;
    jm_genq_init(&p->genq, jm_disp_wake_fd(d));
    jm_commitq_init(&p->cq);
    p->genq.head = make_tasks(&p->genq.tail);
    p->genq.done = 1;
    p->genq.total = F_TASKS;
    disp_phase_begin(d, p);

    for (size_t i = 0; i < len;) {
        unsigned op = data[i++] % 5;
        ftm_t *t = &tms[i < len ? data[i] % F_TMS : 0];
        switch (op) {
        case 0: {
            if (len - i < 3)
                goto done;
            size_t n = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
            i += 3;
            if (n > len - i)
                n = len - i;
            deliver(d, t, data + i, n);
            i += n;
            break;
        }
        case 1:
            if (len - i < 2)
                goto done;
            hello(d, t, 1 + data[i + 1] % 16);
            i += 2;
            break;
        case 2:
            if (len - i < 3)
                goto done;
            tm_read(t);
            answer(d, t, data[i + 1] % 16, data[i + 2] % (SPITS_ST_LAST + 1));
            i += 3;
            break;
        case 3:
            serve_tms(d);
            break;
        default: {
            if (len - i < 1)
                goto done;
            jm_tm_t *m = peertab_find(d->fleet.tab, t->rid, strlen(t->rid));
            if (m)
                server_lose(d->srv, &m->sv, "fuzz", 0);
            i += 1;
        }
        }
        drain_commits(p);
        check(d);
    }
done:
    disp_phase_end(d);
    for (int k = 0; k < F_TMS; k++)
        zmq_close(tms[k].sock);
    jm_disp_destroy(&d);
    jm_genq_destroy(&p->genq);
    jm_commitq_destroy(&p->cq);
    free(p);
    return 0;
}
