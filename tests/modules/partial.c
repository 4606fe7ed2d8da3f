/*
 * partial.c - modules that lack required functions; each must be refused
 * with every missing one named. Built as workeronly.so (-DWORKER_ONLY: a
 * worker and nothing else) and nocommitjob.so (a committer without
 * spits_committer_commit_job, and spits_worker_finalize without
 * spits_worker_new). Neither ever runs.
 */
#include <stddef.h>
#include "spits.h"

#ifndef WORKER_ONLY
void *spits_job_manager_new(int c, const char *v[], const void *j, spitssize_t s) { (void)c; (void)v; (void)j; (void)s; return NULL; }
int spits_job_manager_next_task(void *jm, spitspush_t p, spitsctx_t x) { (void)jm; (void)p; (void)x; return 0; }
void *spits_committer_new(int c, const char *v[], const void *j, spitssize_t s) { (void)c; (void)v; (void)j; (void)s; return NULL; }
int spits_committer_commit_pit(void *c, const void *r, spitssize_t s) { (void)c; (void)r; (void)s; return 0; }
#else
void *spits_worker_new(int c, const char *v[]) { (void)c; (void)v; return NULL; }
#endif
int spits_worker_run(void *w, const void *t, spitssize_t s, spitspush_t p, spitsctx_t x) { (void)w; (void)t; (void)s; (void)p; (void)x; return 0; }
void spits_worker_finalize(void *w) { (void)w; }
