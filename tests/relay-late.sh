#!/bin/bash
# A relay sends copies of late tasks to the TMs behind it, by the JM's
# own scheduler (serving/scheduler.c). JM, one relay, and TMs victim, s1
# and s2 behind it (2 workers each; the victim --prefetch 6, so it holds
# 8 copies). Once the victim has run tasks, it is stopped (SIGSTOP) for
# the rest of the job, holding copies it will never finish. The JM
# cannot help: the relay is one TM to it and holds those copies itself,
# and --tm-timeout 60 keeps every TM counted alive. Only the relay's
# copies of its late tasks on s1 and s2 end the job.
# Expected, exactly: the job's output; no TM lost, at the JM or at the
# relay; the JM sent no task twice; the relay's summary says it sent
# copies again and cancelled the victim's; and the job ended within 30 s
# (a sanity bound: it takes about 2 s; the victim's tasks would wait 60
# s for its loss without the copies).
. "$(dirname "$0")/lib.sh"

n=800
start_jm l --tm-timeout 60 "$MODS/bench.so" -n $n -s 10000
port=$(free_port)
start_relay l l.relay "$port"; relay=$RELAY_PID
wait_for "grep -q 'relay joined job' '$T/l.relay.log'" 30 "the relay to join the job"
t0=$(date +%s)
start_tm l l.victim -n 2 --prefetch 6 --via "tcp://127.0.0.1:$port"; victim=$TM_PID
wait_for "grep -q 'relay: TM .*:$victim joined' '$T/l.relay.log'" 30 "the victim to join the relay"
start_tm l l.s1 -n 2 --via "tcp://127.0.0.1:$port"; s1=$TM_PID
start_tm l l.s2 -n 2 --via "tcp://127.0.0.1:$port"; s2=$TM_PID
wait_for "[ \$(grep -c 'relay: TM .* joined' '$T/l.relay.log') = 3 ]" 30 "all TMs to join the relay"
runs="sum(t['runs'] for r in d.get('tms', []) if r.get('relay') for t in r['behind']['tms'] if t['pid'] == $victim)"
wait_for "[ \"\$(live l \"$runs\")\" -ge 2 ] 2>/dev/null" 30 "the victim to run tasks"
kill -STOP $victim
wait $JM_PID || fail "spits-jm exited $?"
took=$(($(date +%s) - t0))
# (the victim is done with: it would look for the job for --reconnect-timeout)
{ kill -9 $victim; wait $victim; } 2>/dev/null
for p in $s1 $s2 $relay; do wait "$p" || fail "a TM or the relay exited $?"; done
[ "$(cat "$T/l.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/l.out")'"
[ $took -le 30 ] || fail "the job took ${took}s with a stopped TM behind the relay"
r=$T/l/report.json
[ "$(json "$r" "d['counters']['committed']")" = $n ] || fail "committed is not $n"
[ "$(json "$r" "d['counters']['resent']")" = 0 ] || fail "the JM sent a task again"
[ "$(json "$r" "d['counters']['tm_losses']")" = 0 ] || fail "the JM lost a TM"
grep -q 'relay: .* lost' "$T/l.relay.log" && fail "the relay lost a TM: $(grep 'relay: .* lost' "$T/l.relay.log")"
sum=$(grep -o 'relay: [0-9]* task copies sent down, [0-9]* sent again, [0-9]* cancelled' "$T/l.relay.log") ||
    fail "no summary line in the relay's log"
again=$(echo "$sum" | awk '{print $7}')
cancelled=$(echo "$sum" | awk '{print $10}')
[ "$again" -gt 0 ] || fail "the relay sent no copy again ($sum)"
[ "$cancelled" -gt 0 ] || fail "the relay cancelled no copy ($sum)"
echo "relay-late: job of $n tasks in ${took}s with a stopped TM behind the relay; $sum"
exit 0
