/*
 * journal.c - the JM's write-ahead journal (format and rules: journal.h).
 *
 * A write or sync that fails is never retried. Retrying would write the
 * same batch again after whatever part of it reached the file, and the
 * records repeated (or a half record followed by whole ones) make the
 * journal unresumable. Instead the file is cut back to the end of the
 * last synced batch, the unsynced records are dropped and the journal
 * refuses every later write: the caller stops the job (none of the
 * dropped records was committed: commit_pit runs only after a sync), and
 * once the disk has room again --resume continues from complete, synced
 * records only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "journal.h"

#define JR_MAGIC "SPITSJNL"
#define JR_VERSION 1
#define JR_FILE_HDR 16
#define JR_HDR 32
#define JR_SUM 8

static const unsigned char jr_key[crypto_shorthash_KEYBYTES] = "spits-journal-1";

struct spits_journal {
    int fd;
    spits_buf_t buf;          /* records not yet written */
    uint64_t bytes, syncs;
    uint64_t good;            /* file length after the last good sync */
    int failed;               /* a write or sync failed: no more writes */
    char path[PATH_MAX];
};

static uint64_t sum64(const void *data, size_t len)
{
    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, data, len, jr_key);
    return get_u64(h);
}

uint64_t spits_task_hash(const void *data, size_t len)
{
    return sum64(data, len);
}

/* --- writing ---------------------------------------------------------- */

