/*
 * elfcheck.c - checking a module's bytes as an ELF shared object (see
 * elfcheck.h).
 *
 * Only this host's ELF class and byte order are accepted, so the native
 * ElfW() structures describe the file. Headers are copied out with memcpy:
 * a damaged file may put them at unaligned offsets.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfcheck.h"

#if UINTPTR_MAX > 0xffffffffu
#define HOST_CLASS ELFCLASS64
#else
#define HOST_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

typedef ElfW(Ehdr) ehdr_t;
typedef ElfW(Phdr) phdr_t;
typedef ElfW(Shdr) shdr_t;
typedef ElfW(Sym) sym_t;

static spits_elf_fault_t fault(spits_elf_fault_t f, char *why, size_t whylen,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return f;
}

/* Whether [off, off + len) lies within n bytes (no overflow). */
static int in_file(uint64_t off, uint64_t len, uint64_t n)
{
    return off <= n && len <= n - off;
}

/* This host's e_machine, from the ELF header of the object holding this
 * code as it is mapped; 0 (no check) if that cannot be found. */
static unsigned host_machine(void)
{
    Dl_info info;
    ehdr_t eh;
    if (!dladdr((void *)(uintptr_t)host_machine, &info) || !info.dli_fbase)
        return 0;
    memcpy(&eh, info.dli_fbase, sizeof eh);
    return memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 ? eh.e_machine : 0;
}

static spits_elf_fault_t check_header(const unsigned char *p, size_t n,
                                      ehdr_t *eh, char *why, size_t whylen)
{
    if (n == 0)
        return fault(SPITS_ELF_NOT_SO, why, whylen, "the file is empty");
    if (n < SELFMAG || memcmp(p, ELFMAG, SELFMAG) != 0)
        return fault(SPITS_ELF_NOT_SO, why, whylen, "no ELF header");
    if (n < sizeof *eh)
        return fault(SPITS_ELF_DAMAGED, why, whylen, "the ELF header is cut "
                     "short: the file has %zu bytes", n);
    memcpy(eh, p, sizeof *eh);
    if (p[EI_CLASS] != HOST_CLASS || p[EI_DATA] != HOST_DATA)
        return fault(SPITS_ELF_FOREIGN, why, whylen, "ELF class %u, byte "
                     "order %u; this host's are %u, %u", p[EI_CLASS],
                     p[EI_DATA], HOST_CLASS, HOST_DATA);
    unsigned host = host_machine();
    if (host && eh->e_machine != host)
        return fault(SPITS_ELF_FOREIGN, why, whylen, "ELF machine %u; this "
                     "host's is %u", eh->e_machine, host);
    if (eh->e_type == ET_EXEC)
        return fault(SPITS_ELF_NOT_SO, why, whylen, "an executable; link "
                     "the module with -shared");
    if (eh->e_type == ET_REL)
        return fault(SPITS_ELF_NOT_SO, why, whylen, "an object file; link "
                     "the module with -shared");
    if (eh->e_type != ET_DYN)
        return fault(SPITS_ELF_NOT_SO, why, whylen, "ELF type %u", eh->e_type);
    return SPITS_ELF_OK;
}

/* The program and section header tables must lie within the file of n
 * bytes (a file stripped of sections has no section table). */
static spits_elf_fault_t check_tables(const ehdr_t *eh, uint64_t n, char *why,
                                      size_t whylen)
{
    if (eh->e_phentsize != sizeof(phdr_t) || eh->e_phnum == 0)
        return fault(SPITS_ELF_DAMAGED, why, whylen, "no valid program "
                     "header table");
    if (!in_file(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(phdr_t), n))
        return fault(SPITS_ELF_DAMAGED, why, whylen, "the program headers "
                     "end past the file's %llu bytes", (unsigned long long)n);
    if (eh->e_shoff == 0 || eh->e_shnum == 0)
        return SPITS_ELF_OK;
    if (eh->e_shentsize != sizeof(shdr_t) ||
        !in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(shdr_t), n))
        return fault(SPITS_ELF_DAMAGED, why, whylen, "the section headers "
                     "end past the file's %llu bytes", (unsigned long long)n);
    return SPITS_ELF_OK;
}

