#!/bin/bash
# Security: CurveZMQ by default with the job's keys in the job dir, a peer
# without them gets nothing, mismatched settings fail with a clear message
# on the TM's side, a module that differs from the JM's is refused, and a
# live job survives hostile peers with its result exact, a peer that
# answers every task twice included, direct and behind a relay.
. "$(dirname "$0")/lib.sh"

H=$top_builddir/tests/hostile
n=2000
port() { json "$T/$1/jm.json" "d['endpoint'].rsplit(':', 1)[1]"; }
mode() { stat -c %a "$1"; }

# 1. A default job: keys in the dir, 0600, announced as curve.
# (--max-task-bytes 1 MB caps messages near 18 MB: the abuser's 40 MB
# frame is dropped by libzmq before any of our code sees it. -G: the last
# task waits for the gate file, so the job outlasts the attacks on any
# machine, sanitizers included.)
start_jm a --max-task-bytes 1000000 "$MODS/bench.so" -n $n -s 4000 -G "$T/a.gate"
jm=$JM_PID
wait_for "[ -s $T/a/jm.json ]" 30 "jm.json"
[ "$(json "$T/a/jm.json" "d['security']")" = curve ] || fail "jm.json does not say curve"
[ "$(mode "$T/a")" = 700 ] && [ "$(mode "$T/a/jm.key")" = 600 ] && [ "$(mode "$T/a/tm.key")" = 600 ] \
    || fail "modes: dir $(mode "$T/a"), jm.key $(mode "$T/a/jm.key"), tm.key $(mode "$T/a/tm.key")"
grep -q server_secret "$T/a/tm.key" && fail "tm.key holds the server's secret"
ep=$(json "$T/a/jm.json" "d['endpoint']"); ep=tcp://127.0.0.1:${ep##*:}
start_tm a a.tm -n 2; tm=$TM_PID
wait_for "grep -q joined $T/a.jm.log" 30 "the TM to join"
# 2. While the job runs, all at once: strangers get nothing (no CURVE, or
# CURVE with a key of their own), garbage, silent connections, and a peer
# holding the job's key abuses the protocol.
"$H" probe "$ep" & p1=$!
"$H" wrongkey "$ep" "$(json "$T/a/jm.json" "d['server_key']")" & p2=$!
"$H" garbage 127.0.0.1 "$(port a)" & p3=$!
"$H" silent 127.0.0.1 "$(port a)" 200 2 & p4=$!
"$H" abuse "$ep" "$T/a/tm.key" & p5=$!
wait $p1 || fail "a plain ZeroMQ peer got an answer"
wait $p2 || fail "a peer with its own key got an answer"
wait $p3 || fail "the garbage sender failed"
wait $p4 || fail "the silent connections failed"
wait $p5 || fail "the abuser failed"
# Its 40 MB frame cost it the connection (libzmq's ZMQ_MAXMSGSIZE).
wait_for "grep -q 'TM hostile:1 lost (' $T/a.jm.log" 60 "the JM to drop the abuser"
kill -0 $jm 2>/dev/null || fail "the job ended before the attacks did (it waits for $T/a.gate)"
touch "$T/a.gate"
wait $jm || fail "the attacked job exited $?"
[ "$(cat "$T/a.out")" = "$(bench_checksum $n)" ] || fail "attacked job printed '$(cat "$T/a.out")'"
wait $tm || fail "the TM exited $?"
# A key file whose client secret is not its client key's: named at once,
# instead of a handshake the JM can only refuse.
"$PY" -c "import json,sys; k=json.load(open(sys.argv[1])); k['client_secret']=k['server_public']; json.dump(k, open(sys.argv[2], 'w'))" \
    "$T/a/tm.key" "$T/bad-secret.key" && chmod 600 "$T/bad-secret.key"
