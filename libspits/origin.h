/*
 * origin.h - loading the helper libraries a module finds through an
 * $ORIGIN run path.
 *
 * The module is dlopened from its private copy (image.h), /proc/PID/fd/N,
 * so the dynamic loader expands its $ORIGIN to /proc/PID/fd and finds no
 * helper there. These calls do the loader's search for the module's
 * DT_NEEDED names themselves, with $ORIGIN as the directory the module
 * was read from, and dlopen what an $ORIGIN entry finds, from its real
 * path, before the copy is loaded.
 */
#ifndef SPITS_ORIGIN_H
#define SPITS_ORIGIN_H

#include <stddef.h>
#include "image.h"

typedef struct spits_origin spits_origin_t;

/* Loads the image's $ORIGIN helpers. On failure returns NULL and writes a
 * one-line message naming the module and the helper into err. */
spits_origin_t *spits_origin_load(const spits_image_t *img, char *err,
                                  size_t errlen);
/* When dlmsg (the copy's dlopen error) says a helper loaded here was not
 * found after all, writes why into out and returns 1; else 0. */
int spits_origin_explain(const spits_origin_t *o, const char *dlmsg,
                         char *out, size_t outlen);
/* Releases the handles; call after the module's own dlclose, if any. */
void spits_origin_close(spits_origin_t **o);

/* $ORIGIN substitution and the search order, on files it makes. */
#ifdef SPITS_SELFTEST
int spits_origin_selftest(void);
#endif

#endif
