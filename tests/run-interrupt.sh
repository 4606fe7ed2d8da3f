#!/bin/bash
# Ctrl-C (SIGINT), SIGTERM and every other signal spits-run can catch whose
# default would end it: it stops the job, leaves no JM or TM process
# behind, removes its temporary job dir, and exits 128+sig.
. "$(dirname "$0")/lib.sh"

# procs DIR: pids of live processes whose command line mentions DIR
# (the last character goes in brackets, so grep does not match itself)
procs() {
    local pat="${1%?}[${1: -1}]"
    grep -l -a -s -- "$pat" /proc/[0-9]*/cmdline | grep -v "^/proc/$$/" | cut -d/ -f3
}

for sig in INT TERM HUP USR1 USR2 PIPE ALRM QUIT; do
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
    # (ThreadSanitizer's runtime keeps a file of its own in TMPDIR,
    # tsan.rodata.PID, which a killed process leaves behind)
    [ -z "$(ls --ignore='tsan.rodata.*' "$T/$sig")" ] || fail "the temporary job dir was not removed after SIG$sig: $(find "$T/$sig")"
done

# One Ctrl-C to the process group (kill -INT -PGID, as a terminal does):
# spits-run and the JM both get it, and it is one press: the job stops
# with its report, and nothing says it was pressed twice.
setsid "$RUN" -n 2 --jobdir "$T/group" "$MODS/bench.so" -n 100000 -s 20000 \
    >"$T/group.out" 2>"$T/group.log" &
run=$!
PIDS="$PIDS $run"
wait_for "[ \"\$(live group \"d['tasks']['committed']\" 2>/dev/null)\" -ge 2 ] 2>/dev/null" 30 "the job to commit (group)"
[ "$(ps -o pgid= -p $run | tr -d ' ')" = $run ] || fail "spits-run does not lead its own process group"
kill -INT -- -$run
wait $run; rc=$?
[ $rc = 130 ] || fail "spits-run exited $rc after one SIGINT to its group"
[ "$(json "$T/group/report.json" "d['status']")" = interrupted ] || fail "no report after one SIGINT to the group"
grep -q "stopping already" "$T/group.log" && fail "one Ctrl-C taken as two: $(grep -h stopping "$T/group.log")"
[ "$(grep -c "^spits-jm: warning: stopping the job (signal 2)$" "$T/group.log")" = 1 ] \
    || fail "the JM's stop line: $(grep -h stopping "$T/group.log")"

# A terminal's Ctrl-C reaches the JM and spits-run: the JM's SIGINT, then
# spits-run's 50 ms later, are one press: the report is written and
# nothing says it was pressed twice.
"$RUN" -q -n 2 --jobdir "$T/twice" "$MODS/bench.so" -n 100000 -s 20000 \
    >"$T/twice.out" 2>"$T/twice.log" &
run=$!
PIDS="$PIDS $run"
wait_for "[ -s $T/twice/jm.json ] && grep -q '\"committed\": [1-9]' $T/twice/jm.json 2>/dev/null || \
    [ \"\$(live twice \"d['tasks']['committed']\" 2>/dev/null)\" -ge 2 ] 2>/dev/null" 30 "the job to commit"
# (its TM stopped: the JM's drain then waits up to 2 s for the TM's BYE)
tm=$(procs "$T/twice" | while read -r p; do grep -qa spits-tm /proc/$p/cmdline && echo $p; done)
[ -n "$tm" ] || fail "no TM found for the twice job"
kill -STOP $tm
kill -INT "$(json "$T/twice/jm.json" "d['pid']")"; sleep 0.05; kill -INT $run
wait $run; rc=$?
[ $rc = 130 ] || fail "spits-run exited $rc after two SIGINTs"
[ "$(json "$T/twice/report.json" "d['status']")" = interrupted ] || fail "no report after two SIGINTs"
grep -q "stopping already" "$T/twice.log" && fail "the JM's and spits-run's SIGINT taken as two presses"
kill -CONT $tm 2>/dev/null
echo ok
