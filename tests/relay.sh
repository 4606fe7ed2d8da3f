#!/bin/bash
# Relays (spits-tm --serve): TMs that reach the job through a relay, trees
# of relays, a relay killed mid-job, a TM lost and back behind a relay
# (its runs counted once), a relay started before the JM, a JM
# killed and resumed behind a relay, and the misconfigurations a relay
# refuses. Every job's result is exact, and the bench committer fails on
# a task committed twice.
. "$(dirname "$0")/lib.sh"

# exact NAME N: job NAME's output is the bench checksum of N tasks, and
# report.json says N committed
exact() {
    [ "$(cat "$T/$1.out")" = "$(bench_checksum "$2")" ] || fail "$1: bench printed '$(cat "$T/$1.out")'"
    [ "$(json "$T/$1/report.json" "d['counters']['committed']")" = "$2" ] || fail "$1: committed"
}

# (Under a sanitizer, jobs a fifth the size: the relays of the full
# ones, slowed down several times over and sharing 2 cores with the
# other tests, fell silent for their TMs' 5 s and were left, which these
# cases of healthy relays count as a failure.)
big=20000 mid=10000
sanitized && big=4000 mid=2000

# 1. JM + 2 relays + 6 TMs behind them: the JM sees 2 TMs (the relays),
#    each with 3 TMs behind it, and the TMs ran every task.
n=$big
start_jm a "$MODS/bench.so" -n $n -s 2000 -G "$T/a.gate"
pa=$(free_port); pb=$(free_port)
start_relay a a.ra "$pa"; ra=$RELAY_PID
start_relay a a.rb "$pb"; rb=$RELAY_PID
tms=""
for i in 1 2 3; do
    start_tm a a.tma$i -n 2 --via "tcp://127.0.0.1:$pa"; tms="$tms $TM_PID"
    start_tm a a.tmb$i -n 2 --via "tcp://127.0.0.1:$pb"; tms="$tms $TM_PID"
done
# The live view shows the tree: each relay with its 3 TMs behind it.
wait_for "[ \"\$(live a \"sorted(len(t['behind']['tms']) for t in d['tms'] if t.get('relay'))\")\" = '[3, 3]' ]" \
    30 "spits-status to show 3 TMs behind each relay"
[ "$(live a "d['behind_relays']")" = 6 ] || fail "a: behind_relays is not 6"
"$top_builddir/tools/spits-status" --jobdir "$T/a" >"$T/a.status.txt" || fail "a: spits-status failed"
for p in "$pa" "$pb"; do
    grep -q "relay at tcp://127.0.0.1:$p: 3 TM(s) behind it" "$T/a.status.txt" \
        || fail "a: spits-status does not show relay $p's TMs: $(cat "$T/a.status.txt")"
done
touch "$T/a.gate"
wait $JM_PID || fail "a: spits-jm exited $?"
exact a $n
for p in $tms $ra $rb; do wait "$p" || fail "a: a TM or relay exited $?"; done
r=$T/a/report.json
[ "$(json $r "d['counters']['tm_joins']")" = 2 ] || fail "a: the JM counted $(json $r "d['counters']['tm_joins']") joins, not the 2 relays"
[ "$(json $r "sorted(t.get('relay', False) for t in d['tms'])")" = "[True, True]" ] \
    || fail "a: report.json does not list 2 relays: $(json $r "d['tms']")"
[ "$(json $r "sum(t['done'] for t in d['tms'])")" = $n ] || fail "a: the relays' done"
for x in ra rb; do
    [ "$(grep -c 'relay: TM .* joined with 2 worker' "$T/a.$x.log")" = 3 ] || fail "a: $x did not take 3 TMs"
done
grep -q "(relay)" "$T/a.tma1.log" || fail "a: a TM does not say it joined through a relay"
for f in "$T"/a.tm*.log; do
    grep -q "job manager now\|trying" "$f" && fail "a: a TM left its relay: $f"