static spits_journal_t *journal_open(const char *dir, int flags, char *err,
                                     size_t errlen)
{
    spits_journal_t *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char *path = j->path;
    snprintf(path, sizeof j->path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    j->fd = open(path, flags | O_WRONLY | O_CLOEXEC, 0600);
    if (j->fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        free(j);
        return NULL;
    }
    /* One writer: a second JM on the same journal would corrupt the job. */
    if (flock(j->fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            snprintf(err, errlen, "%s is in use: another spits-jm is running "
                     "this job", path);
        else
            snprintf(err, errlen, "cannot lock %s: %s", path, strerror(errno));
        close(j->fd);
        free(j);
        return NULL;
    }
    return j;
}

spits_journal_t *spits_journal_create(const char *dir, char *err, size_t errlen)
{
    spits_journal_t *j = journal_open(dir, O_CREAT | O_EXCL | O_APPEND, err,
                                      errlen);
    if (!j)
        return NULL;
    if (spits_buf_reserve(&j->buf, JR_FILE_HDR) != 0) {
        snprintf(err, errlen, "out of memory");
        spits_journal_destroy(&j);
        return NULL;
    }
    memset(j->buf.data, 0, JR_FILE_HDR);
    memcpy(j->buf.data, JR_MAGIC, 8);
    put_u32(j->buf.data + 8, JR_VERSION);
    j->buf.len = JR_FILE_HDR;
    /* The new name must survive a crash too. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return j;
}

spits_journal_t *spits_journal_append(const char *dir, uint64_t valid_len,
                                      char *err, size_t errlen)
{
    spits_journal_t *j = journal_open(dir, 0, err, errlen);
    if (!j)
        return NULL;
    j->good = valid_len;
    if (ftruncate(j->fd, (off_t)valid_len) != 0 ||
        lseek(j->fd, (off_t)valid_len, SEEK_SET) < 0 || fdatasync(j->fd) != 0) {
        snprintf(err, errlen, "cannot cut %s to %llu bytes: %s", j->path,
                 (unsigned long long)valid_len, strerror(errno));
        spits_journal_destroy(&j);
        return NULL;
    }
    return j;
}

void spits_journal_destroy(spits_journal_t **jp)
{
    spits_journal_t *j = *jp;
    char err[256];
    if (!j)
        return;
    if (j->buf.len && !j->failed)
        spits_journal_sync(j, err, sizeof err);
    close(j->fd);
    spits_buf_free(&j->buf);
    free(j);
    *jp = NULL;
}

int spits_journal_add(spits_journal_t *j, int type, uint32_t phase,
                      uint64_t id, uint64_t aux, const void *data, uint32_t len)
{
    if (spits_buf_reserve(&j->buf, JR_HDR + (size_t)len + JR_SUM) != 0)
        return -1;
    unsigned char *h = j->buf.data + j->buf.len;
    memset(h, 0, JR_HDR);
    h[0] = (unsigned char)type;
    put_u32(h + 4, phase);
    put_u64(h + 8, id);
    put_u64(h + 16, aux);
    put_u32(h + 24, len);
    put_u32(h + 28, (uint32_t)sum64(h, 28));
    if (len)
        memcpy(h + JR_HDR, data, len);
    put_u64(h + JR_HDR + len, sum64(h, JR_HDR + (size_t)len));
    j->buf.len += JR_HDR + (size_t)len + JR_SUM;
    return 0;
}

int spits_journal_add_json(spits_journal_t *j, int type, uint32_t phase,
                           uint64_t aux, const json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT);
    if (!s)
        return -1;
    size_t n = strlen(s);
    int rc = n > UINT32_MAX ? -1
             : spits_journal_add(j, type, phase, 0, aux, s, (uint32_t)n);
    free(s);
    return rc;
}

/* A failed write or sync: cut the file back to its last good end (a
 * short write leaves part of a batch behind), drop the batch and refuse
 * all later writes. The message is the one the JM stops the job with. */
static int journal_fail(spits_journal_t *j, const char *why, char *err,
                        size_t errlen)
{
    char what[256];
    snprintf(what, sizeof what, "%s", why);   /* strerror's buffer is reused */
    snprintf(err, errlen, "journal write failed: %s (%s)", what, j->path);
    if (!j->failed && (ftruncate(j->fd, (off_t)j->good) != 0 ||
                       fdatasync(j->fd) != 0))
        snprintf(err, errlen, "journal write failed: %s (%s), and cutting it "
                 "back to its last synced byte %llu failed too: %s", what,
                 j->path, (unsigned long long)j->good, strerror(errno));
    j->failed = 1;
    j->buf.len = 0;
    return -1;
}

int spits_journal_sync(spits_journal_t *j, char *err, size_t errlen)
{
    size_t off = 0;
    if (j->failed)
        return journal_fail(j, "an earlier write failed", err, errlen);
    while (off < j->buf.len) {
        ssize_t n = write(j->fd, j->buf.data + off, j->buf.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return journal_fail(j, n < 0 ? strerror(errno) : "no progress",
                                err, errlen);
        off += (size_t)n;
    }
    if (fdatasync(j->fd) != 0)
        return journal_fail(j, strerror(errno), err, errlen);
    j->bytes += j->buf.len;
    j->good += j->buf.len;
    j->buf.len = 0;
    j->syncs++;
    return 0;
}

uint64_t spits_journal_bytes(const spits_journal_t *j) { return j->bytes; }
uint64_t spits_journal_syncs(const spits_journal_t *j) { return j->syncs; }

/* --- reading ---------------------------------------------------------- */

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* Room for one more element in an array that doubles (first: its
 * first size); 0 or -1 out of memory. */
static int room_for_one(void **arr, size_t n, size_t *cap, size_t elem,
                        size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    void *a = realloc(*arr, c * elem);
    if (!a)
        return -1;
    *arr = a;
    *cap = c;
    return 0;
}

static int add_result(spits_jr_phase_t *ph, const unsigned char *h)
{
    if (room_for_one((void **)&ph->results, ph->nresults, &ph->capresults,
                     sizeof *ph->results, 1024) != 0)
        return -1;
    spits_jr_result_t *r = &ph->results[ph->nresults++];
    r->id = get_u64(h + 8);
    r->hash = get_u64(h + 16);
    r->len = get_u32(h + 24);
    r->data = h + JR_HDR;
    return 0;
}

static int add_check(spits_jr_phase_t *ph, const unsigned char *h)
{
    if (room_for_one((void **)&ph->checks, ph->nchecks, &ph->capchecks,
                     sizeof *ph->checks, 64) != 0)
        return -1;
    ph->checks[ph->nchecks].count = get_u64(h + 8);
    ph->checks[ph->nchecks++].hash = get_u64(h + 16);
    return 0;
}

/* Applies one checked record; NULL, or why it does not fit. */
static const char *apply_record(spits_jr_t *jr, const unsigned char *h)
{
    int type = h[0];
    uint32_t phase = get_u32(h + 4), len = get_u32(h + 24);
    spits_jr_phase_t *cur = jr->nphases ? &jr->phases[jr->nphases - 1] : NULL;

    if (jr->records == 0 && type != SPITS_JR_JOB)
        return "the first record is not a job record";
    if (jr->job_ended)
        return "a record after the end of the job";
    switch (type) {
    case SPITS_JR_JOB:
        if (jr->records)
            return "a second job record";
        jr->job = json_loadb((const char *)h + JR_HDR, len, 0, NULL);
        return json_is_object(jr->job) ? NULL : "the job record is not a JSON object";
    case SPITS_JR_PHASE: {
        if (phase != jr->nphases + 1)
            return "phases out of order";
        spits_jr_phase_t *p = realloc(jr->phases, (jr->nphases + 1) * sizeof *p);
        if (!p)
            return "out of memory";
        jr->phases = p;
        cur = &p[jr->nphases++];
        memset(cur, 0, sizeof *cur);
        cur->id = phase;
        cur->jobinfo_hash = get_u64(h + 16);
        cur->doc = json_loadb((const char *)h + JR_HDR, len, 0, NULL);
        return json_is_object(cur->doc) ? NULL : "a phase record is not a JSON object";
    }
    case SPITS_JR_RESULT:
        if (!cur || phase != cur->id || cur->ended)
            return "a result outside its phase";
        return add_result(cur, h) == 0 ? NULL : "out of memory";
    case SPITS_JR_GENCHECK:
        if (!cur || phase != cur->id || cur->ended)
            return "a generation checkpoint outside its phase";
        if (len || get_u64(h + 8) == 0)
            return "a malformed generation checkpoint";
        return add_check(cur, h) == 0 ? NULL : "out of memory";
    case SPITS_JR_PHASE_END:
        if (!cur || phase != cur->id || cur->ended)
            return "a phase end outside its phase";
        cur->ended = 1;
        cur->commit_job_rc = (int64_t)get_u64(h + 16);
        cur->final = h + JR_HDR;
        cur->finalsz = len;
        return NULL;
    case SPITS_JR_JOB_END:
        jr->job_ended = 1;
        jr->exit_status = (int64_t)get_u64(h + 16);
        return NULL;
    default:
        return "an unknown record type";
    }
}

int spits_journal_parse(const void *data, size_t len, const char *name,
                        spits_jr_t *jr, char *err, size_t errlen)
{
    const unsigned char *m = data;
    const char *why = NULL;
    uint64_t off = JR_FILE_HDR;

    memset(jr, 0, sizeof *jr);
    if (len < JR_FILE_HDR) {
        snprintf(err, errlen, "%s is %zu bytes: too short to hold a job", name, len);
        return -1;
    }
    if (memcmp(m, JR_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s is not a spits journal", name);
        return -1;
    }
    if (get_u32(m + 8) != JR_VERSION) {
        snprintf(err, errlen, "%s has journal version %u; this spits-jm "
                 "reads version %d", name, get_u32(m + 8), JR_VERSION);
        return -1;
    }
    while (off < len) {
        const unsigned char *h = m + off;
        uint64_t rem = len - off;
        if (rem < JR_HDR)
            break;                                  /* torn header */
        if (get_u32(h + 28) != (uint32_t)sum64(h, 28)) {
            if (all_zero(h, rem))
                break;                              /* zero-filled tail */
            why = "a damaged record header";
            goto corrupt;
        }
        uint64_t total = JR_HDR + (uint64_t)get_u32(h + 24) + JR_SUM;
        if (total > rem)
            break;                                  /* torn payload */
        if (get_u64(h + total - JR_SUM) != sum64(h, total - JR_SUM)) {
            if (total == rem)
                break;                              /* torn last record */
            why = "a damaged record";
            goto corrupt;
        }
        if ((why = apply_record(jr, h)) != NULL)
            goto corrupt;
        jr->records++;
        off += total;
    }
    jr->valid_len = off;
    jr->torn_bytes = len - off;
    if (!jr->job) {
        snprintf(err, errlen, "%s holds no complete job record", name);
        spits_journal_unload(jr);
        return -1;
    }
    return 0;
corrupt:
    snprintf(err, errlen, "%s is damaged at byte %llu (record %llu): %s; "
             "it cannot be resumed", name, (unsigned long long)off,
             (unsigned long long)jr->records + 1, why);
    spits_journal_unload(jr);
    return -1;
}

int spits_journal_load(const char *dir, spits_jr_t *jr, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;

    memset(jr, 0, sizeof *jr);
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size < JR_FILE_HDR) {
        snprintf(err, errlen, "%s is %lld bytes: too short to hold a job",
                 path, (long long)st.st_size);
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        return -1;
    }
    if (spits_journal_parse(map, len, path, jr, err, errlen) != 0) {
        munmap(map, len);
        return -1;
    }
    jr->map = map;             /* the records point into it */
    jr->maplen = len;
    return 0;
}

void spits_journal_unload(spits_jr_t *jr)
{
    for (uint32_t i = 0; i < jr->nphases; i++) {
        json_decref(jr->phases[i].doc);
        free(jr->phases[i].results);
        free(jr->phases[i].checks);
    }
    free(jr->phases);
    json_decref(jr->job);
    if (jr->map)
        munmap(jr->map, jr->maplen);
    memset(jr, 0, sizeof *jr);
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "journal selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); goto out; } } while (0)

static int file_size(const char *dir, off_t *size)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    if (stat(path, &st) != 0)
        return -1;
    *size = st.st_size;
    return 0;
}

static int poke(const char *dir, off_t at, const void *bytes, size_t n, int cut)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    int rc = cut ? ftruncate(fd, at)
                 : pwrite(fd, bytes, n, at) == (ssize_t)n ? 0 : -1;
    close(fd);
    return rc;
}

/* A full disk, made by a file size limit: the write fails part way (a
 * short write, then EFBIG), the file is cut back to its synced records,
 * nothing is written twice, and it loads with no torn tail. */
static int selftest_full(const char *dir)
{
    static unsigned char big[8192];
    char err[512];
    spits_journal_t *j = NULL;
    spits_jr_t jr;
    struct rlimit old, lim;
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    off_t size;
    int ok = 0, limited = 0;

    memset(&jr, 0, sizeof jr);
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    CHECK((j = spits_journal_create(dir, err, sizeof err)) != NULL);
    CHECK(spits_journal_add(j, SPITS_JR_JOB, 0, 0, 0, "{}", 2) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_PHASE, 1, 0, 0, "{}", 2) == 0);
    CHECK(spits_journal_sync(j, err, sizeof err) == 0);
    CHECK(file_size(dir, &size) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t)size + 100;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    limited = 1;
    CHECK(spits_journal_add(j, SPITS_JR_RESULT, 1, 1, 1, "one", 3) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_RESULT, 1, 2, 2, big, sizeof big) == 0);
    CHECK(spits_journal_sync(j, err, sizeof err) == -1);
    CHECK(file_size(dir, &size) == 0 && size == (off_t)spits_journal_bytes(j));
    CHECK(strstr(err, "journal write failed: File too large (") &&
          strstr(err, "/journal)"));
    limited = setrlimit(RLIMIT_FSIZE, &old) != 0;
    CHECK(!limited);
    /* Room again, but the failed journal writes nothing more. */
    CHECK(spits_journal_add(j, SPITS_JR_RESULT, 1, 3, 3, "three", 5) == 0);
    CHECK(spits_journal_sync(j, err, sizeof err) == -1);
    spits_journal_destroy(&j);
    CHECK(file_size(dir, &size) == 0 && size == (off_t)(JR_FILE_HDR + 2 * (JR_HDR + 2 + JR_SUM)));
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 0);
    CHECK(jr.records == 2 && jr.torn_bytes == 0 && jr.phases[0].nresults == 0);
    ok = 1;
out:
    if (limited)
        setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, oldsig);
    if (j)
        spits_journal_destroy(&j);
    spits_journal_unload(&jr);
    return ok ? 0 : -1;
}

