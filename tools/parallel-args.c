/*
 * parallel-args.c - input records to argument lists for spits-parallel
 * (see parallel-args.h): linked sources, --colsep, -N's lists, --header.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel-args.h"

/* The groups of linked sources: group g is sources first[g]..first[g+1]-1,
 * as long as its shortest. */
static size_t pargs_groups(const size_t *len, const unsigned char *linked, size_t nsrc,
                           size_t *first, size_t *glen)
{
    size_t ng = 0;
    for (size_t i = 0; i < nsrc; i++) {
        if (i == 0 || !linked[i]) {
            first[ng] = i;
            glen[ng++] = len[i];
        } else if (len[i] < glen[ng - 1]) {
            glen[ng - 1] = len[i];
        }
    }
    first[ng] = nsrc;
    return ng;
}

uint64_t pargs_count(const size_t *len, const unsigned char *linked, size_t nsrc)
{
    size_t first[257], glen[256];
    uint64_t total = 1;
    if (nsrc > 256)
        return 0;
    size_t ng = pargs_groups(len, linked, nsrc, first, glen);
    for (size_t g = 0; g < ng; g++) {
        if (glen[g] == 0)
            return 0;
        total = total > UINT64_MAX / glen[g] ? UINT64_MAX : total * glen[g];
    }
    return total;
}

void pargs_tuple(const size_t *len, const unsigned char *linked, size_t nsrc, uint64_t k,
                 size_t *idx)
{
    size_t first[257], glen[256];
    size_t ng = pargs_groups(len, linked, nsrc > 256 ? 256 : nsrc, first, glen);
    for (size_t g = ng; g-- > 0;) {
        size_t at = glen[g] ? (size_t)(k % glen[g]) : 0;
        k = glen[g] ? k / glen[g] : 0;
        for (size_t i = first[g]; i < first[g + 1]; i++)
            idx[i] = at;
    }
}

int pargs_colsep_compile(regex_t *re, const char *perl, char *err, size_t errlen)
{
    char *ere = malloc(strlen(perl) * 16 + 1), *o = ere;
    int inbr = 0;
    if (!ere) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (const char *p = perl; *p; p++) {
        const char *cls = NULL;
        if (*p == '[' && !inbr) {
            inbr = 1;
        } else if (*p == ']' && inbr && p[-1] != '[' && !(p[-1] == '^' && p[-2] == '[')) {
            inbr = 0;
        } else if (*p == '\\' && p[1]) {
            switch (*++p) {
            case 't': *o++ = '\t'; continue;
            case 'n': *o++ = '\n'; continue;
            case 'r': *o++ = '\r'; continue;
            case 's': cls = "[:space:]"; break;
            case 'd': cls = "0-9"; break;
            case 'w': cls = "[:alnum:]_"; break;
            case 'S': cls = inbr ? NULL : "^[:space:]"; break;
            case 'D': cls = inbr ? NULL : "^0-9"; break;
            case 'W': cls = inbr ? NULL : "^[:alnum:]_"; break;
            default:
                if (inbr) {               /* no escapes inside brackets */
                    *o++ = *p;
                    continue;
                }
                *o++ = '\\';
                *o++ = *p;
                continue;
            }
            if (!cls) {
                snprintf(err, errlen, "\\%c inside [...] is not understood", *p);
                free(ere);
                return -1;
            }
            o += sprintf(o, inbr ? "%s" : "[%s]", cls);
            continue;
        }
        *o++ = *p;
    }
    *o = '\0';
    int rc = regcomp(re, ere, REG_EXTENDED);
    free(ere);
    if (rc != 0) {
        regerror(rc, re, err, errlen);
        return -1;
    }
    return 0;
}

static int pargs_push(pargs_list_t *l, const char *v, unsigned pos)
{
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 16;
        const char **nv = realloc(l->v, c * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        unsigned *np = realloc(l->pos, c * sizeof *np);
        if (!np)
            return -1;
        l->pos = np;
        l->cap = c;
    }
    l->v[l->n] = v;
    l->pos[l->n++] = pos;
    return 0;
}