/* Every segment the loader maps must lie within the file of n bytes; ph
 * is the program header table, which check_tables found in it. */
static spits_elf_fault_t check_segments(const unsigned char *ph, uint64_t n,
                                        const ehdr_t *eh, char *why,
                                        size_t whylen)
{
    unsigned loads = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        phdr_t h;
        memcpy(&h, ph + (size_t)i * sizeof h, sizeof h);
        if (h.p_type != PT_LOAD && h.p_type != PT_DYNAMIC)
            continue;
        loads += h.p_type == PT_LOAD;
        if (!in_file(h.p_offset, h.p_filesz, n))
            return fault(SPITS_ELF_DAMAGED, why, whylen, "segment %u ends at "
                         "byte %llu, past the file's %llu bytes", i,
                         (unsigned long long)h.p_offset +
                         (unsigned long long)h.p_filesz, (unsigned long long)n);
    }
    if (loads == 0)
        return fault(SPITS_ELF_DAMAGED, why, whylen, "no loadable segment");
    return SPITS_ELF_OK;
}

/* Section i's header, if the table holds it. */
static int section(const unsigned char *p, const ehdr_t *eh, unsigned i,
                   shdr_t *sh)
{
    if (i >= eh->e_shnum)
        return -1;
    memcpy(sh, p + eh->e_shoff + (size_t)i * sizeof *sh, sizeof *sh);
    return 0;
}

/* Calls fn with the name and type of each defined, exported symbol in
 * dynsym, until it returns non-zero. */
static spits_elf_fault_t scan_symbols(const unsigned char *p, size_t n,
                                      const shdr_t *ds, const shdr_t *ss,
                                      spits_elf_sym_fn fn, void *arg,
                                      char *why, size_t whylen)
{
    if (ds->sh_entsize != sizeof(sym_t) || !in_file(ds->sh_offset, ds->sh_size, n) ||
        !in_file(ss->sh_offset, ss->sh_size, n))
        return fault(SPITS_ELF_DAMAGED, why, whylen, "the dynamic symbol "
                     "table lies past the file's %zu bytes", n);
    const char *names = (const char *)p + ss->sh_offset;
    for (uint64_t i = 0; i < ds->sh_size / sizeof(sym_t); i++) {
        sym_t s;
        memcpy(&s, p + ds->sh_offset + i * sizeof s, sizeof s);
        if (s.st_shndx == SHN_UNDEF || (s.st_info >> 4) == STB_LOCAL)
            continue;
        if (s.st_name >= ss->sh_size ||
            !memchr(names + s.st_name, '\0', ss->sh_size - s.st_name))
            return fault(SPITS_ELF_DAMAGED, why, whylen, "symbol %llu's "
                         "name lies outside the string table",
                         (unsigned long long)i);
        if (fn(arg, names + s.st_name, ELF32_ST_TYPE(s.st_info)) != 0)
            break;
    }
    return SPITS_ELF_OK;
}

/* The dynamic symbols, through fn; *found is 0 when there is no section
 * table to find them in (a file stripped of sections). */
static spits_elf_fault_t read_symbols(const unsigned char *p, size_t n,
                                      const ehdr_t *eh, spits_elf_sym_fn fn,
                                      void *arg, int *found, char *why,
                                      size_t whylen)
{
    shdr_t ds, ss;
    *found = 0;
    if (eh->e_shoff == 0 || eh->e_shnum == 0)
        return SPITS_ELF_OK;
    *found = 1;
    for (unsigned i = 0; section(p, eh, i, &ds) == 0; i++) {
        if (ds.sh_type != SHT_DYNSYM)
            continue;
        if (section(p, eh, ds.sh_link, &ss) != 0 || ss.sh_type != SHT_STRTAB)
            return fault(SPITS_ELF_DAMAGED, why, whylen, "the dynamic "
                         "symbols have no string table");
        return scan_symbols(p, n, &ds, &ss, fn, arg, why, whylen);
    }
    return SPITS_ELF_OK;          /* a section table without dynsym */
}

/* What the names say: any spits_* symbol, and spits_setup_commit. */
typedef struct { int spits, legacy; } abi_scan_t;

static int abi_symbol(void *arg, const char *name, unsigned type)
{
    abi_scan_t *a = arg;
    (void)type;
    a->spits |= strncmp(name, "spits_", 6) == 0;
    a->legacy |= strcmp(name, "spits_setup_commit") == 0;
    return 0;
}