out=$("$TM" --connect tcp://127.0.0.1:1 --key-file "$T/bad-secret.key" --wait 1 2>&1); rc=$?
[ $rc = 1 ] && [ "$out" = "spits-tm: error: key file $T/bad-secret.key: client_secret is not the secret key of client_public (a damaged or edited key file: take a fresh copy of the job's, e.g. with spits-jm --export-key)" ] \
    || fail "a wrong client secret: exit $rc, '$out'"
grep -q "refused a connection from 127.0.0.1: not this job's client key (logged once per address)" \
    "$T/a.jm.log" || fail "the wrong key was not logged"
[ "$(grep -c "not this job's client key" "$T/a.jm.log")" = 1 ] || fail "refusals flood the log"
grep -q "refused a connection that failed the CurveZMQ handshake" "$T/a.jm.log" \
    || fail "the plain peer's failed handshake was not logged"
r=$T/a/report.json
# The abuser's 2 wrong versions, truncated record, END, unknown type,
# multipart message and results whose parts do not match are malformed;
# its 50 forged results of phase 1 are bogus, and so are the 2 records of
# the mismatched message (taken as handed back unrun, of tasks never
# sent); the 100 of phases 0 and 2 are stale.
[ "$(json $r "[d['counters'][k] for k in ('bad_messages', 'bogus', 'stale')]")" = "[7, 52, 100]" ] \
    || fail "the abuse was not counted: $(json $r "d['counters']")"
[ "$(json $r "d['counters']['committed']")" = $n ] || fail "committed"
[ "$(json $r "d['counters']['bytes_in'] < 40 << 20")" = True ] || fail "the 40 MB frame got through"
# A task over --max-task-bytes is an error naming it, not a crash.
start_jm big --max-task-bytes 1000 "$MODS/bench.so" -n 5 -t 5000
jmbig=$JM_PID
start_tm big big.tm -n 1
wait $jmbig; rc=$?
[ $rc = 1 ] || fail "an oversized task: spits-jm exited $rc, not 1"
grep -q "task 0 is 5000 bytes, over --max-task-bytes (1000)" "$T/big.jm.log" || fail "the oversized task is not named"

# 4. Mismatched security fails on the TM's side, with the fix in the message.
start_jm b --insecure "$MODS/bench.so" -n 50
jmb=$JM_PID
wait_for "[ -s $T/b/jm.json ]" 30 "b's jm.json"
grep -q "insecure: connections are neither encrypted nor authenticated" "$T/b.jm.log" || fail "no --insecure warning"
[ -e "$T/b/tm.key" ] && fail "an --insecure job wrote key files"
out=$(timeout 30 "$TM" --jobdir "$T/b" 2>&1); rc=$?
[ $rc = 1 ] || fail "a CURVE TM on an --insecure job exited $rc"
case $out in *"runs --insecure (no CurveZMQ): start this task manager with --insecure too"*) ;;
    *) fail "said: $out" ;; esac
"$H" probe "tcp://127.0.0.1:$(port b)"; [ $? = 3 ] || fail "the probe cannot even see an --insecure JM"
start_tm b b.tm --insecure -n 2
wait $jmb || fail "the --insecure job exited $?"
[ "$(cat "$T/b.out")" = "$(bench_checksum 50)" ] || fail "--insecure job printed '$(cat "$T/b.out")'"

start_jm c "$MODS/bench.so" -n 300 -s 2000
jmc=$JM_PID
wait_for "[ -s $T/c/jm.json ]" 30 "c's jm.json"
cep=tcp://127.0.0.1:$(port c)
out=$(timeout 30 "$TM" --jobdir "$T/c" --insecure 2>&1); rc=$?
[ $rc = 1 ] && case $out in *"requires CurveZMQ: drop --insecure"*) true ;; *) false ;; esac \
    || fail "--insecure TM on a CURVE job: $rc $out"
out=$(timeout 30 "$TM" --connect "$cep" --insecure --wait 20 2>&1); rc=$?
[ $rc = 1 ] && case $out in *"refused the handshake: it requires CurveZMQ"*) true ;; *) false ;; esac \
    || fail "--connect --insecure TM on a CURVE job: $rc $out"
