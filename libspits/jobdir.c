/*
 * jobdir.c - the job directory, the announce file and atomic JSON writes
 * (see jobdir.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobdir.h"
#include "journal.h"
#include "util.h"

static int mkdir_parents(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof path) {
        snprintf(err, errlen, "job dir '%s': bad path", dir);
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0700) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create job dir %s: %s (at %s)",
                         dir, strerror(errno), path);
                return -1;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return 0;
}

int spits_jobdir_check(const char *dir, char *err, size_t errlen)
{
    struct stat st;

    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "job dir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "job dir %s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "job dir %s belongs to uid %u, not to you (uid "
                 "%u): refusing it", dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen, "job dir %s is %s-writable (mode %04o): refusing "
                 "it; chmod go-w it", dir, st.st_mode & S_IWOTH ? "world" : "group",
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

int spits_jobdir_prepare(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    char probe[PATH_MAX];
    int fd;

    if (mkdir_parents(dir, err, errlen) != 0)
        return -1;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "job dir %s is not a directory", dir);
        return -1;
    }
    if (spits_jobdir_check(dir, err, errlen) != 0)
        return -1;
    /* access() says yes to root everywhere; creating a file is the truth. */
    if (snprintf(probe, sizeof probe, "%s/.spits-probe-XXXXXX", dir) >=
        (int)sizeof probe) {
        snprintf(err, errlen, "job dir %s: path too long", dir);
        return -1;
    }
    fd = mkstemp(probe);
    if (fd < 0) {
        snprintf(err, errlen, "job dir %s is not writable: %s", dir,
                 strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* Says who holds DIR's lock (fd: the lock file): its pid and host, and
 * from jm.json, if that is already this JM's, its job and endpoint. */
static void lock_holder(const char *dir, int fd, char *err, size_t errlen)
{
    char line[320], host[256], why[256];
    spits_announce_t a;
    long pid = 0;
    ssize_t n = pread(fd, line, sizeof line - 1, 0);

    line[n > 0 ? n : 0] = '\0';
    if (sscanf(line, "%ld %255s", &pid, host) != 2) {
        snprintf(err, errlen, "job dir %s is in use: another spits-jm is "
                 "starting a job there", dir);
        return;
    }
    if (spits_announce_read(dir, &a, why, sizeof why) == 0 && a.pid == pid &&
        strcmp(a.host, host) == 0)
        snprintf(err, errlen, "job dir %s is in use: job %s is running there "
                 "(spits-jm pid %ld on %s, endpoint %s); spits-status "
                 "--jobdir %s shows its progress", dir, a.job_id, pid, host,
                 a.endpoint, dir);
    else
        snprintf(err, errlen, "job dir %s is in use: a job is starting there "
                 "(spits-jm pid %ld on %s, not listening yet)", dir, pid, host);
}

int spits_jobdir_lock(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX], line[320], host[256];

    snprintf(path, sizeof path, "%s/%s", dir, SPITS_LOCK_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            lock_holder(dir, fd, err, errlen);
        else
            snprintf(err, errlen, "cannot lock %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    spits_hostname(host, sizeof host);
    int n = snprintf(line, sizeof line, "%ld %s\n", (long)getpid(), host);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int spits_file_write_atomic(const char *path, int mode, spits_fill_fn fill,
                            void *arg, char *err, size_t errlen)
{
    char tmp[PATH_MAX], dir[PATH_MAX];
    FILE *f;

    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0 || !(f = fdopen(fd, "w"))) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return -1;
    }
    errno = 0;
    if (fill(f, arg) != 0 || fflush(f) != 0 || ferror(f) ||
        fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path,
                 errno ? strerror(errno) : "the content could not be made");
        fclose(f);
        unlink(tmp);
        return -1;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path,
                 strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* Make the rename itself durable. */
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
}

static int json_fill(FILE *f, void *doc)
{
    return json_dumpf(doc, f, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 ||
           fputc('\n', f) == EOF ? -1 : 0;
}

int spits_json_write_atomic(const char *path, const json_t *doc, int mode,
                            char *err, size_t errlen)
{
    return spits_file_write_atomic(path, mode, json_fill, (void *)doc, err, errlen);
}

json_t *spits_module_changed_json(const char *was, const char *now)
{
    return json_pack("{s:s, s:s}", "journal_hash", was, "module_hash", now);
}

int spits_announce_write(const char *dir, const spits_announce_t *a,
                         char *err, size_t errlen)
{
    char path[PATH_MAX];
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:f}",
                            "version", SPITS_ANNOUNCE_VERSION,
                            "job_id", a->job_id, "endpoint", a->endpoint,
                            "host", a->host, "module", a->module,
                            "module_hash", a->module_hash,
                            "security", a->curve ? "curve" : "none",
                            "pid", (json_int_t)a->pid, "started", a->started,
                            "started_unix", a->started_unix);
    if (doc && a->curve)
        json_object_set_new(doc, "server_key", json_string(a->server_key));
    if (doc && a->resources)
        json_object_set(doc, "resources", a->resources);
    if (doc && a->module_hash_was[0])
        json_object_set_new(doc, "module_changed",
                            spits_module_changed_json(a->module_hash_was,
                                                      a->module_hash));
    if (!doc) {
        snprintf(err, errlen, "cannot encode the announce file (is the module "
                              "path valid UTF-8?)");
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_ANNOUNCE_FILE);
    int rc = spits_json_write_atomic(path, doc, 0644, err, errlen);
    json_decref(doc);
    return rc;
}

static int copy_str(const json_t *doc, const char *key, char *out,
                    size_t outlen, char *err, size_t errlen)
{
    const json_t *v = json_object_get(doc, key);
    if (!json_is_string(v)) {
        snprintf(err, errlen, "field '%s' is missing or not a string", key);
        return -1;
    }
    if (json_string_length(v) == 0 || json_string_length(v) >= outlen ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(err, errlen, "field '%s' is empty, too long or has a NUL", key);
        return -1;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

int spits_announce_parse(const json_t *doc, spits_announce_t *a, char *err,
                         size_t errlen)
{
    const json_t *v;

    memset(a, 0, sizeof *a);
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "not a JSON object");
        return -1;
    }
    v = json_object_get(doc, "version");
    if (!json_is_integer(v) || json_integer_value(v) != SPITS_ANNOUNCE_VERSION) {
        snprintf(err, errlen, "unsupported announce version (want %d)",
                 SPITS_ANNOUNCE_VERSION);
        return -1;
    }
    if (copy_str(doc, "job_id", a->job_id, sizeof a->job_id, err, errlen) ||
        copy_str(doc, "endpoint", a->endpoint, sizeof a->endpoint, err, errlen) ||
        copy_str(doc, "host", a->host, sizeof a->host, err, errlen) ||
        copy_str(doc, "module", a->module, sizeof a->module, err, errlen) ||
        copy_str(doc, "started", a->started, sizeof a->started, err, errlen) ||
        copy_str(doc, "module_hash", a->module_hash, sizeof a->module_hash, err, errlen))
        return -1;
    const char *sec = json_string_value(json_object_get(doc, "security"));
    if (!sec || (strcmp(sec, "curve") != 0 && strcmp(sec, "none") != 0)) {
        snprintf(err, errlen, "field 'security' is missing or not \"curve\" or \"none\"");
        return -1;
    }
    a->curve = strcmp(sec, "curve") == 0;
    if (a->curve &&
        copy_str(doc, "server_key", a->server_key, sizeof a->server_key, err, errlen))
        return -1;
    v = json_object_get(doc, "pid");
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        snprintf(err, errlen, "field 'pid' is missing or not a positive integer");
        return -1;
    }
    a->pid = (long)json_integer_value(v);
    const char *why;
    if (spits_res_req_parse(json_object_get(doc, "resources"), &a->req, &why) != 0) {
        snprintf(err, errlen, "field 'resources': %s", why);
        return -1;
    }
    v = json_object_get(doc, "started_unix");
    a->started_unix = json_is_number(v) ? json_number_value(v) : 0;
    return 0;
}