static spits_elf_fault_t read_abi(const unsigned char *p, size_t n,
                                  const ehdr_t *eh, spits_abi_t *abi,
                                  char *why, size_t whylen)
{
    abi_scan_t a = {0, 0};
    int found;
    spits_elf_fault_t f = read_symbols(p, n, eh, abi_symbol, &a, &found,
                                       why, whylen);
    if (f == SPITS_ELF_OK && found)   /* else unknown: ask dlopen */
        *abi = a.legacy ? SPITS_ABI_LEGACY : a.spits ? SPITS_ABI_V2
                                                     : SPITS_ABI_NONE;
    return f;
}

spits_elf_fault_t spits_elf_check(const unsigned char *p, size_t n,
                                  spits_abi_t *abi, char *why, size_t whylen)
{
    ehdr_t eh;
    spits_elf_fault_t f;

    *abi = SPITS_ABI_UNKNOWN;
    if ((f = check_header(p, n, &eh, why, whylen)) != SPITS_ELF_OK ||
        (f = check_tables(&eh, n, why, whylen)) != SPITS_ELF_OK ||
        (f = check_segments(p + eh.e_phoff, n, &eh, why, whylen)) != SPITS_ELF_OK)
        return f;
    return read_abi(p, n, &eh, abi, why, whylen);
}

spits_elf_fault_t spits_elf_symbols(const unsigned char *p, size_t n,
                                    spits_elf_sym_fn fn, void *arg,
                                    char *why, size_t whylen)
{
    ehdr_t eh;
    spits_elf_fault_t f;
    int found;

    if ((f = check_header(p, n, &eh, why, whylen)) != SPITS_ELF_OK ||
        (f = check_tables(&eh, n, why, whylen)) != SPITS_ELF_OK)
        return f;
    return read_symbols(p, n, &eh, fn, arg, &found, why, whylen);
}

spits_elf_fault_t spits_elf_check_headers(spits_elf_read_fn rd, void *arg,
                                          uint64_t size, char *why,
                                          size_t whylen)
{
    unsigned char head[sizeof(ehdr_t)], *ph;
    size_t hn = size < sizeof head ? (size_t)size : sizeof head;
    ehdr_t eh;
    spits_elf_fault_t f;

    if (hn && rd(arg, head, hn, 0) != 0)
        return fault(SPITS_ELF_UNREADABLE, why, whylen, "%s", strerror(errno));
    if ((f = check_header(head, hn, &eh, why, whylen)) != SPITS_ELF_OK ||
        (f = check_tables(&eh, size, why, whylen)) != SPITS_ELF_OK)
        return f;
    /* (at most 65535 entries: a few megabytes, read once per load) */
    size_t phlen = (size_t)eh.e_phnum * sizeof(phdr_t);
    if (!(ph = malloc(phlen)))
        return fault(SPITS_ELF_UNREADABLE, why, whylen, "out of memory");
    if (rd(arg, ph, phlen, eh.e_phoff) != 0)
        f = fault(SPITS_ELF_UNREADABLE, why, whylen, "%s", strerror(errno));
    else
        f = check_segments(ph, size, &eh, why, whylen);
    free(ph);
    return f;
}

/* --- the dynamic section ------------------------------------------------ */

typedef ElfW(Dyn) dyn_t;

/* The file offset of the len bytes at virtual address a, from the PT_LOAD
 * segment that holds them in the file; -1 if none does. */
static int64_t vaddr_to_offset(const unsigned char *p, size_t n,
                               const ehdr_t *eh, uint64_t a, uint64_t len)
{
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        phdr_t ph;
        memcpy(&ph, p + eh->e_phoff + (size_t)i * sizeof ph, sizeof ph);
        if (ph.p_type != PT_LOAD || a < ph.p_vaddr ||
            a - ph.p_vaddr > ph.p_filesz || len > ph.p_filesz - (a - ph.p_vaddr))
            continue;
        uint64_t off = ph.p_offset + (a - ph.p_vaddr);
        return in_file(off, len, n) ? (int64_t)off : -1;
    }
    return -1;
}

