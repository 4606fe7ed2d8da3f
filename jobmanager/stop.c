/*
 * stop.c - signals and fatal errors stop the job (see stop.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "stop.h"
#include "wake.h"

atomic_int jm_signal;
atomic_int jm_abort;
/* The dispatcher's wake fd, for any thread and the handler (wake.h). */
static spits_wake_ref_t stop_wake = SPITS_WAKE_REF_INIT;
/* Written once, by the thread that set jm_abort first; read after. */
static char stop_message[512];
static atomic_int stop_message_ready;

void jm_wake(void)
{
    spits_wake_ref_signal(&stop_wake);
}

static atomic_int stop_signals;   /* how many the handler took */

/* One line to stderr from the handler (nothing to do if it fails). */
static void stop_say(const char *line, size_t len)
{
    ssize_t rc = write(STDERR_FILENO, line, len);
    (void)rc;
}

/* Async-signal-safe only: atomics, write(2), signal(2), raise(3). */
static void on_signal(int sig)
{
    static const char again[] = "spits-jm: stopping already: the report is "
                                "being written (a third signal exits at once, "
                                "without it)\n";
    static const char third[] = "spits-jm: third signal: exiting at once, "
                                "without report.json\n";
    int saved = errno;
    int n = atomic_fetch_add(&stop_signals, 1) + 1;

    if (n >= 3) {
        stop_say(third, sizeof third - 1);
        signal(sig, SIG_DFL);
        raise(sig);   /* delivered once the handler returns */
    } else {
        if (n == 2)
            stop_say(again, sizeof again - 1);
        int none = 0;
        atomic_compare_exchange_strong(&jm_signal, &none, sig);
        jm_wake();
    }
    errno = saved;
}

void jm_stop_init(int wake_fd)
{
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;

    spits_wake_ref_set(&stop_wake, wake_fd);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction was;
        /* Started under nohup: SIGHUP stays ignored, as the user asked. */
        if (stops[i] == SIGHUP && sigaction(SIGHUP, NULL, &was) == 0 &&
            was.sa_handler == SIG_IGN)
            continue;
        sigaction(stops[i], &sa, NULL);
    }
}

void jm_stop_release(void)
{
    spits_wake_ref_release(&stop_wake);
}

void jm_fatal(const char *fmt, ...)
{
    char msg[sizeof stop_message];
    va_list ap;
    int expected = 0;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (atomic_compare_exchange_strong(&jm_abort, &expected, 1)) {
        memcpy(stop_message, msg, sizeof msg);
        atomic_store(&stop_message_ready, 1);
        spits_error("%s", msg);
    } else {
        spits_debug("after the fatal error: %s", msg);
    }
    jm_wake();
}

const char *jm_fatal_message(void)
{
    return atomic_load(&stop_message_ready) ? stop_message : NULL;
}
