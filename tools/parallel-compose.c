/*
 * parallel-compose.c - GNU parallel's replacement strings and quoting for
 * spits-parallel (see parallel-compose.h).
 *
 * Replacement strings: {} the argument (all of a task's arguments, each
 * quoted, joined by spaces, when there are several input sources), {.}
 * without its extension, {/} its basename, {//} its directory, {/.} the
 * basename without extension, {#} the task number, {%} the job slot
 * (CMDFILE_SLOT, which the worker replaces), and {N}, {N.}, {N/},
 * {N//}, {N/.} for the N-th input source (nothing at all past the
 * task's arguments; {0} is {}). Anything else in braces is left as it
 * is. With -N (t->context) a word with {} and other text is written
 * once for each argument.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdfile.h"
#include "parallel-compose.h"

/* The characters GNU parallel leaves unquoted. */
static int pcompose_plain(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '_' || ch == '.' || ch == '+' || ch == '/';
}

/* Characters a shell gives no meaning to inside a word (direct runs). */
static int pcompose_inert(char ch)
{
    return pcompose_plain(ch) || ch == ',' || ch == ':' || ch == '=' || ch == '@' ||
           ch == '%';
}

char *pcompose_quote(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    const char *p;
    for (p = s; *p; p++) {
        if (!strncmp(p, CMDFILE_SLOT, strlen(CMDFILE_SLOT)))
            p += strlen(CMDFILE_SLOT) - 1;      /* {%}'s digits need no quotes */
        else if (!pcompose_plain(*p))
            break;
    }
    if (!*p)
        return strdup(*s ? s : "''");
    /* '...' with each ' as '"'"', less a '' left at either end. */
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputc('\'', f);
    for (p = s; *p; p++)
        if (*p == '\'')
            fputs("'\"'\"'", f);
        else
            fputc(*p, f);
    fputc('\'', f);
    if (fclose(f) != 0)
        return NULL;
    if (len >= 2 && !strncmp(buf, "''", 2)) {
        memmove(buf, buf + 2, len - 1);
        len -= 2;
    }
    if (len >= 2 && !strcmp(buf + len - 2, "''"))
        buf[len - 2] = '\0';
    return buf;
}

/* A replacement string at p: its length (0: none), the source it names
 * (0: all; -1: {#}) and its modifier. */
static size_t pcompose_repl(const char *p, long *src, const char **mod)
{
    static const char *const mods[] = {"}", ".}", "/}", "//}", "/.}"};
    const char *q = p + 1;
    if (p[0] != '{')
        return 0;
    if (!strncmp(p, "{#}", 3) || !strncmp(p, "{%}", 3)) {
        *src = p[1] == '#' ? -1 : -2;
        *mod = "";
        return 3;
    }
    *src = 0;
    while (*q >= '0' && *q <= '9' && *src < 1000000)
        *src = *src * 10 + (*q++ - '0');
    if (q > p + 2 && *src == 0)
        *src = 1000000;                 /* {00}: no argument's, empty */
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
        if (!strncmp(q, mods[i], strlen(mods[i]))) {
            *mod = mods[i];
            return (size_t)(q - p) + strlen(mods[i]);
        }
    return 0;
}

/* v changed by the modifier m (malloc'd). */
static char *pcompose_modify(const char *v, const char *m)
{
    char *s = strdup(v), *slash, *dot;
    if (!s)
        return NULL;
    if (!strcmp(m, "/}") || !strcmp(m, "/.}")) {        /* basename */
        if ((slash = strrchr(s, '/')))
            memmove(s, slash + 1, strlen(slash));
    } else if (!strcmp(m, "//}")) {                     /* dirname(1)'s */
        size_t n = strlen(s);
        while (n > 1 && s[n - 1] == '/')
            s[--n] = '\0';                              /* dir/ is dir */
        if (!(slash = strrchr(s, '/'))) {
            free(s);
            return strdup(".");
        }
        while (slash > s && slash[-1] == '/')
            slash--;
        slash[slash == s] = '\0';                       /* / stays / */
    }
    if (!strcmp(m, ".}") || !strcmp(m, "/.}")) {        /* less extension */
        dot = strrchr(s, '.');
        if (dot && !strchr(dot, '/'))
            *dot = '\0';
    }
    return s;
}

/* Writes the value of replacement (src, mod) to f, each argument
 * quoted when quote is set, several joined by spaces; only >= 0: {}
 * is that argument alone. */
static int pcompose_value(FILE *f, const pcompose_t *t, const char *const *args,
                          uint64_t seq, long src, const char *mod, int quote, long only)
{
    if (src == -2) {
        fputs(CMDFILE_SLOT, f);         /* the worker knows the slot */
        return 0;
    }
    if (src < 0) {
        fprintf(f, "%llu", (unsigned long long)seq);
        return 0;
    }
    if (src > (long)t->nsrc)
        return 0;                       /* beyond the arguments: nothing */
    size_t lo = src ? (size_t)src - 1 : 0, hi = src ? (size_t)src : t->nsrc;
    if (!src && only >= 0)
        lo = (size_t)only, hi = lo + 1;
    for (size_t i = lo; i < hi; i++) {
        char *v = pcompose_modify(args[i], mod), *q = v && quote ? pcompose_quote(v) : NULL;
        if (!v || (quote && !q)) {
            free(v);
            return -1;
        }
        fprintf(f, "%s%s", i > lo ? " " : "", quote ? q : v);
        free(q);
        free(v);
    }
    return 0;
}

