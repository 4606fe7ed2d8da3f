/*
 * zmqutil.c - small helpers over libzmq (see zmqutil.h).
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "util.h"
#include "zmqutil.h"

void spits_zmq_reachable(const char *bound, char *out, size_t outlen)
{
    char host[256];
    const char *port = strrchr(bound, ':');
    if (strncmp(bound, "tcp://", 6) == 0 && port &&
        (strncmp(bound + 6, "0.0.0.0:", 8) == 0 || strncmp(bound + 6, "[::]:", 5) == 0 ||
         strncmp(bound + 6, "*:", 2) == 0)) {
        spits_hostname(host, sizeof host);
        snprintf(out, outlen, "tcp://%s%s", host, port);
    } else {
        snprintf(out, outlen, "%s", bound);
    }
}

int spits_zmq_send_more(void *sock, const void *buf, size_t len, int flags)
{
    int rc;
    while ((rc = zmq_send(sock, buf, len, flags)) < 0 && errno == EINTR)
        ;
    return rc;
}

int spits_zmq_msg_send_more(zmq_msg_t *m, void *sock, int flags)
{
    int rc;
    while ((rc = zmq_msg_send(m, sock, flags)) < 0 && errno == EINTR)
        ;
    return rc;
}

static void zmqutil_buf_free(void *data, void *hint)
{
    (void)hint;
    free(data);
}

int spits_zmq_send_buf(void *sock, spits_buf_t *b, int flags)
{
    spits_buf_t moved;
    zmq_msg_t m;
    if (b->len < SPITS_ZMQ_MOVE_MIN || spits_buf_move(b, &moved) != 0)
        return spits_zmq_send_more(sock, b->data, b->len, flags);
    if (zmq_msg_init_data(&m, moved.data, moved.len, zmqutil_buf_free, NULL) != 0) {
        free(b->data);   /* (put back as it was: it goes as a copy) */
        *b = moved;
        return spits_zmq_send_more(sock, b->data, b->len, flags);
    }
    int rc = spits_zmq_msg_send_more(&m, sock, flags);
    if (rc < 0) {
        /* (not taken: the bytes come back, for the caller's next try) */
        int e = errno;
        memcpy(b->data, zmq_msg_data(&m), moved.len);
        b->len = moved.len;
        zmq_msg_close(&m);
        errno = e;
    }
    return rc;
}

int spits_zmq_ctx_term(void *ctx)
{
    int rc;
    while ((rc = zmq_ctx_term(ctx)) != 0 && errno == EINTR)
        ;
    return rc;
}

int spits_zmq_bind(void *sock, const char *ep)
{
    int rc;
    while ((rc = zmq_bind(sock, ep)) != 0 && errno == EINTR)
        ;
    return rc;
}

int spits_zmq_connect(void *sock, const char *ep)
{
    int rc;
    while ((rc = zmq_connect(sock, ep)) != 0 && errno == EINTR)
        ;
    return rc;
}

int spits_zmq_monitor(void *sock, const char *ep, int events)
{
    int rc;
    while ((rc = zmq_socket_monitor(sock, ep, events)) != 0 && errno == EINTR)
        ;
    return rc;
}

void spits_zmq_drop_frames(void *sock)
{
    zmq_msg_t f;
    int more = 1;
    zmq_msg_init(&f);
    while (more && zmq_msg_recv(&f, sock, ZMQ_DONTWAIT) >= 0)
        more = zmq_msg_more(&f);
    zmq_msg_close(&f);
}

int spits_zmq_monitor_next(void *mon, uint16_t *event, uint32_t *value)
{
    zmq_msg_t ev;
    int got = 0;
    zmq_msg_init(&ev);
    /* An event is a frame of the 16-bit event number and a 32-bit value
     * (host order), then a frame with the endpoint. */
    while (!got && zmq_msg_recv(&ev, mon, ZMQ_DONTWAIT) >= 0) {
        got = zmq_msg_size(&ev) >= 2;
        if (got)
            memcpy(event, zmq_msg_data(&ev), 2);
        if (got && value)
            *value = UINT32_MAX;
        if (got && value && zmq_msg_size(&ev) >= 6)
            memcpy(value, (const char *)zmq_msg_data(&ev) + 2, 4);
        if (zmq_msg_more(&ev))
            spits_zmq_drop_frames(mon);
    }
    zmq_msg_close(&ev);
    return got;
}

int spits_zmq_msg_fd(zmq_msg_t *msg)
{
    return zmq_msg_get(msg, ZMQ_SRCFD);
}

int64_t spits_tcp_quiet_ms(int fd)
{
#if defined(__linux__) && defined(TCP_INFO)
    struct tcp_info info;
    socklen_t len = sizeof info;

    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_last_data_recv) +
              sizeof info.tcpi_last_data_recv ||
        info.tcpi_state != TCP_ESTABLISHED)
        return -1;
    return info.tcpi_last_data_recv;
#else
    (void)fd;
    return -1;
#endif
}

/* --- self-test (compiled only with -DSPITS_SELFTEST, for tests/unit) --- */

