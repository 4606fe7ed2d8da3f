/*
 * keys.c - the job's CurveZMQ keys and key files (see keys.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <zmq.h>

#include "jobdir.h"
#include "keys.h"

int spits_key_valid(const char *z85)
{
    unsigned char raw[32];
    return z85 && strlen(z85) == 40 && zmq_z85_decode(raw, z85) != NULL;
}

int spits_keys_generate(spits_keys_t *k, char *err, size_t errlen)
{
    if (zmq_curve_keypair(k->server_public, k->server_secret) != 0 ||
        zmq_curve_keypair(k->client_public, k->client_secret) != 0) {
        snprintf(err, errlen, "cannot make CurveZMQ keys: %s (libzmq without "
                 "CURVE? use --insecure)", zmq_strerror(errno));
        return -1;
    }
    return 0;
}

int spits_keys_write(const char *path, const spits_keys_t *k,
                     int with_server_secret, char *err, size_t errlen)
{
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:s}", "version", 1,
                            "job_id", k->job_id, "server_public", k->server_public,
                            "client_public", k->client_public,
                            "client_secret", k->client_secret);
    if (!doc) {
        snprintf(err, errlen, "cannot encode %s", path);
        return -1;
    }
    if (with_server_secret)
        json_object_set_new(doc, "server_secret", json_string(k->server_secret));
    if (k->endpoint[0])
        json_object_set_new(doc, "endpoint", json_string(k->endpoint));
    int rc = spits_json_write_atomic(path, doc, 0600, err, errlen);
    json_decref(doc);
    return rc;
}

static int copy_key(const json_t *doc, const char *field, char *out, const char *path,
                    char *err, size_t errlen)
{
    const char *s = json_string_value(json_object_get(doc, field));
    if (!spits_key_valid(s)) {
        snprintf(err, errlen, "%s: field '%s' is missing or not a Z85 key", path, field);
        return -1;
    }
    memcpy(out, s, SPITS_Z85_KEY);
    return 0;
}

/* 1 if secret is the secret key of public (both Z85): a secret that is
 * not would only show as a handshake the JM cannot complete. 1 too when
 * this libzmq cannot tell (no CURVE): the socket set-up says so then. */
static int key_pair(const char *public, const char *secret)
{
    char derived[SPITS_Z85_KEY + 1];
    if (zmq_curve_public(derived, secret) != 0)
        return errno == ENOTSUP;
    return memcmp(derived, public, SPITS_Z85_KEY) == 0;
}

int spits_keys_read(const char *path, spits_keys_t *k, int need_server_secret,
                    char *err, size_t errlen)
{
    struct stat st;
    json_error_t jerr;

    memset(k, 0, sizeof *k);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot read key file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "key file %s is not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 077)) {
        snprintf(err, errlen, "key file %s is %s (mode %04o): refusing it; it "
                 "must be yours and mode 0600", path,
                 st.st_uid != geteuid() ? "not yours" : "open to others",
                 (unsigned)(st.st_mode & 07777));
        close(fd);
        return -1;
    }
    json_t *doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
    close(fd);
    if (!doc) {
        snprintf(err, errlen, "key file %s: %s (line %d)", path, jerr.text, jerr.line);
        return -1;
    }
    int rc = spits_keys_parse(doc, k, need_server_secret, path, err, errlen);
    json_decref(doc);
    return rc;
}

