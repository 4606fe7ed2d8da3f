/*
 * parallel-input.h - spits-parallel's input sources and the combinations
 * of their arguments, made one at a time (parallel-input.c).
 *
 * A source is a list of values given on the command line (::: ARG...)
 * or the lines of a file (:::: FILE, -a FILE; "-" is stdin). The
 * combinations come in GNU parallel's order, the last source varying
 * fastest, as an odometer: nothing is made ahead. The first source is
 * read as the combinations need it, a line at a time, so commands start
 * as soon as their arguments exist and a pipe that never ends (tail -f)
 * works; the other sources are read in full by pinput_open, since each of
 * their values comes back once per value of the first.
 *
 * To add a kind of source or a way to combine them (linked sources,
 * --colsep, -N, --header, -0): pinput_add_* registers the source,
 * pinput_open reads what must be read first, and pinput_next hands out
 * one combination (one argument per source) at a time. The caller keeps
 * no other copy of the input.
 */
#ifndef PARALLEL_INPUT_H
#define PARALLEL_INPUT_H

#include <stddef.h>

typedef struct pinput pinput_t;

pinput_t *pinput_new(void);
void pinput_destroy(pinput_t **in);
/* A source of n values (kept, not copied: they must outlive in); 0, -1
 * out of memory. */
int pinput_add_values(pinput_t *in, char *const *vals, size_t n);
/* A source of path's lines ("-": stdin), read later; 0, -1 out of memory. */
int pinput_add_file(pinput_t *in, const char *path);
/* The source added last steps with the one before it (:::+); 0, or -1
 * if it is the first. */
int pinput_link(pinput_t *in);
/* -0: a file's values end with NUL, not newline. */
void pinput_set_null(pinput_t *in);
/* --header: pinput_open takes each source's first value as its name. */
void pinput_set_header(pinput_t *in);
/* Source i's name (after pinput_open with --header), NULL if it has none. */
const char *pinput_header(const pinput_t *in, size_t i);
size_t pinput_sources(const pinput_t *in);
/* Opens the files and reads all but the first source (and, with
 * --header, the first source's first line); 0, or -1 with a one-line
 * error said. */
int pinput_open(pinput_t *in);
/* The next combination: *args gets pinput_sources() arguments, valid
 * until the next call. 1, 0 at the end of the input, -1 with a one-line
 * error said. Blocks while the first source has no next line yet. */
int pinput_next(pinput_t *in, const char *const **args);
/* The next pinput_next hands out the same combination again. */
void pinput_again(pinput_t *in);
/* 1 if the next pinput_next needs no read that could block. */
int pinput_ready(const pinput_t *in);

#endif
