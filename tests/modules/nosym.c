/* nosym.c - a v2 module without spits_worker_run; must be refused. */
#include <stddef.h>
#include "spits.h"
void *spits_job_manager_new(int c, const char *v[], const void *j, spitssize_t s) { (void)c; (void)v; (void)j; (void)s; return NULL; }
int spits_job_manager_next_task(void *jm, spitspush_t p, spitsctx_t x) { (void)jm; (void)p; (void)x; return 0; }
void *spits_worker_new(int c, const char *v[]) { (void)c; (void)v; return NULL; }
void *spits_committer_new(int c, const char *v[], const void *j, spitssize_t s) { (void)c; (void)v; (void)j; (void)s; return NULL; }
int spits_committer_commit_pit(void *c, const void *r, spitssize_t s) { (void)c; (void)r; (void)s; return 0; }
int spits_committer_commit_job(void *c, spitspush_t p, spitsctx_t x) { (void)c; (void)p; (void)x; return 0; }
