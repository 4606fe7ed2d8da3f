/*
 * origin.c - loading the helper libraries a module finds through an
 * $ORIGIN run path (see origin.h).
 *
 * The search follows glibc's order for a DT_NEEDED name without a slash:
 * the run path's entries in order, after LD_LIBRARY_PATH for a DT_RUNPATH
 * and before it for a DT_RPATH; the first directory holding the name
 * wins. Only when that directory came from an $ORIGIN entry is the file
 * loaded here; every other library is left to the loader, as before.
 *
 * What makes this work (tested on glibc 2.36): before searching for a
 * DT_NEEDED name, the loader matches it against the objects already
 * loaded, by their DT_SONAME too; RTLD_LOCAL is enough for that, and the
 * module still binds to the helper's symbols, since a dependency is in
 * the module's own lookup scope. A helper without that DT_SONAME is not
 * matched, which spits_origin_explain says.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "origin.h"

typedef struct {
    void *dl;
    char *name;       /* the DT_NEEDED name */
    char *path;       /* where the $ORIGIN entry found it */
} origin_helper_t;

struct spits_origin {
    origin_helper_t *h;
    size_t n;
};

/* The length of an $ORIGIN or ${ORIGIN} token at s, or 0. Unbraced, the
 * name must end there, as the loader requires. */
static size_t origin_token(const char *s, size_t left)
{
    if (left >= 9 && strncmp(s, "${ORIGIN}", 9) == 0)
        return 9;
    if (left >= 7 && strncmp(s, "$ORIGIN", 7) == 0 &&
        (left == 7 || s[7] == '/'))
        return 7;
    return 0;
}

/* Writes the run path entry (len bytes at e) into out with its $ORIGIN
 * tokens replaced by origin; *had says whether it had any. -1 if it does
 * not fit, or has a token and no origin is known. */
static int expand_entry(const char *e, size_t len, const char *origin,
                        char *out, size_t outlen, int *had)
{
    size_t o = 0;
    *had = 0;
    for (size_t i = 0; i < len;) {
        size_t t = origin_token(e + i, len - i);
        const char *put = t ? origin : e + i;
        size_t n = t ? (origin ? strlen(origin) : 0) : 1;
        if (t && !origin)
            return -1;
        if (o + n >= outlen)
            return -1;
        memcpy(out + o, put, n);
        o += n;
        i += t ? t : 1;
        *had |= t != 0;
    }
    if (len == 0)                 /* an empty entry is the current dir */
        out[o++] = '.';
    out[o] = '\0';
    return 0;
}

/* The first entry of the list dirs (separated by any of seps) holding
 * name: 1 and its path in out, with *via_origin; 0 if none does. */
static int search(const char *dirs, const char *seps, const char *name,
                  const char *origin, char *out, size_t outlen,
                  int *via_origin)
{
    char dir[PATH_MAX];
    for (const char *e = dirs; e;) {
        size_t len = strcspn(e, seps);
        int had;
        if (expand_entry(e, len, origin, dir, sizeof dir, &had) == 0 &&
            snprintf(out, outlen, "%s/%s", dir, name) < (int)outlen &&
            access(out, R_OK) == 0) {
            *via_origin = had;
            return 1;
        }
        e = e[len] ? e + len + 1 : NULL;
    }
    return 0;
}

/* Where the loader would find name through an $ORIGIN entry: 1 and the
 * path in out; 0 when it would look elsewhere first, or not find it. */
static int origin_path(const spits_elf_deps_t *d, const char *origin,
                       const char *name, char *out, size_t outlen)
{
    const char *llp = getenv("LD_LIBRARY_PATH");
    int via = 0;

    if (strchr(name, '/'))
        return 0;
    if (!d->is_rpath && llp && *llp &&
        search(llp, ":;", name, NULL, out, outlen, &via))
        return 0;
    return search(d->runpath, ":", name, origin, out, outlen, &via) && via;
}

