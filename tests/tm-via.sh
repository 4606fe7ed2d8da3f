#!/bin/bash
# spits-tm --via: a TM reaches the JM through relays, tried in
# order, then the JM itself, moving on from a hop that does not answer.
# No relay program is needed here: a relay nothing listens on, and
# slowlink.py (a byte-for-byte TCP forwarder, which a CURVE handshake
# crosses unchanged) standing in for a relay that works until it dies.
#   a. one dead relay, --jobdir: the TM falls back to the JM and says so;
#   b. two dead relays, --connect and --key-file: it tries both, in order;
#   c. a bad --via is a usage error, and
#   d. so is a ninth --via: exit 2 and one line;
#   e. two TMs join through working relays; one relay is killed (a dropped
#      connection), the other stalls (a silent one): each TM moves on to
#      the JM, keeping what it holds, and the result is exact;
#   f. a relay that refuses the handshake (another job's JM stands in: not
#      this job's key) is left at once with a warning, not an error;
#   g. jm.json names the JM anew while the TM, its relay stalled, looks for
#      it: only the JM's hop moves, and the relay, back in time, is kept.
. "$(dirname "$0")/lib.sh"

# dead_ports N: DEAD_PORTS, N loopback ports that refuse connections for the whole
# test: a holder process binds them without listening (and without
# SO_REUSEADDR), so no other test's bind(0) or connect() can take one
# meanwhile (a port only closed again was once taken by a parallel test,
# and tm1 met another job there instead of a dead relay).
dead_ports() {
    "$PY" - "$1" "$T/dead.ports" >/dev/null <<'PY' &
import os, signal, socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(" ".join(str(s.getsockname()[1]) for s in ss) + "\n")
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
signal.pause()
PY
    PIDS="$PIDS $!"
    wait_for "[ -s $T/dead.ports ]" 30 "the dead ports' holder"
    DEAD_PORTS=$(cat "$T/dead.ports")
}

# exact NAME N: job NAME printed bench's checksum of N tasks, committed
# each once
exact() {
    [ "$(cat "$T/$1.out")" = "$(bench_checksum $2)" ] || fail "$1: bench printed '$(cat "$T/$1.out")'"
    [ "$(json "$T/$1/report.json" "d['counters']['committed']")" = $2 ] || fail "$1: committed"
    [ "$(json "$T/$1/report.json" "d['counters']['commit_errors']")" = 0 ] || fail "$1: commit errors"
}

# --- a. one dead relay, then the JM (keys and endpoint from the job dir)
dead_ports 2
read -r dead1 dead2 <<<"$DEAD_PORTS"
start_jm a "$MODS/bench.so" -n 200 -s 2000
start_tm a a.tm -n 2 --via "tcp://127.0.0.1:$dead1"
wait $JM_PID || fail "a: spits-jm exited $?"
wait $TM_PID || fail "a: the TM exited $?"
exact a 200
jm_a=$(json "$T/a/jm.json" "d['endpoint']")
grep -q "relay at tcp://127.0.0.1:$dead1 not answering; trying the job manager at $jm_a\$" \
    "$T/a.tm.log" || fail "a: the TM did not say it moved to the JM"
grep -q "joined job .* at $jm_a with 2 worker(s)" "$T/a.tm.log" || fail "a: no join at the JM"
grep -q "(relay)" "$T/a.tm.log" && fail "a: a join through a relay that never answered"

# --- b. two dead relays, in order, then the JM (--connect, --key-file)
start_jm b "$MODS/bench.so" -n 200 -s 2000
wait_for "[ -s $T/b/jm.json ]" 30 "b: the JM to announce itself"
jm_b=$(json "$T/b/jm.json" "d['endpoint']")
"$TM" --connect "$jm_b" --key-file "$T/b/tm.key" --wait 60 --reconnect-timeout 30 -n 2 \
    --via "tcp://127.0.0.1:$dead1" --via "tcp://127.0.0.1:$dead2" >"$T/b.tm.log" 2>&1 &
