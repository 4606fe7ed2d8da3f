/*
 * log.c - runtime logging on stderr (see log.h).
 *
 * A line is formatted into one buffer and handed whole to the stderr
 * writer (term.c), so lines from different threads never interleave
 * mid-line and never mix with the JM's progress line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "term.h"

static const char *log_progname = "spits";
static int log_level = SPITS_LOG_INFO;

void spits_log_init(const char *progname, int level)
{
    log_progname = progname;
    log_level = level;
}

int spits_log_level(void)
{
    return log_level;
}

int spits_log_set_level(int level)
{
    int old = log_level;
    log_level = level;
    return old;
}

const char *spits_log_progname(void)
{
    return log_progname;
}

void spits_log(int level, const char *fmt, ...)
{
    static const char *tags[] = {"error: ", "warning: ", "", "", ""};
    char line[1024];
    va_list ap;
    int n;

    if (level > log_level)
        return;
    n = snprintf(line, sizeof line, "%s: %s", log_progname,
                 tags[level < 0 ? 0 : level > 4 ? 4 : level]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    /* One line per call: newlines in the message would break log parsing. */
    for (char *p = line + n; *p; p++)
        if (*p == '\n')
            *p = ' ';
    spits_term_line(line, strlen(line));
}

int spits_bad_option(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    fprintf(stderr, "%s: error: %s (see %s --help)\n", log_progname, msg,
            log_progname);
    return 2;
}
