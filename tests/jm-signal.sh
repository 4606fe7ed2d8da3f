#!/bin/bash
# SIGTERM (what Slurm sends at a time limit) or SIGINT to spits-jm stops the
# job cleanly: commit_job is not called, report.json says "interrupted",
# the TMs are told to finish and exit 0, and the JM exits 128+signal.
. "$(dirname "$0")/lib.sh"

for sig in TERM INT; do
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
done
echo ok
