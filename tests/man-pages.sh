#!/bin/bash
# man-pages.sh - the man pages are the programs' option reference, so they
# must say what the programs do: for each program, the long options its
# --help lists and the ones its man page lists are the same set; each
# committed page is what `make man` (man/mkman.sh) makes now, when
# help2man is installed; and every page, spits(3) included, renders with
# no warning.
. "$top_srcdir/tests/lib.sh"
# (what this checks is the same in every build: the plain check's run is it)
sanitized && { echo "SKIP: a sanitizer build (the plain build's check runs this)"; exit 77; }

progs="jobmanager/spits-jm taskmanager/spits-tm tools/spits-run tools/spits-status
       tools/spits-plot tools/spits-alloc tools/spits-parallel"

# The long options of --help's entries (an entry line is indented 2 to 6
# spaces and starts with its options; its continuation lines are
# indented further) and of the man page's .TP tags.
help_options() {
    "$PY" -c '
import re, sys
for line in sys.stdin:
    m = re.match(r" {2,6}(?:-[A-Za-z0-9], )?--([a-z][a-z0-9-]*)", line)
    if m:
        print("--" + m.group(1))
' | sort
}
man_options() {
    "$PY" - "$1" <<'PY' | sort
import re, sys
lines = open(sys.argv[1]).read().split("\n")
for i, line in enumerate(lines[:-1]):
    if line.startswith(".TP"):
        m = re.match(r"\\fB(?:\\-[A-Za-z0-9]\\fR, \\fB)?\\-\\-([a-z](?:[a-z0-9]|\\-)*)", lines[i + 1])
        if m:
            print("--" + m.group(1).replace("\\-", "-"))
PY
}

version=$("$JM" --version | awk '{print $2; exit}')
[ -n "$version" ] || fail "spits-jm --version printed no version"
if command -v help2man >/dev/null; then
    regen=1
else
    regen=0
    echo "NOTE: help2man is not installed (Debian package help2man): the check"
    echo "      that the committed pages are current is skipped"
fi
# The date in .TH is the only part that changes from month to month.
undate() {
    sed '/^\.TH /s/^\(\.TH [^ ]* "[^"]*"\) "[^"]*"/\1 "DATE"/' "$1"
}

for p in $progs; do
    n=${p##*/}
    prog=$top_builddir/$p
    page=$top_srcdir/man/$n.1
    [ -x "$prog" ] || fail "$prog is not built"
    [ -f "$page" ] || fail "$page is missing"
    "$prog" --help >"$T/$n.help" || fail "$n --help exited $?"
    help_options <"$T/$n.help" >"$T/$n.hopts"
    man_options "$page" >"$T/$n.mopts"
    # (a parse that finds nothing would make the comparison vacuous)
    [ "$(grep -c . "$T/$n.hopts")" -ge 3 ] ||
        fail "$n: found only $(grep -c . "$T/$n.hopts") long options in --help"
    cmp -s "$T/$n.hopts" "$T/$n.mopts" || {
        echo "$n: options in --help (<) and in $n.1 (>) differ:"
        diff "$T/$n.hopts" "$T/$n.mopts" | grep '^[<>]'
        fail "$n: --help and man page list different options (run make man)"
    }
    if [ $regen = 1 ]; then
        sh "$top_srcdir/man/mkman.sh" "$prog" "$top_srcdir/man/$n.h2m" "$version" \
            "$T/$n.1" || fail "$n: man/mkman.sh failed"
        undate "$T/$n.1" >"$T/$n.new"
        undate "$page" >"$T/$n.old"
        diff -u "$T/$n.old" "$T/$n.new" >"$T/$n.diff" || {
            cat "$T/$n.diff"
            fail "$n: man/$n.1 is not what make man makes now (run make man)"
        }
    fi
    echo "$n: $(grep -c . "$T/$n.hopts") options, the same in --help and $n.1"
done

# Rendering: groff's warnings (-ww), and man's when man-db is there.
for page in "$top_srcdir"/man/*.1 "$top_srcdir/man/spits.3" "$top_srcdir/man/spits-python.7"; do
    macros=-man
    case $page in *.3|*.7) macros=-mandoc ;; esac
    out=$(groff -ww -z $macros "$page" 2>&1) || fail "groff failed on $page: $out"
    [ -z "$out" ] || fail "groff warns about $page: $out"
    if command -v man >/dev/null; then
        out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) ||
            fail "man -l failed on $page: $out"
        [ -z "$out" ] || fail "man warns about $page: $out"
    fi
done
echo "every page renders with no warning"