static int add_helper(spits_origin_t *o, const char *name, const char *path,
                      const char *module, char *err, size_t errlen)
{
    origin_helper_t *h = realloc(o->h, (o->n + 1) * sizeof *h);
    if (!h) {
        snprintf(err, errlen, "cannot load module %s: out of memory", module);
        return -1;
    }
    o->h = h;
    h += o->n;
    dlerror();
    if (!(h->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        const char *e = dlerror();
        size_t len = strlen(path);
        if (!e)
            e = "unknown error";
        if (strncmp(e, path, len) == 0 && strncmp(e + len, ": ", 2) == 0)
            e += len + 2;         /* named already */
        snprintf(err, errlen, "cannot load module %s: its helper %s (found "
                 "through its $ORIGIN run path): %s", module, path, e);
        return -1;
    }
    h->name = strdup(name);
    h->path = strdup(path);
    o->n++;
    return 0;
}

spits_origin_t *spits_origin_load(const spits_image_t *img, char *err,
                                  size_t errlen)
{
    const spits_elf_deps_t *d = spits_image_deps(img);
    const char *origin = spits_image_origin(img);
    spits_origin_t *o = calloc(1, sizeof *o);
    char path[PATH_MAX];

    if (!o) {
        snprintf(err, errlen, "cannot load module %s: out of memory",
                 spits_image_name(img));
        return NULL;
    }
    for (char **s = d->needed; d->runpath && s && *s; s++) {
        if (origin_path(d, origin, *s, path, sizeof path) &&
            add_helper(o, *s, path, spits_image_name(img), err, errlen) != 0) {
            spits_origin_close(&o);
            return NULL;
        }
    }
    return o;
}

int spits_origin_explain(const spits_origin_t *o, const char *dlmsg,
                         char *out, size_t outlen)
{
    static const char notfound[] = ": cannot open shared object file";
    for (size_t i = 0; o && i < o->n; i++) {
        const char *name = o->h[i].name ? o->h[i].name : "";
        size_t len = strlen(name);
        if (strncmp(dlmsg, name, len) != 0 ||
            strncmp(dlmsg + len, notfound, sizeof notfound - 1) != 0)
            continue;
        snprintf(out, outlen, "its helper %s, found through its $ORIGIN run "
                 "path, has no DT_SONAME %s; relink the helper with "
                 "-Wl,-soname,%s", o->h[i].path ? o->h[i].path : name, name,
                 name);
        return 1;
    }
    return 0;
}

void spits_origin_close(spits_origin_t **op)
{
    spits_origin_t *o = *op;
    if (!o)
        return;
    for (size_t i = o->n; i-- > 0;) {
        dlclose(o->h[i].dl);
        free(o->h[i].name);
        free(o->h[i].path);
    }
    free(o->h);
    free(o);
    *op = NULL;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "origin selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto out; } } while (0)

static int expect_expand(const char *e, const char *origin, const char *want,
                         int want_had)
{
    char out[256];
    int had;
    if (expand_entry(e, strlen(e), origin, out, sizeof out, &had) != 0)
        return want == NULL ? 0 : -1;
    return want && strcmp(out, want) == 0 && had == want_had ? 0 : -1;
}

/* Where origin_path finds libx.so with run path rp (DT_RPATH if rpath)
 * and $ORIGIN = dir/b: that path without "dir/", or "" when it leaves
 * the search to the loader. */
static const char *found_in(const char *dir, const char *rp, int rpath)
{
    static char path[PATH_MAX];
    char b[PATH_MAX], name[] = "libx.so", runpath[PATH_MAX];
    char *needed[] = {name, NULL};
    spits_elf_deps_t d = {needed, runpath, rpath};
    size_t len = strlen(dir);

    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(runpath, sizeof runpath, "%s", rp);
    if (!origin_path(&d, b, name, path, sizeof path))
        return "";
    return strncmp(path, dir, len) == 0 && path[len] == '/' ? path + len + 1 : path;
}

/* $ORIGIN substitution, and the search order against files in a
 * temporary directory: DIR/{a,b,llp}/libx.so. */
int spits_origin_selftest(void)
{
    char dir[] = "/tmp/spits-origin.XXXXXX", p[PATH_MAX];
    const char *subs[] = {"a", "b", "llp"};
    const char *llp = getenv("LD_LIBRARY_PATH");
    char *saved = llp ? strdup(llp) : NULL;
    int rc = -1, made = 0;

    CHECK(expect_expand("$ORIGIN", "/m", "/m", 1) == 0);
    CHECK(expect_expand("${ORIGIN}/../lib", "/m", "/m/../lib", 1) == 0);
    CHECK(expect_expand("$ORIGIN/x/$ORIGIN", "/m", "/m/x//m", 1) == 0);
    CHECK(expect_expand("$ORIGINAL", "/m", "$ORIGINAL", 0) == 0);
    CHECK(expect_expand("/usr/lib", "/m", "/usr/lib", 0) == 0);
    CHECK(expect_expand("", "/m", ".", 0) == 0);
    CHECK(expect_expand("$ORIGIN", NULL, NULL, 0) == 0);
    CHECK(mkdtemp(dir));
    for (; made < 3; made++) {
        snprintf(p, sizeof p, "%s/%s", dir, subs[made]);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof p, "%s/%s/libx.so", dir, subs[made]);
        FILE *f = fopen(p, "w");
        CHECK(f && fclose(f) == 0);
    }
    unsetenv("LD_LIBRARY_PATH");
    CHECK(strcmp(found_in(dir, "$ORIGIN", 0), "b/libx.so") == 0);
    CHECK(strcmp(found_in(dir, "/nowhere:${ORIGIN}", 0), "b/libx.so") == 0);
    CHECK(strcmp(found_in(dir, "$ORIGIN/../a", 0), "b/../a/libx.so") == 0);
    snprintf(p, sizeof p, "%s/a:$ORIGIN", dir);
    CHECK(strcmp(found_in(dir, p, 0), "") == 0);      /* a comes first */
    snprintf(p, sizeof p, "%s/llp", dir);
    setenv("LD_LIBRARY_PATH", p, 1);
    /* LD_LIBRARY_PATH comes before a DT_RUNPATH, after a DT_RPATH. */
    CHECK(strcmp(found_in(dir, "$ORIGIN", 0), "") == 0);
    CHECK(strcmp(found_in(dir, "$ORIGIN", 1), "b/libx.so") == 0);
    rc = 0;
out:
    if (saved)
        setenv("LD_LIBRARY_PATH", saved, 1);
    else
        unsetenv("LD_LIBRARY_PATH");
    free(saved);
    while (made-- > 0) {
        snprintf(p, sizeof p, "%s/%s/libx.so", dir, subs[made]);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s", dir, subs[made]);
        rmdir(p);
    }
    rmdir(dir);
    return rc;
}
#endif /* SPITS_SELFTEST */
