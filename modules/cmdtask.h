/*
 * cmdtask.h - a task's bytes in the command module: its generation index
 * (8 bytes, little endian), then its record (cmdfile.h). The job manager
 * writes them (cmd.c), a worker reads them (cmd.c), and the committer
 * reads them again at a result's end (cmdcommit.c).
 */
#ifndef CMDTASK_H
#define CMDTASK_H

#include <stddef.h>
#include <stdint.h>

#include "cmdfile.h"

static inline void cmdtask_put_index(char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (char)(v >> (8 * i));
}

static inline uint64_t cmdtask_get_index(const void *p)
{
    const unsigned char *b = p;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* A task's bytes: its index and its parsed record; 0, or -1 if
 * malformed. */
static inline int cmdtask_parse(const void *task, size_t len, uint64_t *index, cmdfile_rec_t *rec)
{
    if (len <= 8 || cmdfile_parse((const char *)task + 8, len - 8, rec) != 0)
        return -1;
    *index = cmdtask_get_index(task);
    return 0;
}

#endif
