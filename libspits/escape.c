/*
 * escape.c - a peer's string made safe for a log line or a table.
 *
 * What passes as it is: printable ASCII, and whole, valid UTF-8
 * characters that are not controls. Everything else becomes
 * \xNN, byte by byte: C0 controls (ESC starts a terminal's sequences, a
 * newline forges a log line), DEL, the C1 controls (U+0080-U+009F, which
 * some terminals also obey), the characters that reorder or break a line
 * (U+2028, U+2029, the bidirectional overrides U+202A-U+202E and
 * isolates U+2066-U+2069), and any byte of a malformed, overlong or
 * surrogate sequence. The backslash is left as it is, so that escaping
 * twice (the JM stores a host escaped, spits-status escapes what the JM
 * says) changes nothing more.
 */
#include <stdio.h>
#include <string.h>

#include "escape.h"

/* Length of the valid UTF-8 character at s (2 to 4), or 0 if s starts
 * none. s is NUL-terminated, and NUL is no continuation byte, so no
 * read passes it. */
static int escape_utf8_len(const unsigned char *s)
{
    int n;
    unsigned char lo = 0x80, hi = 0xbf;

    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4;
    else
        return 0;
    /* (the second byte's range rules out overlong forms, surrogates and
     * code points past U+10FFFF) */
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f;
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* 1 for a valid character of n bytes at s that still must not be shown:
 * a C1 control, or one that reorders or breaks the line. */
static int escape_utf8_control(const unsigned char *s, int n)
{
    if (n == 2)
        return s[0] == 0xc2 && s[1] <= 0x9f;
    if (n == 3 && s[0] == 0xe2 && s[1] == 0x80)
        return s[2] >= 0xa8 && s[2] <= 0xae;
    if (n == 3 && s[0] == 0xe2 && s[1] == 0x81)
        return s[2] >= 0xa6 && s[2] <= 0xa9;
    return 0;
}

char *spits_escape(char *out, size_t outlen, const char *in)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0;

    while (*s) {
        char piece[4 * 4 + 1];
        int take = 1, len;
        if (*s >= 0x20 && *s < 0x7f) {
            piece[0] = (char)*s;
            len = 1;
        } else if (*s >= 0x80 && (take = escape_utf8_len(s)) > 0 &&
                   !escape_utf8_control(s, take)) {
            memcpy(piece, s, (size_t)take);
            len = take;
        } else {
            /* (a bad sequence: only its first byte; the rest is looked at
             * again, and escaped if it starts nothing valid either) */
            if (take == 0)
                take = 1;
            len = 0;
            for (int i = 0; i < take; i++)
                len += snprintf(piece + len, sizeof piece - (size_t)len,
                                "\\x%02x", s[i]);
        }
        if (o + (size_t)len >= outlen)
            break;
        memcpy(out + o, piece, (size_t)len);
        o += (size_t)len;
        s += take;
    }
    if (outlen)
        out[o] = '\0';
    return out;
}

#ifdef SPITS_SELFTEST
#define ECHECK(in, size, want) do {                                          \
    char out_[size];                                                         \
    spits_escape(out_, sizeof out_, in);                                     \
    if (strcmp(out_, want) != 0) {                                           \
        fprintf(stderr, "escape selftest: %s:%d: got '%s', want '%s'\n",    \
                __FILE__, __LINE__, out_, want);                             \
        return -1;                                                           \
    } } while (0)

int spits_escape_selftest(void)
{
    ECHECK("node-1.cluster", 64, "node-1.cluster");
    ECHECK("", 64, "");
    /* A terminal's sequences, a forged line, DEL. */
    ECHECK("a\033[2Jb", 64, "a\\x1b[2Jb");
    ECHECK("x\nTM y joined", 64, "x\\x0aTM y joined");
    ECHECK("\t\r\x7f", 64, "\\x09\\x0d\\x7f");
    /* Escaping twice is escaping once. */
    ECHECK("a\\x1b\\", 64, "a\\x1b\\");
    ECHECK("a\\x1b[2J", 64, "a\\x1b[2J");
    /* Valid UTF-8 passes; C1 controls and line-reordering ones do not. */
    ECHECK("n\xc3\xb3-\xe6\x97\xa5-\xf0\x9f\x98\x80", 64,
           "n\xc3\xb3-\xe6\x97\xa5-\xf0\x9f\x98\x80");
    ECHECK("\xc2\x9b" "31m", 64, "\\xc2\\x9b31m");
    ECHECK("\xc2\xa0", 64, "\xc2\xa0");
    ECHECK("a\xe2\x80\xae" "b\xe2\x81\xa6", 64, "a\\xe2\\x80\\xaeb\\xe2\\x81\\xa6");
    ECHECK("\xe2\x80\xa8", 64, "\\xe2\\x80\\xa8");
    /* Invalid: a lone byte, a cut sequence, overlong, surrogate, too big. */
    ECHECK("\xff", 64, "\\xff");
    ECHECK("\xe6\x97", 64, "\\xe6\\x97");
    ECHECK("\xe6\x97x", 64, "\\xe6\\x97x");
    ECHECK("\xc0\xaf", 64, "\\xc0\\xaf");
    ECHECK("\xe0\x80\xaf", 64, "\\xe0\\x80\\xaf");
    ECHECK("\xed\xa0\x80", 64, "\\xed\\xa0\\x80");
    ECHECK("\xf4\x90\x80\x80", 64, "\\xf4\\x90\\x80\\x80");
    /* Cut to fit, between whole characters and escapes only. */
    ECHECK("abcdef", 4, "abc");
    ECHECK("ab\033", 5, "ab");
    ECHECK("ab\033", 7, "ab\\x1b");
    ECHECK("a\xc3\xb3", 3, "a");
    ECHECK("abc", 1, "");
    return 0;
}
#endif
