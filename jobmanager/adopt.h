/*
 * adopt.h - results that arrive before their task was sent.
 *
 * After spits-jm --resume, Task Managers that worked for the dead JM
 * re-attach and send the results they computed during the outage. The new
 * JM has not generated (or not sent) those tasks yet, so the dispatcher
 * keeps such results here, copied and bounded in bytes, and when the
 * generator produces the task, commits the result instead of sending the
 * task: work done during the outage is not lost. A result of a task that
 * was already committed never gets here (it is a duplicate).
 *
 * A hash table by task id (libspits/hashtab.h). Owned by the dispatcher
 * thread; not thread-safe.
 */
#ifndef SPITS_ADOPT_H
#define SPITS_ADOPT_H

#include <stddef.h>
#include <stdint.h>

typedef struct jm_adopt jm_adopt_t;

jm_adopt_t *jm_adopt_new(size_t max_bytes);
void jm_adopt_destroy(jm_adopt_t **a);
/* Keeps a copy of a result. 0 kept; 1 not kept (full, or id already
 * held); -1 out of memory. */
int jm_adopt_put(jm_adopt_t *a, uint64_t id, const void *data, uint32_t len);
/* Takes the result for id: 1 with *data (the caller frees it; NULL for an
 * empty result) and *len, or 0 if there is none. */
int jm_adopt_take(jm_adopt_t *a, uint64_t id, unsigned char **data,
                  uint32_t *len);
size_t jm_adopt_count(const jm_adopt_t *a);

#ifdef SPITS_SELFTEST
int jm_adopt_selftest(void);
#endif

#endif