/* Writes a journal of a job record, a phase record and then one record
 * (type, id, aux, no payload); 0 or -1. */
static int write_three(const char *dir, int type, uint32_t phase, uint64_t id,
                       uint64_t aux)
{
    char err[512];
    spits_journal_t *j = spits_journal_create(dir, err, sizeof err);
    if (!j)
        return -1;
    int rc = spits_journal_add(j, SPITS_JR_JOB, 0, 0, 0, "{}", 2) |
             spits_journal_add(j, SPITS_JR_PHASE, 1, 0, 0, "{}", 2) |
             spits_journal_add(j, type, phase, id, aux, NULL, 0);
    spits_journal_destroy(&j);
    return rc;
}

/* Generation checkpoints: the chain depends on order and on every task;
 * a checkpoint of no tasks, or outside its phase, is damage; a torn one
 * at the end is cut off like any torn record. */
static int selftest_checks(const char *dir)
{
    char err[512], path[PATH_MAX];
    spits_jr_t jr;
    off_t size;
    int ok = 0;

    memset(&jr, 0, sizeof jr);
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    uint64_t a = spits_task_hash("a", 1), b = spits_task_hash("b", 1);
    CHECK(spits_gen_chain(spits_gen_chain(0, a), b) !=
          spits_gen_chain(spits_gen_chain(0, b), a));
    CHECK(spits_gen_chain(0, a) != spits_gen_chain(spits_gen_chain(0, a), a));
    unlink(path);
    CHECK(write_three(dir, SPITS_JR_GENCHECK, 1, 0, 5) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == -1 &&
          strstr(err, "a malformed generation checkpoint"));
    unlink(path);
    CHECK(write_three(dir, SPITS_JR_GENCHECK, 2, 4, 5) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == -1 &&
          strstr(err, "a generation checkpoint outside its phase"));
    unlink(path);
    CHECK(write_three(dir, SPITS_JR_GENCHECK, 1, 4, 5) == 0);
    CHECK(file_size(dir, &size) == 0 && poke(dir, size - 3, NULL, 0, 1) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 0);
    CHECK(jr.records == 2 && jr.torn_bytes == JR_HDR + JR_SUM - 3 &&
          jr.phases[0].nchecks == 0);
    ok = 1;
out:
    spits_journal_unload(&jr);
    unlink(path);
    return ok ? 0 : -1;
}