/* The PT_DYNAMIC segment's entries: their offset and count up to and
 * without DT_NULL. 0 when there is none (nothing to load), 1 found, or a
 * fault. */
static int find_dynamic(const unsigned char *p, size_t n, const ehdr_t *eh,
                        uint64_t *off, uint64_t *count)
{
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        phdr_t ph;
        memcpy(&ph, p + eh->e_phoff + (size_t)i * sizeof ph, sizeof ph);
        if (ph.p_type != PT_DYNAMIC)
            continue;
        if (!in_file(ph.p_offset, ph.p_filesz, n))
            return -1;
        for (uint64_t k = 0; k < ph.p_filesz / sizeof(dyn_t); k++) {
            dyn_t d;
            memcpy(&d, p + ph.p_offset + k * sizeof d, sizeof d);
            if (d.d_tag == DT_NULL) {
                *off = ph.p_offset;
                *count = k;
                return 1;
            }
        }
        return -1;                /* cut before its DT_NULL end */
    }
    return 0;
}

static dyn_t dyn_entry(const unsigned char *p, uint64_t off, uint64_t k)
{
    dyn_t d;
    memcpy(&d, p + off + k * sizeof d, sizeof d);
    return d;
}

/* A copy of the string at offset s of the string table, or NULL with why
 * set when it does not end inside the table (or out of memory). */
static char *dyn_string(const char *tab, uint64_t tabsz, uint64_t s,
                        const char *what, char *why, size_t whylen)
{
    char *c;
    if (s >= tabsz || !memchr(tab + s, '\0', tabsz - s)) {
        fault(SPITS_ELF_DAMAGED, why, whylen, "a %s name lies outside the "
              "dynamic string table", what);
        return NULL;
    }
    if (!(c = strdup(tab + s)))
        fault(SPITS_ELF_DAMAGED, why, whylen, "out of memory");
    return c;
}

/* Copies the names out of the string table found at tab (tabsz bytes). */
static spits_elf_fault_t copy_deps(const unsigned char *p, uint64_t off,
                                   uint64_t count, const char *tab,
                                   uint64_t tabsz, spits_elf_deps_t *deps,
                                   char *why, size_t whylen)
{
    size_t k = 0;
    if (!(deps->needed = calloc((size_t)count + 1, sizeof *deps->needed)))
        return fault(SPITS_ELF_DAMAGED, why, whylen, "out of memory");
    for (uint64_t i = 0; i < count; i++) {
        dyn_t d = dyn_entry(p, off, i);
        char **to = d.d_tag == DT_NEEDED ? &deps->needed[k++] :
                    d.d_tag == DT_RUNPATH ? &deps->runpath :
                    d.d_tag == DT_RPATH && !deps->runpath ? &deps->runpath : NULL;
        if (!to)
            continue;
        free(*to);
        if (to == &deps->runpath)
            deps->is_rpath = d.d_tag == DT_RPATH;
        if (!(*to = dyn_string(tab, tabsz, d.d_un.d_val, d.d_tag == DT_NEEDED ?
                               "DT_NEEDED" : "run path", why, whylen)))
            return SPITS_ELF_DAMAGED;
    }
    return SPITS_ELF_OK;
}

spits_elf_fault_t spits_elf_deps(const unsigned char *p, size_t n,
                                 spits_elf_deps_t *deps, char *why,
                                 size_t whylen)
{
    ehdr_t eh;
    uint64_t off = 0, count = 0, tabaddr = 0, tabsz = 0, names = 0;
    int have_tab = 0;

    memset(deps, 0, sizeof *deps);
    memcpy(&eh, p, sizeof eh);
    int found = find_dynamic(p, n, &eh, &off, &count);
    if (found < 0)
        return fault(SPITS_ELF_DAMAGED, why, whylen, "the dynamic section "
                     "is cut short or lies past the file's %zu bytes", n);
    for (uint64_t i = 0; i < count; i++) {
        dyn_t d = dyn_entry(p, off, i);
        names += d.d_tag == DT_NEEDED || d.d_tag == DT_RUNPATH ||
                 d.d_tag == DT_RPATH;
        have_tab |= d.d_tag == DT_STRTAB;
        if (d.d_tag == DT_STRTAB)
            tabaddr = d.d_un.d_ptr;
        else if (d.d_tag == DT_STRSZ)
            tabsz = d.d_un.d_val;
    }
    int64_t tab = names ? vaddr_to_offset(p, n, &eh, tabaddr, tabsz) : 0;
    if (names && (!have_tab || tab < 0))
        return fault(SPITS_ELF_DAMAGED, why, whylen, "the dynamic string "
                     "table lies outside the file's loaded bytes");
    spits_elf_fault_t f = copy_deps(p, off, count, (const char *)p + tab,
                                    tabsz, deps, why, whylen);
    if (f != SPITS_ELF_OK)
        spits_elf_deps_free(deps);
    return f;
}

