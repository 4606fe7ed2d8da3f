/*
 * cmddone.h - the command module's notes of what its committer wrote
 * (cmddone.c): TASKFILE.done, so that a job manager resumed from its
 * journal, which commits every result again, writes nothing twice.
 *
 * The committer writes a command's stdout, stderr and joblog line, then
 * its note. A job manager killed between the two left output that no
 * note covers, and its resumed life writes that command again. So each
 * note also says where stdout and the joblog ended after its command,
 * and opening the notes cuts each of the two back to where the last
 * note (or the last life's start) left it, when it is the same regular
 * file as in that life. A pipe or a terminal cannot be cut: there, the
 * command the kill interrupted may show twice. stderr is not cut.
 *
 * The file is records of four uint64_t in this machine's order:
 *   {CMDDONE_OUT, st_dev, st_ino, start}  a life's stdout, where it began
 *   {CMDDONE_LOG, st_dev, st_ino, start}  the same for the joblog
 *   {seq, failed, stdout end, joblog end} a command written out
 * Each life begins with its two stream records; a stream that is not a
 * regular file has st_dev = st_ino = 0 and CMDDONE_NONE for positions.
 * A record cut short (the job manager killed while writing it) is
 * dropped, and its command's output cut with it.
 *
 * The committer's thread only.
 */
#ifndef CMDDONE_H
#define CMDDONE_H

#include <stddef.h>
#include <stdint.h>

#define CMDDONE_OUT UINT64_MAX
#define CMDDONE_LOG (UINT64_MAX - 1)
#define CMDDONE_NONE UINT64_MAX

typedef struct {
    uint64_t dev, ino;            /* 0, 0: not a regular file */
    uint64_t end;                 /* where the last note left it, or CMDDONE_NONE */
} cmddone_stream_t;

typedef struct {
    int fd;                       /* TASKFILE.done, appended to, or -1 */
    int out, log;                 /* stdout and the joblog, or -1 */
    uint64_t *written;            /* task numbers past lives wrote out, sorted */
    size_t nwritten;
    uint64_t failed;              /* of those, the failed ones */
} cmddone_t;

/* Opens path (made if missing), reads past lives' notes, cuts stdout
 * (fd out) and the joblog (fd log, or -1) back to the last note, and
 * notes this life's start. 0, or -1 with a one-line reason in err. */
int cmddone_open(cmddone_t *d, const char *path, int out, int log, char *err, size_t errlen);
/* Whether a past life wrote task seq out. */
int cmddone_written(const cmddone_t *d, uint64_t seq);
/* Notes task seq written out (after its writes): 0 (also when no list
 * is open: a failed write closed it), or -1 (errno). */
int cmddone_note(cmddone_t *d, uint64_t seq, int failed);
void cmddone_close(cmddone_t *d);

int cmddone_selftest(void);

#endif
