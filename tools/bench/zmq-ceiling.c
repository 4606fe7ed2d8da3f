/*
 * zmq-ceiling.c - the bandwidth ceiling for spits-bench: a plain ZeroMQ
 * ROUTER-to-DEALER transfer over loopback, with nothing of spits between.
 *
 *   zmq-ceiling SIZE COUNT [curve] [CONNS [IO_THREADS]] [work]
 *
 * The shape is spits' own, so that the figure is a ceiling for it: the
 * sender and each receiver are processes of their own (fork), each with
 * its own ZeroMQ context and one I/O thread, as spits-jm and spits-tm;
 * the sender (a ROUTER, as the JM) sends COUNT messages of SIZE bytes in
 * all, spread over CONNS receivers (DEALERs, as TMs; 1 by default), each
 * with a credit window of 64 messages that its receiver acknowledges
 * every 16 (with its count so far). Every process has spits' allocator settings
 * (spits_malloc_tune), and the sender hands ZeroMQ the bytes without a
 * copy (zmq_msg_init_data, as spits-jm does for large tasks), so neither
 * pays page faults or copies spits does not. Prints MB/s of the whole
 * transfer, CURVE on or off. IO_THREADS (1) is the sender's ZeroMQ I/O
 * threads, as spits-jm --io-threads.
 *
 * With "work", each side also does what spits' bench module and the
 * SPITS ABI make a job do with every byte, so that the gap between this
 * and a spits row is what the runtime itself costs: the sender writes
 * each message's bytes (next_task making a task: a 256-periodic pattern
 * shifted by the message's number, by memcpy), then copies them into a
 * new buffer (the JM's copy of a push: the ABI lends the bytes only
 * during the call), which ZeroMQ frees once sent; the receiver compares
 * every byte with what it should be (the bench worker's check), and a
 * wrong byte fails the run.
 *
 * With 2 connections, libzmq 4.3.4 (Debian 12) here now and then holds
 * a receiver's last acknowledgement back for good (it reaches the
 * sender's TCP socket, but never comes out of zmq_recv). So counts are
 * cumulative, and after 200 ms of silence the sender asks again (PING);
 * a run that needed it says so on stderr and is slower by that much:
 * spits-bench takes the best of three runs.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define WINDOW 64
#define ACK_EVERY 16
#define CONNS_MAX 16

static char spub[41], ssec[41], cpub[41], csec[41];
static long size, count;
static int curve, work;
static unsigned char *pat;   /* with work: pat[i] = i & 0xff, size + 256 */

/* spits_malloc_tune's settings (libspits/util.c). */
static void malloc_tune(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

/* A receiver process: takes its share of the messages, acknowledging
 * every ACK_EVERY (and the last). */
static int receiver(const char *ep, long share)
{
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (curve) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, spub, 41);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, cpub, 41);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, csec, 41);
    }
    if (zmq_connect(s, ep) != 0 || zmq_send(s, "hi", 2, 0) != 2)
        return 1;
    zmq_msg_t m;
    zmq_msg_init(&m);
    /* Acknowledgements carry the count so far, and a PING (1 byte) gets
     * one again, so one that libzmq holds back is made good by the next;
     * the sender ends this process (SIGTERM) once it has them all. */
    for (long got = 0;;) {
        if (zmq_msg_recv(&m, s, 0) < 0) {
            fprintf(stderr, "zmq-ceiling: receive: %s\n", zmq_strerror(zmq_errno()));
            return 1;
        }
        int ping = zmq_msg_size(&m) == 1 && size != 1;
        if (!ping && work && (zmq_msg_size(&m) != (size_t)size ||
                              memcmp(zmq_msg_data(&m), pat + (got & 0xff), (size_t)size) != 0)) {
            fprintf(stderr, "zmq-ceiling: message %ld is not the one sent\n", got);
            return 1;
        }
        got += !ping;
        if (ping || got % ACK_EVERY == 0 || got == share)
            zmq_send(s, &got, sizeof got, 0);
    }
}

static void no_free(void *data, void *hint)
{
    (void)data;
    (void)hint;
}

