/*
 * module.h - loading a SPITS module and calling it.
 *
 * A module is a shared object with the v2 interface (spits.h), or the SPITS
 * 2.0 variant whose constructors take a trailing metrics object. This file
 * finds out which, refuses what cannot be run (legacy byte-array modules,
 * missing functions, functions under C++ names, variables under function
 * names; damaged files are image.c's), and hides the variant behind one
 * set of calls: each role
 * instance is a spits_inst_t that carries the module's object and, for 2.0
 * modules, the metrics object made for it.
 */
#ifndef SPITS_MODULE_H
#define SPITS_MODULE_H

#include <stddef.h>
#include <jansson.h>
#include "image.h"
#include "spits.h"

typedef struct spits_module spits_module_t;

typedef struct {
    void *obj;       /* what the module's constructor returned */
    void *metrics;   /* 2.0 variant only: made with spits_metrics_new */
} spits_inst_t;

/* Loads and checks the module an image holds (image.h), taking the image
 * over (*img becomes NULL): it is the private copy that stays loaded. On
 * failure returns NULL and writes a one-line message naming the file and
 * the problem into err. */
spits_module_t *spits_module_load(spits_image_t **img, char *err,
                                  size_t errlen);
/* spits_image_read, then spits_module_load. */
spits_module_t *spits_module_open(const char *path, char *err, size_t errlen);
void spits_module_close(spits_module_t **m);

/* The path it was read from, its BLAKE2b hash, and the descriptor of the
 * private copy it was loaded from (close-on-exec). */
const char *spits_module_path(const spits_module_t *m);
/* What $ORIGIN in its run path stands for (image.h), or NULL. */
const char *spits_module_origin(const spits_module_t *m);
const char *spits_module_hash(const spits_module_t *m);
int spits_module_fd(const spits_module_t *m);
int spits_module_is_v20(const spits_module_t *m);
int spits_module_has_main(const spits_module_t *m);
int spits_module_main(spits_module_t *m, int argc, const char **argv,
                      spitsrun_t run);

/* Constructors return 0, or -1 if the module returned NULL. */
int spits_module_manager_new(spits_module_t *m, spits_inst_t *in, int argc,
                        const char **argv, const void *jobinfo,
                        spitssize_t jobinfosz);
int spits_module_next_task(spits_module_t *m, spits_inst_t *in,
                         spitspush_t push, spitsctx_t ctx);
void spits_module_manager_free(spits_module_t *m, spits_inst_t *in);

int spits_module_worker_new(spits_module_t *m, spits_inst_t *in, int argc,
                            const char **argv);
int spits_module_worker_run(spits_module_t *m, spits_inst_t *in,
                            const void *task, spitssize_t tasksz,
                            spitspush_t push, spitsctx_t ctx);
/* Why the instance's last spits_worker_run failed, in the module's own
 * words, if it exports spits_worker_error (a spits extension, see
 * docs/module-guide.md: const char *spits_worker_error(void *worker)); else,
 * or if it says nothing, NULL. Valid until the instance's next call. */
const char *spits_module_worker_error(spits_module_t *m, spits_inst_t *in);
/* A worker process's slow start (an interpreter's), before its first
 * worker is made, if the module exports spits_worker_prepare (a spits
 * extension, see docs/module-guide.md: void spits_worker_prepare(void)). */
void spits_module_worker_prepare(spits_module_t *m);
void spits_module_worker_free(spits_module_t *m, spits_inst_t *in);

int spits_module_committer_new(spits_module_t *m, spits_inst_t *in, int argc,
                        const char **argv, const void *jobinfo,
                        spitssize_t jobinfosz);
int spits_module_commit_pit(spits_module_t *m, spits_inst_t *in,
                           const void *result, spitssize_t resultsz);
int spits_module_commit_job(spits_module_t *m, spits_inst_t *in,
                        spitspush_t push, spitsctx_t ctx);
void spits_module_committer_free(spits_module_t *m, spits_inst_t *in);

/* A 2.0 instance's metrics and their last values (metrics.c), when the
 * module exports the functions that read them (either published
 * interface); else NULL. */
json_t *spits_module_metrics_json(spits_module_t *m, const spits_inst_t *in);

#endif
