/*
 * chatty.c - a module whose workers print: "worker: chunk I" on stdout
 * for each task I (and an unfinished line for task 1), as a first module's
 * debugging output does. The job's result is commit_job's one line, which
 * spits_main prints: "chatty: sum=S".
 */
#include <stdio.h>
#include <stdint.h>

static int64_t chatty_f(int64_t i)
{
    /* (stdout's lock holds the two together: another worker thread's
     * line could come between them, which is not what is tested) */
    flockfile(stdout);
    if (i == 1)
        printf("worker: no newline here");   /* finished by the next line */
    printf("worker: chunk %lld\n", (long long)i);
    funlockfile(stdout);
    return i;
}

#define SUM_F(op, i) ((void)(op), chatty_f(i))
#define SUM_MAIN "chatty"
#include "common.h"
