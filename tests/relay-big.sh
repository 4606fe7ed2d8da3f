#!/bin/bash
# A slow link behind a relay is not a dead TM. A TM reaches the job
# through one relay (spits-tm --serve, whose --tm-timeout is the JM's:
# 2 s), over a proxy (slowlink.py) that passes 2 MiB/s each way, and sends
# results of 8 MiB: each takes 4 s at the least to reach the relay, twice
# the timeout, while the TM's heartbeats queue behind it. Bytes keep
# arriving, so the relay must not take the TM for lost (the JM's rule,
# serving/liveness.c): the result is exact, the relay loses no TM, the JM
# re-sends and requeues nothing, and the relay says the TM is busy, not
# lost.
. "$(dirname "$0")/lib.sh"

# (a sanitizer's runtime stalls a program for as long as the timeouts
# under test: what the test would measure there is the sanitizer)
sanitized && { echo "SKIP: a sanitizer build (its stalls outlast the timeouts)"; exit 77; }

n=2 size=$((8 << 20))

start_jm big --heartbeat 0.2 --tm-timeout 2 "$MODS/bench.so" -n $n -t 64 -r $size
port=$(free_port)
start_relay big big.relay "$port"
relay=$RELAY_PID
"$PY" "$top_srcdir/tests/slowlink.py" "$T/big.port" "$port" $((2 << 20)) 2>"$T/big.proxy.log" &
proxy=$!
PIDS="$PIDS $proxy"
wait_for "[ -s $T/big.port ]" 30 "the proxy to listen"
start_tm big big.tm -n 1 --via "tcp://127.0.0.1:$(cat "$T/big.port")"
tm=$TM_PID

wait $JM_PID || fail "spits-jm exited $?"
wait $tm || fail "the TM exited $?"
wait $relay || fail "the relay exited $?"
kill $proxy; wait $proxy 2>/dev/null

[ "$(cat "$T/big.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/big.out")'"
r=$T/big/report.json
for c in "committed $n" "resent 0" "requeued 0" "duplicates 0" "tm_losses 0" "foreign_results 0"; do
    set -- $c
    [ "$(json "$r" "d['counters']['$1']")" = "$2" ] ||
        fail "counters.$1 is $(json "$r" "d['counters']['$1']"), not $2"
done
# The relay joined the JM once, its TM joined the relay once, and neither
# was lost or re-attached (a TM that fell back from its relay to the JM
# would be a second join there). The TM never looked for another hop:
# not mid-job, nor at the end (the relay waits for its TMs' BYEs after
# END, as the JM does, so its close does not overtake the END).
[ "$(json "$r" "[d['counters']['tm_joins'], d['counters']['tm_reattaches']]")" = "[1, 0]" ] ||
    fail "the JM saw the relay join or re-attach: $(json "$r" "d['counters']")"
[ "$(grep -c 'relay: TM .* joined' "$T/big.relay.log")" = 1 ] ||
    fail "the TM did not join the relay exactly once: $(cat "$T/big.relay.log")"
! grep -E "relay: TM .* (lost|reconnected|re-attached)|silent for" "$T/big.relay.log" ||
    fail "the relay took its slow TM for lost"
! grep -E "looking for|trying|lost the connection" "$T/big.tm.log" || fail "the TM left its relay"
# The transfers outlasted the timeout, and the relay saw it.
grep -q "no message for .*, but its connection is carrying data" "$T/big.relay.log" ||
    fail "the relay never saw its TM silent past the timeout"
echo ok
