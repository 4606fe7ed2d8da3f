/*
 * image.c - a module's bytes, read once into a private, sealed copy (see
 * image.h).
 *
 * The headers are checked on the file first (elfcheck.c's
 * spits_elf_check_headers, a few kilobytes read), so a file that cannot
 * be a module is never copied. Then the bytes go straight from the file
 * into a memfd while they are hashed; the memfd is then sealed (no write,
 * grow or shrink ever again) and mapped read-only for the ELF checks. Sealing is what makes the mapping
 * safe: nobody can cut the copy short under the checks or the loader.
 *
 * A Python job's file (pyjob.h) is not copied: the image is the Python
 * module's, and only the hash covers the job file too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "image.h"
#include "pyjob.h"
#include "util.h"

struct spits_image {
    int fd;             /* the sealed memfd */
    char *name;         /* the user's path, for messages */
    char *origin;       /* its directory, absolute; or NULL */
    char hash[65];
    spits_abi_t abi;
    spits_elf_deps_t deps;
};

#define IMAGE_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

/* Copies src from offset 0 into img->fd, hashing what was copied; returns
 * the number of bytes, or -1 with errno set. */
static off_t copy_hashed(int src, spits_image_t *img)
{
    crypto_generichash_state st;
    unsigned char buf[65536], h[32];
    off_t off = 0;

    crypto_generichash_init(&st, NULL, 0, sizeof h);
    for (;;) {
        ssize_t r = pread(src, buf, sizeof buf, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        crypto_generichash_update(&st, buf, (unsigned long long)r);
        if (spits_write_all(img->fd, buf, (size_t)r) != 0)
            return -1;
        off += r;
    }
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(img->hash, sizeof img->hash, h, sizeof h);
    return off;
}

/* The message for fault f (why: its detail); 0 when there is none. */
static int image_fault(const spits_image_t *img, spits_elf_fault_t f,
                       const char *why, char *err, size_t errlen)
{
    if (f == SPITS_ELF_NOT_SO)
        snprintf(err, errlen, "%s: not a shared object (%s); give the "
                 "module's .so file", img->name, why);
    else if (f == SPITS_ELF_FOREIGN)
        snprintf(err, errlen, "%s: a shared object for another machine "
                 "(%s); rebuild the module on this one", img->name, why);
    else if (f == SPITS_ELF_DAMAGED)
        snprintf(err, errlen, "%s: truncated or damaged module (%s); copy "
                 "it again or rebuild it", img->name, why);
    else if (f == SPITS_ELF_UNREADABLE)
        snprintf(err, errlen, "cannot load module %s: %s", img->name, why);
    return f == SPITS_ELF_OK ? 0 : -1;
}

/* The ELF checks over the sealed copy; a message into err on a fault. */
static int image_check(spits_image_t *img, size_t n, char *err, size_t errlen)
{
    static const unsigned char none[1];
    const unsigned char *p = none;
    char why[200];

    if (n > 0) {
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, img->fd, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errlen, "cannot load module %s: %s", img->name,
                     strerror(errno));
            return -1;
        }
        p = m;
    }
    spits_elf_fault_t f = spits_elf_check(p, n, &img->abi, why, sizeof why);
    if (f == SPITS_ELF_OK)
        f = spits_elf_deps(p, n, &img->deps, why, sizeof why);
    if (n > 0)
        munmap((void *)p, n);
    return image_fault(img, f, why, err, errlen);
}

static int image_pread(void *arg, void *buf, size_t len, uint64_t off)
{
    int fd = *(const int *)arg;
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            errno = r == 0 ? EIO : errno;   /* (cut short since fstat) */
            return -1;
        }
        p += r;
        off += (uint64_t)r;
        len -= (size_t)r;
    }
    return 0;
}

/* The header checks on the user's file itself, before any copy: a big
 * file that is no module, or whose headers claim sizes past its end,
 * is refused having read a few kilobytes of it, not all. */
static int image_precheck(spits_image_t *img, int fd, uint64_t size,
                          char *err, size_t errlen)
{
    char why[200];
    spits_elf_fault_t f = spits_elf_check_headers(image_pread, &fd, size,
                                                  why, sizeof why);
    return image_fault(img, f, why, err, errlen);
}

