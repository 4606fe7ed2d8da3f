#!/bin/bash
# A copy the relay told to cancel still answers with one record, which
# the relay drops rather than pass up (serving/copymap.h's tombs). JM, one
# relay, and TMs victim and s1 behind it. The victim (2 workers,
# --prefetch 6) is stopped (SIGSTOP) once it has run tasks, holding
# copies; the relay's late copies of them run on s1, and each one's result
# cancels the victim's copy. The last task waits for a file (bench -G),
# so the job stays open while the victim, continued, answers the copies
# it was told to cancel.
# Expected, exactly: before the last task may end, the relay has dropped
# one record per copy it told to cancel (its -v lines), and at least one;
# the job's output; no record passed up as foreign, no duplicate, no
# task sent twice by the JM, no TM lost.
. "$(dirname "$0")/lib.sh"

n=400
start_jm l --tm-timeout 60 "$MODS/bench.so" -n $n -s 50000 -G "$T/go"
port=$(free_port)
start_relay l l.relay "$port" -v; relay=$RELAY_PID
wait_for "grep -q 'relay joined job' '$T/l.relay.log'" 30 "the relay to join the job"
start_tm l l.victim -n 2 --prefetch 6 --via "tcp://127.0.0.1:$port"; victim=$TM_PID
wait_for "grep -q 'relay: TM .*:$victim joined' '$T/l.relay.log'" 30 "the victim to join the relay"
start_tm l l.s1 -n 3 --via "tcp://127.0.0.1:$port"; s1=$TM_PID
runs="sum(t['runs'] for r in d.get('tms', []) if r.get('relay') for t in r['behind']['tms'] if t['pid'] == $victim)"
wait_for "[ \"\$(live l \"$runs\")\" -ge 2 ] 2>/dev/null" 30 "the victim to run tasks"
kill -STOP $victim
# (every task but the last committed: the victim's copies ran on s1)
wait_for "[ \"\$(committed l)\" = $((n - 1)) ]" 120 "all tasks but the last to be committed"
told() { grep -o 'relay: [0-9]* task copies behind told to cancel' "$T/l.relay.log" |
             awk '{s += $2} END {print s + 0}'; }
dropped() { grep -c 'relay: dropped the record of a cancelled copy' "$T/l.relay.log"; }
[ "$(dropped)" = 0 ] || fail "the relay dropped records while the victim was stopped"
kill -CONT $victim
wait_for "[ \$(dropped) -ge \$(told) ]" 60 "the victim's records of its cancelled copies"
t=$(told); d=$(dropped)
[ "$t" -ge 1 ] || fail "the relay told no copy to cancel"
[ "$d" = "$t" ] || fail "the relay told $t copies to cancel and dropped $d records"
touch "$T/go"
wait $JM_PID || fail "spits-jm exited $?"
for p in $victim $s1 $relay; do wait "$p" || fail "a TM or the relay exited $?"; done
[ "$(cat "$T/l.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/l.out")'"
r=$T/l/report.json
[ "$(json "$r" "[d['counters'][k] for k in ('committed', 'foreign_results', 'duplicates', 'resent', 'tm_losses')]")" = "[$n, 0, 0, 0, 0]" ] ||
    fail "the JM's counts: $(json "$r" "d['counters']")"
grep -q 'relay: .* lost' "$T/l.relay.log" && fail "the relay lost a TM: $(grep 'relay: .* lost' "$T/l.relay.log")"
echo "relay-tombs: $t copies told to cancel behind the relay, $d of their records dropped"
exit 0