/* A copy of s[0..n), less white space at its ends if trim, kept in l. */
static char *pargs_own(pargs_list_t *l, const char *s, size_t n, int trim)
{
    while (trim && n && isspace((unsigned char)*s))
        s++, n--;
    while (trim && n && isspace((unsigned char)s[n - 1]))
        n--;
    if (l->nown == l->owncap) {
        size_t c = l->owncap ? l->owncap * 2 : 16;
        char **no = realloc(l->own, c * sizeof *no);
        if (!no)
            return NULL;
        l->own = no;
        l->owncap = c;
    }
    char *copy = strndup(s, n);
    if (copy)
        l->own[l->nown++] = copy;
    return copy;
}

int pargs_list_add(pargs_list_t *l, const char *value, unsigned pos, const regex_t *colsep,
                   unsigned *next)
{
    if (!colsep) {
        *next = pos + 1;
        return pargs_push(l, value, pos);
    }
    /* Perl's split with every field kept, the empty ones at the end too. */
    const char *p = value;
    regmatch_t m;
    for (;;) {
        int hit = *p && regexec(colsep, p, 1, &m, p > value ? REG_NOTBOL : 0) == 0;
        if (hit && m.rm_eo == 0) {        /* empty at the start: one character */
            m.rm_so = m.rm_eo = 1;
            hit = p[1] != '\0';
        }
        size_t n = hit ? (size_t)m.rm_so : strlen(p);
        char *col = pargs_own(l, p, n, 1);
        if (!col || pargs_push(l, col, pos++) != 0)
            return -1;
        if (!hit)
            break;
        p += m.rm_eo;
    }
    *next = pos;
    return 0;
}

int pargs_list_add_copy(pargs_list_t *l, const char *value, unsigned pos,
                        const regex_t *colsep, unsigned *next)
{
    if (colsep)
        return pargs_list_add(l, value, pos, colsep, next);   /* columns are copies */
    char *copy = pargs_own(l, value, strlen(value), 0);
    if (!copy)
        return -1;
    *next = pos + 1;
    return pargs_push(l, copy, pos);
}

void pargs_list_reset(pargs_list_t *l)
{
    for (size_t i = 0; i < l->nown; i++)
        free(l->own[i]);
    l->nown = 0;
    l->n = 0;
}

void pargs_list_free(pargs_list_t *l)
{
    pargs_list_reset(l);
    free(l->v);
    free(l->pos);
    free(l->own);
    memset(l, 0, sizeof *l);
}

/* The position of the name at p (after '{') and its length, or 0. */
static size_t pargs_name_at(const char *p, const char *const *names, size_t nnames,
                            size_t *len)
{
    static const char *const mods[] = {"}", ".}", "/}", "//}", "/.}"};
    for (size_t i = 0; i < nnames; i++) {
        size_t n = strlen(names[i]);
        if (!n || strncmp(p, names[i], n))
            continue;
        for (size_t m = 0; m < sizeof mods / sizeof mods[0]; m++)
            if (!strncmp(p + n, mods[m], strlen(mods[m]))) {
                *len = n;
                return i + 1;
            }
    }
    return 0;
}

int pargs_header_words(char **words, size_t nwords, const char *const *names,
                       size_t nnames, char ***out)
{
    char **w = calloc(nwords + 1, sizeof *w);
    if (!w)
        return -1;
    for (size_t i = 0; i < nwords; i++) {
        char *buf = NULL;
        size_t blen = 0, len, pos;
        FILE *f = open_memstream(&buf, &blen);
        if (!f)
            goto oom;
        for (const char *p = words[i]; *p;) {
            if (*p == '{' && (pos = pargs_name_at(p + 1, names, nnames, &len))) {
                fprintf(f, "{%zu", pos);
                p += 1 + len;
            } else {
                fputc(*p++, f);
            }
        }
        if (fclose(f) != 0)
            goto oom;
        w[i] = buf;
    }
    *out = w;
    return 0;
oom:
    for (size_t i = 0; i < nwords; i++)
        free(w[i]);
    free(w);
    return -1;
}

