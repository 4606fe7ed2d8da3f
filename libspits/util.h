/*
 * util.h - small helpers every spits program needs: clocks, strict number
 * parsing for options, the host name, random ids.
 */
#ifndef SPITS_UTIL_H
#define SPITS_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic milliseconds, for timeouts and rates. */
int64_t spits_now_ms(void);
/* Wall-clock seconds since the epoch, with sub-second precision. */
double spits_wall_time(void);
/* ISO 8601 UTC time ("2026-11-22T10:00:00Z") of a wall-clock time. */
void spits_iso_time(double t, char *out, size_t outlen);

/* Parses all of s, digits only (no blank, no sign), as an integer in
 * [min, max] (min >= 0). 0 on success, else -1. */
int spits_parse_long(const char *s, long min, long max, long *out);
/* Parses all of s as a non-negative number of seconds, at most max:
 * digits with decimals or an exponent ("2", "0.5", ".5", "1e3"), no
 * blank or sign. 0 on success, else -1. */
int spits_parse_seconds(const char *s, double max, double *out);

/* This host's name (never fails: falls back to "localhost"). */
void spits_hostname(char *out, size_t outlen);
/* A random id of nbytes bytes as lowercase hex into out (2*nbytes+1). */
void spits_random_hex(char *out, size_t nbytes);

/* Checks a ZeroMQ endpoint from the command line: tcp://HOST:PORT, PORT
 * 1-65535 (for a bind also 0 or *: any free port), or ipc://PATH. 0, or
 * -1 with a one-line reason naming the problem in err. */
int spits_endpoint_check(const char *ep, int bind, char *err, size_t errlen);

/* A file program self (its installed name: spits_selfexe) runs or loads:
 * $env if set, else name next to this program (installed), else name in
 * ../subdir of its directory (the build tree). Into out (PATH_MAX bytes);
 * 0 if it is there with access mode (X_OK, R_OK), else -1. */
int spits_find_beside(const char *self, const char *name, const char *env,
                      const char *subdir, int mode,
                      char *out);

/* Online cores (at least 1). */
/* Writes all n bytes of p to fd, again after EINTR and short writes: 0,
 * or -1 with errno set (0 when write wrote nothing). Only write(2) is
 * called, so a signal handler may use it. */
int spits_write_all(int fd, const void *p, size_t n);

int spits_online_cores(void);
/* Keeps large buffers (tasks, results, batches up to 32 MiB) in the heap
 * instead of a fresh mmap each: a process that moves megabyte tasks would
 * otherwise page-fault on every byte it copies. arenas > 0 caps glibc's
 * malloc arenas (each keeps up to the trim threshold of freed memory);
 * 0 leaves glibc's 8 per core. Call first in main. */
void spits_malloc_tune(int arenas);
/* Gives the free memory inside the heaps back to the system
 * (malloc_trim); it holds the heaps' locks meanwhile, milliseconds. */
void spits_malloc_release(void);

/* Makes room in the array *arr (of *cap elements of elsize bytes) for
 * at least need elements, doubling its capacity (at least first). -1 when
 * out of memory (the array is left as it was). */
int spits_grow(void **arr, size_t *cap, size_t need, size_t elsize, size_t first);

#ifdef SPITS_SELFTEST
int spits_util_selftest(void);
#endif

#endif
