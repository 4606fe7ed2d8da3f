/*
 * cmdopts.c - the command module's arguments (cmd.c's header lists
 * them), parsed by each of its parts: the job manager and the workers
 * (cmd.c) and the committer (cmdcommit.c), each from the same argv.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdopts.h"

#define CMD_DEFAULT_CAP (64ull << 20)

int cmdopts_parse(int argc, const char **argv, cmdopts_t *o)
{
    char *end;
    memset(o, 0, sizeof *o);
    o->cap = CMD_DEFAULT_CAP;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep-order")) {
            o->keep = 1;
            continue;
        }
        if (!strcmp(a, "--tag")) {
            o->tag = 1;
            continue;
        }
        if (!strcmp(a, "--spool")) {
            o->spool = 1;
            continue;
        }
        if (!strcmp(a, "--local")) {
            o->local = 1;
            continue;
        }
        if (!strcmp(a, "--slots")) {
            o->slots = 1;
            continue;
        }
        if (!strcmp(a, "--line-buffer")) {
            o->live = 1;
            continue;
        }
        if (a[0] != '-' && i + 1 == argc) {
            o->taskfile = a;
            continue;
        }
        if (!v || a[0] != '-') {
            fprintf(stderr, "cmd: unknown or incomplete argument '%s' (usage: cmd "
                    "[OPTIONS] TASKFILE)\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--results")) {
            o->results = v;
        } else if (!strcmp(a, "--joblog")) {
            o->joblog = v;
        } else if (!strcmp(a, "--status")) {
            o->status = v;
        } else if (!strcmp(a, "--env-file")) {
            o->envfile = v;
        } else if (!strcmp(a, "--timeout")) {
            errno = 0;
            o->timeout = strtod(v, &end);
            if (errno || end == v || *end || !(o->timeout > 0) || o->timeout > 1e9) {
                fprintf(stderr, "cmd: bad --timeout '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--output-cap")) {
            errno = 0;
            o->cap = strtoull(v, &end, 10);
            if (errno || end == v || *end || o->cap == 0 || v[0] == '-') {
                fprintf(stderr, "cmd: bad --output-cap '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--retries") || !strcmp(a, "--delay")) {
            errno = 0;
            double d = strtod(v, &end);
            if (errno || end == v || *end || !(d >= 0) || d > 1e6) {
                fprintf(stderr, "cmd: bad %s '%s'\n", a, v);
                return -1;
            }
            if (a[2] == 'r')
                o->retries = (long)d;
            else
                o->delay = d;
        } else if (!strcmp(a, "--progress")) {
            if (strcmp(v, "bar") && strcmp(v, "eta") && strcmp(v, "progress")) {
                fprintf(stderr, "cmd: bad --progress '%s'\n", v);
                return -1;
            }
            o->progress = v[0];
        } else if (!strcmp(a, "--halt")) {
            long n;
            if (!strncmp(v, "now,fail=", 9))
                o->halt_now = 1;
            else if (strncmp(v, "soon,fail=", 10)) {
                fprintf(stderr, "cmd: bad --halt '%s'\n", v);
                return -1;
            }
            errno = 0;
            n = strtol(strchr(v, '=') + 1, &end, 10);
            if (errno || *end || end == strchr(v, '=') + 1 || n < 1) {
                fprintf(stderr, "cmd: bad --halt '%s'\n", v);
                return -1;
            }
            o->halt_fail = n;
        } else {
            fprintf(stderr, "cmd: unknown option '%s'\n", a);
            return -1;
        }
    }
    if (!o->taskfile) {
        fprintf(stderr, "cmd: no TASKFILE given\n");
        return -1;
    }
    snprintf(o->haltfile, sizeof o->haltfile, "%s.halt", o->taskfile);
    return 0;
}
