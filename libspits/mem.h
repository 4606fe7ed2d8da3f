/*
 * mem.h - this process's memory as the kernel counts it: its resident
 * size now, and how much it may use. The JM's --memory-limit
 * (jobmanager/generator.c) stands on these.
 */
#ifndef SPITS_MEM_H
#define SPITS_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Resident bytes now that no file backs (what the process allocated:
 * resident minus shared in /proc/self/statm, one read of a few us), or 0
 * if unknown. */
uint64_t spits_mem_rss_anon(void);

/* Resident bytes now and at the peak (0 if unknown), from one read of
 * /proc/self/status: the kernel computes VmHWM there as at least VmRSS,
 * while getrusage's ru_maxrss lags behind the current size. */
void spits_mem_usage(uint64_t *now, uint64_t *peak);

/* The bytes this process may use: the lowest memory limit on the path
 * from its cgroups to the root (v2's memory.max, v1's memory controller's
 * memory.limit_in_bytes), as Slurm and systemd set them, or the machine's
 * RAM if that is lower or none is set. 0 if unknown. */
uint64_t spits_mem_available(void);

/* From /proc/self/cgroup's text: the cgroup v2 path ("0::/PATH") into v2
 * and the v1 memory controller's ("N:...,memory,...:/PATH") into v1, each
 * empty when there is none. */
void spits_mem_cgroup_paths(const char *text, char *v2, size_t v2len,
                            char *v1, size_t v1len);

/* A cgroup v2 memory.max file's text: 0 with *out (UINT64_MAX for "max",
 * no limit), or -1 when it is neither. */
int spits_mem_parse_max(const char *text, uint64_t *out);

int spits_mem_selftest(void);

#endif
