/*
 * term.c - the one writer of a program's stderr (see term.h for who owns
 * what).
 *
 * A line and the bar redrawn after it are composed into one buffer and
 * written with one write(2): another process writing to the same
 * terminal (or file) then never lands in the middle of either.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "term.h"
#include "util.h"

#define TERM_ERASE "\r\033[K"      /* to column 0, erase to the line's end */
#define TERM_ERASE_LEN 4
#define TERM_BAR_MAX 512

static pthread_mutex_t term_lock = PTHREAD_MUTEX_INITIALIZER;
static int term_fd = STDERR_FILENO;
static int term_tty;                  /* set by spits_term_init, before threads */
static atomic_int term_resized = 1;   /* the width is to be (re-)read */
static int term_width = 80;
static char term_bar_text[TERM_BAR_MAX];
static size_t term_bar_len;           /* 0: no bar on screen */

static void term_on_winch(int sig)
{
    (void)sig;
    atomic_store(&term_resized, 1);
}

/* (stderr gone: nowhere to say so) */
static void term_write_all(const char *p, size_t n)
{
    (void)spits_write_all(term_fd, p, n);
}

/* The terminal's columns, re-read after a SIGWINCH (lock held). */
static int term_columns(void)
{
    struct winsize ws;
    if (atomic_exchange(&term_resized, 0) &&
        ioctl(term_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        term_width = ws.ws_col;
    return term_width;
}

/* Appends "erase, text cut to the width" to out; returns its length. The
 * last column stays empty: a line that fills it makes some terminals
 * wrap before the next \r. */
static size_t term_put_bar(char *out, const char *text, size_t len)
{
    size_t cols = (size_t)term_columns();
    if (cols > 1 && len > cols - 1)
        len = cols - 1;
    memcpy(out, TERM_ERASE, TERM_ERASE_LEN);
    memcpy(out + TERM_ERASE_LEN, text, len);
    return TERM_ERASE_LEN + len;
}

void spits_term_init(void)
{
    const char *term = getenv("TERM");
    struct sigaction sa;

    term_tty = isatty(term_fd) && !(term && strcmp(term, "dumb") == 0);
    if (!term_tty)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = term_on_winch;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGWINCH, &sa, NULL);
}

int spits_term_is_tty(void)
{
    return term_tty;
}

void spits_term_line(const char *line, size_t len)
{
    char buf[4096 + TERM_BAR_MAX + 16];
    size_t n = 0;

    pthread_mutex_lock(&term_lock);
    if (term_bar_len) {
        memcpy(buf, TERM_ERASE, TERM_ERASE_LEN);
        n = TERM_ERASE_LEN;
    }
    if (len > 4096) {                 /* too long to compose: three writes */
        term_write_all(buf, n);
        term_write_all(line, len);
        n = 0;
    } else {
        memcpy(buf + n, line, len);
        n += len;
    }
    buf[n++] = '\n';
    if (term_bar_len)
        n += term_put_bar(buf + n, term_bar_text, term_bar_len);
    term_write_all(buf, n);
    pthread_mutex_unlock(&term_lock);
}

void spits_term_bar(const char *text)
{
    char buf[TERM_BAR_MAX + 16];
    size_t len = strlen(text);

    if (!term_tty)
        return;
    if (len > TERM_BAR_MAX)
        len = TERM_BAR_MAX;
    pthread_mutex_lock(&term_lock);
    memcpy(term_bar_text, text, len);
    term_bar_len = len;
    term_write_all(buf, term_put_bar(buf, text, len));
    pthread_mutex_unlock(&term_lock);
}

void spits_term_bar_end(const char *final)
{
    char buf[TERM_BAR_MAX + 16];
    size_t n = 0;

    if (!term_tty)
        return;
    pthread_mutex_lock(&term_lock);
    if (final) {
        size_t len = strlen(final);
        n = term_put_bar(buf, final, len > TERM_BAR_MAX ? TERM_BAR_MAX : len);
        buf[n++] = '\n';
    } else if (term_bar_len) {
        memcpy(buf, TERM_ERASE, TERM_ERASE_LEN);
        n = TERM_ERASE_LEN;
    }
    term_bar_len = 0;
    term_write_all(buf, n);
    pthread_mutex_unlock(&term_lock);
}

#ifdef SPITS_SELFTEST
#include <stdio.h>

#define TCHECK(c) do { if (!(c)) { fprintf(stderr, "term selftest: %s:%d: %s\n", \
    __FILE__, __LINE__, #c); return -1; } } while (0)

/* What the writer wrote into the pipe since the last call, as a string. */
static const char *term_test_read(int fd)
{
    static char out[2048];
    ssize_t n = read(fd, out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
    return out;
}

static int term_test_tty(int rfd)
{
    spits_term_bar("0123456789abcdefghijklmnop");
    TCHECK(!strcmp(term_test_read(rfd), "\r\033[K0123456789abcdefghij"));
    spits_term_line("hello", 5);
    TCHECK(!strcmp(term_test_read(rfd), "\r\033[Khello\n\r\033[K0123456789abcdefghij"));
    spits_term_bar("short");
    TCHECK(!strcmp(term_test_read(rfd), "\r\033[Kshort"));
    spits_term_bar_end("done 100%");
    TCHECK(!strcmp(term_test_read(rfd), "\r\033[Kdone 100%\n"));
    spits_term_line("after", 5);               /* no bar: a plain line */
    TCHECK(!strcmp(term_test_read(rfd), "after\n"));
    spits_term_bar("x");
    TCHECK(!strcmp(term_test_read(rfd), "\r\033[Kx"));
    spits_term_bar_end(NULL);                  /* erased */
    TCHECK(!strcmp(term_test_read(rfd), "\r\033[K"));
    return 0;
}

int spits_term_selftest(void)
{
    int p[2], rc;
    TCHECK(pipe(p) == 0);
    term_fd = p[1];
    term_tty = 1;                              /* a 21-column terminal */
    atomic_store(&term_resized, 0);
    term_width = 21;
    rc = term_test_tty(p[0]);
    if (rc == 0) {
        term_tty = 0;                          /* off a terminal */
        spits_term_bar("never drawn");
        spits_term_line("plain", 5);
        const char *got = term_test_read(p[0]);
        if (strcmp(got, "plain\n") != 0) {
            fprintf(stderr, "term selftest: off a terminal wrote '%s'\n", got);
            rc = -1;
        }
    }
    term_fd = STDERR_FILENO;
    term_width = 80;
    close(p[0]);
    close(p[1]);
    return rc;
}
#endif
