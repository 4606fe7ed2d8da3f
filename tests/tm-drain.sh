#!/bin/bash
# Graceful drain: SIGTERM (or SIGINT) to a TM hands its queued tasks back,
# lets the running ones finish and exits 0; past --drain-timeout it leaves
# anyway and exits 1. Either way the job's result is exact, and a drain
# re-sends only what the TM handed back. Two SIGTERMs
# at once (Slurm and srun at a time limit) are one drain; a signal 2 s
# later ends it at once.
. "$(dirname "$0")/lib.sh"

# 1. SIGTERM mid-job, short tasks: a clean drain.
# (-G: the job cannot end before the test opens the gate.)
n=200
start_jm a "$MODS/bench.so" -n $n -s 40000 -G "$T/a.gate"
jm=$JM_PID
start_tm a a.victim -n 2; victim=$TM_PID
wait_for "grep -q joined $T/a.jm.log" 30 "the victim to join"
start_tm a a.other -n 2; other=$TM_PID
wait_for "[ \"\$(tm_done a $victim)\" -ge 4 ]" 30 "the victim to finish some tasks"
# Two at once, as Slurm and srun send at a time limit: one drain.
kill -TERM $victim; kill -TERM $victim
wait $victim; rc=$?
[ $rc = 0 ] || fail "the drained TM exited $rc, not 0"
# It left on its own: the job cannot end before the gate opens.
kill -0 $jm 2>/dev/null || fail "the job ended before the drained TM left"
grep -q "signal 15: draining: [0-9]* queued task(s) handed back" "$T/a.victim.log" || fail "no drain line"
grep -q "drained: every started task finished and its result was sent" "$T/a.victim.log" || fail "no drained line"
wait_for "grep -q 'TM .*:$victim is draining' $T/a.jm.log" 30 "the JM to see the drain"
touch "$T/a.gate"
wait $jm || fail "the job exited $?"
[ "$(cat "$T/a.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/a.out")'"
[ "$(json "$T/a/report.json" "[t['done'] > 0 for t in d['tms'] if t['pid'] == $victim]")" = "[True]" ] \
    || fail "the drained TM did no work"
wait $other || fail "the other TM exited $?"

# 1b. A second signal 2 s or more after the first ends a drain at once:
# the victim's 4 s tasks are still running, its --drain-timeout is 60 s.
# (A loaded machine stretches the 2.5 s sleep and the steps before the
# first signal by a second or so: the tasks outlast them.)
mkdir "$T/e.started"
start_jm e "$MODS/bench.so" -n 8 -s 4000000 -M "$T/e.started"
jm=$JM_PID
start_tm e e.victim -n 2 --drain-timeout 60; victim=$TM_PID
wait_for "[ \$(ls $T/e.started | wc -l) -ge 2 ]" 30 "the victim's two tasks to start"
start_tm e e.other -n 8; other=$TM_PID
kill -TERM $victim
sleep 2.5
kill -TERM $victim
wait $victim; rc=$?
[ $rc = 143 ] || fail "a second SIGTERM 2.5 s into a drain: exit $rc, not 143"
grep -q "signal 15: draining" "$T/e.victim.log" || fail "no drain before the second signal"
wait $jm || fail "the job exited $?"
[ "$(cat "$T/e.out")" = "$(bench_checksum 8)" ] || fail "bench printed '$(cat "$T/e.out")'"
wait $other || fail "the other TM exited $?"

# 1c. A drain wastes nothing: the tasks the JM sent before it saw the
# DRAIN are handed back as they come (the TM leaves once the JM answered
# the DRAIN), so nothing is requeued at its BYE, what is re-sent is what
# was handed back, and no task runs twice. (0.2 ms tasks keep the
# victim's queue refilled up to the signal, which comes as task 200
# starts (-M); most are left, so the JM has fresh tasks and sends no
# copies of late ones before the drain, and only one TM after it.)
n=2000
mkdir "$T/f.started"
start_jm f "$MODS/bench.so" -n $n -s 200 -M "$T/f.started"
jm=$JM_PID
start_tm f f.victim -n 2; victim=$TM_PID
wait_for "grep -q joined $T/f.jm.log" 30 "the victim to join"
start_tm f f.other -n 2; other=$TM_PID
wait_for "[ -e $T/f.started/started-200 ]" 30 "task 200 to start"
kill -TERM $victim
wait $victim || fail "the drained TM exited $?"
grep -q "signal 15: draining" "$T/f.victim.log" || fail "no drain line"
grep -q "did not answer the drain" "$T/f.victim.log" && fail "the JM's answer to DRAIN never came"
wait $jm || fail "job f exited $?"
[ "$(cat "$T/f.out")" = "$(bench_checksum $n)" ] || fail "job f printed '$(cat "$T/f.out")'"
read -r requeued dups resent returned <<<"$(json "$T/f/report.json" \
    "' '.join(str(d['counters'][k]) for k in ('requeued', 'duplicates', 'resent', 'returned'))")"
[ "$requeued" = 0 ] || fail "$requeued task(s) requeued at the drained TM's BYE"
[ "$dups" = 0 ] || fail "$dups duplicate(s) after a drain"
[ "$resent" -le "$returned" ] || fail "$resent re-sent, $returned handed back"
wait $other || fail "the other TM exited $?"

# 2. SIGINT while tasks run longer than --drain-timeout: it leaves anyway.
# (-M: each run marks its start in $T/b.started, so the signal comes once
# both of the victim's workers are busy.)
n=6
mkdir "$T/b.started"
start_jm b "$MODS/bench.so" -n $n -s 3000000 -M "$T/b.started"
jm=$JM_PID
start_tm b b.victim -n 2 --drain-timeout 1; victim=$TM_PID
wait_for "[ \$(ls $T/b.started | wc -l) -ge 2 ]" 30 "the victim's two tasks to start"
start_tm b b.other -n 6; other=$TM_PID
kill -INT $victim
wait $victim; rc=$?
[ $rc = 1 ] || fail "a drain past its timeout exited $rc, not 1"
# (it left with both 3 s tasks still running: it did not wait for them)
grep -q "drain timed out after 1 s: 2 task(s) still running" "$T/b.victim.log" \
    || fail "no timeout line: $(cat "$T/b.victim.log")"
wait $jm || fail "the job exited $?"
[ "$(cat "$T/b.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/b.out")'"
wait $other || fail "the other TM exited $?"

# 3. Walltime: a TM told it must be gone in 6 s drains by itself, early
# enough for two of its 0.5 s tasks and the 2 s margin, and exits 0 before
# its end time (past it, Slurm would have killed it).
n=40
start_jm c "$MODS/bench.so" -n $n -s 500000
jm=$JM_PID
end=$(( $(date +%s) + 6 ))
start_tm c c.victim -n 2 --end-time $end --end-margin 2; victim=$TM_PID
wait_for "grep -q joined $T/c.jm.log" 30 "the victim to join"
start_tm c c.other -n 4; other=$TM_PID
wait $victim; rc=$?
left=$(date +%s.%N)
[ $rc = 0 ] || fail "the walltime drain exited $rc"
[ "$("$PY" -c "print($left < $end)")" = True ] || fail "the TM left at $left, past its end time $end"
# (A task's time is as measured: 0.5 s of sleep, more under a sanitizer.)
grep -Eq "walltime: [0-9] s left, a task takes about (0\.[5-9]|[1-2]\.[0-9]) s: draining" "$T/c.victim.log" \
    || fail "no walltime line: $(cat "$T/c.victim.log")"
wait $jm || fail "job c exited $?"
[ "$(cat "$T/c.out")" = "$(bench_checksum $n)" ] || fail "job c printed '$(cat "$T/c.out")'"
wait $other || fail "the other TM exited $?"

# 4. --isolate, and SIGTERM to the whole process group (what Slurm does):
# the worker processes ignore it, finish their tasks, and the TM drains.
n=12
mkdir "$T/d.started"
start_jm d "$MODS/bench.so" -n $n -s 600000 -M "$T/d.started"
jm=$JM_PID
setsid "$TM" --jobdir "$T/d" --wait 60 -n 2 --isolate >"$T/d.victim.log" 2>&1 &
victim=$!
PIDS="$PIDS $victim"
wait_for "grep -q joined $T/d.jm.log" 30 "the isolated TM to join"
# The signal comes while both of its worker processes run a task.
wait_for "[ \$(ls $T/d.started | wc -l) -ge 2 ]" 30 "the isolated TM's two tasks to start"
start_tm d d.other -n 2; other=$TM_PID
kill -TERM -- -$victim
wait $victim; rc=$?
[ $rc = 0 ] || fail "the isolated TM's drain exited $rc"
grep -q "crashed" "$T/d.victim.log" && fail "a worker process died of the group's SIGTERM"
grep -q "drained: every started task finished" "$T/d.victim.log" || fail "no drained line: $(cat "$T/d.victim.log")"
wait $jm || fail "job d exited $?"
[ "$(cat "$T/d.out")" = "$(bench_checksum $n)" ] || fail "job d printed '$(cat "$T/d.out")'"
[ "$(json "$T/d/report.json" "d['counters']['crashed']")" = 0 ] || fail "crashes counted"
wait $other || fail "the other TM exited $?"
echo ok
