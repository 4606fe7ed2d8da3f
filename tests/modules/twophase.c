/*
 * twophase.c - a spits_main module with two phases. Phase 1 sums i*i,
 * phase 2 sums i*i*i starting from phase 1's result (its jobinfo). A
 * worker picks the operation from ITS OWN argv[1], so a runtime that gave
 * workers the command line's argv would compute a wrong total.
 */
#define SUM_F(op, i) (strcmp((op), "square") == 0 ? (i) * (i) : (i) * (i) * (i))
#include "common.h"

int spits_main(int argc, const char *argv[], spitsrun_t run)
{
    const char *n = argc > 1 ? argv[1] : "100";
    const char *a1[] = {argv[0], "square", n};
    const char *a2[] = {argv[0], "cube", n};
    const void *final;
    spitssize_t finalsz;
    int64_t squares, total;

    if (run(3, a1, NULL, 0, &final, &finalsz) != 0 || finalsz != sizeof squares)
        return 1;
    memcpy(&squares, final, sizeof squares);
    if (run(3, a2, &squares, sizeof squares, &final, &finalsz) != 0 ||
        finalsz != sizeof total)
        return 1;
    memcpy(&total, final, sizeof total);
    printf("twophase: squares=%lld cubes=%lld total=%lld\n", (long long)squares,
           (long long)(total - squares), (long long)total);
    return 0;
}
