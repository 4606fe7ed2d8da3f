/*
 * module.c - loading a SPITS module and calling it (see module.h).
 *
 * The module is loaded from its image (image.c), a private sealed copy,
 * so the file on disk may change or vanish while a job runs. Symbols are
 * resolved once at open time into a table of function pointers; the v2
 * and 2.0 constructors have different types, so each is kept with its own
 * type and the right one is called.
 *
 * Before dlopen the module's dynamic symbol table is read (elfcheck.c)
 * for mistakes that dlsym cannot tell apart from a missing function: the
 * spits_* functions compiled as C++ without extern "C" (their names are
 * mangled, e.g. _Z16spits_worker_runPvPKvxPFvS1_xS_ES_), and a spits_*
 * name given to a variable, which would be called as code.
 */
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash.h"
#include "metrics.h"
#include "module.h"
#include "origin.h"

typedef int (*main_fn)(int, const char **, spitsrun_t);
typedef void *(*manager_new_fn)(int, const char **, const void *, spitssize_t);
typedef void *(*manager_new20_fn)(int, const char **, const void *, spitssize_t,
                                  const void *);
typedef int (*next_task_fn)(void *, spitspush_t, spitsctx_t);
typedef void (*free_fn)(void *);
typedef void *(*worker_new_fn)(int, const char **);
typedef void *(*worker_new20_fn)(int, const char **, const void *);
typedef int (*worker_run_fn)(void *, const void *, spitssize_t, spitspush_t,
                             spitsctx_t);
typedef int (*commit_pit_fn)(void *, const void *, spitssize_t);
typedef int (*commit_job_fn)(void *, spitspush_t, spitsctx_t);
typedef const char *(*worker_error_fn)(void *);
typedef void (*worker_prepare_fn)(void);
typedef void *(*metrics_new_fn)(unsigned);
typedef void (*metrics_free_fn)(void *);

struct spits_module {
    void *dl;
    spits_image_t *img;    /* the private copy that dl was loaded from */
    spits_origin_t *helpers;   /* what its $ORIGIN run path found */
    int v20;
    main_fn main;
    void *manager_new;     /* manager_new_fn or manager_new20_fn */
    next_task_fn next_task;
    free_fn manager_free;
    void *worker_new;      /* worker_new_fn or worker_new20_fn */
    worker_run_fn worker_run;
    free_fn worker_free;
    worker_error_fn worker_error;   /* optional: why a run failed */
    worker_prepare_fn worker_prepare;   /* optional: a worker process's start */
    void *committer_new;   /* same type as manager_new */
    commit_pit_fn commit_pit;
    commit_job_fn commit_job;
    free_fn committer_free;
    metrics_new_fn metrics_new;
    metrics_free_fn metrics_free;
    spits_met_api_t met;   /* optional: reading metrics back */
};

#define LEGACY_MSG "%s: legacy byte-array SPITS module (exports " \
    "spits_setup_commit); rebuild it against the v2 interface"
#define NOTSPITS_MSG "%s: not a SPITS module (no spits_* symbols)"

/* The metrics buffer size the SPITS 2.0 runtime used. */
#define SPITS_METRICS_BUFFER 10

/* Every function a module may export, the required ones first (in the
 * order that messages name them). */
static const char *mod_fn[] = {
    "spits_job_manager_new", "spits_job_manager_next_task",
    "spits_worker_new", "spits_worker_run", "spits_committer_new",
    "spits_committer_commit_pit", "spits_committer_commit_job",
    "spits_main", "spits_job_manager_finalize", "spits_worker_finalize",
    "spits_worker_error", "spits_worker_prepare", "spits_committer_finalize", "spits_metrics_new", "spits_metrics_delete",
    "spits_get_metrics_list", "spits_get_metrics_last_values",
    "spits_free_ptr", "spits_get_metrics_history", "spits_free_metric_list",
    "spits_free_metrics_history"};
#define MOD_NREQ 7
#define MOD_NFN (sizeof mod_fn / sizeof *mod_fn)

/* What the dynamic symbol table says of each of mod_fn. */
typedef struct {
    unsigned char exported[MOD_NFN];   /* under its C name */
    unsigned char data[MOD_NFN];       /* ... as a variable, not code */
    unsigned char mangled[MOD_NFN];    /* inside a C++ name (_Z...) */
} mod_syms_t;

static void *sym(void *dl, const char *name)
{
    return dlsym(dl, name);
}