void spits_elf_deps_free(spits_elf_deps_t *deps)
{
    if (deps->needed)
        for (char **s = deps->needed; *s; s++)
            free(*s);
    free(deps->needed);
    free(deps->runpath);
    memset(deps, 0, sizeof *deps);
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "elf selftest: %s:%d: %s\n", \
                      __FILE__, __LINE__, #c); goto out; } } while (0)

/* A real shared object of this host: libc, found through a function no
 * sanitizer intercepts (fclose would lead to the sanitizer's runtime). */
static unsigned char *read_libc(size_t *n)
{
    Dl_info info;
    unsigned char *p = NULL;
    long len;
    FILE *f;

    if (!dladdr((void *)(uintptr_t)gnu_get_libc_version, &info) || !info.dli_fname ||
        !(f = fopen(info.dli_fname, "rb")))
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)len)) &&
        fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = p ? (size_t)len : 0;
    return p;
}

/* The check of a copy of orig (n bytes) whose ELF header, program header
 * ph (or -1) or section header sh (or -1) was changed by edit. */
typedef void (*edit_fn)(ehdr_t *, phdr_t *, shdr_t *);

static spits_elf_fault_t check_edited(const unsigned char *orig, size_t n,
                                      int ph, int sh, edit_fn edit, char *why)
{
    unsigned char *p = malloc(n);
    ehdr_t eh;
    phdr_t phd;
    shdr_t shd;
    spits_abi_t abi;

    if (!p)
        return SPITS_ELF_OK;
    memcpy(p, orig, n);
    memcpy(&eh, p, sizeof eh);
    unsigned char *php = p + eh.e_phoff + (size_t)(ph < 0 ? 0 : ph) * sizeof phd;
    unsigned char *shp = p + eh.e_shoff + (size_t)(sh < 0 ? 0 : sh) * sizeof shd;
    memcpy(&phd, php, sizeof phd);
    memcpy(&shd, shp, sizeof shd);
    edit(&eh, &phd, &shd);
    if (ph >= 0)
        memcpy(php, &phd, sizeof phd);
    if (sh >= 0)
        memcpy(shp, &shd, sizeof shd);
    memcpy(p, &eh, sizeof eh);
    spits_elf_fault_t f = spits_elf_check(p, n, &abi, why, 200);
    free(p);
    return f;
}

static void ed_class(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_ident[EI_CLASS] ^= 3; }
static void ed_machine(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_machine ^= 0x40; }
static void ed_exec(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_type = ET_EXEC; }
static void ed_rel(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_type = ET_REL; }
static void ed_phoff(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_phoff = UINT32_MAX; }
static void ed_phent(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_phentsize = 1; }
static void ed_shoff(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_shoff = UINT32_MAX; }
static void ed_noshdr(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)p; (void)s; e->e_shoff = 0; }
static void ed_filesz(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)e; (void)s; p->p_filesz = UINT32_MAX; }
static void ed_offset(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)e; (void)s; p->p_offset = (ElfW(Off))-1; }
static void ed_symoff(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)e; (void)p; s->sh_offset = (ElfW(Off))-8; }
static void ed_symlink(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)e; (void)p; s->sh_link = UINT16_MAX; }
static void ed_strsize(ehdr_t *e, phdr_t *p, shdr_t *s) { (void)e; (void)p; s->sh_size = 1; }

/* The index of the first program header of type t, or section of type t
 * (sections when sec), or -1. */
