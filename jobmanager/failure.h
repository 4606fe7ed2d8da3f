/*
 * failure.h - a task given up after --max-attempts runs (a poison task):
 * the record the dispatcher notes when its last run comes back failed
 * (serve.c), the committer keeps for the phase (committer.c) and STATUS,
 * the log and report.json show (dispatch.c, jm.c, report.c).
 *
 * A leaf unit: it calls nothing of the JM, so every layer may use it.
 */
#ifndef SPITS_JM_FAILURE_H
#define SPITS_JM_FAILURE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* How its last run ended (SPITS_ST_FAILED, _CRASHED or _TIMEOUT), and
 * where. */
typedef struct {
    uint64_t id;
    uint32_t status;
    int has_rc;               /* FAILED, and the TM said the code: */
    int32_t rc;               /* ...what the worker returned, */
    char why[512];            /* ...and the module's words on it, escaped
                                 ("": none said) */
    char host[128];           /* the TM that ran it last ("" unknown) */
} jm_failure_t;

/* A poison task as STATUS and report.json list it: {phase, task, reason,
 * return_code (null: not a return, or not said), error (the module's
 * words; null: none said), host (null: unknown)}. */
json_t *jm_failure_json(uint32_t phase, const jm_failure_t *f);
/* Where its last run was, for a log line: "on HOST, where the worker
 * returned 3: WHY", "on HOST, where the worker returned 3" (no words),
 * "on HOST" (another ending, or the code not said). */
void jm_failure_describe(const jm_failure_t *f, char *buf, size_t size);

#endif