/* Whether the C++ name z holds the identifier name: as a mangled
 * <source-name>, its length in decimal right before it. */
static int mangled_has(const char *z, const char *name)
{
    size_t len = strlen(name);
    for (const char *at = strstr(z, name); at; at = strstr(at + 1, name)) {
        const char *d = at;
        size_t n = 0, scale = 1;
        while (d > z && d[-1] >= '0' && d[-1] <= '9' && scale <= 1000) {
            n += (size_t)(*--d - '0') * scale;
            scale *= 10;
        }
        if (d < at && n == len)
            return 1;
    }
    return 0;
}

static int mod_symbol(void *arg, const char *name, unsigned type)
{
    mod_syms_t *ms = arg;
    int cxx = strncmp(name, "_Z", 2) == 0;
    if (!cxx && strncmp(name, "spits_", 6) != 0)
        return 0;
    for (size_t i = 0; i < MOD_NFN; i++) {
        if (cxx) {
            ms->mangled[i] |= mangled_has(name, mod_fn[i]);
        } else if (strcmp(name, mod_fn[i]) == 0) {
            ms->exported[i] = 1;
            ms->data[i] = type == STT_OBJECT || type == STT_TLS ||
                          type == STT_COMMON;
        }
    }
    return 0;
}

/* Reads the sealed copy's dynamic symbols into ms (all zero when it has
 * none to read: then dlopen and dlsym tell what they can). */
static void mod_symbols(const spits_image_t *img, mod_syms_t *ms)
{
    int fd = spits_image_fd(img);
    struct stat st;
    char why[200];
    void *p;

    memset(ms, 0, sizeof *ms);
    if (fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0))
            == MAP_FAILED)
        return;
    if (spits_elf_symbols(p, (size_t)st.st_size, mod_symbol, ms, why,
                          sizeof why) != SPITS_ELF_OK)
        memset(ms, 0, sizeof *ms);   /* (image.c checked it already) */
    munmap(p, (size_t)st.st_size);
}

/* The functions of mod_fn under C++ names alone, the first two named in
 * out ("A", "A, B" or "A, B, ..."); 0 if there is none. */
static int mod_cxx_names(const mod_syms_t *ms, char *out, size_t outlen)
{
    int k = 0;
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < MOD_NFN; i++) {
        if (!ms->mangled[i] || ms->exported[i])
            continue;
        if (k < 2 && o < outlen)
            o += (size_t)snprintf(out + o, outlen - o, "%s%s", k ? ", " : "",
                                  mod_fn[i]);
        else if (k == 2 && o < outlen)
            o += (size_t)snprintf(out + o, outlen - o, ", ...");
        k++;
    }
    return k;
}

/* dlerror's text with the memfd's path put back to the user's: a message
 * about /proc/PID/fd/N would name nothing the user knows. */
static void dl_message(const char *fdpath, const char *path, char *out,
                       size_t outlen)
{
    const char *e = dlerror(), *at;
    size_t len = strlen(fdpath), o = 0;

    if (!e)
        e = "unknown error";
    if (strncmp(e, fdpath, len) == 0 && strncmp(e + len, ": ", 2) == 0)
        e += len + 2;     /* the caller names the file already */
    out[0] = '\0';
    while ((at = strstr(e, fdpath)) && o < outlen) {
        o += (size_t)snprintf(out + o, outlen - o, "%.*s%s", (int)(at - e), e, path);
        e = at + len;
    }
    if (o < outlen)
        snprintf(out + o, outlen - o, "%s", e);
}

/* Refusals the symbol table allows before dlopen: a legacy module or a
 * file with no spits_* symbol fails to load for other reasons too (a
 * library of its own, unresolved symbols), and what matters is this.
 * C++ names are looked for where a required C name is missing; a
 * variable under a function's name is refused, as calling it would
 * crash. */
static int abi_check(const spits_image_t *img, char *err, size_t errlen)
{
    const char *path = spits_image_name(img);
    spits_abi_t abi = spits_image_abi(img);
    mod_syms_t ms;
    char names[160];
    int missing = 0;

    if (abi == SPITS_ABI_LEGACY) {
        snprintf(err, errlen, LEGACY_MSG, path);
        return -1;
    }
    mod_symbols(img, &ms);
    for (size_t i = 0; i < MOD_NREQ; i++)
        missing |= !ms.exported[i];
    if ((abi == SPITS_ABI_NONE || missing) &&
        mod_cxx_names(&ms, names, sizeof names) > 0) {
        snprintf(err, errlen, "%s: its spits_* functions have C++ (mangled) "
                 "names (%s): declare them extern \"C\"", path, names);
        return -1;
    }
    if (abi == SPITS_ABI_NONE) {
        snprintf(err, errlen, NOTSPITS_MSG, path);
        return -1;
    }
    for (size_t i = 0; i < MOD_NFN; i++)
        if (ms.data[i]) {
            snprintf(err, errlen, "%s: %s is a variable (an ELF data "
                     "symbol), not a function: define it as the function "
                     "spits.h declares", path, mod_fn[i]);
            return -1;
        }
    return 0;
}

