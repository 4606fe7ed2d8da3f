#!/bin/bash
# module-gdb.sh - a module can be debugged as docs/module-guide.md says:
# gdb, given spits-jm with a breakpoint on a module function, stops there
# and names the module's source line. spits loads a module from a private
# copy (libspits/image.h); gdb reads the module's symbols from the name the
# dynamic loader records for it, which must therefore be a path gdb can
# open from its own process (with /proc/self/fd/N gdb opened one of its own
# pipes and hung). Needs gdb: skipped without it, failed under CI=true.
. "$(dirname "$0")/lib.sh"

command -v gdb >/dev/null || {
    [ "${CI:-}" = true ] && fail "gdb is not installed (Debian package gdb; tools/spits-check installs it)"
    echo "SKIP: gdb is not installed"
    exit 77
}
# (a sanitizer build loads modules the same way, and gdb is slow over it)
sanitized && { echo "SKIP: a sanitizer build"; exit 77; }
cc -g -O0 -fPIC -shared -I"$top_srcdir/libspits" -o "$T/pi.so" "$top_srcdir/modules/pi.c" ||
    fail "cannot build pi.c with -g"
line=$(grep -n '^int spits_committer_commit_pit' "$top_srcdir/modules/pi.c" | cut -d: -f1)
[ -n "$line" ] || fail "no spits_committer_commit_pit in modules/pi.c"
cat >"$T/gdb.cmds" <<'EOF'
set breakpoint pending on
set pagination off
break spits_committer_commit_pit
run
bt 1
kill
quit
EOF
timeout -s KILL 90 gdb -q -batch -x "$T/gdb.cmds" --args "$JM" --jobdir "$T/job" \
    --bind tcp://127.0.0.1:0 -q "$T/pi.so" 100000 10 </dev/null >"$T/gdb.log" 2>&1 &
GDB_PID=$!
PIDS="$PIDS $GDB_PID"
start_tm job tm -n 1
wait "$GDB_PID"
# gdb stopped in the module, and knows the function's file and line
# (the breakpoint's line is the first statement after the opening brace).
grep -Eq "^#0 +spits_committer_commit_pit \(.*\) at .*pi\.c:($((line + 2))|$((line + 3)))$" "$T/gdb.log" ||
    fail "gdb did not stop in pi.c's commit_pit (line $line): $(grep -v Thread "$T/gdb.log" | tail -8)"
echo ok
