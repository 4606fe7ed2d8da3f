/*
 * log.h - runtime logging on stderr.
 *
 * Every line starts with the program's name ("spits-jm: "), so logs of a JM
 * and its TMs can be told apart in one batch job's output. The module owns
 * stdout; the runtime never writes there.
 */
#ifndef SPITS_LOG_H
#define SPITS_LOG_H

enum {
    SPITS_LOG_ERROR = 0,   /* always shown, even with -q */
    SPITS_LOG_WARN  = 1,
    SPITS_LOG_INFO  = 2,   /* the default level shows up to here */
    SPITS_LOG_DEBUG = 3,   /* -v */
    SPITS_LOG_TRACE = 4    /* -vv */
};

void spits_log_init(const char *progname, int level);
int spits_log_level(void);
/* Sets the level; returns the one it replaces. */
int spits_log_set_level(int level);
const char *spits_log_progname(void);
void spits_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A usage error: "PROG: error: <fmt with arg> (see PROG --help)" on
 * stderr. Returns 2, the usage-error exit status. */
int spits_bad_option(const char *fmt, const char *arg);

#define spits_error(...) spits_log(SPITS_LOG_ERROR, __VA_ARGS__)
#define spits_warn(...)  spits_log(SPITS_LOG_WARN, __VA_ARGS__)
#define spits_info(...)  spits_log(SPITS_LOG_INFO, __VA_ARGS__)
#define spits_debug(...) spits_log(SPITS_LOG_DEBUG, __VA_ARGS__)

#endif
