/*
 * linefwd.h - copies the lines other processes write into a pipe to this
 * program's stderr, through its one writer (term.h).
 *
 * spits-run gives its TMs a pipe as their stderr and the JM the pipe's
 * read end: the TMs' lines then reach the terminal through the JM's
 * writer, which clears and redraws the progress line around them. A
 * thread of its own reads the pipe; a line is written once it is
 * complete (a very long one in pieces).
 *
 * spits-tm forwards its own stdout the same way, each line prefixed: what a
 * module's worker prints is the TM's log, never the job's result (which is
 * what the committer prints on the JM's stdout).
 *
 *   spits_linefwd_t *r = spits_linefwd_start(fd, prefix, err, sizeof err);
 *   ...
 *   spits_linefwd_stop(&r);     what was read is written; fd is closed
 */
#ifndef SPITS_LINEFWD_H
#define SPITS_LINEFWD_H

#include <stddef.h>

typedef struct spits_linefwd spits_linefwd_t;

/* Starts the thread that forwards fd's lines, each after prefix (NULL or ""
 * for none; at most SPITS_LINEFWD_PREFIX_MAX bytes are used); NULL after
 * writing why into err. The forwarder owns fd from then on. */
#define SPITS_LINEFWD_PREFIX_MAX 64
spits_linefwd_t *spits_linefwd_start(int fd, const char *prefix, char *err,
                                     size_t errlen);
/* Writes what is readable now and any unfinished line, stops the thread,
 * closes fd, frees *r and sets it to NULL. What is written into the pipe
 * later stays there for whoever else holds its read end. */
void spits_linefwd_stop(spits_linefwd_t **r);

#endif
