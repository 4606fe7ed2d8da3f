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

static atomic_int stop_signals;   /* the presses the handler took */

/* One press reaches the JM twice under spits-run: a terminal's Ctrl-C, or
 * a kill of the process group, reaches the JM itself and spits-run, which
 * passes it on with sigqueue naming the original sender (the sender's
 * pid, 0 for the kernel, plus 1 as its value). The two halves of a press
 * are paired by that sender, whichever comes first: per sender, balance
 * counts the direct signals not yet paired (> 0) or the passed-on ones
 * not yet paired (< 0). A signal that pairs with one of the other kind
 * is no new press. Handlers on different threads may run at once, so the
 * table is taken with a spin flag (a thread's own handler cannot nest:
 * the stop signals are blocked while it runs). */
#define STOP_SENDERS 16
static struct { long sender; int balance; } stop_pairs[STOP_SENDERS];
static atomic_flag stop_pairs_lock = ATOMIC_FLAG_INIT;

/* 1 if the signal (dir: 1 direct, -1 passed on) from sender is a new
 * press. */
static int stop_new_press(long sender, int dir)
{
    int fresh = 1, free_slot = -1, i;
    while (atomic_flag_test_and_set(&stop_pairs_lock))
        ;
    for (i = 0; i < STOP_SENDERS; i++) {
        if (stop_pairs[i].balance == 0) {
            if (free_slot < 0)
                free_slot = i;
        } else if (stop_pairs[i].sender == sender) {
            break;
        }
    }
    if (i == STOP_SENDERS && free_slot >= 0) {
        i = free_slot;
        stop_pairs[i].sender = sender;
    }
    if (i < STOP_SENDERS) {
        fresh = stop_pairs[i].balance * dir >= 0;
        stop_pairs[i].balance += dir;
    }
    atomic_flag_clear(&stop_pairs_lock);
    return fresh;
}

/* One line to stderr from the handler (nothing to do if it fails). */
static void stop_say(const char *line, size_t len)
{
    ssize_t rc = write(STDERR_FILENO, line, len);
    (void)rc;
}

/* Async-signal-safe only: atomics, write(2), signal(2), raise(3),
 * getppid(2). */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    static const char again[] = "spits-jm: stopping already: the report is "
                                "being written (a third signal exits at once, "
                                "without it)\n";
    static const char third[] = "spits-jm: third signal: exiting at once, "
                                "without report.json\n";
    int saved = errno;
    int passed_on = si && si->si_code == SI_QUEUE && si->si_pid == getppid() &&
                    si->si_value.sival_int > 0;
    long sender = !si ? -1 : passed_on ? si->si_value.sival_int - 1L
                : si->si_code == SI_KERNEL ? 0 : (long)si->si_pid;
    (void)uc;
    if (!stop_new_press(sender, passed_on ? -1 : 1)) {
        errno = saved;
        return;
    }
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
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        sigaddset(&sa.sa_mask, stops[i]);
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
