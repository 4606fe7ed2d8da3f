#!/bin/bash
# Churn: 30 short-lived TMs pass through one job in waves, half killed
# with kill -9, half drained with SIGTERM (a drain that times out may
# leave without BYE: a loss), while the JM remembers only 5
# dead TMs one by one (--keep-dead-tms 5). A TM declared lost first and
# forgotten by the table since comes back and still counts as a
# re-attach. Exact result, every count exact, report.json's TM list
# bounded and its totals complete, and the JM's log lines (one by one or
# summed up) add up to the counts.
. "$(dirname "$0")/lib.sh"

n=600
waves=3 per=10
# A sanitizer's runtime makes each TM several times heavier: fewer TMs,
# still more dead ones than the table keeps (the sleeper is forgotten).
# Its TMs can also stall for seconds on a loaded machine: a longer
# --tm-timeout keeps the sleeper the only TM lost while alive.
tmt=3
sanitized && waves=2 per=4 tmt=12
start_jm c --keep-dead-tms 5 --tm-timeout $tmt --heartbeat 0.5 \
    "$MODS/bench.so" -n $n -s 20000 -G "$T/c.gate"
jm=$JM_PID
# counts EXPR: EXPR over the live JM's tm_counts (c; spits-status --json)
counts() {
    live c "(lambda c: $1)(d['tm_counts'])"
}

# The sleeper: declared lost while stopped, back after its entry is gone.
start_tm c c.sleeper -n 1 --reconnect-timeout 300; sleeper=$TM_PID
wait_for "[ \"\$(tm_done c $sleeper)\" -ge 1 ] 2>/dev/null" 30 "the sleeper to run a task"
kill -STOP $sleeper
wait_for "[ \"\$(counts \"c['losses']\")\" = 1 ]" 30 "the JM to lose the stopped TM"

joins=1
for w in $(seq $waves); do
    pids=
    for i in $(seq $per); do
        start_tm c c.w$w.$i -n 1 --drain-timeout 5; pids="$pids $TM_PID"
    done
    joins=$((joins + per))
    wait_for "[ \"\$(counts \"c['joins']\")\" = $joins ]" 30 "wave $w to join"
    k=0
    for p in $pids; do
        if [ $((k++ % 2)) = 0 ]; then kill -KILL $p; else kill -TERM $p; fi
    done
    for p in $pids; do wait $p 2>/dev/null; done
    wait_for "[ \"\$(counts \"c['lost_now'] + c['leaves']\")\" = $((1 + w * per)) ]" 30 \
        "the JM to see wave $w go"
done
# Every killed TM is lost; a drained one left, unless its drain timed
# out (then it may leave without BYE: lost). The counts below must match
# what the JM saw here exactly.
killed=$((waves * per / 2))
timedout=$(grep -l "drain timed out" "$T"/c.w*.log | wc -l)
lost=$(($(counts "c['lost_now']") - 1))
[ $lost -ge $killed ] && [ $lost -le $((killed + timedout)) ] ||
    fail "lost now: $(counts c), not 1 + $killed (+ up to $timedout)"
kill -0 $jm 2>/dev/null || fail "the job ended before the churn did"
kill -CONT $sleeper
wait_for "[ \"\$(counts \"c['reattaches']\")\" = 1 ]" 30 "the forgotten sleeper to re-attach"
touch "$T/c.gate"        # the sleeper finishes the job
wait $jm || fail "the job exited $?"
wait $sleeper || fail "the sleeper exited $?"

r=$T/c/report.json
[ "$(cat "$T/c.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/c.out")'"
[ "$(json $r "d['counters']['committed']")" = $n ] || fail "committed"
c="d['counters']"
[ "$(json $r "[$c[k] for k in ('tms', 'tm_joins', 'tm_reattaches', 'tm_losses', 'tms_lost_for_good')]")" = \
  "[$joins, $joins, 1, $((lost + 1)), $lost]" ] \
    || fail "TM counts: $(json $r "$c")"
# Drained TMs said BYE (and the sleeper may have, at the end).
[ "$(json $r "$c['tm_leaves'] >= $((waves * per - lost))")" = True ] || fail "leaves: $(json $r "$c")"
# The list holds the table's entries only: the sleeper and 5 dead.
tt="d['tm_totals']"
[ "$(json $r "[len(d['tms']) <= 6, $tt['truncated'], $tt['listed'] == len(d['tms']), $tt['left_out'] == $tt['tms'] - len(d['tms']), $tt['tms']]")" = \
  "[True, True, True, True, $joins]" ] || fail "tms/tm_totals: $(json $r "[len(d['tms']), $tt]")"
# Every committed result is counted to the TM that sent it, evicted or not.
[ "$(json $r "$tt['done']")" = $n ] || fail "tm_totals done: $(json $r "$tt")"
# The log: lines one by one plus the summed-up ones give the exact counts.
logged() {
    echo $(( $(grep -c "^spits-jm: .*TM .* $1" "$T/c.jm.log") +
             $(sed -n "s/.* \([0-9][0-9]*\) more $2 in the last .*/\1/p" "$T/c.jm.log" |
               awk '{s += $1} END {print s + 0}') ))
}
[ "$(logged 'joined with' 'TM joins')" = $joins ] || fail "join lines: $(logged 'joined with' 'TM joins')"
[ "$(logged 'lost (' 'TM losses')" = $((lost + 1)) ] || fail "loss lines: $(logged 'lost (' 'TM losses')"
[ "$(logged 're-attached with' 'TM re-attaches')" = 1 ] || fail "re-attach lines"
[ "$(logged 'left;' 'TM leaves')" = "$(json $r "$c['tm_leaves']")" ] || fail "leave lines"
echo ok