tm=$!
PIDS="$PIDS $tm"
wait $JM_PID || fail "b: spits-jm exited $?"
wait $tm || fail "b: the TM exited $?"
exact b 200
grep "not answering" "$T/b.tm.log" | head -2 >"$T/b.moves"
printf '%s\n' \
    "spits-tm: relay at tcp://127.0.0.1:$dead1 not answering; trying the relay at tcp://127.0.0.1:$dead2" \
    "spits-tm: relay at tcp://127.0.0.1:$dead2 not answering; trying the job manager at $jm_b" \
    | cmp -s - "$T/b.moves" || fail "b: the moves were: $(cat "$T/b.moves")"

# --- c, d. usage errors: exit 2 and one line
usage() {
    local phrase=$1; shift
    timeout 30 "$TM" --jobdir "$T/a" "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc = 2 ] || fail "$* exited $rc, not 2: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" = 1 ] || fail "$* printed $(wc -l <"$T/err") lines: $(cat "$T/err")"
    grep -qF -- "$phrase" "$T/err" || fail "$* said '$(cat "$T/err")', not '$phrase'"
}
usage "error: --via udp://127.0.0.1:5 is not tcp://HOST:PORT or ipc://PATH" \
    --via udp://127.0.0.1:5
usage "error: --via tcp://127.0.0.1:0: '0' is not a port (1-65535)" --via tcp://127.0.0.1:0
usage "error: --via inproc://x is inside this one process" --via inproc://x
eight=
for i in 1 2 3 4 5 6 7 8; do eight="$eight --via tcp://127.0.0.1:$dead1"; done
# shellcheck disable=SC2086
"$TM" --jobdir "$T/a" --check-options $eight || fail "8 --via were refused"
# shellcheck disable=SC2086
usage "error: --via given more than 8 times: at most 8 relays" $eight --via "tcp://127.0.0.1:$dead2"

# --- e. working relays that die: one killed, one stalled
n=400
start_jm e --heartbeat 0.5 "$MODS/bench.so" -n $n -s 20000 -G "$T/e.gate"
jm=$JM_PID
start_proxy r1 e 100000000; r1=$PROXY_PID r1_ep=$PROXY_EP
start_proxy r2 e 100000000; r2=$PROXY_PID r2_ep=$PROXY_EP
jm_e=$(json "$T/e/jm.json" "d['endpoint']")
# Each TM's first hop is its own relay; the dead one comes after it.
start_tm e e.tm1 -n 2 --via "$r1_ep" --via "tcp://127.0.0.1:$dead1"
tm1=$TM_PID
start_tm e e.tm2 -n 2 --via "$r2_ep"
tm2=$TM_PID
# (a forwarder: the JM answers, and the join line names no relay)
wait_for "grep -q 'joined job .* at $r1_ep with 2 worker(s)' $T/e.tm1.log &&
          grep -q 'joined job .* at $r2_ep with 2 worker(s)' $T/e.tm2.log" 30 \
    "e: both TMs to join through their relays"
wait_for "[ \"\$(committed e)\" -ge 40 ] 2>/dev/null" 60 "e: 40 commits"
wait_for "[ -n \"\$(live e \"d['tm_counts']['reattaches']\")\" ]" 30 "e: the JM's live view"
back0=$(json "$T/e.status" "d['tm_counts']['reattaches']")
{ kill -9 $r1; wait $r1; } 2>/dev/null   # tm1's connection drops
kill -USR1 $r2       # tm2's goes silent
wait_for "grep -q 'joined job .* at $jm_e with' $T/e.tm1.log &&
          grep -q 'joined job .* at $jm_e with' $T/e.tm2.log" 60 \
    "e: both TMs to reach the JM directly"
grep -q "lost the connection to the relay at $r1_ep; looking for it" "$T/e.tm1.log" ||
    fail "e: tm1 did not see its relay's connection drop"
