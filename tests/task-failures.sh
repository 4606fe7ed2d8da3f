#!/bin/bash
# A task that fails once is retried and the job succeeds; a task that fails
# every attempt makes spits-jm exit 3, naming the task, with report.json.
# With --keep-going the other results are committed and commit_job runs,
# the failed task is named, and the exit status is still 3; spits-run
# keeps a failed job's temporary job dir and says where it is.
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

# --keep-going: commit_job gets the 99 other results (faulty prints how
# many it committed and the sum of id+1 over them: 5050 - 43).
want="faulty: 99 tasks, sum 5007"
start_jm kg --keep-going --max-attempts 2 "$TMODS/faulty.so" 100 fail=42
start_tm kg kg.tm -n 2
wait $JM_PID; rc=$?
[ $rc = 3 ] || fail "--keep-going: spits-jm exited $rc, not 3"
[ "$(cat "$T/kg.out")" = "$want" ] || fail "--keep-going printed '$(cat "$T/kg.out")', not '$want'"
grep -q "^spits-jm: error: phase 1: 1 task(s) failed every attempt; commit_job runs without them (--keep-going)$" \
    "$T/kg.jm.log" || fail "--keep-going: $(grep -i fail "$T/kg.jm.log")"
grep -q "^spits-jm: error: task 42 of phase 1 failed" "$T/kg.jm.log" || fail "--keep-going: task 42 not named"
[ "$(json "$T/kg/report.json" "(d['status'], d['exit_code'], d['keep_going'], [f['task'] for f in d['failed_tasks']], d['counters']['committed'], d['phases'][0]['commit_job'])")" \
    = "('failed', 3, True, [42], 99, 0)" ] || fail "--keep-going report: $(json "$T/kg/report.json" "d['failed_tasks']")"

# The same through spits-run, in a temporary job dir: kept, one line.
mkdir "$T/tmp"
TMPDIR=$T/tmp timeout 60 "$RUN" -q -n 2 --keep-going "$TMODS/faulty.so" 100 fail=42 \
    >"$T/run.out" 2>"$T/run.err"
rc=$?
[ $rc = 3 ] || fail "spits-run --keep-going exited $rc: $(cat "$T/run.err")"
[ "$(cat "$T/run.out")" = "$want" ] || fail "spits-run --keep-going printed '$(cat "$T/run.out")'"
dir=$(ls -d "$T"/tmp/spits-run-*)
[ -f "$dir/report.json" ] || fail "the failed job's dir was not kept: $(ls -R "$T/tmp")"
grep -qx "spits-run: error: the job failed (exit status 3); job dir kept: $dir (its report.json; spits-status --jobdir $dir)" \
    "$T/run.err" || fail "spits-run did not say where the job dir is: $(cat "$T/run.err")"
echo ok
