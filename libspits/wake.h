/*
 * wake.h - an eventfd that wakes a thread out of its poll loop.
 *
 * Each spits program has loops that sleep in zmq_poll or poll: the JM's
 * dispatcher and the TM's main thread. Other threads, and signal
 * handlers, wake them through one of these. Wakes that come before the
 * loop reads coalesce into one (the eventfd counter just grows), so a
 * producer may wake once per batch without counting.
 *
 *   int fd = spits_wake_open();   the loop polls fd for POLLIN
 *   spits_wake_signal(fd);        any thread or handler
 *   spits_wake_drain(fd);         the loop, when fd polls readable
 *   spits_wake_close(&fd);
 */
#ifndef SPITS_WAKE_H
#define SPITS_WAKE_H

#include <stdatomic.h>

/* A non-blocking, close-on-exec eventfd; -1 with errno set on failure. */
int spits_wake_open(void);
/* Wakes the reader of fd. Async-signal-safe; never blocks; a negative fd
 * is ignored (a wake sent before the loop exists is no error). */
void spits_wake_signal(int fd);
/* Resets the counter after a wake, so the next poll sleeps again. */
void spits_wake_drain(int fd);
/* Closes *fd if open and sets it to -1. */
void spits_wake_close(int *fd);

/* A wake fd that signal handlers (and any thread) reach through a
 * static: it is released before the fd is closed, and release waits for
 * the wakes under way, so none writes 8 bytes into a closed fd's number
 * once another file may have it. */
typedef struct {
    atomic_int fd;      /* -1: none */
    atomic_int busy;    /* wakes under way */
} spits_wake_ref_t;
#define SPITS_WAKE_REF_INIT {-1, 0}
/* From now on, wakes go to fd. */
void spits_wake_ref_set(spits_wake_ref_t *r, int fd);
/* Wakes the fd set, if any. Async-signal-safe; never blocks. */
void spits_wake_ref_signal(spits_wake_ref_t *r);
/* No fd from now on; returns once no wake is under way. (A wake never
 * blocks, so this ends; a handler that interrupts it reads -1.) */
void spits_wake_ref_release(spits_wake_ref_t *r);

#ifdef SPITS_SELFTEST
int spits_wake_selftest(void);
#endif

#endif