done

# 2. Two levels: JM <- r1 <- r2 <- 2 TMs, and 1 TM straight on r1.
n=$mid
start_jm b "$MODS/bench.so" -n $n -s 2000 -G "$T/b.gate"
p1=$(free_port); p2=$(free_port)
start_relay b b.r1 "$p1"; r1=$RELAY_PID
start_relay b b.r2 "$p2" --via "tcp://127.0.0.1:$p1"; r2=$RELAY_PID
start_tm b b.tm1 -n 2 --via "tcp://127.0.0.1:$p2"; t1=$TM_PID
start_tm b b.tm2 -n 2 --via "tcp://127.0.0.1:$p2"; t2=$TM_PID
start_tm b b.tm3 -n 2 --via "tcp://127.0.0.1:$p1"; t3=$TM_PID
# (the job ends only once every TM is in: two could run it all before a
# slow third one's start)
wait_for "[ \$(grep -c 'relay: TM .* joined' $T/b.r2.log) = 2 ] && grep -q 'relay: TM .* joined' $T/b.r1.log" \
    30 "b: r2's 2 TMs and r1's own TM to join"
touch "$T/b.gate"
wait $JM_PID || fail "b: spits-jm exited $?"
exact b $n
for p in $t1 $t2 $t3 $r1 $r2; do wait "$p" || fail "b: a TM or relay exited $?"; done
[ "$(json "$T/b/report.json" "d['counters']['tm_joins']")" = 1 ] || fail "b: the JM saw more than r1"
grep -q "relay: relay .* joined" "$T/b.r1.log" || fail "b: r2 did not join r1 as a relay"
[ "$(grep -c 'relay: TM .* joined' "$T/b.r2.log")" = 2 ] || fail "b: r2 did not take its 2 TMs"

# relayed NAME [TIMEOUT]: a job of 3000 tasks of 20 ms (--tm-timeout
# TIMEOUT, 3 s) with 3 TMs behind one relay, waited for until 500 tasks
# are committed; RELAY_PID and TMS
relayed() {
    start_jm "$1" --tm-timeout "${2:-3}" "$MODS/bench.so" -n 3000 -s 20000
    local port; port=$(free_port)
    start_relay "$1" "$1.r" "$port"
    TMS=""
    for i in 1 2 3; do start_tm "$1" "$1.tm$i" -n 2 --via "tcp://127.0.0.1:$port"; TMS="$TMS $TM_PID"; done
    wait_for "[ \$(grep -c 'joined with 2' $T/$1.r.log) -ge 3 ]" 30 "3 TMs behind $1's relay"
    wait_for "[ \$(committed $1) -ge 500 ] 2>/dev/null" 60 "500 tasks through $1's relay"
    kill -0 $JM_PID 2>/dev/null || fail "$1: the job ended before the relay was stopped"
}

# 3. kill -9 of a relay mid-job: its TMs fall back to the JM (their next
#    hop) and finish the job; the JM re-sends what the relay held.
relayed c
kill -9 $RELAY_PID
wait $JM_PID || fail "c: spits-jm exited $?"
exact c 3000
for p in $TMS; do wait "$p" || fail "c: a TM exited $?"; done
grep -q "relay [^ ]*:$RELAY_PID lost" "$T/c.jm.log" || fail "c: the JM did not lose the relay"
[ "$(json "$T/c/report.json" "d['counters']['tm_joins']")" = 4 ] \
    || fail "c: the JM counted $(json "$T/c/report.json" "d['counters']['tm_joins']") joins, not the relay and its 3 TMs"
for i in 1 2 3; do grep -q "trying the job manager" "$T/c.tm$i.log" || fail "c: TM $i did not fall back"; done