spits_image_t *spits_image_read_fd(int fd, const char *name,
                                   const char *origin, char *err,
                                   size_t errlen)
{
    struct stat st;
    spits_image_t *img = calloc(1, sizeof *img);

    if (!img || !(img->name = strdup(name)) ||
        (origin && !(img->origin = strdup(origin)))) {
        free(img);
        snprintf(err, errlen, "cannot load module %s: out of memory", name);
        return NULL;
    }
    img->fd = -1;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot load module %s: %s", name, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a shared object (not a regular file)",
                 name);
        goto fail;
    }
    if (image_precheck(img, fd, (uint64_t)st.st_size, err, errlen) != 0)
        goto fail;
    off_t n;
    img->fd = memfd_create("spits-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (img->fd < 0 || (n = copy_hashed(fd, img)) < 0 ||
        fcntl(img->fd, F_ADD_SEALS, IMAGE_SEALS) != 0) {
        snprintf(err, errlen, "cannot load module %s: %s", name, strerror(errno));
        goto fail;
    }
    if (image_check(img, (size_t)n, err, errlen) != 0)
        goto fail;
    return img;
fail:
    spits_image_free(&img);
    return NULL;
}

/* The directory of path's real path: what the loader took $ORIGIN to be
 * when spits-jm and spits-tm dlopened the module's real path itself.
 * NULL if it cannot be resolved. */
static char *origin_of(const char *path)
{
    char *real = realpath(path, NULL), *slash;

    if (!real || !(slash = strrchr(real, '/'))) {
        free(real);
        return NULL;
    }
    slash[slash == real] = '\0';       /* "/m.so" is in "/" */
    return real;
}

static spits_image_t *image_read_so(const char *path, char *err,
                                    size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot load module %s: %s", path, strerror(errno));
        return NULL;
    }
    char *origin = origin_of(path);
    spits_image_t *img = spits_image_read_fd(fd, path, origin, err, errlen);
    free(origin);
    close(fd);
    return img;
}

/* A Python job (pyjob.h): the Python module's image, whose hash is that
 * of the module's hash and the job file's bytes together. */
static spits_image_t *image_read_pyjob(const char *path, char *err,
                                       size_t errlen)
{
    char so[PATH_MAX];
    crypto_generichash_state st;
    unsigned char buf[65536], h[32];
    struct stat sb;
    off_t off = 0;
    ssize_t r;

    if (spits_pyjob_module(so, err, errlen) != 0)
        return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot load module %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a Python job file (not a regular "
                 "file)", path);
        close(fd);
        return NULL;
    }
    spits_image_t *img = image_read_so(so, err, errlen);
    if (!img) {
        close(fd);
        return NULL;
    }
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, (const unsigned char *)img->hash,
                              sizeof img->hash);
    while ((r = pread(fd, buf, sizeof buf, off)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "cannot load module %s: %s", path,
                     strerror(errno));
            close(fd);
            spits_image_free(&img);
            return NULL;
        }
        crypto_generichash_update(&st, buf, (unsigned long long)r);
        off += r;
    }
    close(fd);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(img->hash, sizeof img->hash, h, sizeof h);
    return img;
}

spits_image_t *spits_image_read(const char *path, char *err, size_t errlen)
{
    return spits_pyjob_is(path) ? image_read_pyjob(path, err, errlen)
                                : image_read_so(path, err, errlen);
}

void spits_image_free(spits_image_t **imgp)
{
    spits_image_t *img = *imgp;
    if (!img)
        return;
    if (img->fd >= 0)
        close(img->fd);
    free(img->name);
    free(img->origin);
    spits_elf_deps_free(&img->deps);
    free(img);
    *imgp = NULL;
}

const char *spits_image_name(const spits_image_t *img) { return img->name; }
const char *spits_image_hash(const spits_image_t *img) { return img->hash; }
spits_abi_t spits_image_abi(const spits_image_t *img) { return img->abi; }
const spits_elf_deps_t *spits_image_deps(const spits_image_t *img)
{
    return &img->deps;
}
const char *spits_image_origin(const spits_image_t *img) { return img->origin; }
int spits_image_fd(const spits_image_t *img) { return img->fd; }
