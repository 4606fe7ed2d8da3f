/*
 * parts.h - a message's parts (wire.h) as ZeroMQ frames: the ones that
 * came after a TASKS or RESULTS frame, or the ones a batch sends after
 * its frame.
 *
 * Received, each part stays in its zmq_msg_t (no copy), and view gives
 * the reader (spits_reader_parts) their bytes. To send, a part is a
 * zmq_msg_t the list owns (e.g. a worker's result buffer given to
 * zmq_msg_init_data), moved in and out, never copied: sending hands each
 * frame to libzmq, which frees its bytes when it is done with them.
 *
 * Threads: a list belongs to whoever holds it; moving a list from one
 * thread to another (spits_parts_move) is done under the lock of the
 * queue it travels in.
 */
#ifndef SPITS_PARTS_H
#define SPITS_PARTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zmq.h>

#include "wire.h"

/* From what size a payload goes as a part: SPITS_PART_MIN, with CURVE
 * or without. With CURVE libzmq encrypts every frame into a new buffer
 * anyway, so a copy into the batch is pure cost; without it, libzmq
 * writes a large frame from the sender's memory, so a part is never
 * copied in user space (docs/performance.md has the runs). Never under ThreadSanitizer (UINT64_MAX): it
 * cannot see libzmq hand a part to its I/O thread, and reports each byte
 * libzmq reads (or the free of the part) as a race, so slowly that the
 * I/O thread stalls. */
uint64_t spits_parts_min(void);

typedef struct {
    zmq_msg_t *msgs;
    spits_part_t *view;       /* received lists only: each frame's bytes */
    size_t n, cap;
} spits_parts_t;

/* Receives the parts after first, a frame of sock that spits_wire_parse
 * accepted as h; only messages of type `type` may have any. 0 with *out
 * filled (empty when there are none); -1, a bad message, with *why; -2,
 * out of memory. On -1 and -2 the message's other frames are dropped and
 * *out is empty. libzmq delivers a message whole, so this never waits. */
int spits_parts_recv(spits_parts_t *out, void *sock, const spits_hdr_t *h,
                     zmq_msg_t *first, int type, const char **why);
/* Appends m's frame (m is then empty). 0, or -1 when out of memory (m is
 * untouched). */
int spits_parts_add(spits_parts_t *p, zmq_msg_t *m);
/* Appends m's frame as the payload of a new record (id, status) of b, a
 * part (wire.h): the record and its frame go in together, or neither. 0
 * (m is then empty), or -1 when out of memory or b was never begun (m,
 * b and p untouched). */
int spits_parts_add_record(spits_batch_t *b, spits_parts_t *p, uint64_t id, uint32_t status,
                           zmq_msg_t *m);
/* Appends every frame of src to dst, in order (src is then empty). 0, or
 * -1 when out of memory (both untouched). */
int spits_parts_move(spits_parts_t *dst, spits_parts_t *src);
/* Sends first's bytes on sock, then every part, as one message; the
 * parts go to libzmq (the list is then empty). A large first frame moves
 * into libzmq without a copy (spits_zmq_send_buf): once taken, first
 * holds nothing to read. flags: ZMQ_DONTWAIT or 0. 0; -1 when the first
 * frame was not taken (errno; nothing sent, first as it was, the list
 * untouched); -2 when a later frame was not taken (a socket being closed:
 * the message is cut, its frames are gone). */
int spits_parts_send_buf(void *sock, spits_buf_t *first, spits_parts_t *p, int flags);
/* Makes b, a sealed batch whose records of parts name p's frames in
 * order, one with every payload inline (the flags but SPITS_REC_PART
 * kept), for a peer that takes no parts; p is then empty. 0, or -1 when
 * out of memory or when b and p do not match (both untouched). */
int spits_parts_inline(spits_batch_t *b, spits_parts_t *p);
/* The bytes of every part. */
size_t spits_parts_bytes(const spits_parts_t *p);
/* Closes every frame and frees the list (it is then empty). */
void spits_parts_free(spits_parts_t *p);

/* A received message (its first frame and its parts), alive while any of
 * the tasks in it is: each holds a reference, read in place by a worker,
 * or by a relay's copy and the parts that send its bytes on. The count is
 * atomic: the last reference may go on a worker thread, or on libzmq's
 * I/O thread once a part is sent. */
typedef struct {
    zmq_msg_t msg;
    spits_parts_t parts;
    atomic_size_t refs;
} spits_rx_t;

/* Takes n more references to rx. */
static inline void spits_rx_hold(spits_rx_t *rx, size_t n);
/* Drops n of rx's references; the last frees it (malloc'ed). Inline: a
 * worker calls it for each task. */
static inline void spits_rx_release(spits_rx_t *rx, size_t n);
/* A zmq_free_fn for a part that sends bytes of a message: drops one
 * reference to hint, its spits_rx_t. */
void spits_rx_part_free(void *data, void *hint);
#ifdef SPITS_SELFTEST
/* Self-test: 0, or -1 after printing what failed. */
int spits_parts_selftest(void);
#endif

static inline void spits_rx_hold(spits_rx_t *rx, size_t n)
{
    atomic_fetch_add(&rx->refs, n);
}

static inline void spits_rx_release(spits_rx_t *rx, size_t n)
{
    if (n && atomic_fetch_sub(&rx->refs, n) == n) {
        zmq_msg_close(&rx->msg);
        spits_parts_free(&rx->parts);
        free(rx);
    }
}

#endif