/* Names every required function that dlsym cannot find in err
 * ("missing required symbol A", "... symbols A, B and C"): -1 if there
 * is one, else 0. *found: how many were found. */
static int missing_check(void *dl, const char *path, size_t *found,
                         char *err, size_t errlen)
{
    const char *miss[MOD_NREQ];
    size_t nmiss = 0, o;

    for (size_t i = 0; i < MOD_NREQ; i++)
        if (!sym(dl, mod_fn[i]))
            miss[nmiss++] = mod_fn[i];
    *found = MOD_NREQ - nmiss;
    if (nmiss == 0)
        return 0;
    o = (size_t)snprintf(err, errlen, "%s: missing required symbol%s", path,
                         nmiss > 1 ? "s" : "");
    for (size_t i = 0; i < nmiss && o < errlen; i++)
        o += (size_t)snprintf(err + o, errlen - o, "%s%s",
                              i == 0 ? " " : i + 1 < nmiss ? ", " : " and ",
                              miss[i]);
    return -1;
}

/* dlopens the image's private copy, never the user's file, after the
 * helpers its $ORIGIN run path finds (origin.c): from /proc/PID/fd the
 * loader itself would look for them in the wrong place. The copy is named
 * by this process's pid, not /proc/self: a debugger reads the module's
 * symbols from the name the loader records, and /proc/self/fd/N in gdb's
 * own process is one of gdb's files (a pipe, where it blocks for good). */
static void *image_dlopen(const spits_image_t *img, spits_origin_t **helpers,
                          char *err, size_t errlen)
{
    char fdpath[64], msg[768], why[768];
    const char *path = spits_image_name(img);

    if (abi_check(img, err, errlen) != 0 ||
        !(*helpers = spits_origin_load(img, err, errlen)))
        return NULL;
    snprintf(fdpath, sizeof fdpath, "/proc/%ld/fd/%d", (long)getpid(),
             spits_image_fd(img));
    dlerror();
    void *dl = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        dl_message(fdpath, path, msg, sizeof msg);
        snprintf(err, errlen, "cannot load module %s: %s", path,
                 spits_origin_explain(*helpers, msg, why, sizeof why) ? why : msg);
        spits_origin_close(helpers);
    }
    return dl;
}

spits_module_t *spits_module_open(const char *path, char *err, size_t errlen)
{
    spits_image_t *img = spits_image_read(path, err, errlen);
    return img ? spits_module_load(&img, err, errlen) : NULL;
}

