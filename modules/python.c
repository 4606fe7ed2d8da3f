/*
 * python.c - the Python module: a SPITS job written in Python
 * (docs/python.md).
 *
 * The job is a .py file defining generate(args), execute(task) and
 * commit(result), and optionally init(args) (once per worker) and
 * finish() (after the last commit). spits-jm, spits-tm and spits-run
 * load this module for a .py module path (image.c: the job's hash then
 * covers both files), so argv[0] is the .py file and argv[1..] its
 * arguments. Named as a module itself (spits-jm python.so JOB.py ARGS),
 * argv[1] is the file.
 *
 * One interpreter per process, started by the first role made and never
 * finalized. Every call takes the GIL, so the JM's generator and
 * committer threads and a TM's worker threads may all call in; worker
 * threads then run one at a time, which is why .py jobs get process
 * workers (--isolate).
 *
 * Tasks and results are one tag byte and a body: 'b' and a bytes
 * object's own bytes (bytes pass through unchanged), or 'p' and a pickle
 * of any other object.
 *
 * Errors name the exception's type, message and innermost frame
 * (FILE:LINE) on stderr in one line. One in execute fails the task
 * (worker_run returns 1); in generate it ends the phase (next_task
 * returns -1); in commit it ends the job as a module's exit() does, so
 * the journal, where the result already is, lets --resume commit it
 * again. SystemExit anywhere is exit() with its code.
 *
 * A worker process (spits-tm --isolate) starts its interpreter early,
 * through spits_worker_prepare, before its TM says HELLO; the job file
 * runs at its first spits_worker_new, which brings the phase's argv.
 *
 * Phases: a job file that defines spits_main(args, run) calls run(args)
 * once a phase, as a C module's spits_main calls its runner; run returns
 * the value finish() returned (the phase's final result, encoded as a
 * task is). This module always exports spits_main, and without one in
 * the file runs the one phase itself.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spits.h"

#define PY_TAG_BYTES 'b'
#define PY_TAG_PICKLE 'p'
#define PY_MODULE "spits_job"     /* what the job file runs as */

/* The process's interpreter and job file, set once under py_lock by the
 * first role made; read-only after (every use holds the GIL too). */
static pthread_mutex_t py_lock = PTHREAD_MUTEX_INITIALIZER;
static char *py_script;           /* the job file loaded, or NULL */
static PyObject *py_dumps, *py_loads;
static PyObject *py_fn_generate, *py_fn_execute, *py_fn_commit;
static PyObject *py_fn_init, *py_fn_finish, *py_fn_main;   /* optional */

/* A growing buffer for one instance's encoded tasks or results. */
typedef struct {
    char *p;
    size_t cap;
} py_buf_t;

typedef struct { PyObject *it; py_buf_t buf; } py_gen_t;
/* why: the last failed run's exception, for spits_worker_error */
typedef struct { py_buf_t buf; char why[1024]; } py_worker_t;
typedef struct { py_buf_t buf; } py_commit_t;

/* The job file and where its own arguments start in argv. */
static const char *py_job_file(int argc, const char **argv, int *first)
{
    size_t n = argc > 0 && argv[0] ? strlen(argv[0]) : 0;
    if (n > 3 && strcmp(argv[0] + n - 3, ".py") == 0) {
        *first = 1;
        return argv[0];
    }
    *first = 2;
    return argc > 1 ? argv[1] : NULL;
}

static void py_flush(void)
{
    const char *names[] = {"stdout", "stderr"};
    for (size_t i = 0; i < 2; i++) {
        PyObject *f = PySys_GetObject(names[i]), *r;   /* borrowed */
        if (f && f != Py_None && (r = PyObject_CallMethod(f, "flush", NULL)))
            Py_DECREF(r);
        PyErr_Clear();
    }
    fflush(NULL);
}

