#!/bin/bash
# Sizes a peer claims are bounded before they size anything: a WELCOME
# whose max_task_bytes is over 4294967295 (a record's length is 32 bits;
# twice it sized the TM's ZMQ_MAXMSGSIZE and overflowed) is a malformed
# message, never taken; so is a HELLO of a TM (not a relay) claiming more
# than 4096 workers (the JM's window is twice the workers alive).
. "$(dirname "$0")/lib.sh"

H=$top_builddir/tests/hostile

# welcomed BYTES LOG: a TM (--wait 10) against a fake JM whose WELCOME
# claims max_task_bytes BYTES; RC is the TM's exit status, LOG its output
welcomed() {
    local port h
    port=$(free_port)
    "$H" welcome "tcp://127.0.0.1:$port" "$1" 15 >"$T/$2.h.log" 2>&1 &
    h=$!
    PIDS="$PIDS $h"
    sleep 0.3
    timeout 30 "$TM" --connect "tcp://127.0.0.1:$port" --insecure --wait 10 -n 1 >"$T/$2" 2>&1
    RC=$?
    PORT=$port
}

welcomed 4611686018427387904 tm.log
[ $RC = 1 ] || fail "a TM welcomed with max_task_bytes 2^62 exited $RC: $(cat "$T/tm.log")"
grep -q "warning: dropped a malformed message from the job manager (WELCOME without .*max_task_bytes (1 to 4294967295)" "$T/tm.log" \
    || fail "the TM said: $(cat "$T/tm.log")"
grep -q "no job manager answered at tcp://127.0.0.1:$PORT within 10 s" "$T/tm.log" \
    || fail "the TM said: $(cat "$T/tm.log")"

# The largest legal value is taken (the TM goes on to load the module the
# fake JM names, which does not exist: one line, exit 1).
welcomed 4294967295 tm2.log
[ $RC = 1 ] || fail "a TM welcomed with max_task_bytes 2^32-1 exited $RC: $(cat "$T/tm2.log")"
grep -q "cannot load module /nonexistent.so" "$T/tm2.log" || fail "the TM said: $(cat "$T/tm2.log")"
grep -q "malformed" "$T/tm2.log" && fail "a legal WELCOME was dropped: $(cat "$T/tm2.log")"
# A HELLO claiming a million workers is dropped (no WELCOME), named in
# the JM's log; the job goes on and its result is exact.
start_jm big "$MODS/bench.so" -n 2000
wait_for "[ -s $T/big/tm.key ] && [ -s $T/big/jm.json ]" 30 "the JM to announce itself"
"$H" bighello "$(json "$T/big/jm.json" "d['endpoint']")" "$T/big/tm.key" 1000000 \
    >"$T/bighello.log" 2>&1 || fail "the JM welcomed a TM of a million workers: $(cat "$T/bighello.log")"
wait_for "grep -q 'HELLO of a TM with over 4096 workers' $T/big.jm.log" 30 "the JM to name the HELLO"
start_tm big big.tm -n 2
wait $JM_PID || fail "the job exited $?"
[ "$(cat "$T/big.out")" = "$(bench_checksum 2000)" ] || fail "the job printed $(cat "$T/big.out")"
# Each message type is sized by what it can need, and a peer's claims size
# nothing: one job (its last task waits for a gate) and a relay of it,
# --insecure (CurveZMQ would only add its cost to the large frames).
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
start_jm pb --insecure "$MODS/bench.so" -n 2000 -G "$T/pb.gate"
wait_for "[ -s $T/pb/jm.json ]" 30 "the JM to announce itself"
jm=$(pgrep -P $JM_PID) || fail "no JM under timeout"
ep=$(json "$T/pb/jm.json" "d['endpoint']"); ep=tcp://127.0.0.1:${ep##*:}
rport=$(free_port)
start_relay pb pb.relay "$rport" --insecure
relay=$RELAY_PID
wait_for "grep -q 'relay .* joined' $T/pb.jm.log" 30 "the relay to join"
# A 20 MB STATS from a peer that never said HELLO: dropped unparsed at
# both hops (a JSON parse of it took 400 MB), so neither's peak memory
# grows by much more than the frame libzmq assembles (a sanitizer's
# shadow memory adds a few times the frame: a bound that still tells).
grow_max=$((60 << 10))
sanitized && grow_max=$((250 << 10))
for hop in jm relay; do
    pid=${!hop}; at=$ep
    [ $hop = relay ] && at=tcp://127.0.0.1:$rport
    before=$(hwm $pid)
    "$H" bigstats "$at" - 20 >"$T/bigstats.$hop.log" 2>&1 || fail "bigstats to the $hop failed"
    log=$T/pb.jm.log; [ $hop = relay ] && log=$T/pb.relay.log
    wait_for "grep -q 'dropped a malformed message.*(a body larger than its message type allows)' $log" 30 \
        "the $hop to drop the STATS"
    after=$(hwm $pid)
    [ $((after - before)) -lt $grow_max ] || fail "a 20 MB STATS raised the $hop's peak RSS from $before to $after kB"
done
# A HELLO as a relay claiming 2^20 workers and 2^24 slots gets 4,096
# workers for each TM it says it has: 3 TMs, 12,288; none said, none.
[ "$("$H" bigrelay "$ep" - 3)" = 12288 ] || fail "a relay of 3 TMs got other than 12288 workers"
[ "$("$H" bigrelay "$ep" - -1)" = 0 ] || fail "a relay of no TMs got workers"
# ...and behind the relay, the same rule: 2 TMs, 8,192 workers, which the
# relay passes up as its own (it counts the 2 TMs).
"$H" bigrelay "tcp://127.0.0.1:$rport" - 2 30 >"$T/bigrelay.r.log" 2>&1 &
br=$!
PIDS="$PIDS $br"
wait_for "\"$top_builddir/tools/spits-status\" --jobdir $T/pb --json | \"$PY\" -c \"import json,sys; d=json.load(sys.stdin); sys.exit(not [t for t in d['tms'] if t.get('workers') == 8192])\"" \
    10 "the relay to say it has 8192 workers"
kill $br
# RESULTS whose 128 MiB frame claims 8,388,609 parts, with one after it,
# to a JM limited to 1.2 GB of address space: the JM counts the one part,
# drops the message and the peer, and the job goes on. Under a sanitizer
# (no address-space limit: its shadow memory takes more) the frame claims
# 65,537 parts: the same path, without the minute that building, sending
# and walking 128 MiB takes there, long enough for the peer to be lost to
# silence first.
parts=8388609
if sanitized; then
    parts=65537
else
    prlimit --pid "$jm" --as=$((1200 << 20)) || fail "prlimit failed"
fi
start_tm pb pb.tm -n 2 --insecure
"$H" manyparts "$ep" - $parts >"$T/manyparts.log" 2>&1 \
    || fail "the JM did not answer after $parts parts claimed: $(cat "$T/manyparts.log")"
wait_for "grep -q 'TM hostile:[0-9]* lost (a bad peer: fewer frames than its records have parts)' $T/pb.jm.log" 30 \
    "the JM to drop the peer"
touch "$T/pb.gate"
wait $JM_PID || fail "the job exited $?"
[ "$(cat "$T/pb.out")" = "$(bench_checksum 2000)" ] || fail "the job printed $(cat "$T/pb.out")"
[ "$(json "$T/pb/report.json" "d['counters']['bad_messages']")" = 2 ] \
    || fail "bad messages: $(json "$T/pb/report.json" "d['counters']")"
echo ok
