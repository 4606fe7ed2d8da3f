/*
 * tmio.c - what the dispatcher's files write to the TMs themselves: a
 * STATUS answer, and the job that WELCOME and PHASE say.
 *
 * serve.c and dispatch.c send through here. Messages to known TMs are
 * the server's (serving/server.h): it sends TASKS, WELCOME and PHASE
 * itself, the last two from the body set here. Sending never calls up
 * into the files that send: this file is below both.
 *
 * The dispatcher thread's, as all of dispatch_int.h.
 */
#include <errno.h>
#include <stdio.h>

#include "dispatch_int.h"
#include "log.h"
#include "router.h"

/* A message to routing id rid (router.h), its bytes counted. */
int tmio_send_to(jm_disp_t *d, const void *rid, size_t ridlen,
                 const void *buf, size_t len, int more)
{
    if (router_send(d->net.l.sock, rid, ridlen, buf, len, more) != 0)
        return -1;
    d->st.bytes_out += len;
    return 0;
}

int tmio_set_job(jm_disp_t *d)
{
    jm_phase_t *p = d->phase;
    json_t *body = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:o}",
                             "job_id", d->jm->job_id,
                             "module", d->jm->module_path,
                             "module_hash", d->jm->module_hash,
                             "heartbeat_ms", (json_int_t)server_rules(d->srv)->hb_ms,
                             "timeout_ms", (json_int_t)server_rules(d->srv)->timeout_ms,
                             "max_task_bytes", (json_int_t)d->jm->opt.max_task,
                             /* (a relay's scheduler follows it) */
                             "max_copies", d->jm->opt.max_copies,
                             "argv", p ? json_incref(p->argv_json) : json_null());
    /* What each task needs: the TM plans its workers by it as it joins
     * (relays pass it on with the rest). */
    const spits_res_req_t *req = &d->jm->opt.res;
    if (body && spits_res_req_any(req) &&
        json_object_set_new(body, "resources", spits_res_req_json(req)) != 0) {
        json_decref(body);
        body = NULL;
    }
    if (!body) {   /* (the server keeps saying the last one) */
        spits_error("out of memory saying the job to TMs");
        return -1;
    }
    server_set_job(d->srv, p ? p->st.id : 0, body);
    json_decref(body);
    return 0;
}
