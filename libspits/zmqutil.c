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
/* A loopback TCP pair: after bytes arrive, the receiver's connection has
 * been quiet a short while; what is no TCP connection says -1. */
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
    rc = 0;
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
