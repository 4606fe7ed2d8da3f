/*
 * push.c - the messages about what a module pushed (see push.h).
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "push.h"

void spits_push_keep_grow(spits_buf_t *buf, const void *data, spitssize_t size,
                          uint64_t max, spits_push_fault_t *fault,
                          spitssize_t *bad_size)
{
    buf->len = 0;
    spits_push_fault_t f = spits_push_check(data, size, max);
    if (f == SPITS_PUSH_OK && size > 0 &&
        spits_buf_reserve(buf, (size_t)size) != 0)
        f = SPITS_PUSH_NO_MEMORY;
    if (f != SPITS_PUSH_OK) {
        if (*fault == SPITS_PUSH_OK) {
            *fault = f;
            *bad_size = size;
        }
        return;
    }
    if (size > 0)
        memcpy(buf->data, data, (size_t)size);
    buf->len = (size_t)size;
}

void spits_push_describe(char *buf, size_t len, spits_push_fault_t f,
                         const char *fn, spitssize_t size, uint64_t max,
                         const char *limit)
{
    if (f == SPITS_PUSH_NULL)
        snprintf(buf, len, "%s pushed NULL with size %lld", fn, size);
    else if (f == SPITS_PUSH_NEGATIVE)
        snprintf(buf, len, "%s pushed a negative size (%lld)", fn, size);
    else if (f == SPITS_PUSH_TOO_BIG)
        snprintf(buf, len, "%s pushed %lld bytes, over %s (%llu)", fn, size,
                 limit, (unsigned long long)max);
    else if (f == SPITS_PUSH_NO_MEMORY)
        snprintf(buf, len, "out of memory copying the %lld bytes %s pushed",
                 size, fn);
    else
        snprintf(buf, len, "%s pushed %lld bytes", fn, size);
}

void spits_push_warn_extra(atomic_int *once, const char *fn, unsigned pushes,
                           const char *what)
{
    if (atomic_exchange(once, 1))
        return;
    spits_warn("%s pushed %u times in one call (%s): only the last push is "
               "kept, as the SPITS ABI says, and %u dropped; warned once, "
               "later ones are dropped the same way", fn, pushes, what,
               pushes - 1);
}
