/*
 * journal.h - the JM's write-ahead journal: what makes a job resumable.
 *
 * generate and commit are not idempotent, so a JM that dies cannot simply
 * be started again. While a job runs, the JM appends to DIR/journal:
 *
 *   JOB        once, first: job id, module path and hash, the module argv
 *   PHASE      a phase begins: its id, argv and a hash of its jobinfo
 *   RESULT     a task's result, written (and synced) before commit_pit
 *              sees it: phase, task id, a hash of the task's bytes, the
 *              result bytes
 *   GENCHECK   a generation checkpoint, with each sync: the number of
 *              tasks the phase's generator had made and a running hash
 *              over their task hashes in id order (spits_gen_chain), so a
 *              resume can tell whether it generates the same tasks, not
 *              only the committed ones (jobmanager/generator.c)
 *   PHASE_END  commit_job returned: its value and the final result bytes
 *   JOB_END    the job finished; nothing is left to resume
 *
 * The file starts with an 8-byte magic and a 4-byte version. Each record
 * is a 32-byte header, the payload, then a 64-bit checksum of header and
 * payload. The header carries its own 32-bit check, so a damaged length
 * is never trusted:
 *
 *   0   1   type (SPITS_JR_*)
 *   1   3   zero
 *   4   4   phase id
 *   8   8   task id (RESULT), tasks made (GENCHECK), else 0
 *   16  8   aux: task hash (RESULT), commit_job value (PHASE_END),
 *           exit status (JOB_END), jobinfo hash (PHASE), running hash
 *           (GENCHECK)
 *   24  4   payload length
 *   28  4   check of bytes 0-27
 *
 * Checksums and task hashes are SipHash-2-4 (libsodium crypto_shorthash)
 * under a fixed key: they catch damage, not forgery.
 *
 * Writes are batched: records go to a buffer, and spits_journal_sync
 * writes the buffer and calls fdatasync once, so the cost is one sync per
 * commit batch, not per task. A failed write or sync is not retried: the
 * file is cut back to the end of the last synced batch and the journal
 * refuses further writes, so the caller must stop the job; what is left
 * is complete, synced records, which --resume accepts (journal.c).
 *
 * Reading (spits_journal_load) maps the file and checks every record. A
 * torn tail - a partial last record, as a crash mid-write leaves - is
 * reported and cut off. Damage anywhere before the last record stops the
 * load with an error naming the offset: a record is never skipped.
 *
 * A writer holds an exclusive flock on the file for its life, so a second
 * JM cannot resume a job that is still running.
 *
 * Not thread-safe: one thread writes (the JM's committer, i.e. its main
 * thread); loading happens before any thread starts.
 */
#ifndef SPITS_JOURNAL_H
#define SPITS_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "wire.h"

#define SPITS_JOURNAL_FILE "journal"

enum {
    SPITS_JR_JOB = 1,
    SPITS_JR_PHASE = 2,
    SPITS_JR_RESULT = 3,
    SPITS_JR_PHASE_END = 4,
    SPITS_JR_JOB_END = 5,
    SPITS_JR_GENCHECK = 6
};

/* A task's identity as the journal keeps it. */
uint64_t spits_task_hash(const void *data, size_t len);

/* The running hash of a phase's generation: h is 0 before the first task,
 * then spits_gen_chain(h, task hash) after each, in id order. One mix per
 * task (the generator's hot path): a bijective 64-bit finalizer over the
 * previous value and the task's SipHash, so order and every task count. */
static inline uint64_t spits_gen_chain(uint64_t h, uint64_t task_hash)
{
    h = (h ^ task_hash) + 0x9e3779b97f4a7c15ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* --- writing ---------------------------------------------------------- */

typedef struct spits_journal spits_journal_t;

/* Creates DIR/journal for a new job (fails if one exists). */
spits_journal_t *spits_journal_create(const char *dir, char *err, size_t errlen);
/* Opens DIR/journal to append after its first valid_len bytes (cutting
 * a torn tail off). */
spits_journal_t *spits_journal_append(const char *dir, uint64_t valid_len,
                                      char *err, size_t errlen);
/* Closes the file (syncing what is buffered) and frees. */
void spits_journal_destroy(spits_journal_t **j);

/* Buffers one record; -1 when out of memory. JSON payloads are encoded
 * compactly. */
int spits_journal_add(spits_journal_t *j, int type, uint32_t phase,
                      uint64_t id, uint64_t aux, const void *data,
                      uint32_t len);
int spits_journal_add_json(spits_journal_t *j, int type, uint32_t phase,
                           uint64_t aux, const json_t *doc);
/* Writes the buffered records and fdatasyncs: after 0, they survive a
 * crash of the process or the machine. -1 with err set. */
int spits_journal_sync(spits_journal_t *j, char *err, size_t errlen);
/* Bytes and syncs so far, for the report. */
uint64_t spits_journal_bytes(const spits_journal_t *j);
uint64_t spits_journal_syncs(const spits_journal_t *j);

/* --- reading ---------------------------------------------------------- */

typedef struct {
    uint64_t id;
    uint64_t hash;
    const unsigned char *data;   /* into the map */
    uint32_t len;
} spits_jr_result_t;

/* A generation checkpoint: the first count tasks chain to hash. */
typedef struct {
    uint64_t count;
    uint64_t hash;
} spits_jr_check_t;

typedef struct {
    uint32_t id;
    json_t *doc;                 /* the PHASE record's JSON */
    uint64_t jobinfo_hash;
    spits_jr_result_t *results;  /* in commit order */
    size_t nresults, capresults;
    spits_jr_check_t *checks;    /* in journal order (each run of the JM
                                    counts from the phase's first task) */
    size_t nchecks, capchecks;
    int ended;                   /* PHASE_END seen */
    int64_t commit_job_rc;
    const unsigned char *final;  /* into the map */
    uint32_t finalsz;
} spits_jr_phase_t;

typedef struct {
    void *map;
    size_t maplen;
    json_t *job;                 /* the JOB record's JSON */
    spits_jr_phase_t *phases;    /* phases[i].id == i + 1 */
    uint32_t nphases;
    int job_ended;
    int64_t exit_status;         /* from JOB_END */
    uint64_t valid_len;          /* bytes before any torn tail */
    uint64_t torn_bytes;         /* bytes of torn tail cut off */
    uint64_t records;
} spits_jr_t;

/* Loads DIR/journal. 0; 1 if there is no journal; -1 with err naming the
 * problem (and the byte offset of a damaged record). */
int spits_journal_load(const char *dir, spits_jr_t *out, char *err,
                       size_t errlen);
void spits_journal_unload(spits_jr_t *jr);
/* The same checks on bytes in memory (which must outlive jr); name is for
 * messages. Used by spits_journal_load and by the fuzzer. */
int spits_journal_parse(const void *data, size_t len, const char *name,
                        spits_jr_t *jr, char *err, size_t errlen);

#ifdef SPITS_SELFTEST
int spits_journal_selftest(void);
#endif

#endif
