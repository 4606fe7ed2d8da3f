/*
 * term.h - the one writer of a program's stderr (term.c).
 *
 * Every log line (log.c), every line forwarded from another process
 * (linefwd.c) and the JM's progress line go through here, so on a terminal
 * the progress line is one line at the bottom, redrawn in place and never
 * mixed with other output.
 *
 * Who owns what:
 *   - The writer's state (the bar's text, the width) is guarded by one
 *     mutex; any thread may write a line at any time.
 *   - Only one thread draws the bar (the JM's dispatcher, status.c).
 *   - The SIGWINCH handler only sets a flag; the next writer re-reads the
 *     width under the mutex.
 *
 * On a terminal (and TERM is not "dumb"), a line is written as: erase the
 * bar, the line, redraw the bar; the bar is cut to the terminal's width so
 * it never wraps. Elsewhere lines are written as they are and the bar is
 * never drawn (the caller prints plain progress lines instead). Each write
 * is one write(2) call, so lines of different processes sharing the same
 * stderr never interleave mid-line. No colour is used.
 */
#ifndef SPITS_TERM_H
#define SPITS_TERM_H

#include <stddef.h>

/* Decides whether stderr is a terminal that can redraw a line, and if so
 * watches its width (SIGWINCH). Called once, early, by a program that
 * draws a bar; without it the writer only writes plain lines. */
void spits_term_init(void);
/* 1 if the bar is drawn (spits_term_init found a capable terminal). */
int spits_term_is_tty(void);
/* Writes one line (len bytes, without its newline). */
void spits_term_line(const char *line, size_t len);
/* Draws (or redraws) the bar with this text, cut to the width. Ignored
 * off a terminal. */
void spits_term_bar(const char *text);
/* Ends the bar: with final text, it is drawn one last time and kept as
 * an ordinary line; with NULL it is erased. */
void spits_term_bar_end(const char *final);

#ifdef SPITS_SELFTEST
int spits_term_selftest(void);
#endif

#endif
