/*
 * status-guard.h - who may hold one of the dashboard's connections
 * (status-guard.c).
 */
#ifndef SPITS_STATUS_GUARD_H
#define SPITS_STATUS_GUARD_H

#include <stddef.h>
#include <microhttpd.h>

#define STATUS_GUARD_CONNECTIONS 256    /* libmicrohttpd's limit */
#define STATUS_GUARD_PER_IP 128         /* libmicrohttpd's limit per address */
#define STATUS_GUARD_TOKENLESS 64       /* open without the token, at most */
#define STATUS_GUARD_HEADER_S 3         /* to send a request's header, without the token */
#define STATUS_GUARD_IDLE_S 10          /* libmicrohttpd's idle timeout */
#define STATUS_GUARD_NOPTIONS 7         /* items status_guard_options fills */

typedef struct status_guard status_guard_t;

/* A guard for a daemon whose requests need token (kept, not copied). */
status_guard_t *status_guard_new(const char *token);
void status_guard_free(status_guard_t *g);

/* Fills opts (STATUS_GUARD_NOPTIONS items, the last MHD_OPTION_END) with
 * the limits and the callbacks that keep g's table, for MHD_OPTION_ARRAY. */
void status_guard_options(status_guard_t *g, struct MHD_OptionItem *opts);

/* 1 when t (len bytes) is the token, in constant time. */
int status_guard_token(const status_guard_t *g, const char *t, size_t len);

/* The access handler's first call: *req_cls's header is all in. */
void status_guard_arrived(void *req_cls);

/* Closes every connection without the token that has had
 * STATUS_GUARD_HEADER_S to send its header and has not. */
void status_guard_reap(status_guard_t *g);

#endif
