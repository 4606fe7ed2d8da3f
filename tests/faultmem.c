/*
 * faultmem.c - a preload library that makes one size of malloc and
 * realloc fail, so tests reach the out-of-memory paths a healthy machine
 * never takes.
 *
 *   LD_PRELOAD=tests/.libs/faultmem.so SPITS_FAULT_MALLOC=N:M spits-jm ...
 *
 * Every malloc or realloc to more than N bytes and at most N + M fails
 * with ENOMEM (a failed realloc leaves the block as it was):
 * with a module whose tasks are N bytes, that is the runtime's copy of a
 * task (its bytes and a header of less than M), while the module's own
 * buffers of other sizes are served. It replaces malloc and realloc whole,
 * so it is not for sanitizer builds, whose runtimes own malloc (fault.c,
 * which replaces only zmq_poll and pthread_create, is).
 */
#include <errno.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_realloc(void *ptr, size_t size);

/* Whether an allocation of size bytes is to fail (sets errno). */
static int fails(size_t size)
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
        return 1;
    }
    return 0;
}

void *malloc(size_t size)
{
    return fails(size) ? NULL : __libc_malloc(size);
}

void *realloc(void *ptr, size_t size)
{
    return fails(size) ? NULL : __libc_realloc(ptr, size);
}
