#!/bin/bash
# A slow link is not a dead peer. Under CurveZMQ, two tasks and their
# results of 16 MiB each cross a proxy (slowlink.py) that passes 2 MiB/s
# each way, so each transfer lasts 8 s at the least: four times the JM's
# --tm-timeout (2 s) and more than twice the time after which a TM looks
# for a silent JM (3 s at the least). Heartbeats queue behind those
# frames, yet bytes keep arriving, so neither side may take the other for
# lost: the result is exact, no task is re-sent, requeued or committed
# twice, and each side says once that the other is busy, not lost.
# Then the same job with the TM stopped (SIGSTOP) while it sends a result:
# once the bytes already sent have crossed, the JM declares it lost; it
# comes back (SIGCONT) and the result is still exact.
. "$(dirname "$0")/lib.sh"

# The test times a transfer against the timeouts; a sanitizer's runtime
# stalls each program for seconds at a time (as long as the timeouts), so
# what it would measure there is the sanitizer. The liveness code itself
# runs in every other test of the sanitizer stages.
if sanitized; then
    echo "SKIP: a sanitizer build (its stalls outlast the timeouts under test)"
    exit 77
fi

n=2
size=$((16 << 20))

# slow_job NAME: the job, and its TM behind the proxy; sets jm, tm, proxy
slow_job() {
    start_jm $1 --heartbeat 0.2 --tm-timeout 2 "$MODS/bench.so" -n $n -t $size -r $size
    jm=$JM_PID
    start_proxy "$1" "$1" $((2 << 20))
    proxy=$PROXY_PID
    "$TM" --connect "$PROXY_EP" --key-file "$T/$1/tm.key" \
        --reconnect-timeout 60 -n 1 >"$T/$1.tm.log" 2>&1 &
    tm=$!
    PIDS="$PIDS $tm"
}

slow_job slow
wait $jm || fail "the job exited $?"
wait $tm || fail "the TM exited $?"
kill $proxy; wait $proxy 2>/dev/null
[ "$(cat "$T/slow.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/slow.out")'"
r=$T/slow/report.json
for c in "committed $n" "resent 0" "requeued 0" "duplicates 0" "tm_losses 0"; do
    set -- $c
    [ "$(json "$r" "d['counters']['$1']")" = "$2" ] ||
        fail "counters.$1 is $(json "$r" "d['counters']['$1']"), not $2"
done
# Neither side took the other for lost, nor looked for it.
! grep -E " lost \(|silent for|looking for" "$T/slow.jm.log" "$T/slow.tm.log" ||
    fail "a slow transfer looked like a dead peer"
# The transfers were slower than the timeouts, and seen as such.
for who in jm tm; do
    grep -q "no message for .*, but its connection is carrying data" "$T/slow.$who.log" ||
        fail "the $who never saw the other side silent past its timeout"
done

# Stopped while it sends a result (the JM has heard no message for 2 s,
# yet bytes come): a stopped TM sends no more bytes, so it is lost.
slow_job stopped
wait_for "grep -q 'TM .*:$tm has sent no message for' $T/stopped.jm.log" 60 \
    "the TM to send a result"
kill -STOP $tm
wait_for "grep -q 'TM .*:$tm lost (silent for' $T/stopped.jm.log" 60 \
    "the JM to declare the stopped TM lost"
kill -CONT $tm
wait $jm || fail "the job with a stopped TM exited $?"
wait $tm || fail "the stopped TM exited $?"
kill $proxy; wait $proxy 2>/dev/null
[ "$(cat "$T/stopped.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/stopped.out")'"
r=$T/stopped/report.json
[ "$(json "$r" "d['counters']['tm_losses'] >= 1")" = True ] || fail "no TM was lost"
echo ok
