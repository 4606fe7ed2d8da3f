/*
 * faultmem.c - a preload library that makes one size of malloc fail, so
 * tests reach the out-of-memory paths a healthy machine never takes.
 *
 *   LD_PRELOAD=tests/.libs/faultmem.so SPITS_FAULT_MALLOC=N:M spits-jm ...
 *
 * Every malloc of more than N bytes and at most N + M fails with ENOMEM:
 * with a module whose tasks are N bytes, that is the runtime's copy of a
 * task (its bytes and a header of less than M), while the module's own
 * buffers of other sizes are served. It replaces malloc whole, so it is
 * not for sanitizer builds, whose runtimes own malloc (fault.c, which
 * replaces only zmq_poll, is).
 */
#include <errno.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);

void *malloc(size_t size)
{
    static size_t from = (size_t)-1, span;
    if (from == (size_t)-1) {
        char *end = NULL;
        const char *n = getenv("SPITS_FAULT_MALLOC");
        from = n ? strtoull(n, &end, 10) : 0;
        span = end && *end == ':' ? strtoull(end + 1, NULL, 10) : 0;
    }
    if (from && size > from && size <= from + span) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}