static void msg_free(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* Message seq's bytes: buf, or with work a new buffer made as spits-jm
 * makes a task (mod: the module's own buffer). NULL when out of memory. */
static void *message(char *buf, unsigned char *mod, long seq)
{
    if (!work)
        return buf;
    memcpy(mod, pat + (seq & 0xff), (size_t)size);
    void *copy = malloc((size_t)size);
    if (copy)
        memcpy(copy, mod, (size_t)size);
    return copy;
}

int main(int argc, char **argv)
{
    work = argc > 3 && strcmp(argv[argc - 1], "work") == 0;
    argc -= work;
    if (argc < 3) {
        fprintf(stderr, "usage: zmq-ceiling SIZE COUNT [curve] [CONNS [IO_THREADS]] [work]\n");
        return 2;
    }
    size = atol(argv[1]);
    count = atol(argv[2]);
    int argi = 3, conns = 1, io_threads = 1;
    curve = argc > argi && strcmp(argv[argi], "curve") == 0;
    argi += curve;
    if (argc > argi)
        conns = atoi(argv[argi]);
    if (argc > argi + 1)
        io_threads = atoi(argv[argi + 1]);
    if (size < 1 || count < conns || conns < 1 || conns > CONNS_MAX ||
        io_threads < 1 || io_threads > 64 || (work && size == 1)) {
        fprintf(stderr, "zmq-ceiling: bad SIZE, COUNT, CONNS or IO_THREADS "
                "(work needs SIZE 2 or more: 1 byte is a ping)\n");
        return 2;
    }
    malloc_tune();
    if (work) {
        if (!(pat = malloc((size_t)size + 256)))
            return 1;
        for (long i = 0; i < size + 256; i++)
            pat[i] = (unsigned char)i;
    }
    if (curve) {
        zmq_curve_keypair(spub, ssec);
        zmq_curve_keypair(cpub, csec);
    }
    /* The receivers are forked before this process has a context (a fork
     * copies none of its threads); each reads the endpoint from a pipe. */
    pid_t kids[CONNS_MAX];
    long share[CONNS_MAX];
    int pipes[CONNS_MAX][2];
    for (int k = 0; k < conns; k++) {
        share[k] = count / conns + (k < count % conns);
        if (pipe(pipes[k]) != 0)
            return 1;
        if ((kids[k] = fork()) == 0) {
            char cep[256] = {0};
            close(pipes[k][1]);
            if (read(pipes[k][0], cep, sizeof cep - 1) <= 0)
                _exit(1);
            _exit(receiver(cep, share[k]));
        }
        close(pipes[k][0]);
    }
    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_IO_THREADS, io_threads);
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    int one = 1;
    /* (as spits-jm: a message ROUTER cannot queue blocks, never drops) */
    zmq_setsockopt(r, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    if (curve) {
        zmq_setsockopt(r, ZMQ_CURVE_SERVER, &one, sizeof one);
        zmq_setsockopt(r, ZMQ_CURVE_SECRETKEY, ssec, 41);
    }
    char ep[256];
    size_t eplen = sizeof ep;
    if (zmq_bind(r, "tcp://127.0.0.1:0") != 0 ||
        zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, ep, &eplen) != 0)
        return 1;
    for (int k = 0; k < conns; k++) {
        if (write(pipes[k][1], ep, strlen(ep)) != (ssize_t)strlen(ep))
            return 1;
        close(pipes[k][1]);
    }
    char rid[CONNS_MAX][256];
    int ridlen[CONNS_MAX];
    long sent[CONNS_MAX] = {0}, acked[CONNS_MAX] = {0};
    for (int k = 0; k < conns; k++) {
        char hi[8];
        ridlen[k] = zmq_recv(r, rid[k], sizeof rid[k], 0);
        if (ridlen[k] <= 0 || zmq_recv(r, hi, sizeof hi, 0) < 0)
            return 1;
    }
    char *buf = malloc((size_t)size);
    unsigned char *mod = malloc((size_t)size);
    if (!buf || !mod)
        return 1;
    memset(buf, 1, (size_t)size);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    long done = 0, pings = 0;
    while (done < conns) {
        for (int k = 0; k < conns; k++)
            while (sent[k] < share[k] && sent[k] - acked[k] < WINDOW) {
                zmq_msg_t m;
                void *data = message(buf, mod, sent[k]);
                if (!data) {
                    fprintf(stderr, "zmq-ceiling: out of memory\n");
                    return 1;
                }
                zmq_msg_init_data(&m, data, (size_t)size, work ? msg_free : no_free, NULL);
                if (zmq_send(r, rid[k], (size_t)ridlen[k], ZMQ_SNDMORE) < 0 ||
                    zmq_msg_send(&m, r, 0) < 0) {
                    fprintf(stderr, "zmq-ceiling: send: %s\n", zmq_strerror(zmq_errno()));
                    return 1;
                }
                sent[k]++;
            }
        /* Nothing for 200 ms: ask each receiver still short for its count
         * (libzmq 4.3.4 may hold its last acknowledgement back; see above). */
        zmq_pollitem_t it = {r, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 200) == 0) {
            /* (a receiver that ended, e.g. on a wrong byte, answers none) */
            for (int k = 0; k < conns; k++)
                if (waitpid(kids[k], NULL, WNOHANG) == kids[k]) {
                    fprintf(stderr, "zmq-ceiling: receiver %d ended\n", k);
                    return 1;
                }
            for (int k = 0; k < conns; k++)
                if (acked[k] < share[k]) {
                    zmq_send(r, rid[k], (size_t)ridlen[k], ZMQ_SNDMORE);
                    zmq_send(r, "p", 1, 0);
                }
            pings++;
            continue;
        }
        char from[256];
        long count = 0;
        int fromlen = zmq_recv(r, from, sizeof from, 0);
        if (zmq_recv(r, &count, sizeof count, 0) != sizeof count)
            continue;
        for (int k = 0; k < conns; k++)
            if (fromlen == ridlen[k] && memcmp(from, rid[k], (size_t)fromlen) == 0 &&
                count > acked[k] && count <= share[k]) {
                acked[k] = count;
                done += acked[k] == share[k];
            }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%.1f\n", (double)size * (double)count / secs / 1e6);
    if (pings)
        fprintf(stderr, "zmq-ceiling: %ld ping(s) of 200 ms for held-back "
                "acknowledgements\n", pings);
    int bad = 0;
    for (int k = 0; k < conns; k++) {
        int st;
        kill(kids[k], SIGTERM);
        bad |= waitpid(kids[k], &st, 0) < 0 || !WIFSIGNALED(st);
    }
    free(buf);
    free(mod);
    free(pat);
    zmq_close(r);
    zmq_ctx_term(ctx);
    return bad;
}