spits_module_t *spits_module_load(spits_image_t **imgp, char *err,
                                  size_t errlen)
{
    spits_image_t *img = *imgp;
    const char *path = spits_image_name(img);
    spits_origin_t *helpers = NULL;
    void *dl = image_dlopen(img, &helpers, err, errlen);

    *imgp = NULL;
    if (!dl) {
        spits_image_free(&img);
        return NULL;
    }
    if (sym(dl, "spits_setup_commit")) {
        snprintf(err, errlen, LEGACY_MSG, path);
        goto fail;
    }
    size_t found;
    if (missing_check(dl, path, &found, err, errlen) != 0) {
        if (found == 0 && !sym(dl, "spits_main"))
            snprintf(err, errlen, NOTSPITS_MSG, path);
        goto fail;
    }
    void *mn = sym(dl, "spits_metrics_new"), *md = sym(dl, "spits_metrics_delete");
    if (!mn != !md) {
        snprintf(err, errlen, "%s: missing required symbol %s", path,
                 mn ? "spits_metrics_delete" : "spits_metrics_new");
        goto fail;
    }

    spits_module_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    m->dl = dl;
    m->img = img;
    m->helpers = helpers;
    m->v20 = mn != NULL;
    m->metrics_new = (metrics_new_fn)mn;
    m->metrics_free = (metrics_free_fn)md;
    m->met.list = (spits_met_list_fn)sym(dl, "spits_get_metrics_list");
    m->met.last = (spits_met_last_fn)sym(dl, "spits_get_metrics_last_values");
    m->met.free_ptr = (spits_met_free_fn)sym(dl, "spits_free_ptr");
    m->met.history = (spits_met_history_fn)sym(dl, "spits_get_metrics_history");
    m->met.free_list = (spits_met_free_fn)sym(dl, "spits_free_metric_list");
    m->met.free_history = (spits_met_free_history_fn)sym(dl,
                                                "spits_free_metrics_history");
    m->main = (main_fn)sym(dl, "spits_main");
    m->manager_new = sym(dl, "spits_job_manager_new");
    m->next_task = (next_task_fn)sym(dl, "spits_job_manager_next_task");
    m->manager_free = (free_fn)sym(dl, "spits_job_manager_finalize");
    m->worker_new = sym(dl, "spits_worker_new");
    m->worker_run = (worker_run_fn)sym(dl, "spits_worker_run");
    m->worker_free = (free_fn)sym(dl, "spits_worker_finalize");
    m->worker_error = (worker_error_fn)sym(dl, "spits_worker_error");
    m->worker_prepare = (worker_prepare_fn)sym(dl, "spits_worker_prepare");
    m->committer_new = sym(dl, "spits_committer_new");
    m->commit_pit = (commit_pit_fn)sym(dl, "spits_committer_commit_pit");
    m->commit_job = (commit_job_fn)sym(dl, "spits_committer_commit_job");
    m->committer_free = (free_fn)sym(dl, "spits_committer_finalize");
    /* (a crash report names where in this file it was) */
    void *any = m->worker_run ? (void *)m->worker_run : sym(dl, "spits_main");
    spits_crash_module(path, any);
    return m;
fail:
    dlclose(dl);
    spits_origin_close(&helpers);
    spits_image_free(&img);
    return NULL;
}

void spits_module_close(spits_module_t **mp)
{
    spits_module_t *m = *mp;
    if (!m)
        return;
    /* Modules may have registered thread-local destructors or atexit
     * handlers; unloading them before exit is a classic crash, so the
     * shared object stays mapped. Its helpers stay with it (they are its
     * dependencies): their dlclose only drops the reference taken here. */
    spits_origin_close(&m->helpers);
    spits_image_free(&m->img);
    free(m);
    *mp = NULL;
}

const char *spits_module_path(const spits_module_t *m)
{
    return spits_image_name(m->img);
}
const char *spits_module_origin(const spits_module_t *m)
{
    return spits_image_origin(m->img);
}
const char *spits_module_hash(const spits_module_t *m)
{
    return spits_image_hash(m->img);
}
int spits_module_fd(const spits_module_t *m) { return spits_image_fd(m->img); }
int spits_module_is_v20(const spits_module_t *m) { return m->v20; }
int spits_module_has_main(const spits_module_t *m) { return m->main != NULL; }

/* Every call into the module is marked with the function's name, so that
 * a crash in it is named (crash.h): two thread-local stores a call. */
int spits_module_main(spits_module_t *m, int argc, const char **argv,
                      spitsrun_t run)
{
    const char *was = spits_crash_enter("spits_main");
    int rc = m->main(argc, argv, run);
    spits_crash_leave(was);
    return rc;
}

static void inst_metrics(spits_module_t *m, spits_inst_t *in)
{
    in->obj = NULL;
    in->metrics = NULL;
    if (m->v20) {
        const char *was = spits_crash_enter("spits_metrics_new");
        in->metrics = m->metrics_new(SPITS_METRICS_BUFFER);
        spits_crash_leave(was);
    }
}

/* Finalizes the instance (fin, named fname), then releases its metrics
 * object. */
static void inst_free(spits_module_t *m, spits_inst_t *in, free_fn fin,
                      const char *fname)
{
    if (in->obj && fin) {
        const char *was = spits_crash_enter(fname);
        fin(in->obj);
        spits_crash_leave(was);
    }
    if (in->metrics) {
        const char *was = spits_crash_enter("spits_metrics_delete");
        m->metrics_free(in->metrics);
        spits_crash_leave(was);
    }
    in->obj = in->metrics = NULL;
}

/* A constructor that returned NULL still had its metrics object made. */
static int inst_check(spits_module_t *m, spits_inst_t *in)
{
    if (in->obj)
        return 0;
    inst_free(m, in, NULL, NULL);
    return -1;
}

