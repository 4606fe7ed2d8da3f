/*
 * parallel-compose.h - spits-parallel's command lines: GNU parallel's
 * replacement strings and quoting, and the argv a task runs.
 *
 * A task's command is what GNU parallel would run: the command words
 * joined by spaces, each replacement string replaced by its value quoted
 * for the shell (or, with no replacement string anywhere, the arguments
 * quoted and appended), run by a shell. That string is the joblog's
 * Command. When the shell could not change its meaning (plain words only,
 * no shell keyword or builtin first), the task runs the same words as an
 * argv without a shell, which is faster and means the same.
 */
#ifndef PARALLEL_COMPOSE_H
#define PARALLEL_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char **words;                 /* the command words (may be none) */
    size_t nwords;
    size_t nsrc;                  /* input sources: arguments per task */
    const char *shell;            /* the shell that runs composed commands */
    int quote;                    /* -q: the words are literal, not shell code */
    int has_repl;                 /* some word holds a replacement string */
    int direct;                   /* the words allow running without a shell */
    long maxpos;                  /* the highest {N} in the words */
    int slot;                     /* some word holds {%}: a shell runs it */
    const unsigned *pos;          /* per argument: its source or column (NULL: 1, 2...) */
    const char *const *names;     /* --header: the names of positions 1.. */
    int context;                  /* -N: a word with {} and other text is
                                     repeated for each argument */
    size_t nnames;
} pcompose_t;

/* One task's composition (every string malloc'd). */
typedef struct {
    char *display;                /* the shell command line */
    char **argv;                  /* what runs: a direct argv, or shell -c */
    size_t argc;
    char *tag;                    /* the arguments joined by spaces */
    char *respath;                /* --results subdirectory */
} pcompose_task_t;

/* Sets up t for words (kept, not copied); 0. */
void pcompose_init(pcompose_t *t, char **words, size_t nwords, size_t nsrc,
                   const char *shell, int quote);
/* Composes task seq for args (t->nsrc of them); 0, -1 out of memory. */
int pcompose_task(const pcompose_t *t, const char *const *args, uint64_t seq,
                  pcompose_task_t *out);
/* Composes task seq of nargs arguments at positions pos (--results
 * paths; NULL: 1, 2...): -N's and --colsep's varying counts, {N} past
 * them replaced by nothing. */
int pcompose_task_n(const pcompose_t *t, const char *const *args, const unsigned *pos,
                    size_t nargs, uint64_t seq, pcompose_task_t *out);
void pcompose_task_clear(pcompose_task_t *out);
/* s quoted as GNU parallel quotes for a Bourne shell (malloc'd). */
char *pcompose_quote(const char *s);

#endif
