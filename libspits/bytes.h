/*
 * bytes.h - little-endian integers in byte buffers, for the formats spits
 * writes itself (the wire codec, the journal). Inline: they sit on the
 * per-task path.
 */
#ifndef SPITS_BYTES_H
#define SPITS_BYTES_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* memcpy of a converted value: one unaligned load or store where the
 * host is little-endian, on the per-record path. */
static inline void put_u32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
}

static inline void put_u64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
}

static inline uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

static inline uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return le64toh(v);
}

/* memcpy of a payload, on the per-task path mostly a few bytes: up to 16
 * of them with two overlapping loads and stores, and no call. */
static inline void spits_copy(unsigned char *d, const unsigned char *s, size_t n)
{
    if (n > 16) {
        memcpy(d, s, n);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n) {   /* (1 to 3: first, middle, last) */
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

#endif
