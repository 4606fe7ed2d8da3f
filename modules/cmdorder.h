/*
 * cmdorder.h - the command module's --keep-order buffer (cmdorder.c):
 * results wait here, placed by their task's generation index (0, 1,
 * 2... as next_task made them), until every earlier one has come.
 *
 * A ring of slots from the next index to hand out: it grows to the
 * spread between the oldest missing result and the newest held, which
 * the job manager's window bounds, never to the number of tasks. The
 * committer's thread only.
 */
#ifndef CMDORDER_H
#define CMDORDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    void **slot;                  /* held items by index & (cap - 1) */
    size_t *len;
    size_t cap;                   /* a power of two, or 0 */
    size_t held;
    uint64_t next;                /* the next index to hand out */
} cmdorder_t;

/* Holds p (non-NULL) for index: 0; 1 if index was handed out or is held
 * already (p stays the caller's); -1 out of memory. */
int cmdorder_put(cmdorder_t *o, uint64_t index, void *p, size_t len);
/* The item at the next index, if it is held (the next moves on), else
 * NULL. With gaps set, steps over missing indices to the oldest held. */
void *cmdorder_take(cmdorder_t *o, int gaps, size_t *len);
/* Frees what is held with free_fn, and the ring. */
void cmdorder_clear(cmdorder_t *o, void (*free_fn)(void *));

int cmdorder_selftest(void);

#endif
