/*
 * fault.c - a preload library that makes libzmq calls, or the program's
 * thread starts, fail on demand, so tests can reach the error paths that a
 * healthy machine never takes.
 *
 *   LD_PRELOAD=tests/.libs/fault.so SPITS_FAULT_POLL=FILE spits-jm ...
 *   LD_PRELOAD=tests/.libs/fault.so SPITS_FAULT_THREAD=N spits-tm ...
 *
 * SPITS_FAULT_POLL: once FILE exists, every zmq_poll fails with EFAULT, as
 * it would on a corrupted socket. Until then calls pass through unchanged.
 * The file is the switch, so a test fails the call exactly when its job is
 * where the test wants it, on a fast machine or a slow one.
 *
 * SPITS_FAULT_THREAD: the Nth pthread_create (from 1) of a thread that
 * runs the program's own code fails with EAGAIN, as at a process limit.
 * libzmq's threads are not counted (their start routine is in libzmq), so
 * N names the same thread of spits-jm or spits-tm however libzmq works.
 *
 * SPITS_FAULT_FORK: the Nth fork (from 1) of each process fails with
 * EAGAIN, as at a process limit (spits-run's children inherit the
 * variable, and count their own).
 *
 * SPITS_FAULT_EINTR (set): every other call of each of zmq_bind,
 * zmq_connect and zmq_socket_monitor, the first one first, fails with
 * EINTR, as when a signal arrives while libzmq reads the socket's
 * commands (nothing is bound or connected): a caller that calls again
 * goes on, one that takes EINTR for an error fails.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
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

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                         void *);

/* dl_iterate_phdr's first object is the program: is the address in it? */
static int in_first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t *addr = arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && *addr >= start && *addr < start + ph->p_memsz)
            return 2;
    }
    return 1;
}

static int in_program(void *(*start)(void *))
{
    uintptr_t addr = (uintptr_t)start;
    return dl_iterate_phdr(in_first_object, &addr) == 2;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                   void *(*start)(void *), void *arg)
{
    static create_fn real;
    static atomic_long seen;
    const char *n = getenv("SPITS_FAULT_THREAD");

    if (n && in_program(start) && atomic_fetch_add(&seen, 1) + 1 == atol(n))
        return EAGAIN;
    if (!real)
        real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    return real(thread, attr, start, arg);
}

typedef pid_t (*fork_fn)(void);

pid_t fork(void)
{
    static fork_fn real;
    static atomic_long seen;
    const char *n = getenv("SPITS_FAULT_FORK");

    if (n && atomic_fetch_add(&seen, 1) + 1 == atol(n)) {
        errno = EAGAIN;
        return -1;
    }
    if (!real)
        real = (fork_fn)dlsym(RTLD_NEXT, "fork");
    return real();
}

/* SPITS_FAULT_FSYNC_MS=MS: every fdatasync takes MS milliseconds longer,
 * as on a slow or overloaded disk (the JM's journal syncs once per batch
 * of results). The sync itself still happens. */
typedef int (*fdatasync_fn)(int);

int fdatasync(int fd)
{
    static fdatasync_fn real;
    const char *ms = getenv("SPITS_FAULT_FSYNC_MS");

    if (ms && atol(ms) > 0) {
        struct timespec ts = {atol(ms) / 1000, (atol(ms) % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    if (!real)
        real = (fdatasync_fn)dlsym(RTLD_NEXT, "fdatasync");
    return real(fd);
}

/* 1 when this call of one kind (calls: how many came before) is to fail
 * with EINTR (SPITS_FAULT_EINTR): the first, the third... */
static int eintr_due(atomic_int *calls)
{
    if (!getenv("SPITS_FAULT_EINTR") || atomic_fetch_add(calls, 1) % 2)
        return 0;
    errno = EINTR;
    return 1;
}

/* The body of an interposer of fn, of pointer type type: every other
 * call fails with EINTR (eintr_due), the rest go to the real fn with
 * args. Each interposer keeps its own count and real function. */
#define EINTR_OR_REAL(fn, type, args)                                   \
    do {                                                                \
        static atomic_int calls;                                        \
        static type real;                                               \
        if (!real)                                                      \
            real = (type)dlsym(RTLD_NEXT, #fn);                         \
        return eintr_due(&calls) ? -1 : real args;                      \
    } while (0)

typedef int (*endpoint_fn)(void *, const char *);
typedef int (*monitor_fn)(void *, const char *, int);

int zmq_bind(void *sock, const char *ep)
{
    EINTR_OR_REAL(zmq_bind, endpoint_fn, (sock, ep));
}

int zmq_connect(void *sock, const char *ep)
{
    EINTR_OR_REAL(zmq_connect, endpoint_fn, (sock, ep));
}

int zmq_socket_monitor(void *sock, const char *ep, int events)
{
    EINTR_OR_REAL(zmq_socket_monitor, monitor_fn, (sock, ep, events));
}
