/*
 * cmdstream.h - the command module's tasks as its job manager reads them
 * (cmdstream.c): from a task file written beforehand, or from a task
 * stream that spits-parallel writes while the job runs.
 *
 * TASKFILE (cmdfile.h) is either
 *   - a regular file: the whole task list, mapped and read in order; or
 *   - a FIFO: the same bytes (CMDFILE_MAGIC, records), written by the
 *     front end as it composes tasks from its input, and ended by an end
 *     mark (a record of length 0). The reader blocks while no record is
 *     there (the job manager's generator thread may: next_task may take
 *     its time), so commands start as soon as their arguments exist, and
 *     the pipe's capacity holds the front end back: memory and disk stay
 *     bounded by what is in flight. A stream that ends without the end
 *     mark was cut (the front end died or was stopped): an error.
 *
 * With a spool (SPOOL, given for a job manager that journals), each
 * chunk read from the FIFO is appended to SPOOL before any of its
 * records is handed out, so a job manager resumed from its journal
 * reads the same records again (the journal's task hashes must match):
 * first those in SPOOL, then, if SPOOL has no end mark, the rest of the
 * FIFO, which needs its writer still there. One write per chunk, none
 * per task.
 *
 * Not thread-safe: one reader (the generator thread).
 */
#ifndef CMDSTREAM_H
#define CMDSTREAM_H

#include <stddef.h>

typedef struct cmdstream cmdstream_t;

/* Opens path (a task file or a FIFO) and, for a FIFO, spool (NULL: no
 * spool); NULL with a one-line reason in err. */
cmdstream_t *cmdstream_new(const char *path, const char *spool, char *err, size_t errlen);
void cmdstream_destroy(cmdstream_t **s);
/* The next record's body (valid until the next call): 1, 0 at the end,
 * -1 with a one-line reason in err (cut short, damaged, a read error). */
int cmdstream_next(cmdstream_t *s, const char **body, size_t *len, char *err, size_t errlen);

#endif