#ifdef SPITS_SELFTEST
#define PARGS_CHECK(c) do { if (!(c)) { fprintf(stderr, "parallel-args: %s fails\n", #c); return -1; } } while (0)

/* The joined arguments of l, "|" between them, positions after ":". */
static const char *pargs_show(const pargs_list_t *l)
{
    static char s[256];
    size_t o = 0;
    for (size_t i = 0; i < l->n; i++)
        o += (size_t)snprintf(s + o, sizeof s - o, "%s%s:%u", i ? "|" : "", l->v[i], l->pos[i]);
    s[o] = '\0';
    return s;
}

int pargs_selftest(void)
{
    /* a b c :::+ 1 2 ::: x y: the linked pair as long as its shortest */
    size_t len[3] = {3, 2, 2}, idx[3];
    unsigned char linked[3] = {0, 1, 0};
    PARGS_CHECK(pargs_count(len, linked, 3) == 4);
    pargs_tuple(len, linked, 3, 3, idx);
    PARGS_CHECK(idx[0] == 1 && idx[1] == 1 && idx[2] == 1);
    pargs_tuple(len, linked, 3, 1, idx);
    PARGS_CHECK(idx[0] == 0 && idx[1] == 0 && idx[2] == 1);
    linked[1] = 0;
    PARGS_CHECK(pargs_count(len, linked, 3) == 12);
    pargs_tuple(len, linked, 3, 11, idx);
    PARGS_CHECK(idx[0] == 2 && idx[1] == 1 && idx[2] == 1);
    len[2] = 0;
    PARGS_CHECK(pargs_count(len, linked, 3) == 0);

    regex_t re;
    char err[128];
    unsigned next;
    pargs_list_t l = {0};
    PARGS_CHECK(pargs_colsep_compile(&re, "[\\t ]+", err, sizeof err) == 0);
    PARGS_CHECK(pargs_list_add(&l, "a \t b\tc", 1, &re, &next) == 0 && next == 4);
    PARGS_CHECK(!strcmp(pargs_show(&l), "a:1|b:2|c:3"));
    regfree(&re);
    pargs_list_reset(&l);
    PARGS_CHECK(pargs_colsep_compile(&re, ",", err, sizeof err) == 0);
    PARGS_CHECK(pargs_list_add(&l, ",a, b ,,", 1, &re, &next) == 0 && next == 6);
    PARGS_CHECK(!strcmp(pargs_show(&l), ":1|a:2|b:3|:4|:5"));
    PARGS_CHECK(pargs_list_add(&l, "z", 7, NULL, &next) == 0 && next == 8);
    PARGS_CHECK(!strcmp(pargs_show(&l), ":1|a:2|b:3|:4|:5|z:7"));
    char kept[] = "k";
    PARGS_CHECK(pargs_list_add_copy(&l, kept, 8, NULL, &next) == 0 && next == 9);
    kept[0] = 'x';
    PARGS_CHECK(!strcmp(pargs_show(&l), ":1|a:2|b:3|:4|:5|z:7|k:8"));
    regfree(&re);
    pargs_list_free(&l);
    PARGS_CHECK(pargs_colsep_compile(&re, "\\s+", err, sizeof err) == 0);
    regfree(&re);
    PARGS_CHECK(pargs_colsep_compile(&re, "(", err, sizeof err) != 0);

    char *words[] = {"echo", "{x}{y.}", "{xy}{z}{1}"}, **w;
    const char *names[] = {"x", "y", "xy"};
    PARGS_CHECK(pargs_header_words(words, 3, names, 3, &w) == 0);
    PARGS_CHECK(!strcmp(w[0], "echo") && !strcmp(w[1], "{1}{2.}") && !strcmp(w[2], "{3}{z}{1}"));
    for (int i = 0; i < 3; i++)
        free(w[i]);
    free(w);
    return 0;
}
#endif
