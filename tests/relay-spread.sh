#!/bin/bash
# A relay hands its tasks to idle workers before it fills any TM's
# prefetch. JM, one relay, and TMs A and B behind it, 1 worker and
# --prefetch 3 each (4 slots each). The JM is stopped (SIGSTOP) from the
# relay's join until both TMs have joined the relay, so that the job's 3
# tasks reach the relay once both are there. Task 2 (the last) waits in
# its worker for the bench module's gate, which keeps the job open.
# Expected, exactly: while task 2 waits, the JM's live view of the relay
# says each TM ran 1 task (runs [1, 1]); then the job's output is exact.
# Before, the relay filled the first TM's 4 slots first: it ran tasks 0
# and 1 one after the other while the other TM sat idle, [0, 2].
. "$(dirname "$0")/lib.sh"

n=3
# (--heartbeat 5: a relay gives its JM up after 5 heartbeats of silence,
# and the JM is stopped while the TMs start: 25 s, more than they may take)
start_jm s --max-copies 1 --heartbeat 5 "$MODS/bench.so" -n $n -s 300000 -G "$T/s.gate"
port=$(free_port)
start_relay s s.relay "$port"; relay=$RELAY_PID
wait_for "grep -q 'relay joined job' '$T/s.relay.log'" 30 "the relay to join the job"
jm=$(pgrep -P "$JM_PID") || fail "no job manager under pid $JM_PID"
kill -STOP "$jm"
start_tm s s.a -n 1 --prefetch 3 --via "tcp://127.0.0.1:$port"; a=$TM_PID
start_tm s s.b -n 1 --prefetch 3 --via "tcp://127.0.0.1:$port"; b=$TM_PID
wait_for "[ \$(grep -c 'relay: TM .* joined with 1 worker' '$T/s.relay.log') = 2 ]" 20 \
    "both TMs to join the relay"
kill -CONT "$jm"
runs="sorted(t['runs'] for r in d.get('tms', []) if r.get('relay') for t in r['behind']['tms'])"
wait_for "[ \"\$(live s \"sum($runs)\")\" = 2 ]" 30 "the relay to report 2 tasks run"
got=$(live s "$runs")
[ "$got" = "[1, 1]" ] || fail "the TMs behind the relay ran $got tasks, not [1, 1]"
touch "$T/s.gate"
wait $JM_PID || fail "spits-jm exited $?"
for p in $a $b $relay; do wait "$p" || fail "a TM or the relay exited $?"; done
[ "$(cat "$T/s.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/s.out")'"
r=$T/s/report.json
[ "$(json "$r" "d['counters']['committed']")" = $n ] || fail "committed is not $n"
[ "$(json "$r" "d['counters']['resent']")" = 0 ] || fail "a task was re-sent"
exit 0
