#!/bin/bash
# A TM falls back from a dead relay to another with its results. JM, relays A and B, and TM 1 (1 worker, no prefetch: it holds one
# task at a time) with --via A --via B. Its first task, 0, is held running
# (bench -P) while relay A is killed with kill -9: the JM counts A lost
# and re-sends A's copy of task 0 (which TM 1 still runs) to B; TM 1
# moves to B. Then task 0 finishes, and its result reaches the JM through
# B: it must commit task 0 once, and B's copy of it must never run.
#   a. B's copy waits in B's scheduler, unsent (TM 1, B's only TM, has
#      no room): the result answers it (not foreign), and it is never
#      sent;
#   b. B's copy went on to TM 2, behind B from the start, queued behind
#      two tasks: B's scheduler holds it, so the result answers it (the
#      same task: not foreign) and B cancels TM 2's copy itself;
#   c. A is stopped (SIGSTOP) instead: the JM, whose --tm-timeout is
#      long, still counts A holding task 0 and sends no copy elsewhere,
#      while TM 1 gives A up after its own few seconds of silence and
#      moves to B. B holds no copy of task 0: the result goes up flagged
#      foreign, and the JM commits it.
# Expected, exactly: the output is the bench checksum, each task
# committed once; in a and b, 1 copy requeued (A's), 1 re-sent (to B)
# and no foreign result, in c none requeued or re-sent and 1 foreign
# result; no duplicate (no task ran twice), no retry; B's done counts
# every task (its own copies' results, and a foreign one).
. "$(dirname "$0")/lib.sh"

# fallback NAME N WINDOW SLEEP_US [TM_TIMEOUT]: the job (bench, N tasks of
# SLEEP_US, held while $T/NAME.hold exists; --tm-timeout 5 s unless
# given), relays A and B (ports PA, PB) and TM 1 on A, once it runs task
# 0; TM1 its pid
fallback() {
    local name=$1 n=$2 window=$3 sleep_us=$4 tmt=${5:-5}
    touch "$T/$name.hold"
    start_jm "$name" --max-copies 1 --window "$window" --tm-timeout "$tmt" --heartbeat 0.5 \
        "$MODS/bench.so" -n "$n" -s "$sleep_us" -P "$T/$name.hold"
    JM1=$JM_PID
    PA=$(free_port); PB=$(free_port)
    start_relay "$name" "$name.ra" "$PA"; RA=$RELAY_PID
    start_relay "$name" "$name.rb" "$PB"; RB=$RELAY_PID
    wait_for "[ \"\$(live $name \"sum(1 for t in d['tms'] if t.get('relay'))\")\" = 2 ] 2>/dev/null" \
        30 "$name: both relays to join"
    start_tm "$name" "$name.tm1" -n 1 -p 0 --via "tcp://127.0.0.1:$PA" --via "tcp://127.0.0.1:$PB"
    TM1=$TM_PID
    wait_for "[ -e $T/$name.hold.waiting-0 ]" 30 "$name: TM 1 to run task 0"
}

# held NAME PORT: the tasks the JM counts relay PORT holding
held() {
    live "$1" "[t['held'] for t in d['tms'] if t.get('endpoint') == 'tcp://127.0.0.1:$2']"
}

# kill_a NAME: relay A dies; TM 1 joins B, and the JM has re-sent A's copy
kill_a() {
    { kill -9 "$RA"; wait "$RA"; } 2>/dev/null
    wait_for "grep -q 'joined job .* at tcp://127.0.0.1:$PB (relay)' $T/$1.tm1.log" 30 \
        "$1: TM 1 to join relay B"
    wait_for "[ \"\$(live $1 \"[d['tasks']['requeued'], d['tasks']['resent']]\")\" = '[1, 1]' ] 2>/dev/null" \
        30 "$1: the JM to re-send A's copy to B"
}

