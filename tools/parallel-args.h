/*
 * parallel-args.h - spits-parallel's input records to argument lists:
 * GNU parallel's linked sources (:::+), --colsep, -N and --header.
 *
 * Two steps, each a function of its inputs only, so that a composer that
 * holds every source and one that streams them call the same code:
 *
 *   sources -> tuples     pargs_count and pargs_tuple: which value of each
 *                         source makes up tuple k (the last source varies
 *                         fastest; a source linked to the one before it
 *                         steps with it, the group as long as its shortest)
 *   records -> arguments  pargs_list_add: one value (a record), split into
 *                         columns by --colsep, appended to a task's
 *                         argument list; -N puts N tuples in one list
 *
 * Each argument keeps its position (its source, or its column), which
 * names it in --results paths, and --header : names positions: the
 * command's {NAME} becomes {POSITION} (pargs_header_words).
 */
#ifndef PARALLEL_ARGS_H
#define PARALLEL_ARGS_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

/* Tuples of nsrc sources of len[i] values; linked[i]: source i steps
 * with source i-1. The count saturates at UINT64_MAX. */
uint64_t pargs_count(const size_t *len, const unsigned char *linked, size_t nsrc);
/* The value index of each source in tuple k (k < pargs_count). */
void pargs_tuple(const size_t *len, const unsigned char *linked, size_t nsrc, uint64_t k,
                 size_t *idx);

/* --colsep: GNU parallel's Perl regex as a POSIX extended one (\t \n
 * \s \S \d \w understood). 0, or -1 with a reason in err. */
int pargs_colsep_compile(regex_t *re, const char *perl, char *err, size_t errlen);

/* One task's arguments (values not owned, except columns split here). */
typedef struct {
    const char **v;
    unsigned *pos;                /* 1-based source or column */
    size_t n, cap;
    char **own;                   /* column copies to free */
    size_t nown, owncap;
} pargs_list_t;

/* Appends value as argument(s) at position pos: one, or with colsep its
 * columns (pos, pos+1, ...), spaces and tabs trimmed at their ends as
 * GNU parallel trims them. *next: the position after it. 0, -1 out of
 * memory. */
int pargs_list_add(pargs_list_t *l, const char *value, unsigned pos, const regex_t *colsep,
                   unsigned *next);
/* As pargs_list_add, value copied (kept in l): for a value that changes
 * before the list is used, a streamed line. */
int pargs_list_add_copy(pargs_list_t *l, const char *value, unsigned pos,
                        const regex_t *colsep, unsigned *next);
void pargs_list_reset(pargs_list_t *l);   /* empty, memory kept */
void pargs_list_free(pargs_list_t *l);

/* --header: the words with {NAME}, {NAME.}, {NAME/}, {NAME//}, {NAME/.}
 * turned into the position of NAME among names (malloc'd words in
 * *out); 0, -1 out of memory. */
int pargs_header_words(char **words, size_t nwords, const char *const *names,
                       size_t nnames, char ***out);

#ifdef SPITS_SELFTEST
int pargs_selftest(void);
#endif

#endif
