/*
 * image.h - a module's bytes, read once into a private, sealed copy.
 *
 * The loader never maps the user's file: a file cut short makes the
 * dynamic loader fault (SIGBUS) past its end, and a file overwritten in
 * place while a job runs changes code that is already running. An image
 * is the file's contents copied once into a sealed memfd, hashed (BLAKE2b,
 * the module hash JM and TMs compare) and checked by elfcheck.c before anything
 * is loaded; module.c dlopens the copy, so the hash describes exactly what
 * runs.
 */
#ifndef SPITS_IMAGE_H
#define SPITS_IMAGE_H

#include <stddef.h>
#include "elfcheck.h"

typedef struct spits_image spits_image_t;

/* Reads path into a private copy, hashes and checks it; for a Python
 * job's file (pyjob.h), the Python module, hashed with the file. On failure
 * returns NULL and writes a one-line message naming path into err. Its
 * origin is the directory of path's real path (realpath). */
spits_image_t *spits_image_read(const char *path, char *err, size_t errlen);
/* The same from an open descriptor (read from offset 0 with pread, so a
 * descriptor shared with other processes works); name is what messages
 * call it, origin (or NULL: none) the directory $ORIGIN stands for. The
 * descriptor stays the caller's. */
spits_image_t *spits_image_read_fd(int fd, const char *name,
                                   const char *origin, char *err,
                                   size_t errlen);
void spits_image_free(spits_image_t **img);

const char *spits_image_name(const spits_image_t *img);
/* BLAKE2b-256 of the bytes, 64 hex digits. */
const char *spits_image_hash(const spits_image_t *img);
spits_abi_t spits_image_abi(const spits_image_t *img);
/* Its DT_NEEDED names and run path (elfcheck.h). */
const spits_elf_deps_t *spits_image_deps(const spits_image_t *img);
/* What $ORIGIN in its run path means: the directory of the real path of
 * the file it was read from; NULL if unknown. */
const char *spits_image_origin(const spits_image_t *img);
/* The sealed copy (close-on-exec): what dlopen and --isolate's children
 * load. Valid until spits_image_free. */
int spits_image_fd(const spits_image_t *img);

#endif
