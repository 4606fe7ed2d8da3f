/*
 * cmdlive.h - --line-buffer's live output channel (cmdlive.c): the
 * command module's workers send each complete line a command writes,
 * as it is written, to spits-parallel, which prints it.
 *
 * The channel is a FIFO in the job dir (TASKFILE.lines), so it joins
 * only task managers on spits-parallel's machine. Many workers (threads
 * of several TMs) write it at once; each write is one frame of at most
 * PIPE_BUF bytes, which a FIFO never splits or mixes with another
 * writer's:
 *
 *   0  8  the task's generation index (cmd.c), little endian
 *   8  4  payload length, little endian
 *   12 1  kind: CMDLIVE_OUT, CMDLIVE_ERR (payload: lines of that
 *         stream), CMDLIVE_END (no payload: the task ended; no more
 *         frames of it follow)
 *   13 1  CMDLIVE_MORE when the record goes on in the task's next frame
 *         of that kind (a record longer than a frame); else 0
 *   14 2  zero
 *
 * A record is the lines one read of the command's pipe completed (the
 * lines after "TAG\t" with --tag), or at the command's end its
 * unfinished last line; the reader prints a record only whole, so two
 * tasks' half lines never mix. With keep (-k), the reader prints the
 * oldest task's records as they come and holds the later tasks' until
 * each becomes the oldest, as GNU parallel's --line-buffer --keep-order.
 *
 * A writer is one worker thread's (its own fd and staging buffer); a
 * reader is one thread's (spits-parallel's main thread).
 */
#ifndef CMDLIVE_H
#define CMDLIVE_H

#include <stddef.h>
#include <stdint.h>

#define CMDLIVE_SUFFIX ".lines"   /* the FIFO: TASKFILE.lines */
#define CMDLIVE_OUT 1
#define CMDLIVE_ERR 2
#define CMDLIVE_END 3
#define CMDLIVE_MORE 1
#define CMDLIVE_HEAD 16
#define CMDLIVE_FRAME 4096        /* PIPE_BUF on Linux (asserted in cmdlive.c) */

/* ---- the writer: a worker thread's ---- */
typedef struct {
    int fd;                       /* the FIFO, or -1 (closed, or its reader gone) */
    uint64_t index;               /* the task running now */
    const char *tag;              /* its --tag prefix, or NULL */
    char *buf;                    /* tagged lines being framed */
    size_t cap;
} cmdlive_t;

/* Opens path's FIFO for writing; 0, or -1 with a reason in err (no
 * reader: spits-parallel is gone). */
int cmdlive_open(cmdlive_t *l, const char *path, char *err, size_t errlen);
void cmdlive_close(cmdlive_t *l);
/* Sends the complete lines at the start of p (*n bytes, of stream kind)
 * as one record and moves what follows the last newline to the front
 * (*n its length). With last set, sends all of it (the command ended).
 * 0, or -1 out of memory (nothing sent). A reader that is gone loses
 * what is sent after, quietly. */
int cmdlive_lines(cmdlive_t *l, int kind, char *p, size_t *n, int last);
/* The task ended: its END frame. */
void cmdlive_end(cmdlive_t *l);

/* ---- the reader: spits-parallel's ---- */
typedef struct cmdlive_job cmdlive_job_t;

typedef struct {
    int keep;                     /* -k: the oldest task's lines only, live */
    int out, err;                 /* where the two streams go */
    uint64_t next;                /* keep: the oldest task not ended */
    cmdlive_job_t **jobs;         /* tasks with records held or unfinished: */
    size_t cap, njobs;            /* open addressing by index, cap a power of 2 */
    unsigned char *in;            /* read, not yet a whole frame */
    size_t inlen;
    int failed;                   /* a write failed (errno kept in fail_errno) */
    int fail_errno;
} cmdlive_reader_t;

int cmdlive_reader_init(cmdlive_reader_t *r, int keep, int out, int err);
/* Reads what fd holds now (it is non-blocking) and prints the records
 * it completes: 1 read something, 0 nothing there (EAGAIN), -1 on an
 * error (errno; out of memory: ENOMEM). */
int cmdlive_reader_read(cmdlive_reader_t *r, int fd);
/* Takes n bytes of frames (the part of a frame at the end is kept). */
int cmdlive_reader_feed(cmdlive_reader_t *r, const void *p, size_t n);
/* The job ended: prints what is held, in task order (records cut short
 * by a writer that died are printed as they are). */
void cmdlive_reader_finish(cmdlive_reader_t *r);
void cmdlive_reader_clear(cmdlive_reader_t *r);

int cmdlive_selftest(void);

#endif
