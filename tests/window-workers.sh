#!/bin/bash
# The window (tasks generated ahead of the commits) never idles a worker:
# it is --window or twice the workers of the TMs alive, whichever is more.
# With --window 4 and 2 TMs of 8 workers, all 16 workers run at once: the
# bench module's -P holds every run (each marks FILE.waiting-ID) until the
# test lets them go. Before, 4 ran and 12 workers waited for the window.
# Then the job ends exact.
. "$(dirname "$0")/lib.sh"

n=64
touch "$T/hold"
start_jm w --window 4 "$MODS/bench.so" -n $n -P "$T/hold"
jm=$JM_PID
start_tm w tm-1 -n 8; tm1=$TM_PID
start_tm w tm-2 -n 8; tm2=$TM_PID
running() { find "$T" -maxdepth 1 -name 'hold.waiting-*' | wc -l; }
wait_for "[ \$(running) -ge 16 ]" 60 "16 runs at once under --window 4"
# Never more than the workers: each TM runs 8 at a time.
[ "$(running)" = 16 ] || fail "$(running) runs at once, not 16"
rm -f "$T/hold"
wait $jm || fail "spits-jm exited $?"
wait $tm1 && wait $tm2 || fail "a TM exited $?"
[ "$(cat "$T/w.out")" = "$(bench_checksum $n)" ] || fail "printed '$(cat "$T/w.out")'"
echo ok
