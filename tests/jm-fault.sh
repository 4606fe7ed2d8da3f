#!/bin/bash
# 1. A fatal error inside the JM: zmq_poll fails in the dispatcher thread
# (fault.so makes it fail once a file exists). The job stops at once with
# one error line, report.json says "error" and why, commit_job is not
# called and spits-jm exits 1 instead of hanging; every result it had was
# journaled, so --resume then finishes the job exactly.
# 2. Memory runs out copying a task that next_task pushed (faultmem.so
# fails that one allocation): the phase stops with an error naming the task,
# and no empty task is made up in its place.
# 3. A thread of the JM cannot start (fault.so fails its first or second
# pthread_create: the dispatcher's, the generator's): one error line,
# exit 1, and commit_job never runs on a phase that made no task.
# 4. Memory runs out keeping commit_job's final result (faultmem.so fails
# the 8 MiB buffer of a 5 MB result): the job is an error, not ok.
# 5. A signal interrupts libzmq's bind, connect and monitor calls
# (fault.so fails every other one with EINTR) in the JM and a TM: each
# calls again, and the job is exact.
. "$(dirname "$0")/lib.sh"

FAULT=$top_builddir/tests/.libs/fault.so
[ -f "$FAULT" ] || fail "no $FAULT"
# ASan's runtime wants to be the first library; the preload comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
N=300
want=$(bench_checksum $N)

export LD_PRELOAD=$FAULT SPITS_FAULT_POLL=$T/fault
start_jm a "$MODS/bench.so" -n $N -G "$T/gate"
unset LD_PRELOAD SPITS_FAULT_POLL
jm=$JM_PID
start_tm a tm1 -n 2; tm=$TM_PID
# The gate holds the last task, so the job is running when the fault comes.
wait_for "[ \"\$(tm_done a $tm)\" -ge 10 ] 2>/dev/null" 60 "some commits"
touch "$T/fault"
wait $jm; rc=$?
[ $rc = 1 ] || fail "spits-jm exited $rc after zmq_poll failed, not 1"
[ "$(grep -c 'the dispatcher cannot poll its sockets: Bad address; stopping the job' "$T/a.jm.log")" = 1 ] \
    || fail "no single error line: $(cat "$T/a.jm.log")"
[ -s "$T/a.out" ] && fail "commit_job ran after the fatal error: $(cat "$T/a.out")"
r=$T/a/report.json
[ "$(json "$r" "(d['status'], d['exit_code'], d['error'])")" = \
  "('error', 1, 'the dispatcher cannot poll its sockets: Bad address; stopping the job')" ] \
    || fail "report: $(json "$r" "(d['status'], d['exit_code'], d.get('error'))")"
committed=$(json "$r" "d['counters']['committed']")
[ "$committed" -ge 10 ] && [ "$committed" -lt $N ] || fail "committed $committed before the fault"

# Resume: the journaled results are replayed, the rest run, exactly once.
touch "$T/gate"
start_tm a tm2 -n 2
timeout -s KILL 120 "$JM" --resume --jobdir "$T/a" --bind tcp://127.0.0.1:0 \
    >"$T/a.out2" 2>"$T/a.jm2.log"
rc=$?
[ $rc = 0 ] || fail "the resumed job exited $rc: $(tail -3 "$T/a.jm2.log")"
[ "$(cat "$T/a.out2")" = "$want" ] || fail "bench printed '$(cat "$T/a.out2")', not '$want'"
[ "$(json "$r" "(d['status'], d['phases'][0]['replayed'] == $committed, 'error' in d)")" = \
  "('ok', True, False)" ] || fail "resumed report: $(json "$r" "d['status'], d['phases'][0]")"

# 3.
LD_PRELOAD=$FAULT SPITS_FAULT_THREAD=1 timeout -s KILL 60 "$JM" --jobdir "$T/nodisp" \
    --bind tcp://127.0.0.1:0 "$MODS/bench.so" -n 3 >"$T/nodisp.out" 2>"$T/nodisp.log"
