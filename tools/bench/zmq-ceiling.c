/*
 * zmq-ceiling.c - the bandwidth ceiling for spits-bench: a plain ZeroMQ
 * DEALER/ROUTER transfer over loopback, with nothing of spits in between.
 *
 *   zmq-ceiling SIZE COUNT [curve]
 *
 * A ROUTER thread sends COUNT messages of SIZE bytes to a DEALER with a
 * credit window (as spits does), the DEALER acknowledges in batches, and
 * the program prints "MB/s" for the transfer, CURVE on or off.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

static char ep[256];
static char spub[41], ssec[41], cpub[41], csec[41];
static long size, count;
static int curve;

static void *receiver(void *ctx)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    if (curve) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, spub, 41);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, cpub, 41);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, csec, 41);
    }
    zmq_connect(s, ep);
    zmq_send(s, "hi", 2, 0);
    zmq_msg_t m;
    zmq_msg_init(&m);
    for (long i = 0; i < count; i++) {
        zmq_msg_recv(&m, s, 0);
        if ((i + 1) % 16 == 0 || i + 1 == count)
            zmq_send(s, "ack", 3, 0);
    }
    zmq_msg_close(&m);
    zmq_close(s);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size = atol(argv[1]);
    count = atol(argv[2]);
    curve = argc > 3 && strcmp(argv[3], "curve") == 0;
    void *ctx = zmq_ctx_new();
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    if (curve) {
        int one = 1;
        zmq_curve_keypair(spub, ssec);
        zmq_curve_keypair(cpub, csec);
        zmq_setsockopt(r, ZMQ_CURVE_SERVER, &one, sizeof one);
        zmq_setsockopt(r, ZMQ_CURVE_SECRETKEY, ssec, 41);
    }
    zmq_bind(r, "tcp://127.0.0.1:0");
    size_t len = sizeof ep;
    zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, ep, &len);
    pthread_t t;
    pthread_create(&t, NULL, receiver, ctx);
    char rid[256];
    int ridlen = zmq_recv(r, rid, sizeof rid, 0);
    char hi[8];
    zmq_recv(r, hi, sizeof hi, 0);
    char *buf = calloc(1, (size_t)size);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    long sent = 0, acked = 0;
    while (acked < count) {
        while (sent < count && sent - acked < 64) {
            zmq_send(r, rid, (size_t)ridlen, ZMQ_SNDMORE);
            zmq_send(r, buf, (size_t)size, 0);
            sent++;
        }
        char ack[8];
        zmq_recv(r, rid, sizeof rid, 0);
        zmq_recv(r, ack, sizeof ack, 0);
        acked = acked + 16 > count ? count : acked + 16;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%.1f\n", (double)size * (double)count / secs / 1e6);
    pthread_join(t, NULL);
    free(buf);
    zmq_close(r);
    zmq_ctx_term(ctx);
    return 0;
}
