#!/bin/bash
# Failures inside a TM, made on demand by a preload:
# 1. Its worker pool fails to start part-way (fault.so: the second of its
#    three worker threads cannot be created). The TM exits 1 with one
#    error line, having joined the worker it started, without hanging, and
#    without joining the job (its workers start before its HELLO); a
#    healthy TM then runs the whole job exactly, the JM's one join.
# 2. Memory runs out as it queues the tasks of a TASKS message (faultmem.so
#    fails the 81920-byte growth of its queue past 1024 tasks): it never
#    aborts; the tasks it cannot queue go back to the JM (RETURNED), and
#    with a healthy TM beside it the job ends with the exact checksum.
. "$(dirname "$0")/lib.sh"

FAULT=$top_builddir/tests/.libs/fault.so
FAULTMEM=$top_builddir/tests/.libs/faultmem.so
[ -f "$FAULT" ] && [ -f "$FAULTMEM" ] || fail "no $FAULT or $FAULTMEM"
# ASan's runtime wants to be the first library; the preload comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# 1.
N=40
start_jm a "$MODS/bench.so" -n $N; jm=$JM_PID
LD_PRELOAD=$FAULT SPITS_FAULT_THREAD=2 timeout -s KILL 60 "$TM" --jobdir "$T/a" \
    --wait 60 -n 3 >"$T/a.tm1.log" 2>&1
rc=$?
[ $rc = 1 ] || fail "a TM whose pool could not start exited $rc, not 1"
[ "$(cat "$T/a.tm1.log")" = \
  "spits-tm: error: cannot start 3 worker threads: Resource temporarily unavailable" ] \
    || fail "not one error line: $(cat "$T/a.tm1.log")"
start_tm a a.tm2 -n 2
wait $jm; rc=$?
[ $rc = 0 ] || fail "the job exited $rc after the failed TM: $(tail -3 "$T/a.jm.log")"
[ "$(cat "$T/a.out")" = "$(bench_checksum $N)" ] || fail "bench printed '$(cat "$T/a.out")'"
joins=$(json "$T/a/report.json" "d['counters']['tm_joins']")
[ "$joins" = 1 ] || fail "the JM counted $joins TM joins, not 1 (the healthy TM's)"

# 2. (Not under a sanitizer: its runtime owns malloc.)
if sanitized; then
    echo "SKIP (2): a sanitizer build"
    echo ok
    exit 0
fi
N=1500
# Tasks of 5 ms: the TM's one worker is far behind what the JM sends it.
start_jm b "$MODS/bench.so" -n $N -s 5000; jm=$JM_PID
LD_PRELOAD=$FAULTMEM SPITS_FAULT_MALLOC=81919:1 "$TM" --jobdir "$T/b" --wait 60 \
    --reconnect-timeout 30 -n 1 --prefetch 3000 >"$T/b.tm1.log" 2>&1 &
tm1=$!; PIDS="$PIDS $tm1"
wait_for "grep -q 'out of memory queueing' '$T/b.tm1.log'" 60 "the TM to run out of memory"
start_tm b b.tm2 -n 2
wait $jm; rc=$?
[ $rc = 0 ] || fail "the job exited $rc: $(tail -3 "$T/b.jm.log")"
[ "$(cat "$T/b.out")" = "$(bench_checksum $N)" ] || fail "bench printed '$(cat "$T/b.out")'"
wait $tm1; rc=$?
[ $rc = 0 ] || fail "the TM out of memory exited $rc, not 0"
grep -Eqx "spits-tm: warning: out of memory queueing [0-9]+ task\(s\): handing them back" \
    "$T/b.tm1.log" || fail "no hand-back line: $(cat "$T/b.tm1.log")"
grep -v -e 'out of memory queueing' -e 'joined job' "$T/b.tm1.log" \
    && fail "other lines in the TM's log"
echo ok