# 3a. kill -9 of a TM behind a relay, with a --tm-timeout of 60 s: the
#     relay finds its connection gone at its next heartbeat and sends its
#     copies to its other TMs at once, so the job does not wait the 60 s.
relayed c1 60
c1=($TMS)
kill -9 "${c1[0]}"
wait_for "grep -q 'TM [^ ]*:${c1[0]} lost (disconnected); [1-9][0-9]* task(s) to run again' $T/c1.r.log" 10 \
    "c1: the relay taking back the killed TM's copies"
wait $JM_PID || fail "c1: spits-jm exited $?"
exact c1 3000
wait "${c1[1]}" || fail "c1: a TM exited $?"
wait "${c1[2]}" || fail "c1: a TM exited $?"
wait $RELAY_PID || fail "c1: the relay exited $?"
[ "$(json "$T/c1/report.json" "d['counters']['tm_losses']")" = 0 ] || fail "c1: the JM lost a TM"

# drain_relay NAME PID: SIGTERM to job NAME's relay PID, which drains and
# exits 0
drain_relay() {
    kill -TERM "$2"
    wait "$2" || fail "$1: the relay's drain did not end well: exit $?"
    grep -q "drained: every started task finished" "$T/$1.r.log" || fail "$1: the relay did not drain"
}

# 3b. SIGTERM to a relay mid-job: it drains (its TMs hand back what they
#     queued, finish what runs), says BYE and exits 0; its TMs move on to
#     the JM and finish the job.
relayed c2
drain_relay c2 $RELAY_PID
wait $JM_PID || fail "c2: spits-jm exited $?"
exact c2 3000
for p in $TMS; do wait "$p" || fail "c2: a TM exited $?"; done
grep -q "relay [^ ]*:$RELAY_PID left" "$T/c2.jm.log" || fail "c2: the JM did not see the relay leave"
[ "$(json "$T/c2/report.json" "d['counters']['tm_losses']")" = 0 ] || fail "c2: a drained relay counted as lost"

# 3c. The relay's own link to the JM is cut (a proxy resets it) while its
#     TMs hold copies: the relay re-attaches, the JM (which took its copies
#     back) sends some of those tasks again, and the relay must answer
#     each copy exactly once: no foreign result, and a drain that ends.
start_jm c3 --heartbeat 0.5 "$MODS/bench.so" -n 400 -s 300000
start_proxy c3 c3 100000000
proxy=$PROXY_PID
pc=$(free_port)
"$TM" --connect "$PROXY_EP" --key-file "$T/c3/jm.key" \
    --serve "tcp://127.0.0.1:$pc" --wait 60 --reconnect-timeout 30 >"$T/c3.r.log" 2>&1 &
rc=$!
PIDS="$PIDS $rc"
tms=""
for i in 1 2; do start_tm c3 c3.tm$i -n 2 -p 2 --via "tcp://127.0.0.1:$pc"; tms="$tms $TM_PID"; done
wait_for "[ \$(committed c3) -ge 20 ] 2>/dev/null" 60 "c3: 20 tasks through the relay"
kill -HUP $proxy
wait_for "grep -q 're-attached' $T/c3.jm.log" 30 "c3: the relay to re-attach"
wait_for "[ \$(committed c3) -ge 60 ] 2>/dev/null" 60 "c3: 60 tasks after the cut"
drain_relay c3 $rc
wait $JM_PID || fail "c3: spits-jm exited $?"
exact c3 400
for p in $tms; do wait "$p" || fail "c3: a TM exited $?"; done
[ "$(json "$T/c3/report.json" "d['counters']['requeued'] > 0")" = True ] \
    || fail "c3: the JM took none of the relay's copies back at the cut"
[ "$(json "$T/c3/report.json" "d['counters']['foreign_results']")" = 0 ] \
    || fail "c3: $(json "$T/c3/report.json" "d['counters']['foreign_results']") foreign result(s): a copy answered twice"