int spits_keys_parse(const json_t *doc, spits_keys_t *k, int need_server_secret,
                     const char *path, char *err, size_t errlen)
{
    memset(k, 0, sizeof *k);
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "key file %s: not a JSON object", path);
        return -1;
    }
    json_t *v = json_object_get(doc, "version");
    const char *id = json_string_value(json_object_get(doc, "job_id"));
    const char *ep = json_string_value(json_object_get(doc, "endpoint"));
    int rc = -1;
    if (!json_is_integer(v) || json_integer_value(v) != 1)
        snprintf(err, errlen, "key file %s: unsupported version (want 1)", path);
    else if (!id || strlen(id) >= sizeof k->job_id)
        snprintf(err, errlen, "key file %s: field 'job_id' is missing", path);
    else if (ep && strlen(ep) >= sizeof k->endpoint)
        snprintf(err, errlen, "key file %s: field 'endpoint' is too long", path);
    else if (copy_key(doc, "server_public", k->server_public, path, err, errlen) == 0 &&
             copy_key(doc, "client_public", k->client_public, path, err, errlen) == 0 &&
             copy_key(doc, "client_secret", k->client_secret, path, err, errlen) == 0 &&
             (!need_server_secret ||
              copy_key(doc, "server_secret", k->server_secret, path, err, errlen) == 0)) {
        snprintf(k->job_id, sizeof k->job_id, "%s", id);
        snprintf(k->endpoint, sizeof k->endpoint, "%s", ep ? ep : "");
        int client_ok = key_pair(k->client_public, k->client_secret);
        rc = 0;
        if (!client_ok ||
            (need_server_secret && !key_pair(k->server_public, k->server_secret))) {
            snprintf(err, errlen, "key file %s: %s is not the secret key of %s "
                     "(a damaged or edited key file: take a fresh copy of the "
                     "job's, e.g. with spits-jm --export-key)", path,
                     client_ok ? "server_secret" : "client_secret",
                     client_ok ? "server_public" : "client_public");
            rc = -1;
        }
    }
    return rc;
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "keys selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); goto out; } } while (0)

int spits_keys_selftest(void)
{
    char dir[] = "/tmp/spits-keys-test.XXXXXX", path[PATH_MAX], err[512];
    spits_keys_t k, r;
    struct stat st;
    int ok = 0;

    if (!mkdtemp(dir))
        return -1;
    memset(&k, 0, sizeof k);
    snprintf(path, sizeof path, "%s/jm.key", dir);
    CHECK(spits_keys_generate(&k, err, sizeof err) == 0);
    CHECK(spits_key_valid(k.server_public) && spits_key_valid(k.client_secret));
    CHECK(strcmp(k.server_public, k.client_public) != 0);
    snprintf(k.job_id, sizeof k.job_id, "abc123");
    snprintf(k.endpoint, sizeof k.endpoint, "tcp://n1:5000");
    CHECK(spits_keys_write(path, &k, 1, err, sizeof err) == 0);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(spits_keys_read(path, &r, 1, err, sizeof err) == 0);
    CHECK(memcmp(&k, &r, sizeof k) == 0);
    /* A TM's file has no server secret; asking for one is an error. */
    CHECK(spits_keys_write(path, &k, 0, err, sizeof err) == 0);
    CHECK(spits_keys_read(path, &r, 0, err, sizeof err) == 0 && r.server_secret[0] == 0);
    CHECK(spits_keys_read(path, &r, 1, err, sizeof err) == -1 && strstr(err, "server_secret"));
    /* Readable by others: refused. */
    CHECK(chmod(path, 0644) == 0);
    CHECK(spits_keys_read(path, &r, 0, err, sizeof err) == -1 && strstr(err, "mode 0644"));
    CHECK(chmod(path, 0600) == 0);
    /* A damaged key. */
    FILE *f = fopen(path, "w");
    CHECK(f);
    fprintf(f, "{\"version\": 1, \"job_id\": \"x\", \"server_public\": \"short\","
               " \"client_public\": \"%s\", \"client_secret\": \"%s\"}",
            k.client_public, k.client_secret);
    fclose(f);
    CHECK(spits_keys_read(path, &r, 0, err, sizeof err) == -1 &&
          strstr(err, "'server_public' is missing or not a Z85 key"));
    CHECK(!spits_key_valid("0123456789012345678901234567890123456789x"));
    /* A client secret that is not client_public's: named. */
    spits_keys_t other;
    CHECK(spits_keys_generate(&other, err, sizeof err) == 0);
    memcpy(k.client_secret, other.client_secret, sizeof k.client_secret);
    CHECK(spits_keys_write(path, &k, 0, err, sizeof err) == 0);
    CHECK(spits_keys_read(path, &r, 0, err, sizeof err) == -1 &&
          strstr(err, "client_secret is not the secret key of client_public"));
    ok = 1;
out:
    unlink(path);
    rmdir(dir);
    return ok ? 0 : -1;
}

#endif /* SPITS_SELFTEST */
