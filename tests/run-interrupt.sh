#!/bin/bash
# Ctrl-C (SIGINT) and SIGTERM to spits-run: it stops the job, leaves no JM
# or TM process behind, removes its temporary job dir, and exits 128+sig.
. "$(dirname "$0")/lib.sh"

# procs DIR: pids of live processes whose command line mentions DIR
# (the last character goes in brackets, so grep does not match itself)
procs() {
    local pat="${1%?}[${1: -1}]"
    grep -l -a -s -- "$pat" /proc/[0-9]*/cmdline | grep -v "^/proc/$$/" | cut -d/ -f3
}

for sig in INT TERM; do
    mkdir -p "$T/$sig"
    TMPDIR=$T/$sig "$RUN" -q -n 2 --tms 3 "$MODS/bench.so" -n 100000 -s 20000 \
        >"$T/$sig.out" 2>"$T/$sig.log" &
    run=$!
    PIDS="$PIDS $run"
    wait_for "[ -n \"\$(ls $T/$sig)\" ] && [ \$(procs $T/$sig | wc -l) -ge 4 ]" 30 "the job to start ($sig)"
    kill -$sig $run
    wait $run; rc=$?
    want=$(( 128 + $(kill -l $sig) ))
    [ $rc = $want ] || fail "spits-run exited $rc after SIG$sig, not $want"
    left=$(procs "$T/$sig")
    [ -z "$left" ] || fail "processes left after SIG$sig: $left"
    [ -z "$(ls "$T/$sig")" ] || fail "the temporary job dir was not removed after SIG$sig"
done
echo ok
