/*
 * fault.c - a preload library that makes libzmq calls fail on demand, so
 * tests can reach the error paths that a healthy machine never takes.
 *
 *   LD_PRELOAD=tests/.libs/fault.so SPITS_FAULT_POLL=FILE spits-jm ...
 *
 * Once FILE exists, every zmq_poll fails with EFAULT, as it would on a
 * corrupted socket. Until then calls pass through unchanged. The file is
 * the switch, so a test fails the call exactly when its job is where the
 * test wants it, on a fast machine or a slow one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zmq.h>

typedef int (*poll_fn)(zmq_pollitem_t *, int, long);

int zmq_poll(zmq_pollitem_t *items, int nitems, long timeout)
{
    static poll_fn real;
    const char *file = getenv("SPITS_FAULT_POLL");

    if (file && access(file, F_OK) == 0) {
        errno = EFAULT;
        return -1;
    }
    if (!real)
        real = (poll_fn)dlsym(RTLD_NEXT, "zmq_poll");
    return real(items, nitems, timeout);
}
