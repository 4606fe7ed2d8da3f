/*
 * bytes.h - little-endian integers in byte buffers, for the formats spits
 * writes itself (the wire codec, the journal). Inline: they sit on the
 * per-task path.
 */
#ifndef SPITS_BYTES_H
#define SPITS_BYTES_H

#include <endian.h>
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

#endif
