/*
 * cmdfile.c - the task file and result formats of the command module
 * (see cmdfile.h). Built into cmd.so and into spits-parallel.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmdfile.h"

int cmdfile_encode(char **buf, size_t *len, size_t *cap, uint64_t seq, const char *tag,
                   const char *display, const char *respath, const char *const *argv,
                   size_t argc)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, seq);
    const char *fields[CMDFILE_FIELDS] = {num, tag, display, respath};
    size_t body = 0;
    for (size_t i = 0; i < CMDFILE_FIELDS; i++)
        body += strlen(fields[i]) + 1;
    for (size_t i = 0; i < argc; i++)
        body += strlen(argv[i]) + 1;
    if (body > UINT32_MAX || argc == 0)
        return -1;
    if (*cap - *len < body + 4) {
        size_t c = *cap ? *cap : 4096;
        while (c - *len < body + 4)
            c *= 2;
        char *b = realloc(*buf, c);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    unsigned char *p = (unsigned char *)*buf + *len;
    *p++ = body & 0xff;
    *p++ = (body >> 8) & 0xff;
    *p++ = (body >> 16) & 0xff;
    *p++ = (body >> 24) & 0xff;
    for (size_t i = 0; i < CMDFILE_FIELDS + argc; i++) {
        const char *w = i < CMDFILE_FIELDS ? fields[i] : argv[i - CMDFILE_FIELDS];
        size_t n = strlen(w) + 1;
        memcpy(p, w, n);
        p += n;
    }
    *len += body + 4;
    return 0;
}

int cmdfile_parse(const char *body, size_t len, cmdfile_rec_t *r)
{
    const char *s[CMDFILE_FIELDS];
    size_t off = 0, n = 0;
    if (len == 0 || body[len - 1] != '\0')
        return -1;
    memset(r, 0, sizeof *r);
    while (off < len) {
        const char *w = body + off;
        off += strlen(w) + 1;
        if (n < CMDFILE_FIELDS)
            s[n] = w;
        else if (n == CMDFILE_FIELDS)
            r->words = w;
        n++;
    }
    if (n <= CMDFILE_FIELDS)
        return -1;
    char *end;
    errno = 0;
    r->seq = strtoull(s[0], &end, 10);
    if (errno || end == s[0] || *end)
        return -1;
    r->tag = s[1];
    r->display = s[2];
    r->respath = s[3];
    r->nwords = n - CMDFILE_FIELDS;
    return 0;
}

int cmdfile_open(cmdfile_t *f, const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t mlen = strlen(CMDFILE_MAGIC);
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read the task file %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((size_t)st.st_size < mlen) {
        close(fd);
        snprintf(err, errlen, "%s is not a task file of spits-parallel", path);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the task file %s: %s", path, strerror(errno));
        return -1;
    }
    f->map = m;
    f->size = (size_t)st.st_size;
    if (memcmp(f->map, CMDFILE_MAGIC, mlen) != 0) {
        cmdfile_close(f);
        snprintf(err, errlen, "%s is not a task file of spits-parallel", path);
        return -1;
    }
    f->off = mlen;
    return 0;
}

void cmdfile_close(cmdfile_t *f)
{
    if (f->map)
        munmap((void *)f->map, f->size);
    f->map = NULL;
}

int cmdfile_next(cmdfile_t *f, const char **body, size_t *len)
{
    if (f->off == f->size)
        return 0;
    if (f->size - f->off < 4)
        return -1;
    const unsigned char *p = (const unsigned char *)f->map + f->off;
    size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    if (n == 0 || f->size - f->off - 4 < n)
        return -1;
    *body = f->map + f->off + 4;
    *len = n;
    f->off += 4 + n;
    return 1;
}

int cmdfile_write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int cmdfile_mkdirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* s with each CMDFILE_SLOT written as slot (malloc'd). */
char *cmdfile_slot_subst(const char *s, unsigned slot)
{
    size_t ml = strlen(CMDFILE_SLOT), n = 0;
    for (const char *p = s; (p = strstr(p, CMDFILE_SLOT)); p += ml)
        n++;
    char *out = malloc(strlen(s) + n * 10 + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = s, *q; *p; p = q + ml) {
        if (!(q = strstr(p, CMDFILE_SLOT))) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        o += sprintf(o, "%u", slot);
    }
    *o = '\0';
    return out;
}

void cmdres_pack(const cmdres_t *r, unsigned char *out)
{
    /* (a live result's stdout length field is its Receive count) */
    assert(!(r->flags & CMDRES_LIVE) || r->outlen == 0);
    memset(out, 0, CMDRES_HEADER);
    memcpy(out, &r->seq, 8);
    memcpy(out + 8, &r->exitval, 4);
    memcpy(out + 12, &r->signal, 4);
    memcpy(out + 16, &r->start, 8);
    memcpy(out + 24, &r->runtime_ms, 4);
    memcpy(out + 28, &r->flags, 4);
    memcpy(out + 32, r->flags & CMDRES_LIVE ? &r->received : &r->outlen, 8);
    memcpy(out + 40, &r->errlen, 8);
    memcpy(out + 48, r->host, strnlen(r->host, CMDRES_HOST - 1));
    memcpy(out + 112, &r->slot, 4);
}

int cmdres_unpack(cmdres_t *r, const unsigned char *buf, size_t len)
{
    if (len < CMDRES_HEADER)
        return -1;
    memcpy(&r->seq, buf, 8);
    memcpy(&r->exitval, buf + 8, 4);
    memcpy(&r->signal, buf + 12, 4);
    memcpy(&r->start, buf + 16, 8);
    memcpy(&r->runtime_ms, buf + 24, 4);
    memcpy(&r->flags, buf + 28, 4);
    memcpy(&r->outlen, buf + 32, 8);
    memcpy(&r->errlen, buf + 40, 8);
    memcpy(r->host, buf + 48, CMDRES_HOST);
    r->host[CMDRES_HOST - 1] = '\0';
    memcpy(&r->slot, buf + 112, 4);
    r->received = r->outlen;
    if (r->flags & CMDRES_LIVE)
        r->outlen = 0;
    if (r->outlen > len - CMDRES_HEADER || r->errlen > len - CMDRES_HEADER - r->outlen)
        return -1;
    return 0;
}