static int find_hdr(const unsigned char *p, int sec, unsigned t)
{
    ehdr_t eh;
    memcpy(&eh, p, sizeof eh);
    for (unsigned i = 0; i < (sec ? eh.e_shnum : eh.e_phnum); i++) {
        phdr_t ph;
        shdr_t sh;
        if (sec)
            memcpy(&sh, p + eh.e_shoff + i * sizeof sh, sizeof sh);
        else
            memcpy(&ph, p + eh.e_phoff + i * sizeof ph, sizeof ph);
        if ((sec ? sh.sh_type : ph.p_type) == t)
            return (int)i;
    }
    return -1;
}

/* Where the first dynamic entry of tag t lies in p, or NULL. */
static unsigned char *dyn_find(unsigned char *p, size_t n, int64_t t)
{
    ehdr_t eh;
    uint64_t off, count;
    memcpy(&eh, p, sizeof eh);
    if (find_dynamic(p, n, &eh, &off, &count) != 1)
        return NULL;
    for (uint64_t k = 0; k < count; k++)
        if (dyn_entry(p, off, k).d_tag == t)
            return p + off + k * sizeof(dyn_t);
    return NULL;
}

/* spits_elf_deps of a copy of orig whose first dynamic entry of tag t got
 * the value v; for t == DT_NULL, whose PT_DYNAMIC got the size v. */
static spits_elf_fault_t deps_edited(const unsigned char *orig, size_t n,
                                     int64_t t, uint64_t v, char *why)
{
    unsigned char *p = malloc(n), *at;
    spits_elf_deps_t deps;
    spits_elf_fault_t f = SPITS_ELF_OK;

    if (!p)
        return f;
    memcpy(p, orig, n);
    int ph = find_hdr(p, 0, PT_DYNAMIC);
    if (t == DT_NULL && ph >= 0) {
        phdr_t d;
        at = p + ((ehdr_t *)(void *)p)->e_phoff + (size_t)ph * sizeof d;
        memcpy(&d, at, sizeof d);
        d.p_filesz = v;
        memcpy(at, &d, sizeof d);
    } else if ((at = dyn_find(p, n, t))) {
        dyn_t d;
        memcpy(&d, at, sizeof d);
        d.d_un.d_val = v;
        memcpy(at, &d, sizeof d);
    }
    f = spits_elf_deps(p, n, &deps, why, 200);
    spits_elf_deps_free(&deps);
    free(p);
    return f;
}

/* The value of the first dynamic entry of tag t in p, or 0. */
static uint64_t dyn_value(unsigned char *p, size_t n, int64_t t)
{
    unsigned char *at = dyn_find(p, n, t);
    dyn_t d = {0};
    if (at)
        memcpy(&d, at, sizeof d);
    return d.d_un.d_val;
}

/* libc's DT_NEEDED (the dynamic loader), and the same dynamic section cut,
 * or pointing outside its string table or the file. */
static int deps_selftest(unsigned char *so, size_t n)
{
    spits_elf_deps_t deps;
    char why[200];
    int rc = -1;

    CHECK(spits_elf_deps(so, n, &deps, why, sizeof why) == SPITS_ELF_OK);
    CHECK(deps.needed && deps.needed[0] && strncmp(deps.needed[0], "ld", 2) == 0);
    CHECK(!deps.runpath);
    uint64_t need = dyn_value(so, n, DT_NEEDED);
    CHECK(need > 0);
    CHECK(deps_edited(so, n, DT_NULL, 2 * sizeof(dyn_t), why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "dynamic section is cut short"));
    CHECK(deps_edited(so, n, DT_NULL, UINT32_MAX, why) == SPITS_ELF_DAMAGED);
    CHECK(deps_edited(so, n, DT_NEEDED, UINT32_MAX, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "DT_NEEDED name lies outside the dynamic string table"));
    /* The name starts inside the table but its end is cut off. */
    CHECK(deps_edited(so, n, DT_STRSZ, need + 2, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "outside the dynamic string table"));
    CHECK(deps_edited(so, n, DT_STRTAB, (uint64_t)-16, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "string table lies outside the file's loaded bytes"));
    CHECK(deps_edited(so, n, DT_STRSZ, UINT32_MAX, why) == SPITS_ELF_DAMAGED);
    rc = 0;
out:
    spits_elf_deps_free(&deps);
    return rc;
}