#ifdef SPITS_SELFTEST
#define ZCHECK(c) do { if (!(c)) { printf("zmqutil: %s:%d: %s\n", __FILE__, __LINE__, #c); \
                       goto out; } } while (0)

/* spits_zmq_send_buf over inproc: a large buffer moves (b empty, its
 * capacity kept) and arrives whole; a small one is copied (b as it was);
 * a send refused (a DEALER with no peer: EAGAIN) gives the bytes back. */
static int zmqutil_send_buf_selftest(void)
{
    void *ctx = zmq_ctx_new();
    void *rx = ctx ? zmq_socket(ctx, ZMQ_PAIR) : NULL;
    void *tx = ctx ? zmq_socket(ctx, ZMQ_PAIR) : NULL;
    void *lone = ctx ? zmq_socket(ctx, ZMQ_DEALER) : NULL;
    spits_buf_t b = {0};
    zmq_msg_t m;
    int rc = -1;
    zmq_msg_init(&m);
    ZCHECK(rx && tx && lone && zmq_bind(rx, "inproc://zmqutil-selftest") == 0 &&
           zmq_connect(tx, "inproc://zmqutil-selftest") == 0);
    /* (at the bound, under it and over it; under ThreadSanitizer, which
     * moves nothing, around 4096 all the same) */
    size_t edge = SPITS_ZMQ_MOVE_MIN <= 65536 ? SPITS_ZMQ_MOVE_MIN : 4096;
    for (int round = 0; round < 3; round++) {
        size_t len = round == 1 ? edge - 1 : edge + 1000 * round;
        b.len = 0;
        ZCHECK(spits_buf_reserve(&b, len) == 0);
        for (size_t i = 0; i < len; i++)
            b.data[i] = (unsigned char)(i * 7 + round);
        b.len = len;
        const unsigned char *was = b.data;
        size_t cap = b.cap;
        ZCHECK(spits_zmq_send_buf(tx, &b, 0) == (int)len);
        if (len >= SPITS_ZMQ_MOVE_MIN)
            ZCHECK(b.len == 0 && b.cap == cap && b.data && b.data != was);
        else
            ZCHECK(b.len == len && b.data == was);
        ZCHECK(zmq_msg_recv(&m, rx, 0) == (int)len);
        const unsigned char *got = zmq_msg_data(&m);
        for (size_t i = 0; i < len; i++)
            ZCHECK(got[i] == (unsigned char)(i * 7 + round));
    }
    b.len = 0;
    ZCHECK(spits_buf_reserve(&b, 3 * edge) == 0);
    memset(b.data, 'q', 3 * edge);
    b.len = 3 * edge;
    errno = 0;
    ZCHECK(spits_zmq_send_buf(lone, &b, ZMQ_DONTWAIT) < 0 && errno == EAGAIN);
    ZCHECK(b.len == 3 * edge && b.data[0] == 'q' && b.data[b.len - 1] == 'q');
    rc = 0;
out:
    zmq_msg_close(&m);
    spits_buf_free(&b);
    int linger = 0;
    if (lone)
        zmq_setsockopt(lone, ZMQ_LINGER, &linger, sizeof linger), zmq_close(lone);
    if (tx)
        zmq_close(tx);
    if (rx)
        zmq_close(rx);
    if (ctx)
        zmq_ctx_term(ctx);
    return rc;
}

/* A loopback TCP pair: after bytes arrive, the receiver's connection has
 * been quiet a short while; what is no TCP connection says -1; and
 * spits_zmq_send_buf. */
int spits_zmqutil_selftest(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    int lsn = socket(AF_INET, SOCK_STREAM, 0), cli = -1, srv = -1, rc = -1;
    int pipefd[2] = {-1, -1};
    char byte = 'x';

    if (lsn < 0 || bind(lsn, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(lsn, 1) != 0 ||
        getsockname(lsn, (struct sockaddr *)&addr, &alen) != 0 ||
        (cli = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(cli, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        (srv = accept(lsn, NULL, NULL)) < 0 || write(cli, &byte, 1) != 1 ||
        read(srv, &byte, 1) != 1 || pipe(pipefd) != 0) {
        printf("zmqutil: cannot make a loopback connection: %s\n", strerror(errno));
        goto out;
    }
#if defined(__linux__) && defined(TCP_INFO)
    int64_t quiet = spits_tcp_quiet_ms(srv);
    if (quiet < 0 || quiet > 60000) {
        printf("zmqutil: a connection that just got a byte is quiet for %lld ms\n",
               (long long)quiet);
        goto out;
    }
#endif
    if (spits_tcp_quiet_ms(pipefd[0]) != -1 || spits_tcp_quiet_ms(lsn) != -1 ||
        spits_tcp_quiet_ms(-1) != -1) {
        printf("zmqutil: a pipe, a listener or -1 has a quiet time\n");
        goto out;
    }
    rc = zmqutil_send_buf_selftest();
out:
    {
        int fds[] = {lsn, cli, srv, pipefd[0], pipefd[1]};
        for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
            if (fds[i] >= 0)
                close(fds[i]);
    }
    return rc;
}
#endif /* SPITS_SELFTEST */
