#!/bin/bash
# Out of file descriptors (ulimit -n), spits-status says so in one line,
# never "Socket operation on non-socket" from a socket it failed to make.
. "$(dirname "$0")/lib.sh"

start_jm a "$MODS/pi.so" 1000000000
wait_for "[ -s $T/a/jm.json ]" 30 "the JM to announce itself"
# Below some limit libzmq itself aborts (it asserts on epoll_create), and
# above it the socket is made: somewhere between, zmq_socket fails.
named=0
for n in 6 7 8 9 10 11 12 13 14 15 16; do
    (ulimit -n $n; exec "$top_builddir/tools/spits-status" --jobdir "$T/a" --timeout 2) >"$T/out.$n" 2>&1
    grep -q "non-socket" "$T/out.$n" && fail "ulimit -n $n: $(cat "$T/out.$n")"
    if grep -q "cannot open a ZeroMQ socket: Too many open files" "$T/out.$n"; then
        [ "$(wc -l <"$T/out.$n")" = 1 ] || fail "ulimit -n $n: $(cat "$T/out.$n")"
        named=1
    fi
done
[ $named = 1 ] || fail "no limit gave the one-line error: $(head -n 2 "$T"/out.*)"
echo ok
