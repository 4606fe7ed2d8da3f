#!/bin/bash
# A kill -9 storm: while a job runs, a TM is killed and a new one started
# every 0.3 s, and early on the JM itself is killed and resumed
# (spits-jm --resume). The output is still exact, and every task was
# committed exactly once (the bench committer fails on a task committed
# twice or missing).
. "$(dirname "$0")/lib.sh"

n=4000
start_jm job --heartbeat 0.2 "$MODS/bench.so" -n $n -s 5000
jm=$JM_PID
tms=()
for i in 1 2 3; do start_tm job tm$i -n 2; tms+=($TM_PID); done
wait_for "[ \$(grep -c joined $T/job.jm.log) -ge 3 ]" 30 "the TMs to join"
kills=0
for round in $(seq 1 12); do
    sleep 0.3
    if [ $round = 4 ]; then
        # (some results journaled first, so the resume has some to replay)
        wait_for "[ \"\$(committed job)\" -ge 100 ] 2>/dev/null" 60 "some commits before the JM's kill"
        kill -0 $jm 2>/dev/null || fail "the job ended before the JM was killed"
        kill -9 "$(json "$T/job/jm.json" "d['pid']")"
        wait $jm 2>/dev/null
        timeout -s KILL 120 "$JM" --resume --jobdir "$T/job" --bind tcp://127.0.0.1:0 \
            --heartbeat 0.2 >"$T/job.out2" 2>"$T/job.jm2.log" &
        jm=$!
        PIDS="$PIDS $jm"
        continue
    fi
    k=$((RANDOM % ${#tms[@]}))
    kill -9 ${tms[$k]} 2>/dev/null && kills=$((kills + 1))
    start_tm job storm$round -n 2
    tms[$k]=$TM_PID
done
wait $jm || fail "the resumed spits-jm exited $?"
[ "$(cat "$T/job.out2")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/job.out2")'"
r=$T/job/report.json
[ "$(json $r "d['counters']['committed']")" = $n ] || fail "committed $(json $r "d['counters']['committed']")"
[ "$(json $r "d['resumed'] and 0 < d['counters']['replayed'] < $n")" = True ] || fail "nothing was replayed"
echo "storm: $kills TMs killed, JM killed once; $(json $r "d['counters']['replayed']") results replayed"
for p in "${tms[@]}"; do wait $p || fail "a surviving TM exited $?"; done
echo ok