# The exported key file lets a TM that cannot see the job dir join.
"$JM" --jobdir "$T/c" --export-key "$T/exported.key" 2>/dev/null || fail "--export-key exited $?"
[ "$(mode "$T/exported.key")" = 600 ] || fail "the exported key is mode $(mode "$T/exported.key")"
chmod 644 "$T/exported.key"
out=$(timeout 30 "$TM" --connect "$cep" --key-file "$T/exported.key" 2>&1); rc=$?
[ $rc = 1 ] && case $out in *"must be yours and mode 0600"*) true ;; *) false ;; esac \
    || fail "a readable key file was used: $rc $out"
chmod 600 "$T/exported.key"
# 5. A module file that differs from the JM's is refused.
cp "$MODS/pi.so" "$T/other.so"
out=$(timeout 30 "$TM" --jobdir "$T/c" --module "$T/other.so" 2>&1); rc=$?
[ $rc = 1 ] && case $out in *"differs from the job manager's"*"refusing to run it"*) true ;; *) false ;; esac \
    || fail "a different module was run: $rc $out"
timeout 60 "$TM" --connect "$cep" --key-file "$T/exported.key" -n 2 >"$T/c.tm.log" 2>&1 \
    || fail "the TM with the exported key exited $?"
wait $jmc || fail "job c exited $?"
[ "$(cat "$T/c.out")" = "$(bench_checksum 300)" ] || fail "job c printed '$(cat "$T/c.out")'"
# 6. A peer holding the job's key answers every task twice in one RESULTS:
# the JM commits each task once and counts each second record a
# duplicate; behind a relay, the relay's scheduler takes the second as
# its duplicate, and upstream sees none.
n=1000
start_jm d "$MODS/bench.so" -n $n
wait_for "[ -s $T/d/jm.json ]" 30 "d's jm.json"
dep=$(json "$T/d/jm.json" "d['endpoint']"); dep=tcp://127.0.0.1:${dep##*:}
answered=$("$H" dupes "$dep" "$T/d/tm.key" 60) || fail "d: the doubling peer exited $?"
wait $JM_PID || fail "d: spits-jm exited $?"
[ "$answered" = $n ] || fail "d: the doubling peer answered $answered tasks"
[ "$(cat "$T/d.out")" = "$(bench_checksum $n)" ] || fail "d: printed '$(cat "$T/d.out")'"
[ "$(json "$T/d/report.json" "[d['counters'][k] for k in ('committed', 'duplicates')]")" = "[$n, $n]" ] \
    || fail "d: $(json "$T/d/report.json" "d['counters']")"
start_jm e "$MODS/bench.so" -n $n
pe=$(free_port)
start_relay e e.relay "$pe"; relay=$RELAY_PID
wait_for "[ -s $T/e/tm.key ] && grep -q 'relay joined job' $T/e.relay.log" 30 "e's relay to join"
answered=$("$H" dupes "tcp://127.0.0.1:$pe" "$T/e/tm.key" 60) || fail "e: the doubling peer exited $?"
wait $JM_PID || fail "e: spits-jm exited $?"
wait $relay || fail "e: the relay exited $?"
[ "$answered" = $n ] || fail "e: the doubling peer answered $answered tasks"
[ "$(cat "$T/e.out")" = "$(bench_checksum $n)" ] || fail "e: printed '$(cat "$T/e.out")'"
[ "$(json "$T/e/report.json" "[d['counters'][k] for k in ('committed', 'duplicates')]")" = "[$n, 0]" ] \
    || fail "e: $(json "$T/e/report.json" "d['counters']")"
grep -q "relay: $n task copies sent down, 0 sent again, 0 cancelled (0 of their records dropped), $n duplicate record(s)" \
    "$T/e.relay.log" || fail "e: the relay's count: $(tail -1 "$T/e.relay.log")"
echo ok
