#!/bin/bash
# A TM survives its JM going away: after kill -9 of the JM, a new JM starts
# in the same job dir (on another port); the TM finds it through jm.json,
# joins the new job, drops every result of the old one, and the new job's
# result is exact (the bench committer rejects foreign or repeated ids).
# A new job is first refused: the dir holds the killed job's journal, which
# could still be resumed; it runs once that journal is removed.
# The TM meets the new JM holding all its slots' worth of the old job's
# tasks (its workers held in them by bench -P): the new JM must not count
# them as its own, or it never sends that TM a task (it once did).
. "$(dirname "$0")/lib.sh"

start_tm job tm -n 2
tm=$TM_PID
start_jm job --heartbeat 0.2 "$MODS/bench.so" -n 400 -s 20000 -P "$T/pause"
wait_for "grep -q joined $T/tm.log" 30 "the TM to join the first job"
# Some results committed: a job that committed nothing would be replaced.
base=$(stat -c %s "$T/job/journal")
wait_for "[ \$(stat -c %s $T/job/journal) -gt $((base + 500)) ]" 30 "results in the journal"
touch "$T/pause"
wait_for "[ \$(ls $T/pause.waiting-* 2>/dev/null | wc -l) = 2 ]" 30 "both workers held"
wait_for "[ \"\$(live job \"d['tms'][0]['held'] >= 4\")\" = True ]" 30 \
    "the TM to hold 4 tasks or more (its slots)"
first=$(json "$T/job/jm.json" "d['job_id']")
kill -9 "$(json "$T/job/jm.json" "d['pid']")"
wait $JM_PID
out=$("$JM" --jobdir "$T/job" --bind tcp://127.0.0.1:0 "$MODS/bench.so" -n 5 2>&1); rc=$?
[ $rc = 1 ] || fail "a new job over an unfinished journal exited $rc, not 1"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "not one line: $out"
case $out in *"did not finish: resume it with spits-jm --resume --jobdir $T/job"*) ;;
    *) fail "the refusal does not point to --resume: $out" ;; esac
[ "$(json "$T/job/jm.json" "d['job_id']")" = "$first" ] || fail "the refused job touched jm.json"
rm "$T/job/journal"
start_jm job --heartbeat 0.2 "$MODS/bench.so" -n 300 -s 5000
wait_for "[ \"\$(json $T/job/jm.json \"d['job_id']\" 2>/dev/null)\" != $first ]" 30 "the second jm.json"
wait_for "grep -q 'now runs job' $T/tm.log" 30 "the TM to join the second job"
# Its workers are still held: the new JM fills its 4 slots (the old code
# sent it none).
wait_for "[ \"\$(live job \"d['tasks']['sent'] >= 4\")\" = True ]" 30 \
    "the new JM to send 4 tasks to the TM (not to count the old job's as held)"
rm "$T/pause"
wait $JM_PID || fail "the second spits-jm exited $?"
[ "$(cat "$T/job.out")" = "$(bench_checksum 300)" ] || fail "bench printed '$(cat "$T/job.out")'"
[ "$(json "$T/job/report.json" "d['counters']['commit_errors']")" = 0 ] || fail "commit errors"
[ "$(json "$T/job/report.json" "d['tms'][0]['done'] > 0")" = True ] || fail "the old TM did no work in the new job"
wait $tm || fail "the TM exited $? instead of 0"
grep -q "now runs job" "$T/tm.log" || fail "the TM did not notice the new job"
echo ok
