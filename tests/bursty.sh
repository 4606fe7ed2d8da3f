#!/bin/bash
# A task that exists reaches a TM at once, whatever next_task does next:
# next_task makes tasks in bursts of 10 and sleeps 2 s before each next
# burst. The generator lends the burst it has not handed over yet to the
# dispatcher while next_task runs, so no task of a burst waits for the
# sleep: every one is committed in less than half the sleep after it was
# made (a generous bound: 5 ms here; a task that waited would be late by
# the whole sleep). A sanitizer's runtime on a loaded machine took over
# 1 s: there the sleep is 4 s, the bound 2 s.
. "$(dirname "$0")/lib.sh"

n=30
sleep_ms=2000
sanitized && sleep_ms=4000
start_jm burst "$TMODS/bursty.so" $n $sleep_ms "$T/gate"
jm=$JM_PID
start_tm burst tm -n 4
# The TM says it joined once its module is loaded and its workers run
# (the JM's "joined" comes at its HELLO, before that: under TSan loading
# the module took over a second, and the first burst waited for it).
wait_for "grep -q 'joined job' $T/tm.log" 60 "the TM to join and start its workers"
touch "$T/gate"
wait $jm || fail "the job exited $?"
cat "$T/burst.out"
grep -q "^bursty: $n tasks, 0 late " "$T/burst.out" || fail "tasks waited: $(cat "$T/burst.out")"
echo ok
