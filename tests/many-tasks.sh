#!/bin/bash
# Millions of empty tasks, the shape where the generator lends its chunk
# to the dispatcher many times a second (generator.c, serve.c
# refill_fresh): every task reaches a TM, in order, and the job ends
# exact. It once hung about one run in two at 10^7 tasks, when a lent
# chunk could overtake one still on its way through the genq; this test
# runs 2 x 10^7 tasks. A race: the old code hung in 4 of 6 such runs on
# an idle machine, and in none of 2 under load, so this test catches it
# often, not always (spits-bench's 10^7-task memory row runs it too).
. "$(dirname "$0")/lib.sh"

if sanitized; then
    echo "SKIP: a sanitizer build (20 million tasks would take many minutes)"
    exit 77
fi
n=10000000
want=$(bench_checksum $n)
for run in 1 2; do
    start_jm many$run --journal off "$MODS/bench.so" -n $n
    start_tm many$run tm$run -n 2 --prefetch 2000
    wait $JM_PID || fail "spits-jm (run $run) exited $? (hung: $(tail -1 "$T/many$run.jm.log"))"
    [ "$(cat "$T/many$run.out")" = "$want" ] || fail "run $run: bench printed '$(cat "$T/many$run.out")'"
done
echo ok
