/*
 * status-guard.c - who may hold one of the dashboard's connections.
 *
 * libmicrohttpd takes a slot at accept, long before it knows whether the
 * request carries the token, and its idle timeout restarts on every byte:
 * a client that sends one header line every few seconds keeps its slot,
 * and enough of them keep every slot, the token holder's included. A
 * per-address limit does not help where every client has the same
 * address (loopback, an ssh tunnel, NAT). So this file keeps a table of
 * the open connections and:
 *
 *   - marks a connection whose request line carries the token (the URI
 *     callback, before the header is parsed): only those are trusted;
 *   - lets at most STATUS_GUARD_TOKENLESS connections without the token
 *     be open: a new one shuts the oldest of them, so a flood of them
 *     cannot keep the token holder's new connection out (it is the
 *     newest, and trusted once its first line is read);
 *   - gives a connection without the token STATUS_GUARD_HEADER_S from
 *     its accept (or its last response) to send a whole header, however
 *     steadily it sends (status_guard_reap).
 *
 * The per-address limit, above the token-less one so that it never turns
 * away a token holder who shares an address with a flood, only keeps one
 * address (holding the token) from taking every slot.
 *
 * Threads: everything here, the table included, is used only from the
 * thread that runs the daemon (status_serve's loop: no internal thread),
 * as libmicrohttpd calls the callbacks from that thread's MHD_run_wait.
 * So a connection is shut down (shutdown(2)) while libmicrohttpd cannot
 * be closing its descriptor, and it notices at its next poll.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sodium.h>

#include "status-guard.h"
#include "util.h"

typedef struct guard_conn {
    struct guard_conn *prev, *next;
    int fd;
    int64_t since_ms;           /* accepted, or its last response done */
    int token;                  /* its last request line had the token */
    int in_request;             /* header in, response not done */
    int dropped;                /* shut down here; libmicrohttpd closes it */
} guard_conn_t;

struct status_guard {
    const char *token;
    guard_conn_t *head, *tail;  /* in the order accepted */
};

status_guard_t *status_guard_new(const char *token)
{
    status_guard_t *g = calloc(1, sizeof *g);
    if (g)
        g->token = token;
    return g;
}

void status_guard_free(status_guard_t *g)
{
    /* (the daemon is stopped: its close notices freed every entry) */
    free(g);
}

int status_guard_token(const status_guard_t *g, const char *t, size_t len)
{
    return len == strlen(g->token) && sodium_memcmp(t, g->token, len) == 0;
}

static void guard_drop(guard_conn_t *k)
{
    shutdown(k->fd, SHUT_RDWR);
    k->dropped = 1;
}

/* At most STATUS_GUARD_TOKENLESS open without the token: the oldest goes. */
static void guard_make_room(status_guard_t *g)
{
    guard_conn_t *oldest = NULL;
    size_t n = 0;
    for (guard_conn_t *k = g->head; k; k = k->next)
        if (!k->token && !k->dropped) {
            n++;
            if (!oldest)
                oldest = k;
        }
    if (n > STATUS_GUARD_TOKENLESS)
        guard_drop(oldest);
}

static void guard_notify(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_ConnectionNotificationCode code)
{
    status_guard_t *g = cls;
    guard_conn_t *k = *ctx;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!k)
            return;
        *(k->prev ? &k->prev->next : &g->head) = k->next;
        *(k->next ? &k->next->prev : &g->tail) = k->prev;
        free(k);
        *ctx = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_CONNECTION_FD);
    k = calloc(1, sizeof *k);
    if (!k || !fd) {
        /* A connection the table cannot hold is not served at all. */
        free(k);
        if (fd)
            shutdown(fd->connect_fd, SHUT_RDWR);
        return;
    }
    k->fd = fd->connect_fd;
    k->since_ms = spits_now_ms();
    k->prev = g->tail;
    *(g->tail ? &g->tail->next : &g->head) = k;
    g->tail = k;
    *ctx = k;
    guard_make_room(g);
}

/* 1 when uri's query has token=TOKEN (raw: the token is hex). */
static int guard_uri_token(const status_guard_t *g, const char *uri)
{
    const char *p = strchr(uri, '?');
    while (p) {
        p++;
        size_t len = strcspn(p, "&");
        if (strncmp(p, "token=", 6) == 0 && status_guard_token(g, p + 6, len - 6))
            return 1;
        p = p[len] ? p + len : NULL;
    }
    return 0;
}

/* Called once the request line is in: its connection becomes the
 * request's context (req_cls), trusted or not by its token. */
static void *guard_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    guard_conn_t *k = i ? i->socket_context : NULL;
    if (k)
        k->token = guard_uri_token(cls, uri);
    return k;
}

void status_guard_arrived(void *req_cls)
{
    guard_conn_t *k = req_cls;
    if (k)
        k->in_request = 1;
}

static void guard_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                            enum MHD_RequestTerminationCode toe)
{
    guard_conn_t *k = *req_cls;
    (void)cls; (void)c; (void)toe;
    if (k) {
        k->in_request = 0;
        k->since_ms = spits_now_ms();
    }
}

void status_guard_reap(status_guard_t *g)
{
    int64_t now = spits_now_ms();
    for (guard_conn_t *k = g->head; k; k = k->next)
        if (!k->token && !k->dropped && !k->in_request &&
            now - k->since_ms >= STATUS_GUARD_HEADER_S * 1000)
            guard_drop(k);
}

void status_guard_options(status_guard_t *g, struct MHD_OptionItem *opts)
{
    const struct MHD_OptionItem o[STATUS_GUARD_NOPTIONS] = {
        {MHD_OPTION_CONNECTION_LIMIT, STATUS_GUARD_CONNECTIONS, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, STATUS_GUARD_PER_IP, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, STATUS_GUARD_IDLE_S, NULL},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)guard_notify, g},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)guard_uri, g},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)guard_completed, g},
        {MHD_OPTION_END, 0, NULL},
    };
    memcpy(opts, o, sizeof o);
}
