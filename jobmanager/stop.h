/*
 * stop.h - how any thread of spits-jm stops the job early.
 *
 * Two things end a job before its tasks do: a signal (SIGINT, SIGTERM)
 * and a fatal error in any thread (a journal that cannot be written, a
 * socket that fails, memory that runs out where going on would lose or
 * invent data). Both only set a flag here and wake the dispatcher. The
 * dispatcher then stops the generator and the committer
 * (dispatch.c disp_stop_phase), run() returns without calling
 * commit_job, and main writes report.json and exits non-zero. Nothing
 * here blocks, so any thread may call it, and the signal handler uses
 * only the async-signal-safe part.
 */
#ifndef SPITS_JM_STOP_H
#define SPITS_JM_STOP_H

#include <stdatomic.h>

/* The first SIGINT, SIGTERM or SIGHUP received, 0 if none. Set by the
 * handler. SIGHUP (a closed terminal, a lost ssh session) stops the job
 * as SIGTERM does: drained, reported, resumable. */
extern atomic_int jm_signal;
/* 1 once any thread called jm_fatal. */
extern atomic_int jm_abort;

/* Routes wakes to the dispatcher's wake fd and installs the SIGINT,
 * SIGTERM and SIGHUP handler. A signal that reached the JM and, passed
 * on, through spits-run (a terminal's Ctrl-C reaches both) counts once.
 * A second press only says that the job is stopping already; a third
 * kills as by default, so a job stuck anywhere still dies. */
void jm_stop_init(int wake_fd);
/* Before the wake fd is closed: later signals and wakes write nowhere
 * (a reused fd number must not get the eventfd's 8 bytes). */
void jm_stop_release(void);
/* Wakes the dispatcher. */
void jm_wake(void);
/* A fatal error: logs the message, which says that the job stops and
 * what to do (the first one only; later ones at debug level, they are its
 * consequences), keeps it for report.json, sets jm_abort and wakes the
 * dispatcher. */
void jm_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The first fatal error's message, or NULL. */
const char *jm_fatal_message(void);

#endif