int spits_journal_selftest(void)
{
    char dir[] = "/tmp/spits-journal-test.XXXXXX", err[512], path[PATH_MAX];
    spits_journal_t *j = NULL;
    spits_jr_t jr;
    json_t *doc = NULL;
    off_t size, after_two;
    int ok = 0;

    memset(&jr, 0, sizeof jr);
    if (!mkdtemp(dir))
        return -1;
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 1);
    CHECK((j = spits_journal_create(dir, err, sizeof err)) != NULL);
    CHECK(spits_journal_create(dir, err, sizeof err) == NULL);   /* exists */
    doc = json_pack("{s:s}", "job_id", "abc");
    CHECK(spits_journal_add_json(j, SPITS_JR_JOB, 0, 0, doc) == 0);
    CHECK(spits_journal_add_json(j, SPITS_JR_PHASE, 1, 77, doc) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_RESULT, 1, 5, 55, "five", 4) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_RESULT, 1, 3, 33, "", 0) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_GENCHECK, 1, 6, 0xabcdef, NULL, 0) == 0);
    CHECK(spits_journal_sync(j, err, sizeof err) == 0);
    CHECK(file_size(dir, &after_two) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_RESULT, 1, 4, 44, "four", 4) == 0);
    CHECK(spits_journal_add(j, SPITS_JR_PHASE_END, 1, 0, (uint64_t)-7, "fin", 3) == 0);
    CHECK(spits_journal_sync(j, err, sizeof err) == 0);
    CHECK(spits_journal_syncs(j) == 2);
    spits_journal_destroy(&j);

    /* Everything reads back. */
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 0);
    CHECK(jr.nphases == 1 && jr.records == 7 && jr.torn_bytes == 0);
    CHECK(jr.phases[0].nchecks == 1 && jr.phases[0].checks[0].count == 6 &&
          jr.phases[0].checks[0].hash == 0xabcdef);
    CHECK(strcmp(json_string_value(json_object_get(jr.job, "job_id")), "abc") == 0);
    CHECK(jr.phases[0].jobinfo_hash == 77 && jr.phases[0].nresults == 3);
    CHECK(jr.phases[0].results[0].id == 5 && jr.phases[0].results[0].hash == 55 &&
          jr.phases[0].results[0].len == 4 &&
          memcmp(jr.phases[0].results[0].data, "five", 4) == 0);
    CHECK(jr.phases[0].results[1].id == 3 && jr.phases[0].results[1].len == 0);
    CHECK(jr.phases[0].ended && jr.phases[0].commit_job_rc == -7 &&
          jr.phases[0].finalsz == 3 && memcmp(jr.phases[0].final, "fin", 3) == 0);
    CHECK(file_size(dir, &size) == 0 && jr.valid_len == (uint64_t)size);
    spits_journal_unload(&jr);

    /* A torn tail (the last record cut short) is cut off, not an error. */
    CHECK(poke(dir, size - 5, NULL, 0, 1) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 0);
    CHECK(jr.records == 6 && jr.torn_bytes > 0 && !jr.phases[0].ended);
    uint64_t valid = jr.valid_len;
    spits_journal_unload(&jr);
    /* ... and appending starts where the valid records end. */
    CHECK((j = spits_journal_append(dir, valid, err, sizeof err)) != NULL);
    CHECK(spits_journal_add(j, SPITS_JR_JOB_END, 0, 0, 3, NULL, 0) == 0);
    spits_journal_destroy(&j);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 0);
    CHECK(jr.records == 7 && jr.torn_bytes == 0 && jr.job_ended &&
          jr.exit_status == 3);
    spits_journal_unload(&jr);

    /* A zero-filled tail is torn too. */
    CHECK(file_size(dir, &size) == 0);
    static const unsigned char zeros[100];
    CHECK(poke(dir, size, zeros, sizeof zeros, 0) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == 0);
    CHECK(jr.torn_bytes == sizeof zeros && jr.job_ended);
    spits_journal_unload(&jr);

    /* Damage before the last record is an error naming the offset. */
    CHECK(poke(dir, after_two - 3, "X", 1, 0) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == -1);
    CHECK(strstr(err, "damaged at byte") != NULL);
    /* So is a damaged header in the middle. */
    CHECK(poke(dir, JR_FILE_HDR + 1, "X", 1, 0) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == -1);
    CHECK(strstr(err, "damaged at byte 16 ") != NULL);
    /* Not a journal at all. */
    CHECK(poke(dir, 0, "NOTAJRNL", 8, 0) == 0);
    CHECK(spits_journal_load(dir, &jr, err, sizeof err) == -1 &&
          strstr(err, "not a spits journal"));
    CHECK(spits_task_hash("a", 1) != spits_task_hash("b", 1));
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    CHECK(unlink(path) == 0);
    CHECK(selftest_full(dir) == 0);
    CHECK(selftest_checks(dir) == 0);
    ok = 1;
out:
    if (j)
        spits_journal_destroy(&j);
    spits_journal_unload(&jr);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/%s", dir, SPITS_JOURNAL_FILE);
    unlink(path);
    rmdir(dir);
    return ok ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
