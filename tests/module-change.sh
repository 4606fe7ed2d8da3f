#!/bin/bash
# A Task Manager that outlives its job never runs a stale module: a module
# rebuilt at the same path for the next job (its BLAKE2b hash differs) is
# refused with one line, the refusal's reason reaches the JM in BYE (a
# refusal, not a loss), and a new TM runs the new module. A job that failed
# is resumed with its module fixed only when --module-changed says so:
# then only the task that failed runs again, and jm.json and report.json
# name both hashes. A TM whose workers were planned for one request
# refuses the next job in the dir that asks for another.
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

# The next job in a dir asks for 2 cores a task: a TM whose workers were
# planned for none refuses it in one line (exit 1) and runs none of it.
cp "$MODS/bench.so" "$T/r.so"
start_jm r --journal off --heartbeat 0.2 "$T/r.so" -n 100000 -s 20000
jm1=$JM_PID
start_tm r r.tm1 -n 2
tm1=$TM_PID
wait_for "grep -q 'joined job' $T/r.tm1.log" 60 "the TM to join job r"
kill -9 "$(json "$T/r/jm.json" "d['pid']")"
wait $jm1 2>/dev/null
timeout -s KILL 60 "$JM" --jobdir "$T/r" --bind tcp://127.0.0.1:0 --journal off \
    --heartbeat 0.2 --cpus-per-task 2 "$T/r.so" -n 10 >"$T/r2.out" 2>"$T/r2.jm.log" &
jm2=$!
PIDS="$PIDS $jm2"
wait $tm1; rc=$?
[ $rc = 1 ] || fail "a TM planned for no request exited $rc on a job asking 2 cores: $(tail -3 "$T/r.tm1.log")"
job2=$(json "$T/r/jm.json" "d['job_id']")
[ "$(grep -c "error: job $job2 asks for --cpus-per-task 2 per task, but this task manager's workers were planned for none; start a new task manager for it\$" "$T/r.tm1.log")" = 1 ] \
    || fail "the TM said: $(tail -3 "$T/r.tm1.log")"
kill $jm2 2>/dev/null
wait $jm2 2>/dev/null

# A task fails (once, but --max-attempts 1 gives up on it): exit 3.
mkdir "$T/flaky"
cp "$MODS/bench.so" "$T/fix.so"
start_jm fix --max-attempts 1 "$T/fix.so" -n 50 -F 17:"$T/flaky"
start_tm fix fix.tm1 -n 2
wait $JM_PID; rc=$?
[ $rc = 3 ] || fail "the failing job exited $rc, not 3"
h1=$(json "$T/fix/jm.json" "d['module_hash']")
# The module is "fixed" (changed: a byte more at its end).
printf '\0' >>"$T/fix.so"
timeout -s KILL 60 "$JM" --resume --jobdir "$T/fix" --bind tcp://127.0.0.1:0 \
    >"$T/fix2.out" 2>"$T/fix2.jm.log"
rc=$?
[ $rc = 1 ] || fail "a resume with a changed module exited $rc, not 1"
grep -q "^spits-jm: error: module $T/fix.so changed since job [0-9a-f]* started (its BLAKE2b hash differs); a job resumes only with the same module, unless --module-changed says that the change is meant (a fix)$" \
    "$T/fix2.jm.log" || fail "the refusal: $(cat "$T/fix2.jm.log")"
start_jm fix --resume --module-changed
start_tm fix fix.tm2 -n 2
wait $JM_PID; rc=$?
[ $rc = 0 ] || fail "the resume with --module-changed exited $rc: $(tail -3 "$T/fix.jm.log")"
[ "$(cat "$T/fix.out")" = "$(bench_checksum 50)" ] || fail "the resumed job printed '$(cat "$T/fix.out")'"
h2=$(json "$T/fix/jm.json" "d['module_hash']")
[ "$h1" != "$h2" ] || fail "jm.json names the old module's hash"
want="({'journal_hash': '$h1', 'module_hash': '$h2'}, {'journal_hash': '$h1', 'module_hash': '$h2'})"
[ "$(json "$T/fix/report.json" "(d['module_changed'], json.load(open('$T/fix/jm.json'))['module_changed'])")" = "$want" ] \
    || fail "module_changed: $(json "$T/fix/report.json" "d.get('module_changed')")"
[ "$(json "$T/fix/report.json" "(d['status'], d['resumed'], d['counters']['replayed'], d['counters']['committed'], d['counters']['sent'])")" \
    = "('ok', True, 49, 50, 1)" ] || fail "the resume ran more than task 17: $(json "$T/fix/report.json" "d['counters']")"
grep -q "warning: module $T/fix.so changed since job .* (BLAKE2b ${h1:0:16}\.\.\. then, ${h2:0:16}\.\.\. now): resuming with it (--module-changed)" \
    "$T/fix.jm.log" || fail "the resume does not say it: $(head -3 "$T/fix.jm.log")"
echo ok
