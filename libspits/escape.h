/*
 * escape.h - a peer's string made safe for a log line or a table (escape.c).
 *
 * A host name or endpoint that another process sent us reaches the user's
 * terminal through the JM's log and spits-status. Written raw, an escape
 * sequence in it could rewrite the screen or hide lines, and a newline
 * could forge a log line. Every such string is stored escaped, once, when
 * it is received.
 */
#ifndef SPITS_ESCAPE_H
#define SPITS_ESCAPE_H

#include <stddef.h>

/* Copies in into out (outlen > 0 bytes, always NUL-terminated) with every
 * control character (C0, DEL and C1), every byte that is not part of a
 * valid UTF-8 character written as \xNN, so the result prints as one line
 * of plain characters and says what was there. Escaping the result again
 * changes nothing. A copy too long for out is cut between characters or
 * escapes, never inside one. Returns out. */
char *spits_escape(char *out, size_t outlen, const char *in);

#ifdef SPITS_SELFTEST
int spits_escape_selftest(void);
#endif

#endif
