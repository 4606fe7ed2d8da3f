#!/bin/bash
# A TM falls back from a dead relay to another with its results (issue
# 30): JM, relays A and B, and one TM (1 worker, no prefetch: it holds one
# task at a time) with --via A --via B. Its first task is held running
# (bench -P) while relay A is killed with kill -9: the JM counts A lost
# and re-sends A's copy (the task the TM still runs) to B, which queues
# it, the TM having no room; the TM moves to B. Then the task finishes,
# and its result reaches the JM through B, flagged foreign. Expected,
# exactly: the output is the bench checksum, each task committed once;
# 1 copy requeued (A's), 1 re-sent (to B, which hands it back unrun when
# the foreign result passes: it never reaches a TM), 1 foreign result,
# no duplicate (no task ran twice); and B's copy is answered.
. "$(dirname "$0")/lib.sh"

n=8
touch "$T/hold"
# --window 2: with two relays alive, each may hold one task (its share of
# the window), so A holds exactly the one task the TM runs.
start_jm f --max-copies 1 --window 2 --tm-timeout 5 --heartbeat 0.5 \
    "$MODS/bench.so" -n $n -s 300000 -P "$T/hold"
jm=$JM_PID
pa=$(free_port); pb=$(free_port)
start_relay f f.ra "$pa"; ra=$RELAY_PID
start_relay f f.rb "$pb"; rb=$RELAY_PID
wait_for "[ \"\$(live f \"sum(1 for t in d['tms'] if t.get('relay'))\")\" = 2 ] 2>/dev/null" 30 \
    "both relays to join"
start_tm f f.tm -n 1 -p 0 --via "tcp://127.0.0.1:$pa" --via "tcp://127.0.0.1:$pb"
tm=$TM_PID
wait_for "ls $T/hold.waiting-* >/dev/null 2>&1" 30 "the TM to run its first task"
held=$(cd "$T" && echo hold.waiting-*)
[ "$held" = hold.waiting-0 ] || fail "the first task run is not task 0: $held"
[ "$(live f "[t['held'] for t in d['tms'] if t.get('endpoint') == 'tcp://127.0.0.1:$pa']")" = "[1]" ] ||
    fail "relay A holds $(json "$T/f.status" "[t['held'] for t in d['tms'] if t.get('endpoint') == 'tcp://127.0.0.1:$pa']") task(s), not 1"

{ kill -9 $ra; wait $ra; } 2>/dev/null
# The TM moves to B; the JM re-sends A's copy there (B queues it: the TM,
# still running task 0, has no room).
wait_for "grep -q 'joined job .* at tcp://127.0.0.1:$pb (relay)' $T/f.tm.log" 30 \
    "the TM to join relay B"
wait_for "[ \"\$(live f \"[d['tasks']['requeued'], d['tasks']['resent']]\")\" = '[1, 1]' ] 2>/dev/null" 30 \
    "the JM to re-send A's copy to B"
rm "$T/hold"

wait $jm || fail "spits-jm exited $?"
wait $tm || fail "the TM exited $?"
wait $rb || fail "relay B exited $?"
[ "$(cat "$T/f.out")" = "$(bench_checksum $n)" ] || fail "bench printed '$(cat "$T/f.out")'"
r=$T/f/report.json
c="d['counters']"
got=$(json "$r" "[$c['committed'], $c['requeued'], $c['resent'], $c['foreign_results'], $c['duplicates'], $c['retried']]")
[ "$got" = "[$n, 1, 1, 1, 0, 0]" ] ||
    fail "committed, requeued, resent, foreign, duplicates, retried: $got, not [$n, 1, 1, 1, 0, 0]"
# B's done: the n - 1 results of its own copies, and the foreign one it
# passed on (task 0's copy it held went back unrun).
got=$(json "$r" "[t['done'] for t in d['tms'] if t.get('endpoint') == 'tcp://127.0.0.1:$pb']")
[ "$got" = "[$n]" ] || fail "relay B's done: $got, not [$n]"
exit 0
