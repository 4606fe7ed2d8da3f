#!/bin/sh
# man/mkman.sh - makes one program's man page from its --help and its
# include file (man/PROGRAM.h2m), with help2man.
#
# The options are written once, in the program's --help; the include file
# holds only the prose --help has no room for (DESCRIPTION's rest, FILES,
# ENVIRONMENT, EXAMPLES, SEE ALSO). `make man` runs this for every program
# and the pages are committed, so a build needs no help2man;
# tests/man-pages.sh runs it again to check that they are current.
#
# Usage: mkman.sh PROGRAM INCLUDE VERSION OUTPUT
#
# help2man makes the "Exit status:" paragraph of --help a subsection of
# OPTIONS; it is turned into the EXIT STATUS section that man pages have.
set -eu
[ $# -eq 4 ] || { echo "usage: mkman.sh PROGRAM INCLUDE VERSION OUTPUT" >&2; exit 2; }
prog=$1 inc=$2 version=$3 out=$4
command -v help2man >/dev/null || {
    echo "mkman.sh: help2man is not installed (Debian package help2man)" >&2
    exit 1
}
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT
help2man --no-info --include="$inc" --version-string="$version" \
    --output="$tmp" "$prog"
sed 's/^\.SS "Exit status:"$/.SH "EXIT STATUS"/' "$tmp" >"$out"
