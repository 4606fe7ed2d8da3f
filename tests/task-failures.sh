#!/bin/bash
# A task that fails once is retried and the job succeeds; a task that fails
# every attempt makes spits-jm exit 3, naming the task, with report.json.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/flaky"
out=$(timeout 120 "$RUN" -q -n 2 "$MODS/bench.so" -n 300 -F 17:"$T/flaky" -F 250:"$T/flaky") \
    || fail "flaky job exited $?"
[ "$out" = "$(bench_checksum 300)" ] || fail "flaky job printed '$out'"
[ -f "$T/flaky/flaky-17" ] && [ -f "$T/flaky/flaky-250" ] || fail "the flaky tasks never failed"

start_jm bad "$MODS/bench.so" -n 100 -f 42
start_tm bad tm -n 2
wait $JM_PID; rc=$?
[ $rc = 3 ] || fail "spits-jm exited $rc, not 3"
grep -q "task 42 of phase 1 failed" "$T/bad.jm.log" || fail "the failed task is not named"
[ "$(json "$T/bad/report.json" "[f['task'] for f in d['failed_tasks']]")" = "[42]" ] || fail "report failed_tasks"
[ "$(json "$T/bad/report.json" "d['counters']['committed']")" = 99 ] || fail "report committed"
[ "$(json "$T/bad/report.json" "d['status']")" = failed ] || fail "report status"
[ -s "$T/bad.out" ] && fail "commit_job ran despite a failed task"
echo ok
