#!/bin/bash
# SIGTERM (what Slurm sends at a time limit), SIGINT or SIGHUP (a closed
# terminal) to spits-jm stops the job cleanly: commit_job is not called,
# report.json says "interrupted", the TMs are told to finish and exit 0, and
# the JM exits 128+signal. A second signal does not cut that short; a third
# does, and says so. Under nohup, SIGHUP is ignored.
. "$(dirname "$0")/lib.sh"

for sig in TERM INT HUP; do
    start_jm $sig "$MODS/bench.so" -n 100000 -s 20000
    start_tm $sig tm$sig -n 2
    tm=$TM_PID
    wait_for "grep -q joined $T/$sig.jm.log" 30 "the TM to join ($sig)"
    wait_for "[ \"\$(tm_done $sig $tm)\" -ge 2 ]" 30 "some commits ($sig)"
    kill -$sig "$(json "$T/$sig/jm.json" "d['pid']")"
    wait $JM_PID; rc=$?
    [ $rc = $(( 128 + $(kill -l $sig) )) ] || fail "spits-jm exited $rc after SIG$sig"
    [ -s "$T/$sig.out" ] && fail "commit_job ran after SIG$sig: $(cat "$T/$sig.out")"
    [ "$(json "$T/$sig/report.json" "d['status']")" = interrupted ] || fail "report status after SIG$sig"
    [ "$(json "$T/$sig/report.json" "0 < d['counters']['committed'] < 100000")" = True ] \
        || fail "report committed after SIG$sig"
    wait $tm || fail "the TM exited $? after SIG$sig to the JM"
    [ "$(json "$T/$sig/report.json" "d['resumable']")" = True ] || fail "not resumable after SIG$sig"
done

# Two SIGINTs 50 ms apart (a terminal's Ctrl-C, then spits-run's): the JM
# still drains and writes its report. (Its TM is stopped, so the JM waits
# up to 2 s for its BYE: the second signal comes during the drain.)
start_jm int2 "$MODS/bench.so" -n 100000 -s 20000
start_tm int2 tmint2 -n 2
tm=$TM_PID
wait_for "[ \"\$(tm_done int2 $tm)\" -ge 2 ] 2>/dev/null" 30 "some commits (int2)"
kill -STOP $tm
pid=$(json "$T/int2/jm.json" "d['pid']")
kill -INT $pid; sleep 0.05; kill -INT $pid
wait $JM_PID; rc=$?
[ $rc = 130 ] || fail "spits-jm exited $rc after two SIGINTs"
[ "$(json "$T/int2/report.json" "d['status']")" = interrupted ] || fail "no report after two SIGINTs"
grep -q "spits-jm: stopping already: the report is being written" "$T/int2.jm.log" \
    || fail "the second SIGINT was not acknowledged: $(tail -3 "$T/int2.jm.log")"
kill -CONT $tm
wait $tm

# Three: the third ends it at once, saying so (the TM stopped, as above).
start_jm int3 --tm-timeout 30 "$MODS/bench.so" -n 100000 -s 20000
start_tm int3 tmint3 -n 2
tm=$TM_PID
wait_for "[ \"\$(tm_done int3 $tm)\" -ge 2 ] 2>/dev/null" 30 "some commits (int3)"
kill -STOP $tm
pid=$(json "$T/int3/jm.json" "d['pid']")
kill -INT $pid; sleep 0.05; kill -INT $pid; sleep 0.05; kill -INT $pid
wait $JM_PID; rc=$?
[ $rc = 130 ] || fail "spits-jm exited $rc after three SIGINTs"
grep -q "spits-jm: third signal: exiting at once, without report.json" "$T/int3.jm.log" \
    || fail "the third SIGINT was not named: $(tail -3 "$T/int3.jm.log")"
kill -CONT $tm

# Under nohup (SIGHUP ignored when it starts), SIGHUP changes nothing.
(trap "" HUP; exec "$JM" --jobdir "$T/nohup" --bind tcp://127.0.0.1:0 \
    "$MODS/bench.so" -n 2000 -s 2000 >"$T/nohup.out" 2>"$T/nohup.jm.log") &
jm=$!
PIDS="$PIDS $jm"
wait_for "[ -s $T/nohup/jm.json ]" 30 "the nohup JM to announce itself"
kill -HUP "$(json "$T/nohup/jm.json" "d['pid']")"
start_tm nohup tmnohup -n 2
wait $jm; rc=$?
[ $rc = 0 ] || fail "a JM under nohup exited $rc after SIGHUP"
[ "$(json "$T/nohup/report.json" "d['status']")" = ok ] || fail "nohup job not ok"
echo ok
