/*
 * wake.c - an eventfd that wakes a poll loop (see wake.h).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "wake.h"

int spits_wake_open(void)
{
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void spits_wake_signal(int fd)
{
    uint64_t one = 1;
    int saved = errno;   /* a signal handler must leave errno as it was */
    if (fd >= 0)
        /* EAGAIN only when the counter is near 2^64: a wake is pending. */
        while (write(fd, &one, sizeof one) < 0 && errno == EINTR)
            ;
    errno = saved;
}

void spits_wake_drain(int fd)
{
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
}

void spits_wake_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void spits_wake_ref_set(spits_wake_ref_t *r, int fd)
{
    atomic_store(&r->fd, fd);
}

void spits_wake_ref_signal(spits_wake_ref_t *r)
{
    atomic_fetch_add(&r->busy, 1);
    spits_wake_signal(atomic_load(&r->fd));
    atomic_fetch_sub(&r->busy, 1);
}

void spits_wake_ref_release(spits_wake_ref_t *r)
{
    atomic_store(&r->fd, -1);
    while (atomic_load(&r->busy))
        sched_yield();
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

/* Readable after any number of signals; not readable once drained. */
static int readable(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int spits_wake_selftest(void)
{
    int fd = spits_wake_open(), ok = fd >= 0;
    if (!ok)
        return -1;
    ok &= !readable(fd);
    spits_wake_signal(fd);
    spits_wake_signal(fd);
    ok &= readable(fd);
    spits_wake_drain(fd);
    ok &= !readable(fd);
    spits_wake_drain(fd);            /* draining an idle fd does not block */
    ok &= !readable(fd);
    spits_wake_signal(-1);           /* ignored */
    spits_wake_close(&fd);
    ok &= fd == -1;
    spits_wake_close(&fd);           /* closing twice is harmless */
    /* Through a ref: wakes reach the fd set, none once it is released. */
    spits_wake_ref_t ref = SPITS_WAKE_REF_INIT;
    spits_wake_ref_signal(&ref);     /* none set yet: ignored */
    ok &= (fd = spits_wake_open()) >= 0;
    spits_wake_ref_set(&ref, fd);
    spits_wake_ref_signal(&ref);
    ok &= readable(fd);
    spits_wake_drain(fd);
    spits_wake_ref_release(&ref);
    spits_wake_ref_signal(&ref);
    ok &= !readable(fd) && atomic_load(&ref.fd) == -1 && atomic_load(&ref.busy) == 0;
    spits_wake_close(&fd);
    return ok ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
