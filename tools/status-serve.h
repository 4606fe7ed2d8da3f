/*
 * status-serve.h - spits-status --serve: one job's page over HTTP, live
 * (status-serve.c).
 */
#ifndef SPITS_STATUS_SERVE_H
#define SPITS_STATUS_SERVE_H

#include <stddef.h>
#include <jansson.h>

/* The job's document now: the JM's STATUS answer (*live 1) or its
 * report.json (*live 0). A new reference, or NULL with err set. */
typedef json_t *(*status_fetch_fn)(void *arg, int *live, char *err, size_t errlen);

/* Serves the page on addr ("ADDR:PORT", IPv4) until SIGINT or SIGTERM,
 * after printing its URL with a random token. The exit status: 0, 1 when
 * it cannot listen, 2 for a bad addr. */
int status_serve(const char *addr, status_fetch_fn fetch, void *arg);

#endif