/* str(o) into out on one line (newlines become spaces). */
static void py_str(PyObject *o, char *out, size_t outlen)
{
    PyObject *s = o ? PyObject_Str(o) : NULL;
    const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(out, outlen, "%s", u ? u : "?");
    Py_XDECREF(s);
    PyErr_Clear();
    for (char *c = out; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

/* SystemExit's code as exit() takes it (its message to stderr). */
static int py_exit_code(PyObject *val)
{
    PyObject *code = val ? PyObject_GetAttrString(val, "code") : NULL;
    int rc = 1;
    PyErr_Clear();
    if (code == Py_None) {
        rc = 0;
    } else if (!code) {
        rc = 1;
    } else if (PyLong_Check(code)) {
        rc = (int)PyLong_AsLong(code);
        PyErr_Clear();
    } else {
        char msg[512];
        py_str(code, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    }
    Py_XDECREF(code);
    return rc;
}

/* The pending exception as "FILE:LINE: TYPE: MESSAGE" (the innermost
 * frame; a SyntaxError's own place), cleared. SystemExit ends the
 * process as exit() would. */
static void py_describe(char *out, size_t outlen)
{
    PyObject *type, *val, *tb;
    char msg[1024], where[600] = "";

    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    if (type && PyErr_GivenExceptionMatches(type, PyExc_SystemExit)) {
        int rc = py_exit_code(val);
        py_flush();
        exit(rc);
    }
    const char *tname = type ? ((PyTypeObject *)type)->tp_name : "Exception";
    if (type && PyErr_GivenExceptionMatches(type, PyExc_SyntaxError)) {
        PyObject *file = PyObject_GetAttrString(val, "filename");
        PyObject *line = PyObject_GetAttrString(val, "lineno");
        PyObject *m = PyObject_GetAttrString(val, "msg");
        PyErr_Clear();
        py_str(file, where, sizeof where);
        py_str(m ? m : val, msg, sizeof msg);
        size_t w = strlen(where);
        snprintf(where + w, sizeof where - w, ":%ld",
                 line && PyLong_Check(line) ? PyLong_AsLong(line) : 0L);
        Py_XDECREF(file);
        Py_XDECREF(line);
        Py_XDECREF(m);
    } else {
        py_str(val, msg, sizeof msg);
        PyTracebackObject *t = (PyTracebackObject *)tb;
        while (t && t->tb_next)
            t = t->tb_next;
        if (t) {
            PyCodeObject *code = PyFrame_GetCode(t->tb_frame);
            char file[512];
            py_str(code->co_filename, file, sizeof file);
            snprintf(where, sizeof where, "%s:%d", file, t->tb_lineno);
            Py_DECREF(code);
        }
    }
    if (where[0])
        snprintf(out, outlen, "%s: %s: %s", where, tname, msg);
    else
        snprintf(out, outlen, "%s: %s", tname, msg);
    Py_XDECREF(type);
    Py_XDECREF(val);
    Py_XDECREF(tb);
}

/* Says what failed in fn, on stderr in one line, and keeps it in d. */
static void py_report_into(const char *fn, char *d, size_t dlen)
{
    py_describe(d, dlen);
    py_flush();
    fprintf(stderr, "python: %s failed: %s\n", fn, d);
    fflush(stderr);
}

static void py_report(const char *fn)
{
    char d[2048];
    py_report_into(fn, d, sizeof d);
}

/* fn of the job file (NULL, and no error, if it has none). */
static PyObject *py_fn(PyObject *ns, const char *name)
{
    PyObject *f = PyDict_GetItemString(ns, name);   /* borrowed */
    if (!f || !PyCallable_Check(f))
        return NULL;
    Py_INCREF(f);
    return f;
}

/* Runs the job file as module PY_MODULE, registered in sys.modules so
 * that classes it defines pickle and unpickle the same in every process;
 * not as __main__, so that its `if __name__ == "__main__":` part (a way
 * to run it by hand) does not run. GIL held. 0, or -1 after saying why. */
static int py_load_file(const char *path, int argc, const char **argv)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "python: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    PyObject *code = NULL, *r = NULL, *pickle = NULL;
    char *src = NULL;
    size_t n = 0, cap = 0, got;
    do {
        char *p = n + 65536 > cap ? realloc(src, cap = n + 65537) : src;
        if (!p) {
            free(src);
            fclose(f);
            fprintf(stderr, "python: cannot read %s: out of memory\n", path);
            return -1;
        }
        src = p;
        n += got = fread(src + n, 1, 65536, f);
    } while (got > 0);
    fclose(f);
    src[n] = '\0';

    /* sys.argv as "python JOB.py ARGS" would have it; the file's
     * directory first on sys.path, for its own imports. */
    PyObject *sargv = PyList_New(0), *sys_path = PySys_GetObject("path");
    for (int i = 0; sargv && i < argc; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(argv[i]);
        if (!s || PyList_Append(sargv, s) != 0)
            Py_CLEAR(sargv);
        Py_XDECREF(s);
    }
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (dir && sys_path && PyList_Check(sys_path)) {
        if (slash)
            *slash = '\0';
        PyObject *d = PyUnicode_DecodeFSDefault(slash ? (*dir ? dir : "/") : ".");
        if (d)
            PyList_Insert(sys_path, 0, d);
        Py_XDECREF(d);
    }
    free(dir);
    if (sargv)
        PySys_SetObject("argv", sargv);
    Py_XDECREF(sargv);

    PyObject *mod = PyImport_AddModule(PY_MODULE);   /* borrowed */
    PyObject *ns = mod ? PyModule_GetDict(mod) : NULL;
    PyObject *file = PyUnicode_DecodeFSDefault(path);
    if (file && ns && (PyDict_SetItemString(ns, "__file__", file) != 0 ||
                       PyDict_SetItemString(ns, "__builtins__",
                                            PyEval_GetBuiltins()) != 0))
        ns = NULL;
    int bad = !ns || !file ||
        !(code = Py_CompileStringObject(src, file, Py_file_input, NULL, -1)) ||
        !(r = PyEval_EvalCode(code, ns, ns));
    free(src);
    if (bad) {
        Py_XDECREF(file);
        Py_XDECREF(code);
        py_report("loading the job file");
        return -1;
    }
    Py_DECREF(r);
    Py_DECREF(code);
    Py_DECREF(file);
    const char *missing = NULL;
    py_fn_generate = py_fn(ns, "generate");
    py_fn_execute = py_fn(ns, "execute");
    py_fn_commit = py_fn(ns, "commit");
    py_fn_init = py_fn(ns, "init");
    py_fn_finish = py_fn(ns, "finish");
    py_fn_main = py_fn(ns, "spits_main");
    if (!py_fn_generate)
        missing = "generate";
    else if (!py_fn_execute)
        missing = "execute";
    else if (!py_fn_commit)
        missing = "commit";
    if (missing) {
        fprintf(stderr, "python: %s defines no function %s(); a job file "
                "defines generate(args), execute(task) and commit(result)\n",
                path, missing);
        return -1;
    }
    if (!(pickle = PyImport_ImportModule("pickle")) ||
        !(py_dumps = PyObject_GetAttrString(pickle, "dumps")) ||
        !(py_loads = PyObject_GetAttrString(pickle, "loads"))) {
        Py_XDECREF(pickle);
        py_report("importing pickle");
        return -1;
    }
    Py_DECREF(pickle);
    return 0;
}

/* Why the interpreter could not start ("": it did, or was not tried):
 * said once, as it failed; later roles fail quietly. Under py_lock. */
static char py_start_failed[256];

/* The interpreter, once a process, without the job file (which needs
 * the role's argv): spits_worker_prepare starts it ahead of the first
 * task. Caller holds py_lock. 0, or -1 after saying why. */
static int py_start(void)
{
    if (py_start_failed[0])
        return -1;
    if (!Py_IsInitialized()) {
        /* Extension modules (numpy's, for one) are not linked against
         * libpython and need its symbols global; this module was loaded
         * with RTLD_LOCAL. */
        Dl_info di;
        if (dladdr((void *)Py_InitializeFromConfig, &di) && di.dli_fname)
            dlopen(di.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
        /* Signals and the locale stay the runtime's; UTF-8 mode makes
         * files, arguments and print() UTF-8 whatever the locale. */
        PyPreConfig pre;
        PyConfig cfg;
        PyPreConfig_InitPythonConfig(&pre);
        pre.configure_locale = 0;
        pre.utf8_mode = 1;
        PyConfig_InitPythonConfig(&cfg);
        cfg.install_signal_handlers = 0;
        cfg.parse_argv = 0;
        PyStatus st = Py_PreInitialize(&pre);
        if (!PyStatus_Exception(st))
            st = Py_InitializeFromConfig(&cfg);
        PyConfig_Clear(&cfg);
        if (PyStatus_Exception(st)) {
            fprintf(stderr, "python: cannot start the interpreter: %s\n",
                    st.err_msg ? st.err_msg : "unknown error");
            snprintf(py_start_failed, sizeof py_start_failed, "%s",
                     st.err_msg ? st.err_msg : "unknown error");
            return -1;
        }
        PyEval_SaveThread();
    }
    return 0;
}

/* The interpreter and the job file, once a process. 0, or -1 after
 * saying why. */
static int py_setup(int argc, const char **argv)
{
    int first, rc = 0;
    const char *path = py_job_file(argc, argv, &first);

    if (!path) {
        fprintf(stderr, "python: no job file: give JOB.py (spits-run JOB.py "
                "ARGS)\n");
        return -1;
    }
    pthread_mutex_lock(&py_lock);
    if (py_script) {
        if (strcmp(py_script, path) != 0) {
            fprintf(stderr, "python: this process runs %s already, not %s\n",
                    py_script, path);
            rc = -1;
        }
        pthread_mutex_unlock(&py_lock);
        return rc;
    }
    if (py_start() != 0) {
        pthread_mutex_unlock(&py_lock);
        return -1;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    rc = py_load_file(path, argc - (first - 1), argv + (first - 1));
    PyGILState_Release(g);
    if (rc == 0 && !(py_script = strdup(path)))
        rc = -1;
    pthread_mutex_unlock(&py_lock);
    return rc;
}

/* The job's own arguments as a list of str. */
static PyObject *py_args(int argc, const char **argv)
{
    int first;
    py_job_file(argc, argv, &first);
    PyObject *l = PyList_New(0);
    for (int i = first; l && i < argc; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(argv[i]);
        if (!s || PyList_Append(l, s) != 0)
            Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}

/* o as tag and body in b: 0, or -1 with a Python error set. */
static int py_encode(PyObject *o, py_buf_t *b, size_t *len)
{
    PyObject *pk = NULL;
    char tag = PY_TAG_BYTES;
    if (!PyBytes_Check(o)) {
        if (!(pk = PyObject_CallFunction(py_dumps, "Oi", o, 5)))
            return -1;
        o = pk;
        tag = PY_TAG_PICKLE;
    }
    size_t n = (size_t)PyBytes_GET_SIZE(o) + 1;
    if (n > b->cap) {
        size_t cap = n < 256 ? 256 : n + n / 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            Py_XDECREF(pk);
            PyErr_NoMemory();
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    b->p[0] = tag;
    memcpy(b->p + 1, PyBytes_AS_STRING(o), n - 1);
    *len = n;
    Py_XDECREF(pk);
    return 0;
}

/* What py_encode made, back as an object; NULL with a Python error set. */
static PyObject *py_decode(const void *data, spitssize_t size)
{
    const char *p = data;
    if (size < 1 || (p[0] != PY_TAG_BYTES && p[0] != PY_TAG_PICKLE)) {
        PyErr_Format(PyExc_ValueError, "not a Python job's task or result "
                     "(%lld bytes, first byte %d)", (long long)size,
                     size > 0 ? (unsigned char)p[0] : -1);
        return NULL;
    }
    if (p[0] == PY_TAG_BYTES)
        return PyBytes_FromStringAndSize(p + 1, (Py_ssize_t)size - 1);
    PyObject *mv = PyMemoryView_FromMemory((char *)p + 1,
                                           (Py_ssize_t)size - 1, PyBUF_READ);
    PyObject *o = mv ? PyObject_CallOneArg(py_loads, mv) : NULL;
    Py_XDECREF(mv);
    return o;
}

void *spits_job_manager_new(int argc, const char *argv[], const void *ji,
                            spitssize_t jisz)
{
    (void)ji; (void)jisz;
    py_gen_t *gen = calloc(1, sizeof *gen);
    if (!gen || py_setup(argc, argv) != 0) {
        free(gen);
        return NULL;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *args = py_args(argc, argv), *r = NULL;
    if (!args || !(r = PyObject_CallOneArg(py_fn_generate, args)) ||
        !(gen->it = PyObject_GetIter(r))) {
        py_report("generate");
        free(gen);
        gen = NULL;
    }
    Py_XDECREF(r);
    Py_XDECREF(args);
    PyGILState_Release(g);
    return gen;
}

int spits_job_manager_next_task(void *jm, spitspush_t push, spitsctx_t ctx)
{
    py_gen_t *gen = jm;
    size_t n;
    int rc = 1;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *task = PyIter_Next(gen->it);
    if (!task) {
        rc = PyErr_Occurred() ? -1 : 0;
    } else if (py_encode(task, &gen->buf, &n) != 0) {
        rc = -1;
    } else {
        push(gen->buf.p, (spitssize_t)n, ctx);
    }
    if (rc < 0)
        py_report("generate");
    Py_XDECREF(task);
    PyGILState_Release(g);
    return rc;
}

void spits_job_manager_finalize(void *jm)
{
    py_gen_t *gen = jm;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(gen->it);
    PyGILState_Release(g);
    free(gen->buf.p);
    free(gen);
}

/* A worker process starts its interpreter, and imports pickle, before
 * the TM joins the job (isolate.c); the job file runs with the first
 * worker's argv, which only the job manager's WELCOME tells. */
void spits_worker_prepare(void)
{
    pthread_mutex_lock(&py_lock);
    if (py_start() == 0) {
        PyGILState_STATE g = PyGILState_Ensure();
        PyObject *pickle = PyImport_ImportModule("pickle");
        if (!pickle)
            PyErr_Clear();   /* (py_load_file imports it again, and says why) */
        Py_XDECREF(pickle);
        PyGILState_Release(g);
    }
    pthread_mutex_unlock(&py_lock);
}

void *spits_worker_new(int argc, const char *argv[])
{
    py_worker_t *w = calloc(1, sizeof *w);
    if (!w || py_setup(argc, argv) != 0) {
        free(w);
        return NULL;
    }
    if (!py_fn_init)
        return w;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *args = py_args(argc, argv), *r = NULL;
    if (!args || !(r = PyObject_CallOneArg(py_fn_init, args))) {
        py_report("init");
        free(w);
        w = NULL;
    }
    Py_XDECREF(r);
    Py_XDECREF(args);
    PyGILState_Release(g);
    return w;
}

int spits_worker_run(void *wp, const void *task, spitssize_t tasksz,
                     spitspush_t push, spitsctx_t ctx)
{
    py_worker_t *w = wp;
    size_t n;
    int rc = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *t = py_decode(task, tasksz), *r = NULL;
    if (!t || !(r = PyObject_CallOneArg(py_fn_execute, t)) ||
        py_encode(r, &w->buf, &n) != 0) {
        py_report_into("execute", w->why, sizeof w->why);
        rc = 1;
    } else {
        w->why[0] = '\0';
        push(w->buf.p, (spitssize_t)n, ctx);
    }
    Py_XDECREF(r);
    Py_XDECREF(t);
    PyGILState_Release(g);
    return rc;
}

/* The spits extension that puts a failed run's exception in the JM's
 * report (docs/module-guide.md). */
const char *spits_worker_error(void *wp)
{
    return ((py_worker_t *)wp)->why;
}

void spits_worker_finalize(void *wp)
{
    py_worker_t *w = wp;
    PyGILState_STATE g = PyGILState_Ensure();
    py_flush();
    PyGILState_Release(g);
    free(w->buf.p);
    free(w);
}

void *spits_committer_new(int argc, const char *argv[], const void *ji,
                          spitssize_t jisz)
{
    (void)ji; (void)jisz;
    py_commit_t *c = calloc(1, sizeof *c);
    if (!c || py_setup(argc, argv) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

int spits_committer_commit_pit(void *co, const void *result, spitssize_t sz)
{
    (void)co;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *res = py_decode(result, sz), *r = NULL;
    if (!res || !(r = PyObject_CallOneArg(py_fn_commit, res))) {
        /* A commit half done cannot be taken back: the job stops, and
         * the journal (which holds the result) lets --resume redo it. */
        py_report("commit");
        exit(1);
    }
    Py_DECREF(r);
    Py_DECREF(res);
    PyGILState_Release(g);
    return 0;
}

/* finish()'s value, unless None, is the phase's final result: what
 * run() returns to spits_main(). */
int spits_committer_commit_job(void *co, spitspush_t push, spitsctx_t ctx)
{
    py_commit_t *c = co;
    size_t n;
    int rc = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = py_fn_finish ? PyObject_CallNoArgs(py_fn_finish) : NULL;
    if (py_fn_finish && (!r || (r != Py_None &&
                                py_encode(r, &c->buf, &n) != 0))) {
        py_report("finish");
        rc = 1;
    } else if (r && r != Py_None) {
        push(c->buf.p, (spitssize_t)n, ctx);
    }
    Py_XDECREF(r);
    py_flush();
    PyGILState_Release(g);
    return rc;
}

void spits_committer_finalize(void *co)
{
    py_commit_t *c = co;
    free(c->buf.p);
    free(c);
}

/* spits_main(args, run)'s run: one phase with args (a list of str),
 * returning finish()'s value; RuntimeError when the phase did not end. */
typedef struct {
    spitsrun_t run;
    const char *file;
} py_runner_t;

static PyObject *py_run_phase(PyObject *self, PyObject *args)
{
    py_runner_t *r = PyCapsule_GetPointer(self, NULL);
    PyObject *seq = r ? PySequence_Fast(args, "run(args): args is a list "
                                        "of str") : NULL;
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **argv = calloc((size_t)n + 2, sizeof *argv);
    if (!argv) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    argv[0] = r->file;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, i);   /* borrowed */
        if (!PyUnicode_Check(a) || !(argv[i + 1] = PyUnicode_AsUTF8(a))) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "run(args): args is a "
                                "list of str");
            free(argv);
            Py_DECREF(seq);
            return NULL;
        }
    }
    const void *final = NULL;
    spitssize_t finalsz = 0;
    int rc;
    /* (the phase's roles take the GIL on other threads) */
    Py_BEGIN_ALLOW_THREADS
    rc = r->run((int)n + 1, argv, NULL, 0, &final, &finalsz);
    Py_END_ALLOW_THREADS
    free(argv);
    Py_DECREF(seq);
    if (rc == SPITS_RUN_FAILED) {
        PyErr_SetString(PyExc_RuntimeError, "the phase did not end (the "
                        "runtime said why)");
        return NULL;
    }
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "the phase's finish() failed "
                     "(%d)", rc);
        return NULL;
    }
    if (!final || finalsz == 0)
        Py_RETURN_NONE;
    return py_decode(final, finalsz);
}

static PyMethodDef py_run_def = {"run", py_run_phase, METH_O,
                                 "run(args): one phase; finish()'s value"};

/* A job file that defines spits_main(args, run) runs its phases itself,
 * as a C module's spits_main does; one without runs one phase with the
 * command line's arguments. */
int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    const void *final;
    spitssize_t finalsz;
    int first;

    if (py_setup(argc, argv) != 0)
        return 1;
    if (!py_fn_main)
        return run(argc, argv, NULL, 0, &final, &finalsz);
    const char *file = py_job_file(argc, argv, &first);
    py_runner_t r = {run, file};
    int rc = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *cap = PyCapsule_New(&r, NULL, NULL);
    PyObject *fn = cap ? PyCFunction_New(&py_run_def, cap) : NULL;
    PyObject *args = py_args(argc, argv), *res = NULL;
    if (!fn || !args || !(res = PyObject_CallFunctionObjArgs(py_fn_main, args,
                                                             fn, NULL))) {
        py_report("spits_main");
        rc = 1;
    } else if (PyLong_Check(res)) {
        rc = (int)PyLong_AsLong(res);
        PyErr_Clear();
    }
    Py_XDECREF(res);
    Py_XDECREF(args);
    Py_XDECREF(fn);
    Py_XDECREF(cap);
    py_flush();
    PyGILState_Release(g);
    return rc;
}
