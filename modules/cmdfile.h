/*
 * cmdfile.h - the formats the command module (cmd.so) and its front end
 * (spits-parallel) share: the task file and a task's result.
 *
 * The task file (or stream: cmdstream.h) is written by the front end and
 * only read after, so a restarted or resumed job manager generates the
 * same tasks from it (a stream: from its spool). It starts with the line
 * CMDFILE_MAGIC, then one record per task:
 *
 *   4 bytes   body length, little endian
 *   body      NUL-terminated strings: the task's number (decimal), its
 *             tag (--tag), the command as a shell would read it (the
 *             joblog's Command), its --results subdirectory, then the
 *             words of the argv to run (at least one; a word may be empty)
 *
 * Records come in increasing task number. A task stream (a FIFO: see
 * cmdstream.h) ends with an end mark, a length of 0. What the command
 * module sends to a worker is the task's generation index (8 bytes,
 * little endian), then its record's body; its result ends with those
 * same bytes.
 *
 * A result is a fixed header, then the command's stdout and stderr:
 *
 *   0   8  task number        28  4  flags (CMDRES_*)
 *   8   4  exit value         32  8  stdout length
 *   12  4  signal             40  8  stderr length
 *   16  8  start (epoch s)    48 64  the worker's host name, NUL-padded
 *   24  4  run time (ms)      112  4  job slot ({%}; 0: none)
 *                             120    stdout bytes, then stderr bytes,
 *                                     then the task's bytes
 *
 * With CMDRES_LIVE (--line-buffer: the command's lines went out live,
 * cmdlive.h), the result carries no stdout: its stdout length is the
 * bytes the command wrote there (the joblog's Receive), and its stderr
 * only what the worker says about the command.
 *
 * Numbers are in the byte order of the machines (a job's TMs and JM
 * share one); the start time is a double.
 */
#ifndef CMDFILE_H
#define CMDFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CMDFILE_MAGIC "spits-cmd 1\n"
#define CMDFILE_FIELDS 4          /* strings before the argv */
/* {%} in a composed command: the worker writes the job slot there. */
#define CMDFILE_SLOT "\001%\001"

typedef struct {
    uint64_t seq;
    const char *tag, *display, *respath;
    const char *words;            /* the argv's first word; the rest follow */
    size_t nwords;
} cmdfile_rec_t;

/* Appends one record to the buffer *buf (*len bytes used of *cap,
 * grown with realloc); 0, or -1 out of memory or too long. */
int cmdfile_encode(char **buf, size_t *len, size_t *cap, uint64_t seq, const char *tag,
                   const char *display, const char *respath, const char *const *argv,
                   size_t argc);

/* Reads a record's body (len bytes, not NUL-terminated past the last
 * string); 0, or -1 if it is malformed. */
int cmdfile_parse(const char *body, size_t len, cmdfile_rec_t *r);

/* A task file, mapped. */
typedef struct {
    const char *map;
    size_t size;
    size_t off;                   /* the next record's offset */
} cmdfile_t;

/* Maps path; 0, or -1 with a reason in err. */
int cmdfile_open(cmdfile_t *f, const char *path, char *err, size_t errlen);
void cmdfile_close(cmdfile_t *f);
/* The next record's body and length: 1, 0 at the end, -1 if the file is
 * cut short or malformed. */
int cmdfile_next(cmdfile_t *f, const char **body, size_t *len);

/* Writes all n bytes of p to fd (again after EINTR); 0, or -1 with
 * errno set. */
int cmdfile_write_all(int fd, const void *p, size_t n);

/* mkdir -p path (for --results); 0, or -1 with errno set. */
int cmdfile_mkdirs(const char *path);

/* s with each CMDFILE_SLOT written as slot (malloc'd; NULL out of memory). */
char *cmdfile_slot_subst(const char *s, unsigned slot);

/* Results. */
#define CMDRES_HEADER 120
#define CMDRES_HOST 64
#define CMDRES_TIMEOUT 1u        /* killed by --timeout */
#define CMDRES_CAP 2u            /* killed: output over the cap */
#define CMDRES_SPAWN 4u          /* could not be started (stderr says why) */
#define CMDRES_SKIPPED 8u        /* not run: the job halted (--halt) */
#define CMDRES_HALTED 16u        /* killed: the job halted now */
#define CMDRES_LIVE 32u          /* its lines went out live (see above) */

typedef struct {
    uint64_t seq;
    int32_t exitval, signal;
    double start;
    uint32_t runtime_ms, flags, slot;
    uint64_t outlen, errlen;      /* the stdout and stderr the result carries */
    uint64_t received;            /* stdout bytes the command wrote */
    char host[CMDRES_HOST];
} cmdres_t;

void cmdres_pack(const cmdres_t *r, unsigned char *out);
/* 0 if buf (len bytes) is a whole result, -1 otherwise. */
int cmdres_unpack(cmdres_t *r, const unsigned char *buf, size_t len);

#endif
