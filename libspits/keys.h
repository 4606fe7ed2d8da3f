/*
 * keys.h - the job's CurveZMQ key material and the files that carry it.
 *
 * A job has two key pairs, made by the JM when the job starts: the
 * server's (the JM's ROUTER socket) and one client pair that every TM of
 * the job shares. The JM's ZAP handler admits only that client key, so a
 * peer must have read the job dir (or been given the key file) to talk to
 * the JM at all; CURVE encrypts everything on the wire.
 *
 *   DIR/jm.key  all four keys, mode 0600: for the JM (and a resumed JM,
 *               which keeps the keys so running TMs can re-attach)
 *   DIR/tm.key  what a TM needs: the server's public key and the client
 *               pair, plus job id and endpoint, mode 0600. For a TM that
 *               cannot see the job dir, copy it (spits-jm --export-key)
 *               and use spits-tm --connect ENDPOINT --key-file FILE.
 *
 * Keys are kept as Z85 text (40 characters), as libzmq takes them. A key
 * file is refused if others can read it or it is not the user's.
 */
#ifndef SPITS_KEYS_H
#define SPITS_KEYS_H

#include <stddef.h>
#include <jansson.h>

#define SPITS_JM_KEY_FILE "jm.key"
#define SPITS_TM_KEY_FILE "tm.key"
#define SPITS_Z85_KEY 41          /* 40 characters and a NUL */

typedef struct {
    char server_public[SPITS_Z85_KEY];
    char server_secret[SPITS_Z85_KEY];   /* empty in a TM's file */
    char client_public[SPITS_Z85_KEY];
    char client_secret[SPITS_Z85_KEY];
    char job_id[64];
    char endpoint[512];                  /* tm.key only; may be empty */
} spits_keys_t;

/* Makes both key pairs. 0, or -1 (libzmq built without CURVE). */
int spits_keys_generate(spits_keys_t *k, char *err, size_t errlen);
/* Writes a key file with mode 0600: with_server_secret for jm.key. */
int spits_keys_write(const char *path, const spits_keys_t *k,
                     int with_server_secret, char *err, size_t errlen);
/* Reads and checks a key file; need_server_secret for jm.key. 0, or -1
 * with err naming the file and the problem. */
int spits_keys_read(const char *path, spits_keys_t *k, int need_server_secret,
                    char *err, size_t errlen);
/* The checks of spits_keys_read on a parsed document (path: for messages). */
int spits_keys_parse(const json_t *doc, spits_keys_t *k, int need_server_secret,
                     const char *path, char *err, size_t errlen);
/* A well-formed Z85 key: 40 characters that decode to 32 bytes. */
int spits_key_valid(const char *z85);

#ifdef SPITS_SELFTEST
int spits_keys_selftest(void);
#endif

#endif