/* Records the types of two of libc's symbols: malloc and environ. */
static int st_symbol(void *arg, const char *name, unsigned type)
{
    unsigned *t = arg;
    if (strcmp(name, "malloc") == 0)
        t[0] = type;
    else if (strcmp(name, "environ") == 0)
        t[1] = type;
    return 0;
}

int spits_elf_selftest(void)
{
    size_t n;
    unsigned char *so = read_libc(&n);
    char why[200];
    spits_abi_t abi;
    int rc = -1;

    CHECK(so && n > 16384);
    CHECK(spits_elf_check(so, n, &abi, why, sizeof why) == SPITS_ELF_OK);
    CHECK(abi == SPITS_ABI_NONE);
    CHECK(spits_elf_check(so, 0, &abi, why, sizeof why) == SPITS_ELF_NOT_SO);
    CHECK(strstr(why, "empty"));
    CHECK(spits_elf_check((const unsigned char *)"not a module\n", 13, &abi,
                          why, sizeof why) == SPITS_ELF_NOT_SO);
    CHECK(strstr(why, "no ELF header"));
    /* Cut anywhere, from inside the header to the last byte. */
    static const size_t cuts[] = {4, 40, 1000, 5000, 12000};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        CHECK(spits_elf_check(so, cuts[i], &abi, why, sizeof why) == SPITS_ELF_DAMAGED);
        CHECK(strstr(why, "past the file's") || strstr(why, "cut short"));
    }
    CHECK(spits_elf_check(so, n - 1, &abi, why, sizeof why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "section headers end past"));

    int load = find_hdr(so, 0, PT_LOAD), dyn = find_hdr(so, 1, SHT_DYNSYM);
    CHECK(load >= 0 && dyn >= 0);
    shdr_t ds;
    memcpy(&ds, so + ((ehdr_t *)(void *)so)->e_shoff + (size_t)dyn * sizeof ds, sizeof ds);
    CHECK(check_edited(so, n, -1, -1, ed_class, why) == SPITS_ELF_FOREIGN);
    CHECK(check_edited(so, n, -1, -1, ed_machine, why) == SPITS_ELF_FOREIGN);
    CHECK(strstr(why, "ELF machine"));
    CHECK(check_edited(so, n, -1, -1, ed_exec, why) == SPITS_ELF_NOT_SO);
    CHECK(strstr(why, "an executable"));
    CHECK(check_edited(so, n, -1, -1, ed_rel, why) == SPITS_ELF_NOT_SO);
    CHECK(strstr(why, "an object file"));
    CHECK(check_edited(so, n, -1, -1, ed_phoff, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "program headers end past"));
    CHECK(check_edited(so, n, -1, -1, ed_phent, why) == SPITS_ELF_DAMAGED);
    CHECK(check_edited(so, n, load, -1, ed_filesz, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "segment") && strstr(why, "past the file's"));
    CHECK(check_edited(so, n, load, -1, ed_offset, why) == SPITS_ELF_DAMAGED);
    CHECK(check_edited(so, n, -1, -1, ed_shoff, why) == SPITS_ELF_DAMAGED);
    CHECK(check_edited(so, n, -1, dyn, ed_symoff, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "dynamic symbol table lies past"));
    CHECK(check_edited(so, n, -1, dyn, ed_symlink, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "no string table"));
    CHECK(check_edited(so, n, -1, (int)ds.sh_link, ed_strsize, why) == SPITS_ELF_DAMAGED);
    CHECK(strstr(why, "outside the string table"));
    /* Without a section table the ABI is left to dlopen. */
    CHECK(check_edited(so, n, -1, -1, ed_noshdr, why) == SPITS_ELF_OK);
    /* The symbols with their types: a function, a variable. */
    unsigned types[2] = {STT_NUM, STT_NUM};
    CHECK(spits_elf_symbols(so, n, st_symbol, types, why, sizeof why) == SPITS_ELF_OK);
    CHECK(types[0] == STT_FUNC && types[1] == STT_OBJECT);
    CHECK(spits_elf_symbols(so, n - 1, st_symbol, types, why, sizeof why) == SPITS_ELF_DAMAGED);
    CHECK(deps_selftest(so, n) == 0);
    rc = 0;
out:
    free(so);
    return rc;
}
#endif /* SPITS_SELFTEST */
