#!/bin/bash
# A Task Manager that outlives its job never runs a stale module: a module
# rebuilt at the same path for the next job (its BLAKE2b hash differs) is
# refused with one line, the refusal's reason reaches the JM in BYE (a
# refusal, not a loss), and a new TM runs the new module.
. "$(dirname "$0")/lib.sh"

seq 1 500 >"$T/in.txt"
cp "$TMODS/filetasks.so" "$T/m.so"

# Job 1: filetasks, slow tasks; its JM is killed mid-job.
start_jm a --journal off --heartbeat 0.2 "$T/m.so" "$T/in.txt" 20000
jm1=$JM_PID
start_tm a tm1 -n 2
tm1=$TM_PID
# (the TM's own line: it has loaded job 1's module once WELCOME is in)
wait_for "grep -q 'joined job' $T/tm1.log" 60 "the TM to join job 1"
kill -9 "$(json "$T/a/jm.json" "d['pid']")"
wait $jm1 2>/dev/null

# The module is rebuilt at the same path (the linker writes a new file).
cp "$MODS/pi.so" "$T/m.so.new" && mv "$T/m.so.new" "$T/m.so" || fail "cannot replace the module"

# Job 2 in the same dir: the old TM finds it through jm.json and refuses.
timeout -s KILL 120 "$JM" --jobdir "$T/a" --bind tcp://127.0.0.1:0 --journal off \
    --heartbeat 0.2 "$T/m.so" 20000 >"$T/a2.out" 2>"$T/a2.jm.log" &
jm2=$!
PIDS="$PIDS $jm2"
wait $tm1; rc=$?
[ $rc = 1 ] || fail "the TM of job 1 exited $rc on a changed module: $(tail -3 "$T/tm1.log")"
grep -q "error: the job manager's module $T/m.so changed (BLAKE2b [0-9a-f]\{16\}\.\.\. now, [0-9a-f]\{16\}\.\.\. loaded here); start a new task manager for job " "$T/tm1.log" \
    || fail "the TM said: $(tail -3 "$T/tm1.log")"
grep -q "pi = " "$T/tm1.log" && fail "the stale TM ran tasks of job 2"
wait_for "grep -q 'refused the job: the job manager.s module' $T/a2.jm.log" 30 "the JM to log the refusal"
grep -q "lost (disconnected)" "$T/a2.jm.log" && fail "the refusal was counted as a loss"

# A new TM runs the new module; the report counts one refusal, no loss.
start_tm a tm2 -n 2
wait $jm2; rc=$?
[ $rc = 0 ] || fail "job 2 exited $rc"
grep -q "^pi = 3.14" "$T/a2.out" || fail "job 2 printed: $(cat "$T/a2.out")"
[ "$(json "$T/a/report.json" "(d['counters']['tm_refusals'], d['counters']['tm_losses'])")" = "(1, 0)" ] \
    || fail "report counters: $(json "$T/a/report.json" "d['counters']")"
echo ok
