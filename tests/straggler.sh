#!/bin/bash
# Stragglers and dead links.
# 1. A TM stopped with SIGSTOP for the rest of the job holds tasks it will
#    never finish, most of the job's (a 700-task prefetch): once fresh
#    tasks run out and it has been quiet for 3 heartbeats, the circular
#    queue re-sends copies of them to the other TMs, so the job finishes
#    (long before --tm-timeout: no TM is declared lost) with the exact
#    result. The time is printed next to the same job's time without that
#    TM; how close it comes is the benchmarks' to measure, not this
#    test's.
# 2. A TM stopped past --tm-timeout is declared dead and its tasks are
#    requeued; when it comes back (SIGCONT) it rejoins, and its late
#    results are committed or discarded as duplicates, never both (the
#    bench committer fails the job on a task committed twice).
. "$(dirname "$0")/lib.sh"

n=800
args=("$MODS/bench.so" -n $n -s 10000)

# Without the straggler: two TMs.
start_jm base "${args[@]}"
jm=$JM_PID
start_tm base base1 -n 2; t1=$TM_PID
start_tm base base2 -n 2; t2=$TM_PID
wait $jm || fail "baseline job exited $?"
wait $t1; wait $t2
base=$(json "$T/base/report.json" "d['seconds']")

# With it: three TMs, one stopped once the job is under way.
start_jm strag --tm-timeout 60 "${args[@]}"
jm=$JM_PID
start_tm strag victim -n 2 -p 700; victim=$TM_PID
wait_for "grep -q joined $T/strag.jm.log" 30 "the victim to join"
start_tm strag s1 -n 2; s1=$TM_PID
start_tm strag s2 -n 2; s2=$TM_PID
wait_for "[ \$(grep -c joined $T/strag.jm.log) -ge 3 ]" 30 "all TMs to join"
wait_for "[ \"\$(tm_done strag $victim)\" -ge 2 ] 2>/dev/null" 30 "the victim to run tasks"
kill -STOP $victim
wait $jm || fail "the job with a stopped TM exited $?"
[ "$(cat "$T/strag.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/strag.out")'"
r=$T/strag/report.json
with=$(json $r "d['seconds']")
echo "straggler: ${with}s with a stopped TM, ${base}s without it ($(json $r "round(d['seconds'] / $base, 2)")x)"
# What the stopped TM held: the copies sent to it that it never answered.
# (More than half of them: the finished tasks never reach half of those
# finished or out, serving/lateness.h, unless the stopped TM's copies
# count as stalled once it is quiet, serving/liveness.h.)
held=$(json $r "[t['sent'] - t['done'] for t in d['tms'] if t['pid'] == $victim][0]")
echo "straggler: the stopped TM held $held of $n tasks"
[ $((2 * held)) -gt $n ] || fail "the stopped TM held $held of $n tasks, not most of them"
[ "$(json $r "d['counters']['tm_losses']")" = 0 ] || fail "a TM was declared lost, holding $held of $n tasks"
[ "$(json $r "d['counters']['resent'] > 0")" = True ] || fail "no copy was re-sent"
# The stopped TM's copies of tasks that committed elsewhere were cancelled.
[ "$(json $r "d['counters']['cancelled'] > 0")" = True ] || fail "no copy was cancelled"
# (It comes back after the job ended: it finds the job over and exits 0.)
kill -CONT $victim
wait $victim
rc=$?
[ $rc = 0 ] || fail "the resumed straggler exited $rc"
wait $s1; wait $s2

# Dead past --tm-timeout, then back.
n=1200
start_jm late --tm-timeout 1 --heartbeat 0.2 "$MODS/bench.so" -n $n -s 10000
jm=$JM_PID
start_tm late late-victim -n 2; victim=$TM_PID
wait_for "grep -q joined $T/late.jm.log" 30 "the victim to join"
start_tm late late-s1 -n 2
wait_for "[ \"\$(tm_done late $victim)\" -ge 2 ] 2>/dev/null" 30 "the victim to run tasks"
kill -STOP $victim
wait_for "grep -q 'TM .*:$victim lost (silent for' $T/late.jm.log" 30 "the JM to declare the stopped TM dead"
kill -0 $jm 2>/dev/null || fail "the job ended before the stopped TM came back"
kill -CONT $victim
wait_for "grep -q 'TM .*:$victim re-attached' $T/late.jm.log" 30 "the TM to rejoin"
wait $jm || fail "the job exited $?"
[ "$(cat "$T/late.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/late.out")'"
[ "$(json "$T/late/report.json" "d['counters']['committed']")" = $n ] || fail "committed"
[ "$(json "$T/late/report.json" "d['counters']['requeued'] > 0")" = True ] || fail "nothing requeued"
# The victim came back: still 2 TMs, none lost for good.
[ "$(json "$T/late/report.json" "[d['counters'][k] for k in ('tms', 'tms_lost_for_good')]")" = "[2, 0]" ] \
    || fail "TM counts: $(json "$T/late/report.json" "d['counters']")"
wait $victim || fail "the straggler exited $?"
echo ok