# 3d. A TM behind a relay is stopped (SIGSTOP) past --tm-timeout: the
#     relay loses it, then it resumes (SIGCONT) and re-attaches. Its runs
#     count once: the relay's runs in report.json are exactly its TM's,
#     as listed behind it (both from the relay's last STATS), and no more
#     than the TM says it ran (spits-tm -v, as it exits; it may have run
#     a last few after its last STATS). (The last task waits for the
#     gate: the job cannot end before the TM is back.)
start_jm c4 --tm-timeout 2 "$MODS/bench.so" -n 300 -s 10000 -G "$T/c4.gate"
pc=$(free_port)
start_relay c4 c4.r "$pc"; rc=$RELAY_PID
start_tm c4 c4.tm -v -n 2 --via "tcp://127.0.0.1:$pc"; tm=$TM_PID
wait_for "[ \$(committed c4) -ge 40 ] 2>/dev/null" 30 "c4: 40 tasks through the relay"
kill -STOP $tm
wait_for "grep -q 'relay: TM [^ ]*:$tm lost' $T/c4.r.log" 15 "c4: the relay to lose the stopped TM"
kill -CONT $tm
wait_for "grep -q 'relay: TM [^ ]*:$tm re-attached' $T/c4.r.log" 15 "c4: the TM to re-attach"
touch "$T/c4.gate"
wait $JM_PID || fail "c4: spits-jm exited $?"
exact c4 300
for p in $tm $rc; do wait "$p" || fail "c4: the TM or the relay exited $?"; done
ran=$(sed -n 's/^spits-tm: ran \([0-9]*\) task(s)$/\1/p' "$T/c4.tm.log")
[ -n "$ran" ] && [ "$ran" -ge 300 ] || fail "c4: the TM says it ran '$ran' task(s)"
r=$T/c4/report.json
runs=$(json "$r" "d['tms'][0]['runs']")
[ "$(json "$r" "[b['runs'] for t in d['tms'] for b in t['behind']['tms']]")" = "[$runs]" ] ||
    fail "c4: the relay ran $runs, its TMs $(json "$r" "[t['behind'] for t in d['tms']]")"
[ "$runs" -le "$ran" ] || fail "c4: the relay ran $runs, more than its TM's $ran"

# 4. A relay (and its TMs) started before the JM.
n=4000
pd=$(free_port)
mkdir -p "$T/d"
start_relay d d.r "$pd"; rd=$RELAY_PID
start_tm d d.tm1 -n 2 --via "tcp://127.0.0.1:$pd"; t1=$TM_PID
start_tm d d.tm2 -n 2 --via "tcp://127.0.0.1:$pd"; t2=$TM_PID
sleep 1
start_jm d "$MODS/bench.so" -n $n -s 2000
wait $JM_PID || fail "d: spits-jm exited $?"
exact d $n
for p in $t1 $t2 $rd; do wait "$p" || fail "d: a TM or the relay exited $?"; done
[ "$(json "$T/d/report.json" "d['counters']['tm_joins']")" = 1 ] || fail "d: TMs went around the relay"

