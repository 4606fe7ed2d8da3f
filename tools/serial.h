/*
 * serial.h - spits-run --serial: a module run in this process, on one
 * thread, in a fixed order (serial.c).
 */
#ifndef SPITS_RUN_SERIAL_H
#define SPITS_RUN_SERIAL_H

/* Runs the module argv[0] with its arguments (argv[0] is the module's
 * path, as spits-jm gives it to the module). commit_errors_ignore: as
 * spits-jm --commit-errors=ignore; keep_going: as spits-jm --keep-going
 * (a failed task is named, and commit_job runs without it); joblog: as
 * spits-jm --joblog (NULL: none). Returns the exit status, as spits-jm's
 * for the same module and arguments. */
int serial_run(int argc, const char **argv, int commit_errors_ignore,
               int keep_going, const char *joblog);

#endif
