/*
 * stop.c - signals and fatal errors stop the job (see stop.h).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "stop.h"
#include "wake.h"

atomic_int jm_signal;
atomic_int jm_abort;
static atomic_int stop_wake_fd = -1;
/* Written once, by the thread that set jm_abort first; read after. */
static char stop_message[512];
static atomic_int stop_message_ready;

void jm_wake(void)
{
    spits_wake_signal(atomic_load(&stop_wake_fd));
}

static void on_signal(int sig)
{
    atomic_store(&jm_signal, sig);
    jm_wake();
}

void jm_stop_init(int wake_fd)
{
    struct sigaction sa;

    atomic_store(&stop_wake_fd, wake_fd);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
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