rc=$?
[ $rc = 1 ] || fail "no dispatcher thread: exit $rc, not 1"
[ "$(cat "$T/nodisp.log")" = \
  "spits-jm: error: cannot start the dispatcher thread: Resource temporarily unavailable" ] \
    || fail "not one error line: $(cat "$T/nodisp.log")"
LD_PRELOAD=$FAULT SPITS_FAULT_THREAD=2 timeout -s KILL 60 "$JM" --jobdir "$T/nogen" \
    --bind tcp://127.0.0.1:0 "$MODS/bench.so" -n 3 >"$T/nogen.out" 2>"$T/nogen.log"
rc=$?
[ $rc = 1 ] || fail "no generator thread: exit $rc, not 1"
[ "$(grep -c error "$T/nogen.log")" = 2 ] && grep -qx \
    "spits-jm: error: phase 1: cannot start the generator thread: Resource temporarily unavailable" \
    "$T/nogen.log" || fail "no single error line: $(cat "$T/nogen.log")"
[ -s "$T/nogen.out" ] && fail "commit_job ran: $(cat "$T/nogen.out")"
[ "$(json "$T/nogen/report.json" "(d['status'], d['exit_code'], d['counters']['committed'])")" = \
  "('error', 1, 0)" ] || fail "report: $(json "$T/nogen/report.json" "d['status'], d['counters']")"

# 5.
export LD_PRELOAD=$FAULT SPITS_FAULT_EINTR=1
start_jm intr "$MODS/bench.so" -n 50; jm=$JM_PID
start_tm intr intr.tm -n 2
wait $jm; rc=$?
unset LD_PRELOAD SPITS_FAULT_EINTR
[ $rc = 0 ] || fail "bind and connect interrupted by a signal: exit $rc: $(tail -3 "$T/intr.jm.log" "$T/intr.tm.log")"
[ "$(cat "$T/intr.out")" = "$(bench_checksum 50)" ] || fail "interrupted calls: '$(cat "$T/intr.out")'"

# 2 and 4. (Not under a sanitizer: its runtime owns malloc.)
if sanitized; then
    echo "SKIP (2, 4): a sanitizer build"
else
    LD_PRELOAD=$top_builddir/tests/.libs/faultmem.so SPITS_FAULT_MALLOC=5000000:200 timeout -s KILL 60 "$JM" --jobdir "$T/oom" \
        --bind tcp://127.0.0.1:0 "$MODS/bench.so" -n 3 -t 5000000 >"$T/oom.out" 2>"$T/oom.log"
    rc=$?
    [ $rc = 1 ] || fail "out of memory copying a task: exit $rc, not 1"
    grep -qx "spits-jm: error: phase 1: out of memory copying task 0 (5000000 bytes; --max-task-bytes 1073741824)" \
        "$T/oom.log" || fail "no line naming the task: $(cat "$T/oom.log")"
    [ -s "$T/oom.out" ] && fail "commit_job ran: $(cat "$T/oom.out")"
    [ "$(json "$T/oom/report.json" "(d['status'], d['counters']['sent'], d['counters']['committed'])")" = \
      "('error', 0, 0)" ] || fail "report: $(json "$T/oom/report.json" "d['status'], d['counters']")"

    # 4.
    export LD_PRELOAD=$top_builddir/tests/.libs/faultmem.so SPITS_FAULT_MALLOC=8388607:1
    start_jm final "$MODS/bench.so" -n 3 -R 5000000; jm=$JM_PID
    unset LD_PRELOAD SPITS_FAULT_MALLOC
    start_tm final final.tm -n 1
    wait $jm; rc=$?
    [ $rc = 1 ] || fail "final result lost to out of memory: exit $rc, not 1"
    grep -qx "spits-jm: error: out of memory keeping a 5000000-byte final result" \
        "$T/final.jm.log" || fail "no line naming the final result: $(cat "$T/final.jm.log")"
    [ "$(json "$T/final/report.json" "(d['status'], d['exit_code'], d['counters']['committed'])")" = \
      "('error', 1, 3)" ] || fail "report: $(json "$T/final/report.json" "d['status'], d['counters']")"
fi
echo ok
