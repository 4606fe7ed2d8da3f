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

/* A non-blocking, close-on-exec eventfd; -1 with errno set on failure. */
int spits_wake_open(void);
/* Wakes the reader of fd. Async-signal-safe; never blocks; a negative fd
 * is ignored (a wake sent before the loop exists is no error). */
void spits_wake_signal(int fd);
/* Resets the counter after a wake, so the next poll sleeps again. */
void spits_wake_drain(int fd);
/* Closes *fd if open and sets it to -1. */
void spits_wake_close(int *fd);

#ifdef SPITS_SELFTEST
int spits_wake_selftest(void);
#endif

#endif