int spits_announce_read(const char *dir, spits_announce_t *a, char *err,
                        size_t errlen)
{
    char path[PATH_MAX], why[200];
    json_error_t jerr;

    snprintf(path, sizeof path, "%s/%s", dir, SPITS_ANNOUNCE_FILE);
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 1;
    if (spits_jobdir_check(dir, err, errlen) != 0)
        return -1;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc && access(path, F_OK) != 0 && errno == ENOENT)
        return 1;   /* (removed as we read it: a JM starting over clears
                       the old one before it writes its own) */
    if (!doc) {
        snprintf(err, errlen, "%s: %s (line %d)", path, jerr.text, jerr.line);
        return -1;
    }
    int rc = spits_announce_parse(doc, a, why, sizeof why);
    json_decref(doc);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return 0;
}

int spits_jobdir_clear_old(const char *dir, char *err, size_t errlen)
{
    /* The report first: a TM that read the old jm.json just before must
     * not then find that job's report and call the new run over. */
    static const char *const old[] = {SPITS_REPORT_FILE, SPITS_ANNOUNCE_FILE,
                                      "report.html"};
    char path[PATH_MAX];

    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, old[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

int spits_jobdir_finished(const char *dir, const char *job_id, int resumable_too)
{
    char path[PATH_MAX];
    json_error_t jerr;
    int done = 0;

    snprintf(path, sizeof path, "%s/%s", dir, SPITS_REPORT_FILE);
    json_t *doc = json_load_file(path, 0, &jerr);
    if (doc) {
        const char *id = json_string_value(json_object_get(doc, "job_id"));
        const char *st = json_string_value(json_object_get(doc, "status"));
        json_t *res = json_object_get(doc, "resumable");
        /* A report without "resumable" predates it: then only a job a
         * signal stopped could be resumed. */
        int resumable = json_is_boolean(res) ? json_is_true(res)
                        : st && strcmp(st, "interrupted") == 0;
        done = id && strcmp(id, job_id) == 0 && (resumable_too || !resumable);
        json_decref(doc);
    }
    return done;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

int spits_announce_jm_gone(const spits_announce_t *a)
{
    char host[256];
    spits_hostname(host, sizeof host);
    return strcmp(host, a->host) == 0 && a->pid > 0 &&
           kill((pid_t)a->pid, 0) != 0 && errno == ESRCH;
}

char *spits_jobdir_gone_hint(const char *dir, const spits_announce_t *a, char *buf,
                             size_t len)
{
    char path[PATH_MAX], host[256];
    int gone = spits_announce_jm_gone(a), n = 0;

    spits_hostname(host, sizeof host);
    buf[0] = '\0';
    if (gone)
        n = snprintf(buf, len, "; its process (spits-jm pid %ld on %s) is gone",
                     a->pid, a->host);
    /* Resumable: the journal is there (a finished job's report.json would
     * have been read before asking the JM). */
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    if (n >= 0 && (size_t)n < len && access(path, F_OK) == 0 &&
        (gone || strcmp(host, a->host) != 0))
        snprintf(buf + n, len - (size_t)n, "; %sspits-jm --resume --jobdir %s "
                 "continues the job", gone ? "" : "if it is gone, ", dir);
    return buf;
}

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "jobdir selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto fail; } } while (0)

int spits_jobdir_selftest(void)
{
    char base[] = "/tmp/spits-selftest-XXXXXX", dir[PATH_MAX], path[PATH_MAX];
    char err[512];
    spits_announce_t a = {0}, b;
    FILE *f;

    if (!mkdtemp(base))
        return -1;
    snprintf(dir, sizeof dir, "%s/a/b/job", base);
    CHECK(spits_jobdir_prepare(dir, err, sizeof err) == 0);
    CHECK(spits_jobdir_prepare(dir, err, sizeof err) == 0);   /* exists */
    CHECK(spits_announce_read(dir, &b, err, sizeof err) == 1);

    snprintf(a.job_id, sizeof a.job_id, "0123abcd");
    snprintf(a.endpoint, sizeof a.endpoint, "tcp://node7:5555");
    snprintf(a.host, sizeof a.host, "node7");
    snprintf(a.module, sizeof a.module, "/opt/mod.so");
    snprintf(a.module_hash, sizeof a.module_hash, "%064d", 7);
    a.curve = 1;
    snprintf(a.server_key, sizeof a.server_key, "rq:rM>}U?@Lns47E1%%kR.o@n%%FcmmsL/@{H8]yf7");
    snprintf(a.started, sizeof a.started, "2026-01-01T00:00:00Z");
    a.pid = 1234;
    a.started_unix = 1767225600.5;
    CHECK(spits_announce_write(dir, &a, err, sizeof err) == 0);
    CHECK(spits_announce_read(dir, &b, err, sizeof err) == 0);
    CHECK(strcmp(b.job_id, a.job_id) == 0 && strcmp(b.endpoint, a.endpoint) == 0);
    CHECK(strcmp(b.module, a.module) == 0 && b.pid == 1234);
    CHECK(b.curve == 1 && strcmp(b.server_key, a.server_key) == 0 &&
          strcmp(b.module_hash, a.module_hash) == 0);
    CHECK(b.started_unix == a.started_unix);
    CHECK(b.req.cpus == 0 && b.req.gpus == 0 && b.req.mem == 0);
    /* The job's request per task, as the TM plans its workers by it
     * before it joins; one that is no request is refused, named. */
    a.resources = json_pack("{s:i, s:I}", "cpus_per_task", 2, "mem_per_task",
                            (json_int_t)1 << 30);
    CHECK(a.resources && spits_announce_write(dir, &a, err, sizeof err) == 0);
    CHECK(spits_announce_read(dir, &b, err, sizeof err) == 0);
    CHECK(b.req.cpus == 2 && b.req.gpus == 0 && b.req.mem == (uint64_t)1 << 30);
    json_object_set_new(a.resources, "cpus_per_task", json_string("two"));
    CHECK(spits_announce_write(dir, &a, err, sizeof err) == 0);
    CHECK(spits_announce_read(dir, &b, err, sizeof err) == -1);
    CHECK(strstr(err, "jm.json: field 'resources': resources that are not") != NULL);
    json_decref(a.resources);
    a.resources = NULL;

    /* One JM per dir: a second lock is refused, naming the running job. */
    int lfd = spits_jobdir_lock(dir, err, sizeof err);
    CHECK(lfd >= 0);
    a.pid = (long)getpid();
    spits_hostname(a.host, sizeof a.host);
    CHECK(spits_announce_write(dir, &a, err, sizeof err) == 0);
    CHECK(spits_jobdir_lock(dir, err, sizeof err) == -1);
    CHECK(strstr(err, "is in use: job 0123abcd is running there (spits-jm pid ") &&
          strstr(err, ", endpoint tcp://node7:5555); spits-status --jobdir "));
    close(lfd);
    CHECK((lfd = spits_jobdir_lock(dir, err, sizeof err)) >= 0);
    close(lfd);

    /* A broken announce file is an error that names the file. */
    CHECK(snprintf(path, sizeof path, "%s/%s", dir, SPITS_ANNOUNCE_FILE) <
          (int)sizeof path);
    f = fopen(path, "w");
    CHECK(f);
    fputs("{\"version\": 1, \"job_id\": 5}", f);
    fclose(f);
    CHECK(spits_announce_read(dir, &b, err, sizeof err) == -1);
    CHECK(strstr(err, "jm.json") && strstr(err, "job_id"));
    f = fopen(path, "w");
    CHECK(f);
    fputs("{\"version\": ", f);
    fclose(f);
    CHECK(spits_announce_read(dir, &b, err, sizeof err) == -1);

    /* A report says a job is over, unless a signal stopped it. */
    char rpath[PATH_MAX];
    CHECK(snprintf(rpath, sizeof rpath, "%s/%s", dir, SPITS_REPORT_FILE) <
          (int)sizeof rpath);
    CHECK(!spits_jobdir_finished(dir, "0123abcd", 1));
    json_t *rep = json_pack("{s:s, s:s}", "job_id", "0123abcd", "status", "failed");
    CHECK(spits_json_write_atomic(rpath, rep, 0644, err, sizeof err) == 0);
    CHECK(spits_jobdir_finished(dir, "0123abcd", 0));
    /* One that says it can be resumed is over only for resumable_too. */
    json_object_set_new(rep, "resumable", json_true());
    CHECK(spits_json_write_atomic(rpath, rep, 0644, err, sizeof err) == 0);
    CHECK(!spits_jobdir_finished(dir, "0123abcd", 0));
    CHECK(spits_jobdir_finished(dir, "0123abcd", 1));
    json_object_set_new(rep, "resumable", json_false());
    CHECK(spits_json_write_atomic(rpath, rep, 0644, err, sizeof err) == 0);
    CHECK(spits_jobdir_finished(dir, "0123abcd", 0));
    json_object_del(rep, "resumable");
    CHECK(!spits_jobdir_finished(dir, "0123abce", 1));
    json_object_set_new(rep, "status", json_string("interrupted"));
    CHECK(spits_json_write_atomic(rpath, rep, 0644, err, sizeof err) == 0);
    CHECK(!spits_jobdir_finished(dir, "0123abcd", 0));
    CHECK(spits_jobdir_finished(dir, "0123abcd", 1));
    /* A new run clears what the run before left: no report, no jm.json. */
    {
        CHECK(spits_jobdir_clear_old(dir, err, sizeof err) == 0);
        CHECK(access(rpath, F_OK) != 0 && access(path, F_OK) != 0);
        CHECK(!spits_jobdir_finished(dir, "0123abcd", 1));
        CHECK(spits_jobdir_clear_old(dir, err, sizeof err) == 0);   /* twice */
        CHECK((f = fopen(path, "w")) != NULL);   /* (a file, below) */
        fclose(f);
    }
    json_decref(rep);
    unlink(rpath);

    /* A job dir others can write into is refused, by name. */
    CHECK(chmod(dir, 0770) == 0);
    CHECK(spits_jobdir_prepare(dir, err, sizeof err) == -1);
    CHECK(strstr(err, "group-writable (mode 0770)"));
    CHECK(chmod(dir, 0757) == 0);
    CHECK(spits_jobdir_check(dir, err, sizeof err) == -1);
    CHECK(strstr(err, "world-writable"));
    CHECK(chmod(dir, 0755) == 0);
    CHECK(spits_jobdir_check(dir, err, sizeof err) == 0);
    CHECK(chmod(dir, 0700) == 0);

    /* A path below a regular file cannot be a job dir. */
    CHECK(snprintf(dir, sizeof dir, "%s/sub", path) < (int)sizeof dir);
    CHECK(spits_jobdir_prepare(dir, err, sizeof err) == -1);
    CHECK(strstr(err, "cannot create job dir"));
    unlink(path);
    {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        if (system(cmd) != 0)
            return -1;
    }
    return 0;
fail:
    return -1;
}

#endif /* SPITS_SELFTEST */
