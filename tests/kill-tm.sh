#!/bin/bash
# kill -9 of a TM mid-job: the result is still exact and every task is
# committed exactly once (the bench committer fails on a duplicate).
. "$(dirname "$0")/lib.sh"

n=1500
start_jm job "$MODS/bench.so" -n $n -s 10000
start_tm job victim -n 2
victim=$TM_PID
start_tm job survivor -n 2
survivor=$TM_PID
wait_for "[ \$(grep -c joined $T/job.jm.log) -ge 2 ]" 30 "both TMs to join"
sleep 1
kill -0 $JM_PID 2>/dev/null || fail "the job ended before the kill"
kill -9 $victim
wait $JM_PID || fail "spits-jm exited $?"
[ "$(cat "$T/job.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/job.out")'"
[ "$(json "$T/job/report.json" "d['counters']['committed']")" = $n ] || fail "committed"
[ "$(json "$T/job/report.json" "d['counters']['requeued'] + d['counters']['resent'] > 0")" = True ] \
    || fail "no task was requeued or re-sent after the kill"
grep -q "lost (disconnected)" "$T/job.jm.log" || fail "the JM did not notice the lost TM's closed connection"
wait $survivor || fail "the surviving TM exited $?"
echo ok
