/*
 * failure.c - poison tasks as JSON and as log text (failure.h).
 */
#include <stdio.h>

#include "failure.h"
#include "wire.h"

json_t *jm_failure_json(uint32_t phase, const jm_failure_t *f)
{
    return json_pack("{s:i, s:I, s:s, s:o, s:o, s:o}", "phase", (int)phase,
                     "task", (json_int_t)f->id,
                     "reason", spits_wire_status_name(f->status),
                     "return_code", f->has_rc ? json_integer(f->rc) : json_null(),
                     "error", f->why[0] ? json_string(f->why) : json_null(),
                     "host", f->host[0] ? json_string(f->host) : json_null());
}

void jm_failure_describe(const jm_failure_t *f, char *buf, size_t size)
{
    char rc[sizeof f->why + 48] = "";
    if (f->has_rc)
        snprintf(rc, sizeof rc, ", where the worker returned %d%s%s", (int)f->rc,
                 f->why[0] ? ": " : "", f->why);
    snprintf(buf, size, "on %s%s", f->host[0] ? f->host : "an unknown host", rc);
}