# 5. kill -9 of the JM behind a relay, then spits-jm --resume: the relay
#    re-attaches as a TM does, its TMs never notice, and the output is an
#    uninterrupted run's (filetasks fails commit_job on a task seen twice).
seq 1 1000 >"$T/in.txt"
expect=$("$PY" -c "
s = sum(k*k for k in range(1, 1001)); c = sum(k**3 for k in range(1, 1001))
print('filetasks: squares=%d total=%d' % (s, s + c))")
cp "$TMODS/filetasks.so" "$T/ft.so"
start_jm e -v --heartbeat 0.2 "$T/ft.so" "$T/in.txt" 4000
pe=$(free_port)
start_relay e e.r "$pe"; re=$RELAY_PID
start_tm e e.tm1 -n 2 --via "tcp://127.0.0.1:$pe"; t1=$TM_PID
start_tm e e.tm2 -n 2 --via "tcp://127.0.0.1:$pe"; t2=$TM_PID
wait_for "grep -q 'phase 2 starts' $T/e.jm.log" 30 "phase 2 of e"
base=$(stat -c %s "$T/e/journal")
wait_for "[ \$(stat -c %s $T/e/journal) -gt $((base + 8000)) ]" 30 "results in e's journal"
kill -9 "$(json "$T/e/jm.json" "d['pid']")"
wait $JM_PID 2>/dev/null
timeout -s KILL 120 "$JM" --resume --jobdir "$T/e" --bind tcp://127.0.0.1:0 \
    --heartbeat 0.2 >"$T/e.out2" 2>"$T/e.jm2.log" || fail "e: the resumed job exited $?"
[ "$(cat "$T/e.out2")" = "$expect" ] || fail "e: resumed output '$(cat "$T/e.out2")'"
for p in $t1 $t2 $re; do wait "$p" || fail "e: a TM or the relay exited $?"; done
grep -q "job manager now at" "$T/e.r.log" || fail "e: the relay did not find the resumed JM"
grep -q "trying" "$T"/e.tm*.log && fail "e: a TM left the relay"

# 6. Misconfigurations, each one line and exit 1: a relay that is its own
#    upstream, rings of two and three relays, a relay without the job's
#    server key; and bad options (exit 2).
start_jm f "$MODS/bench.so" -n 100000 -s 2000000
wait_for "[ -f $T/f/jm.json ]" 30 "f's jm.json"
ps=$(free_port)
"$TM" --connect "tcp://127.0.0.1:$ps" --key-file "$T/f/jm.key" --serve "tcp://127.0.0.1:$ps" \
    --wait 10 >"$T/f.self.log" 2>&1 && fail "f: a relay serving itself exited 0"
grep -q "relay loop: this relay's upstream (tcp://127.0.0.1:$ps) is itself" "$T/f.self.log" \
    || fail "f: no loop error: $(cat "$T/f.self.log")"
# ring NAME K: K relays, each the upstream of the next and the last of the
# first; RING holds their pids
ring() {
    local ports=() k
    for ((k = 0; k < $2; k++)); do ports+=("$(free_port)"); done
    RING=""
    for ((k = 0; k < $2; k++)); do
        "$TM" --connect "tcp://127.0.0.1:${ports[$(((k + 1) % $2))]}" --key-file "$T/f/jm.key" \
            --serve "tcp://127.0.0.1:${ports[$k]}" --wait 45 >"$T/f.$1$k.log" 2>&1 &
        RING="$RING $!"
        PIDS="$PIDS $!"
    done
}
# (both rings at once: each takes the loop's 10 s to be called an error)
ring two 2; two=$RING
ring three 3; three=$RING
for name in two three; do
    wait_for "grep -q 'relay loop: .*is also upstream of it' $T/f.$name*.log" 40 "the $name-relay ring to be seen"
done
for p in $two $three; do kill "$p" 2>/dev/null; done
"$TM" --connect "$(json "$T/f/jm.json" "d['endpoint']")" --key-file "$T/f/tm.key" \
    --serve "tcp://127.0.0.1:$(free_port)" --wait 10 >"$T/f.key.log" 2>&1 && fail "f: a relay without jm.key exited 0"
grep -q "server_secret.*a relay serves with the job's server key" "$T/f.key.log" \
    || fail "f: key error: $(cat "$T/f.key.log")"
[ "$(wc -l <"$T/f.key.log")" = 1 ] || fail "f: more than one line: $(cat "$T/f.key.log")"
"$TM" --jobdir "$T/f" --serve "udp://x" >"$T/f.opt.log" 2>&1; rcv=$?
[ $rcv = 2 ] || fail "f: a bad --serve exited $rcv"
"$TM" --jobdir "$T/f" --serve "tcp://127.0.0.1:0" --isolate >"$T/f.opt2.log" 2>&1; rcv=$?
[ $rcv = 2 ] && grep -q "a relay (--serve) runs no task" "$T/f.opt2.log" || fail "f: --serve --isolate: $rcv"
kill $JM_PID
echo ok
