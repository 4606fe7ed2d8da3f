/*
 * mem.h - this process's memory as the kernel counts it: its resident
 * size now, and how much it may use. The JM's --memory-limit
 * (jobmanager/generator.c) stands on these.
 */
#ifndef SPITS_MEM_H
#define SPITS_MEM_H

#include <stdint.h>

/* Resident bytes now (one read of /proc/self/statm, a few us), or 0 if
 * unknown. */
uint64_t spits_mem_rss(void);

/* Resident bytes now and at the peak (0 if unknown), from one read of
 * /proc/self/status: the kernel computes VmHWM there as at least VmRSS,
 * while getrusage's ru_maxrss lags behind the current size. */
void spits_mem_usage(uint64_t *now, uint64_t *peak);

/* The bytes this process may use: the lowest memory.max (cgroup v2) on
 * the path from its cgroup to the root, as Slurm and systemd set them,
 * or the machine's RAM if that is lower or none is set. 0 if unknown. */
uint64_t spits_mem_available(void);

/* A cgroup v2 memory.max file's text: 0 with *out (UINT64_MAX for "max",
 * no limit), or -1 when it is neither. */
int spits_mem_parse_max(const char *text, uint64_t *out);

int spits_mem_selftest(void);

#endif
