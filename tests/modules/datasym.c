/*
 * datasym.c - a working sum module (common.h) but for one thing: its
 * spits_worker_run is a variable (a function pointer: an ELF data
 * symbol) that points to the function. Called as code, the variable's
 * address crashes the worker, so the module must be refused at load.
 */
#define spits_worker_run sum_worker_run      /* common.h's function */
#define SUM_F(op, i) ((void)(op), (i))
#include "common.h"
#undef spits_worker_run

int (*spits_worker_run)(void *, const void *, spitssize_t, spitspush_t,
                        spitsctx_t) = sum_worker_run;
