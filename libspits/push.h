/*
 * push.h - checking what a module hands to a push callback (spits.h), and
 * the once-a-process warnings about a call that pushed more than once.
 *
 * A push is on the per-task path (a million a second), so the check is
 * two compares, inline; only a fault, which ends the task or the phase,
 * costs more. A second push in one call replaces the first, as the SPITS
 * ABI says and existing modules may rely on: it is counted and warned
 * about, never refused.
 */
#ifndef SPITS_PUSH_H
#define SPITS_PUSH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "spits.h"
#include "wire.h"

typedef enum {
    SPITS_PUSH_OK,
    SPITS_PUSH_NULL,        /* NULL with a size over 0 */
    SPITS_PUSH_NEGATIVE,    /* a size under 0 */
    SPITS_PUSH_TOO_BIG,     /* over the caller's limit */
    SPITS_PUSH_NO_MEMORY    /* the caller could not copy it */
} spits_push_fault_t;

/* Whether data/size can be copied, at most max bytes. (A negative size
 * taken as unsigned is over any max, so the good case is two compares.) */
static inline spits_push_fault_t spits_push_check(const void *data,
                                                  spitssize_t size,
                                                  uint64_t max)
{
    if ((uint64_t)size <= max && (data || size == 0))
        return SPITS_PUSH_OK;
    return size < 0 ? SPITS_PUSH_NEGATIVE
         : (uint64_t)size > max ? SPITS_PUSH_TOO_BIG : SPITS_PUSH_NULL;
}

/* A push's bytes, copied into buf as the call's last push (buf->len 0
 * if it cannot be kept); a push that cannot be kept (over max, or out of
 * memory) is recorded in *fault and *bad_size, unless one already was.
 * Inline for a push that fits the buffer as it is (every task's result
 * but the largest so far); the rest goes to spits_push_keep_grow. */
void spits_push_keep_grow(spits_buf_t *buf, const void *data, spitssize_t size,
                          uint64_t max, spits_push_fault_t *fault,
                          spitssize_t *bad_size);

static inline void spits_push_keep(spits_buf_t *buf, const void *data,
                                   spitssize_t size, uint64_t max,
                                   spits_push_fault_t *fault,
                                   spitssize_t *bad_size)
{
    if (size > 0 && (size_t)size <= buf->cap &&
        spits_push_check(data, size, max) == SPITS_PUSH_OK) {
        memcpy(buf->data, data, (size_t)size);
        buf->len = (size_t)size;
        return;
    }
    spits_push_keep_grow(buf, data, size, max, fault, bad_size);
}

/* "FN pushed NULL with size 100" and the like, for fault f of a push of
 * size bytes by the module function fn; limit names what max is. */
void spits_push_describe(char *buf, size_t len, spits_push_fault_t f,
                         const char *fn, spitssize_t size, uint64_t max,
                         const char *limit);

/* Warns, the first time only for *once (which the threads that share it
 * share), that fn pushed pushes times in one call (what: "task 5"), and
 * that only the last push was kept. */
void spits_push_warn_extra(atomic_int *once, const char *fn, unsigned pushes,
                           const char *what);

#endif
