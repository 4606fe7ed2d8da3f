/*
 * originmod.c - a module linked against a helper library that sits next
 * to it and is found through its run path $ORIGIN (-Wl,-rpath,'$ORIGIN'),
 * as users ship them. Its workers' values come from the helper, and
 * spits_main names it: prints "originmod: sum=S via originhelper" for
 * S = 4 + 7 + ... + (3N + 1).
 */
#include <stdint.h>

int64_t originhelper_value(int64_t i);
const char *originhelper_name(void);

#define SUM_F(op, i) ((void)(op), originhelper_value(i))
#include "common.h"

int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    int64_t sum;
    if (sum_run(argc, argv, run, &sum) != 0)
        return 1;
    printf("originmod: sum=%lld via %s\n", (long long)sum, originhelper_name());
    return 0;
}