/* 1 if word w is repeated for each argument (t->context): it has {}
 * (any of its forms) and is not that alone. */
static int pcompose_repeats(const pcompose_t *t, const char *w)
{
    size_t n;
    long src;
    const char *mod;
    int all = 0, alone = 0;
    if (!t->context || t->nsrc < 2)
        return 0;
    for (const char *p = w; *p; p += n ? n : 1)
        if ((n = pcompose_repl(p, &src, &mod))) {
            all |= src == 0;
            alone = n == strlen(w);
        }
    return all && !alone;
}

/* A word with its replacement strings replaced (quote: quoted values);
 * with -N, a word with {} in it once for each argument, as GNU parallel
 * writes it. */
static char *pcompose_word(const pcompose_t *t, const char *w, const char *const *args,
                           uint64_t seq, int quote)
{
    char *buf = NULL;
    size_t len = 0, n;
    long src;
    const char *mod;
    int rep = pcompose_repeats(t, w);
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    for (long only = rep ? 0 : -1; only < (rep ? (long)t->nsrc : 0); only++) {
        if (only > 0)
            fputc(' ', f);
        for (const char *p = w; *p;) {
            if ((n = pcompose_repl(p, &src, &mod))) {
                if (pcompose_value(f, t, args, seq, src, mod, quote, only) != 0) {
                    fclose(f);
                    free(buf);
                    return NULL;
                }
                p += n;
            } else {
                fputc(*p++, f);
            }
        }
    }
    if (fclose(f) != 0)
        return NULL;
    return buf;
}

/* A --results path part: / written \_ and \ written \\. */
static void pcompose_respath_part(FILE *f, const char *s, const char *before)
{
    fputs(before, f);
    for (const char *p = s; *p; p++)
        fputs(*p == '/' ? "\\_" : *p == '\\' ? "\\\\" : (char[2]){*p, 0}, f);
}

/* Shell keywords and builtins a direct run would not mean the same as. */
static int pcompose_shell_word(const char *w)
{
    static const char *const words[] = {
        "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else",
        "esac", "fi", "for", "function", "if", "in", "select", "then", "time", "until",
        "while", ".", ":", "alias", "bg", "bind", "break", "builtin", "caller", "cd",
        "command", "compgen", "complete", "compopt", "continue", "declare", "dirs",
        "disown", "enable", "eval", "exec", "exit", "export", "fc", "fg", "getopts",
        "hash", "help", "history", "jobs", "kill", "let", "local", "logout", "mapfile",
        "popd", "pushd", "read", "readarray", "readonly", "return", "set", "shift",
        "shopt", "source", "suspend", "times", "trap", "type", "typeset", "ulimit",
        "umask", "unalias", "unset", "wait"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(w, words[i]))
            return 1;
    return 0;
}

void pcompose_init(pcompose_t *t, char **words, size_t nwords, size_t nsrc,
                   const char *shell, int quote)
{
    long src;
    const char *mod;
    size_t n;
    memset(t, 0, sizeof *t);
    t->words = words;
    t->nwords = nwords;
    t->nsrc = nsrc;
    t->shell = shell;
    t->quote = quote;
    t->direct = nwords > 0 && !pcompose_shell_word(words[0]);
    for (size_t i = 0; i < nwords; i++) {
        const char *w = words[i];
        int alone = 0;
        if (!*w)
            t->direct = quote && t->direct;
        for (const char *p = w; *p;) {
            if ((n = pcompose_repl(p, &src, &mod))) {
                t->has_repl = 1;
                if (src > t->maxpos)
                    t->maxpos = src;
                t->slot |= src == -2;
                alone = n == strlen(w);
                /* Several values in one word with other text: the shell
                 * splits them where a direct run could not. */
                if (src == 0 && nsrc > 1 && !alone)
                    t->direct = 0;
                if (i == 0)
                    t->direct = 0;
                p += n;
            } else {
                if (!quote && (!pcompose_inert(*p) || (i == 0 && *p == '=')))
                    t->direct = 0;
                p++;
            }
        }
    }
    if (t->slot)
        t->direct = 0;                  /* the slot goes in the shell's line */
}

/* Builtins that also exist as programs, whose programs take --help and
 * --version where the builtins print or ignore them. */
static int pcompose_builtin_option(char **argv, size_t argc)
{
    static const char *const twins[] = {"echo", "printf", "true", "false", "test", "[",
                                        "pwd"};
    int twin = 0;
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++)
        twin |= !strcmp(argv[0], twins[i]);
    for (size_t i = 1; twin && i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "--version"))
            return 1;
    return 0;
}