int spits_module_manager_new(spits_module_t *m, spits_inst_t *in, int argc,
                        const char **argv, const void *jobinfo,
                        spitssize_t jobinfosz)
{
    inst_metrics(m, in);
    const char *was = spits_crash_enter("spits_job_manager_new");
    in->obj = m->v20 ? ((manager_new20_fn)m->manager_new)(argc, argv, jobinfo, jobinfosz,
                                                in->metrics)
                     : ((manager_new_fn)m->manager_new)(argc, argv, jobinfo, jobinfosz);
    spits_crash_leave(was);
    return inst_check(m, in);
}

int spits_module_next_task(spits_module_t *m, spits_inst_t *in,
                         spitspush_t push, spitsctx_t ctx)
{
    const char *was = spits_crash_enter("spits_job_manager_next_task");
    int rc = m->next_task(in->obj, push, ctx);
    spits_crash_leave(was);
    return rc;
}

void spits_module_manager_free(spits_module_t *m, spits_inst_t *in)
{
    inst_free(m, in, m->manager_free, "spits_job_manager_finalize");
}

int spits_module_worker_new(spits_module_t *m, spits_inst_t *in, int argc,
                            const char **argv)
{
    inst_metrics(m, in);
    const char *was = spits_crash_enter("spits_worker_new");
    in->obj = m->v20 ? ((worker_new20_fn)m->worker_new)(argc, argv, in->metrics)
                     : ((worker_new_fn)m->worker_new)(argc, argv);
    spits_crash_leave(was);
    return inst_check(m, in);
}

int spits_module_worker_run(spits_module_t *m, spits_inst_t *in,
                            const void *task, spitssize_t tasksz,
                            spitspush_t push, spitsctx_t ctx)
{
    const char *was = spits_crash_enter("spits_worker_run");
    int rc = m->worker_run(in->obj, task, tasksz, push, ctx);
    spits_crash_leave(was);
    return rc;
}

const char *spits_module_worker_error(spits_module_t *m, spits_inst_t *in)
{
    if (!m->worker_error || !in->obj)
        return NULL;
    const char *was = spits_crash_enter("spits_worker_error");
    const char *why = m->worker_error(in->obj);
    spits_crash_leave(was);
    return why && why[0] ? why : NULL;
}

void spits_module_worker_prepare(spits_module_t *m)
{
    if (!m->worker_prepare)
        return;
    const char *was = spits_crash_enter("spits_worker_prepare");
    m->worker_prepare();
    spits_crash_leave(was);
}

void spits_module_worker_free(spits_module_t *m, spits_inst_t *in)
{
    inst_free(m, in, m->worker_free, "spits_worker_finalize");
}

int spits_module_committer_new(spits_module_t *m, spits_inst_t *in, int argc,
                        const char **argv, const void *jobinfo,
                        spitssize_t jobinfosz)
{
    inst_metrics(m, in);
    const char *was = spits_crash_enter("spits_committer_new");
    in->obj = m->v20 ? ((manager_new20_fn)m->committer_new)(argc, argv, jobinfo, jobinfosz,
                                                in->metrics)
                     : ((manager_new_fn)m->committer_new)(argc, argv, jobinfo, jobinfosz);
    spits_crash_leave(was);
    return inst_check(m, in);
}

int spits_module_commit_pit(spits_module_t *m, spits_inst_t *in,
                           const void *result, spitssize_t resultsz)
{
    const char *was = spits_crash_enter("spits_committer_commit_pit");
    int rc = m->commit_pit(in->obj, result, resultsz);
    spits_crash_leave(was);
    return rc;
}

int spits_module_commit_job(spits_module_t *m, spits_inst_t *in,
                        spitspush_t push, spitsctx_t ctx)
{
    const char *was = spits_crash_enter("spits_committer_commit_job");
    int rc = m->commit_job(in->obj, push, ctx);
    spits_crash_leave(was);
    return rc;
}

json_t *spits_module_metrics_json(spits_module_t *m, const spits_inst_t *in)
{
    if (!in->metrics)
        return NULL;
    /* (the module's own functions read its metrics) */
    const char *was = spits_crash_enter("spits_get_metrics_list");
    json_t *j = spits_metrics_json(&m->met, in->metrics);
    spits_crash_leave(was);
    return j;
}

void spits_module_committer_free(spits_module_t *m, spits_inst_t *in)
{
    inst_free(m, in, m->committer_free, "spits_committer_finalize");
}
