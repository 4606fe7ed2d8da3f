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
echo ok
