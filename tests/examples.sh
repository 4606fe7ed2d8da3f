#!/bin/bash
# The example modules through spits-run give exact answers.
. "$(dirname "$0")/lib.sh"

out=$(timeout 120 "$RUN" -q -n 2 "$MODS/pi.so" 20000000 200) || fail "pi exited $?"
case "$out" in
    "pi = 3.141592653589"*) ;;
    *) fail "pi printed '$out'" ;;
esac
out=$(timeout 120 "$RUN" -q -n 2 "$MODS/primes.so" 1000000 50) || fail "primes exited $?"
[ "$out" = "primes below 1000000: 78498" ] || fail "primes printed '$out'"
out=$(timeout 120 "$RUN" -q -n 2 --tms 3 "$MODS/bench.so" -n 5000 -t 64 -r 32) || fail "bench exited $?"
[ "$out" = "$(bench_checksum 5000)" ] || fail "bench printed '$out'"
echo ok