grep -q "relay at $r1_ep not answering; trying the relay at tcp://127.0.0.1:$dead1\$" "$T/e.tm1.log" &&
grep -q "relay at tcp://127.0.0.1:$dead1 not answering; trying the job manager at $jm_e\$" "$T/e.tm1.log" ||
    fail "e: tm1 did not try its second relay, then the JM: $(grep -v 'so far' "$T/e.tm1.log" | tail -8)"
grep -q "the relay has been silent for" "$T/e.tm2.log" || fail "e: tm2 did not find its relay silent"
grep -q "relay at $r2_ep not answering; trying the job manager at $jm_e\$" "$T/e.tm2.log" ||
    fail "e: tm2 did not move on to the JM"
wait_for "[ \"\$(live e \"d['tm_counts']['reattaches'] >= $back0 + 2\")\" = True ]" 30 \
    "e: the JM to count both TMs' re-attaches"
touch "$T/e.gate"
wait $jm || fail "e: spits-jm exited $?"
wait $tm1 || fail "e: tm1 exited $?"
wait $tm2 || fail "e: tm2 exited $?"
exact e $n
{ kill -9 $r2; wait $r2; } 2>/dev/null
[ "$(json "$T/e/report.json" "all(t['done'] > 0 for t in d['tms'])")" = True ] ||
    fail "e: a TM did no work"

# --- f. a relay that refuses the handshake
start_jm g "$MODS/bench.so" -n 10
other=$JM_PID
start_jm f "$MODS/bench.so" -n 200 -s 2000
wait_for "[ -s $T/g/jm.json ] && [ -s $T/f/jm.json ]" 30 "f: both JMs to announce themselves"
jm_g=$(json "$T/g/jm.json" "d['endpoint']")
jm_f=$(json "$T/f/jm.json" "d['endpoint']")
start_tm f f.tm -n 2 --via "$jm_g"
wait $JM_PID || fail "f: spits-jm exited $?"
wait $TM_PID || fail "f: the TM exited $?"
exact f 200
grep -q "warning: relay at $jm_g refused the handshake (.*); trying the job manager at $jm_f\$" \
    "$T/f.tm.log" || fail "f: the TM did not leave the refusing relay for the JM"
grep -q "error" "$T/f.tm.log" && fail "f: the refusal was an error"
kill $other 2>/dev/null; wait $other 2>/dev/null

# --- g. jm.json moves; a relay that comes back is kept
start_jm g2 --heartbeat 0.5 "$MODS/bench.so" -n 200 -s 20000 -G "$T/g2.gate"
jm=$JM_PID
start_proxy r3 g2 100000000; r3=$PROXY_PID r3_ep=$PROXY_EP
port=$(json "$T/g2/jm.json" "d['endpoint'].rsplit(':', 1)[1]")
start_tm g2 g2.tm -n 2 --via "$r3_ep"
tm=$TM_PID
wait_for "grep -q 'joined job .* at $r3_ep with' $T/g2.tm.log" 30 "g: the TM to join through the relay"
# The same JM under another name, as a restarted JM would announce itself.
"$PY" - "$T/g2/jm.json" <<'PY'
import json, os, shutil, sys
d = json.load(open(sys.argv[1]))
d["endpoint"] = d["endpoint"].replace("127.0.0.1", "localhost")
with open(sys.argv[1] + ".new", "w") as f:
    json.dump(d, f)
shutil.copymode(sys.argv[1], sys.argv[1] + ".new")
os.replace(sys.argv[1] + ".new", sys.argv[1])
PY
kill -USR1 $r3
wait_for "grep -q 'job manager now at tcp://localhost:$port\$' $T/g2.tm.log" 30 \
    "g: the TM, its relay silent, to read the JM's new endpoint"
kill -USR2 $r3       # back within the hop's 3 s
wait_for "[ \$(grep -c 'joined job .* at $r3_ep with' $T/g2.tm.log) = 2 ]" 30 \
    "g: the TM to say HELLO again through its relay"
touch "$T/g2.gate"
wait $jm || fail "g: spits-jm exited $?"
wait $tm || fail "g: the TM exited $?"
exact g2 200
grep -q "not answering" "$T/g2.tm.log" && fail "g: the TM left a relay that came back"
echo ok
