/*
 * elfcheck.h - checking a module's bytes as an ELF shared object before the
 * dynamic loader sees them.
 *
 * The loader trusts the file: a segment that ends past the end of a cut
 * file makes it fault (SIGBUS) instead of failing, and a module whose
 * symbols do not resolve fails with "undefined symbol" before anyone can
 * tell that it is a legacy module or not a SPITS module at all. These
 * checks read the ELF header, program headers, dynamic symbol table and
 * dynamic section directly, every offset bounds-checked against the
 * file's size.
 */
#ifndef SPITS_ELFCHECK_H
#define SPITS_ELFCHECK_H

#include <stddef.h>
#include <stdint.h>

/* What the dynamic symbol table says the module is. */
typedef enum {
    SPITS_ABI_UNKNOWN,   /* no section table to read: dlopen must tell */
    SPITS_ABI_NONE,      /* exports no spits_* symbol */
    SPITS_ABI_LEGACY,    /* exports spits_setup_commit (byte-array era) */
    SPITS_ABI_V2         /* exports spits_* symbols, none of them legacy */
} spits_abi_t;

/* Why a file was refused. */
typedef enum {
    SPITS_ELF_OK,
    SPITS_ELF_NOT_SO,     /* not an ELF shared object at all */
    SPITS_ELF_FOREIGN,    /* a shared object for another machine */
    SPITS_ELF_DAMAGED,    /* cut short, or an offset past the end */
    SPITS_ELF_UNREADABLE  /* spits_elf_check_headers could not read it */
} spits_elf_fault_t;

/* Checks the n bytes at p as a shared object for this machine whose
 * segments and dynamic symbols lie within them, and finds its ABI. On a
 * fault writes the detail (a short phrase) into why. */
spits_elf_fault_t spits_elf_check(const unsigned char *p, size_t n,
                                  spits_abi_t *abi, char *why, size_t whylen);

/* Calls fn(arg, name, type) for each defined, exported symbol in the
 * dynamic symbol table of n bytes that spits_elf_check accepted (type:
 * the symbol's STT_* type), until fn returns non-zero. A file without a
 * section table calls it for none. Every name is bounds-checked; on a
 * fault writes the detail into why. */
typedef int (*spits_elf_sym_fn)(void *arg, const char *name, unsigned type);
spits_elf_fault_t spits_elf_symbols(const unsigned char *p, size_t n,
                                    spits_elf_sym_fn fn, void *arg,
                                    char *why, size_t whylen);

/* Reads len bytes at offset off of a file into buf: 0, or -1 with errno
 * set (a short read is an error: the caller knows the file's size). */
typedef int (*spits_elf_read_fn)(void *arg, void *buf, size_t len,
                                 uint64_t off);

/* The checks of spits_elf_check that need only the headers, made on a
 * file of size bytes that rd reads: the ELF header, where the program and
 * section header tables lie, and the segments. They read a few kilobytes,
 * so a file that is no shared object, or whose headers point past its
 * end, is refused before anyone reads (or copies) the rest of it. */
spits_elf_fault_t spits_elf_check_headers(spits_elf_read_fn rd, void *arg,
                                          uint64_t size, char *why,
                                          size_t whylen);

/* What the dynamic section (PT_DYNAMIC, as the loader reads it) says the
 * loader will look for: the DT_NEEDED names in order, and the run path. */
typedef struct {
    char **needed;      /* NULL-terminated (empty when there are none) */
    char *runpath;      /* DT_RUNPATH, else DT_RPATH; NULL if neither */
    int is_rpath;       /* runpath is a DT_RPATH (searched before
                         * LD_LIBRARY_PATH, not after it) */
} spits_elf_deps_t;

/* Reads deps from n bytes that spits_elf_check accepted; every entry and
 * string is bounds-checked. On a fault writes the detail into why and
 * leaves deps empty. Free with spits_elf_deps_free. */
spits_elf_fault_t spits_elf_deps(const unsigned char *p, size_t n,
                                 spits_elf_deps_t *deps, char *why,
                                 size_t whylen);
void spits_elf_deps_free(spits_elf_deps_t *deps);

/* Feeds cut and corrupted copies of a real shared object to the check. */
#ifdef SPITS_SELFTEST
int spits_elf_selftest(void);
#endif

#endif