static int pcompose_push(pcompose_task_t *o, size_t *cap, char *w)
{
    if (!w)
        return -1;
    if (o->argc + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        while (c < o->argc + 2)
            c *= 2;
        char **a = realloc(o->argv, c * sizeof *a);
        if (!a) {
            free(w);
            return -1;
        }
        o->argv = a;
        *cap = c;
    }
    o->argv[o->argc++] = w;
    o->argv[o->argc] = NULL;
    return 0;
}

/* The direct argv: each word with raw values; a word that is only an
 * all-arguments replacement becomes one word per argument. */
static int pcompose_direct(const pcompose_t *t, const char *const *args, uint64_t seq,
                           pcompose_task_t *o)
{
    size_t cap = 0, n;
    long src;
    const char *mod;
    for (size_t i = 0; i < t->nwords; i++) {
        const char *w = t->words[i];
        if ((n = pcompose_repl(w, &src, &mod)) && n == strlen(w) && src == 0) {
            for (size_t k = 0; k < t->nsrc; k++)
                if (pcompose_push(o, &cap, pcompose_modify(args[k], mod)) != 0)
                    return -1;
        } else if (pcompose_push(o, &cap, pcompose_word(t, w, args, seq, 0)) != 0) {
            return -1;
        }
    }
    for (size_t k = 0; !t->has_repl && k < t->nsrc; k++)
        if (pcompose_push(o, &cap, strdup(args[k])) != 0)
            return -1;
    return 0;
}

int pcompose_task(const pcompose_t *t, const char *const *args, uint64_t seq,
                  pcompose_task_t *o)
{
    FILE *f;
    size_t len;
    memset(o, 0, sizeof *o);

    /* The command line, as GNU parallel composes it. */
    if (!(f = open_memstream(&o->display, &len)))
        return -1;
    int bad = 0;
    for (size_t i = 0; i < t->nwords && !bad; i++) {
        char *w = t->quote ? pcompose_word(t, t->words[i], args, seq, 0)
                           : pcompose_word(t, t->words[i], args, seq, 1);
        char *q = w && t->quote ? pcompose_quote(w) : NULL;
        bad = !w || (t->quote && !q);
        if (!bad)
            fprintf(f, "%s%s", i ? " " : "", t->quote ? q : w);
        free(q);
        free(w);
    }
    for (size_t k = 0; !bad && !t->has_repl && k < t->nsrc; k++) {
        /* No command: the arguments are the command lines themselves. */
        char *q = t->nwords ? pcompose_quote(args[k]) : strdup(args[k]);
        bad = !q;
        if (q)
            fprintf(f, "%s%s", t->nwords || k ? " " : "", q);
        free(q);
    }
    if (fclose(f) != 0 || bad)
        goto fail;

    if (!(f = open_memstream(&o->tag, &len)))
        goto fail;
    for (size_t k = 0; k < t->nsrc; k++)
        fprintf(f, "%s%s", k ? " " : "", args[k]);
    if (fclose(f) != 0)
        goto fail;

    /* --results: 1/ARG1/2/ARG2..., / written \_ and \ written \\. */
    if (!(f = open_memstream(&o->respath, &len)))
        goto fail;
    for (size_t k = 0; k < t->nsrc; k++) {
        unsigned at = t->pos ? t->pos[k] : (unsigned)k + 1;
        if (t->names && at <= t->nnames)
            pcompose_respath_part(f, t->names[at - 1], k ? "/" : "");
        else
            fprintf(f, "%s%u", k ? "/" : "", at);
        fputc('/', f);
        pcompose_respath_part(f, args[k], "");
    }
    if (fclose(f) != 0)
        goto fail;

    size_t cap = 0;
    if (t->direct) {
        if (pcompose_direct(t, args, seq, o) != 0)
            goto fail;
        if (o->argc && !pcompose_builtin_option(o->argv, o->argc))
            return 0;
        for (size_t i = 0; i < o->argc; i++)
            free(o->argv[i]);
        free(o->argv);
        o->argv = NULL;
        o->argc = 0;
    }
    if (pcompose_push(o, &cap, strdup(t->shell)) != 0 ||
        pcompose_push(o, &cap, strdup("-c")) != 0 ||
        pcompose_push(o, &cap, strdup(o->display)) != 0)
        goto fail;
    return 0;
fail:
    pcompose_task_clear(o);
    return -1;
}

int pcompose_task_n(const pcompose_t *t, const char *const *args, const unsigned *pos,
                    size_t nargs, uint64_t seq, pcompose_task_t *o)
{
    pcompose_t v = *t;
    v.nsrc = nargs;
    v.pos = pos;
    /* A missing argument's replacement is nothing at all, which a word
     * of a direct argv cannot be: the shell runs it. */
    if (t->maxpos > (long)nargs)
        v.direct = 0;
    return pcompose_task(&v, args, seq, o);
}

void pcompose_task_clear(pcompose_task_t *o)
{
    for (size_t i = 0; i < o->argc; i++)
        free(o->argv[i]);
    free(o->argv);
    free(o->display);
    free(o->tag);
    free(o->respath);
    memset(o, 0, sizeof *o);
}