# finish NAME N 'REQUEUED, RESENT, FOREIGN' PIDS...: the hold lifted, the
# job ends, and its counts are the expected ones
finish() {
    local name=$1 n=$2 want="[$2, $3, 0, 0]" p got
    shift 3
    rm "$T/$name.hold"
    wait "$JM1" || fail "$name: spits-jm exited $?"
    for p in "$@" "$RB"; do wait "$p" || fail "$name: a TM or relay B exited $?"; done
    [ "$(cat "$T/$name.out")" = "$(bench_checksum "$n")" ] || fail "$name: bench printed '$(cat "$T/$name.out")'"
    local r=$T/$name/report.json c="d['counters']"
    got=$(json "$r" "[$c['committed'], $c['requeued'], $c['resent'], $c['foreign_results'], $c['duplicates'], $c['retried']]")
    [ "$got" = "$want" ] ||
        fail "$name: committed, requeued, resent, foreign, duplicates, retried: $got, not $want"
    got=$(json "$r" "[t['done'] for t in d['tms'] if t.get('endpoint') == 'tcp://127.0.0.1:$PB']")
    [ "$got" = "[$n]" ] || fail "$name: relay B's done: $got, not [$n]"
}

# a_holds_1 NAME: the JM counts relay A holding 1 task (task 0)
a_holds_1() {
    local got
    # (the JM answers a status request from a copy built at most once a
    # tick: the first one read may predate task 0's send; ask for 2 s at
    # most)
    for _ in $(seq 20); do
        got=$(held "$1" "$PA")
        [ "$got" = "[1]" ] && return
        sleep 0.1
    done
    fail "$1: relay A holds $got task(s), not [1]"
}

# --- a. B's copy waits in B's scheduler
# (--window 2: with two relays alive, each may hold one task, its share
# of the window, so A holds just task 0, and B, its only TM busy with
# task 0, holds its copy unsent)
fallback a 8 2 300000
a_holds_1 a
kill_a a
finish a 8 "1, 1, 0" "$TM1"
# (B's copy of task 0 never went down: B sent the other 7 tasks, once each)
grep -q "relay: 7 task copies sent down, 0 sent again" "$T/a.rb.log" ||
    fail "a: relay B sent its copy of task 0 down: $(grep 'copies sent down' "$T/a.rb.log")"

# --- b. B's copy waits in TM 2's queue
# (--window 4: A holds task 0; B, whose TM 2 has 1 worker and 3 more
# slots, tasks 1 to 3, TM 2 running 1; A's copy of 0 then goes to TM 2,
# behind 2 and 3, at once, while TM 1 takes 3 s to leave A for B)
fallback b 6 4 1500000
start_tm b b.tm2 -v -n 1 -p 3 --via "tcp://127.0.0.1:$PB"
tm2=$TM_PID
wait_for "[ -e $T/b.hold.waiting-1 ] && [ \"\$(held b $PB)\" = '[3]' ]" 30 \
    "b: TM 2 to run task 1 and hold 2 and 3"
[ "$(held b "$PA")" = "[1]" ] || fail "b: relay A holds $(held b "$PA") task(s), not [1]"
kill_a b
finish b 6 "1, 1, 0" "$TM1" "$tm2"
grep -q "cancel: 1 of 1 copies were still queued and go back" "$T/b.tm2.log" ||
    fail "b: TM 2 was not told to cancel its queued copy of task 0"

# --- c. B holds no copy of task 0
fallback c 4 2 300000 60
a_holds_1 c
kill -STOP "$RA"
wait_for "grep -q 'joined job .* at tcp://127.0.0.1:$PB (relay)' $T/c.tm1.log" 30 \
    "c: TM 1 to join relay B"
[ "$(held c "$PA")" = "[1]" ] || fail "c: relay A holds $(held c "$PA") task(s), not [1]"
finish c 4 "0, 0, 1" "$TM1"
{ kill -9 "$RA"; wait "$RA"; } 2>/dev/null
exit 0
