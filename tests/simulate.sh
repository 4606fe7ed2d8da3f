#!/bin/bash
# spits-tm --simulate: many virtual TMs in one process, each with its own
# connection, CURVE handshake and protocol, against a real JM.
#   a. 300 virtual TMs (fewer under a sanitizer) run a job: exact, every
#      one joined (the JM's count and the harness's), none lost, every
#      committed task run here and nothing run that was not sent.
#   b. churn: virtual TMs leave after about 0.4 s, half as if killed (no
#      BYE), half drained, and new ones take their place: exact, nothing
#      committed twice (the bench module fails the job if so), the JM's
#      join count matches the harness's, each TM that left is a loss or a
#      leave, the report's TM
#      list stays bounded (--keep-dead-tms) with complete totals.
#   c. SIGTERM drains every virtual TM: each says BYE (no loss); a second
#      harness finishes the job, exact.
#   d. its options: a clear error and exit 2.
#   e. 1,050 virtual TMs and a relay: the live view lists 1,000 of them
#      (JM_STATUS_TMS), the relay among them though it did nothing, and
#      counts them all; spits-status says how many it left out.
. "$(dirname "$0")/lib.sh"

k=300 w=2 n=12000 st=0.1
# (a's every TM joins before the work runs out: under a sanitizer its 60
# CURVE handshakes take up to 6 s, so its tasks are longer there)
sanitized && k=60 n=2400 st=0.2
# Under TSan, one libzmq I/O thread here serves every virtual TM while the
# slowed main thread lags behind it. tests/tsan.supp can hide a received
# message's hand-off only while TSan still has the I/O thread's side of it
# in its history; once that is gone ("failed to restore the stack") a read
# in spits_wire_parse is reported. Job b's harness, the busiest, needs
# more history than the default 2 keeps; 7 is the most TSan keeps (4M
# accesses, 32 MiB a busy thread), for this test only: +10-60 MB of the
# harness's RSS.
tsanitized && export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }history_size=7"
# summary FIELD LOG: a number from the harness's last line ("simulate done: ...")
summary() {
    sed -n "s/.*simulate done: .*$1.*/\\1/p" "$2" | tail -1
}

# a. A healthy run. (A BYE after the job's END is no leave: tm_leaves 0.)
start_jm a --journal off "$MODS/bench.so" -n $n
jm=$JM_PID
timeout -s KILL 120 "$TM" --jobdir "$T/a" --simulate $k -n $w --sim-task-time $st \
    >"$T/a.sim.log" 2>&1 || fail "the harness exited $?"
wait $jm || fail "job a exited $?"
[ "$(cat "$T/a.out")" = "$(bench_checksum $n)" ] || fail "a printed '$(cat "$T/a.out")'"
r=$T/a/report.json
[ "$(summary 'joins \([0-9]*\) ' "$T/a.sim.log")" = $k ] || fail "harness joins: $(tail -1 "$T/a.sim.log")"
[ "$(summary 'drained, \([0-9]*\) at the end, 0 failed' "$T/a.sim.log")" = $k ] ||
    fail "harness ends: $(tail -1 "$T/a.sim.log")"
[ "$(json $r "[d['counters'][c] for c in ('committed', 'tm_joins', 'tm_losses', 'tm_leaves')]")" = \
  "[$n, $k, 0, 0]" ] || fail "a's counts: $(json $r "d['counters']")"
# Every committed task was run here, and nothing ran that was not sent.
runs=$(summary 'tasks run \([0-9]*\);' "$T/a.sim.log")
[ "$runs" -ge $n ] && [ "$runs" -le "$(json $r "d['counters']['sent']")" ] ||
    fail "harness ran $runs, JM: $(json $r "d['counters']")"

# b. Churn through one job. (Killed TMs are found by their dropped
# connections; --tm-timeout is long enough that no drained TM is lost to
# a slow harness, as one was under TSan with 3 s.)
n=20000 k=100
sanitized && n=4000 k=30
start_jm b --journal off --keep-dead-tms 50 --tm-timeout 10 "$MODS/bench.so" -n $n
jm=$JM_PID
timeout -s KILL 120 "$TM" --jobdir "$T/b" --simulate $k -n $w --sim-task-time 0.05 \
    --sim-churn 0.4 --sim-kill 50 >"$T/b.sim.log" 2>&1 || fail "the churn harness exited $?"
wait $jm || fail "job b exited $?"
[ "$(cat "$T/b.out")" = "$(bench_checksum $n)" ] || fail "b printed '$(cat "$T/b.out")'"
r=$T/b/report.json
joins=$(summary 'joins \([0-9]*\) ' "$T/b.sim.log")
killed=$(summary 'left: \([0-9]*\) killed' "$T/b.sim.log")
drained=$(summary 'killed, \([0-9]*\) drained' "$T/b.sim.log")
[ "$joins" -ge $((3 * k)) ] && [ "$killed" -ge 10 ] && [ "$drained" -ge 10 ] ||
    fail "too little churn: $(tail -1 "$T/b.sim.log")"
grep -q "simulate done: .* 0 failed" "$T/b.sim.log" || fail "b: $(tail -1 "$T/b.sim.log")"
c="d['counters']"
# The JM saw every TM the harness saw join (and those that said HELLO
# but had no WELCOME read when the job ended).
jm_joins=$(json $r "$c['tm_joins']")
[ "$jm_joins" -ge "$joins" ] && [ "$jm_joins" -le $((joins + killed)) ] ||
    fail "JM joins $jm_joins, harness $joins (killed $killed)"
[ "$(json $r "$c['committed']")" = $n ] || fail "b committed $(json $r "$c")"
# A drained TM's BYE may still come after the JM saw its connection drop
# (then it is a loss too, as in tm-churn.sh): each of them is one or the
# other, and none is made up. A TM lost and then back (a re-attach: under
# TSan the harness can fall silent for --tm-timeout) left once more.
losses=$(json $r "$c['tm_losses']") leaves=$(json $r "$c['tm_leaves']")
back=$(json $r "$c['tm_reattaches']")
[ "$losses" -ge 1 ] && [ "$leaves" -ge 1 ] && [ "$leaves" -le "$drained" ] &&
    [ $((losses + leaves)) -le $((killed + drained + back)) ] ||
    fail "b losses $losses, leaves $leaves, re-attaches $back; killed $killed, drained $drained"
tt="d['tm_totals']"
[ "$(json $r "[len(d['tms']) <= $k + 50, $tt['tms'] == $jm_joins, $tt['listed'] == len(d['tms'])]")" = \
  "[True, True, True]" ] || fail "b's TM list: $(json $r "[len(d['tms']), $tt]")"

# c. SIGTERM drains every virtual TM (k leaves, no loss); a second
# harness ends the job.
n=400 k=20
start_jm c --journal off "$MODS/bench.so" -n $n
jm=$JM_PID
"$TM" --jobdir "$T/c" --simulate $k -n 1 --sim-task-time 0.5 >"$T/c.sim.log" 2>&1 &
sim=$!
PIDS="$PIDS $sim"
wait_for "[ \"\$(committed c)\" -ge $k ] 2>/dev/null" 60 "job c to commit a round"
kill -TERM $sim
wait $sim || fail "the drained harness exited $?"
[ "$(summary 'drained, \([0-9]*\) at the end, 0 failed' "$T/c.sim.log")" = $k ] ||
    fail "c: $(tail -1 "$T/c.sim.log")"
timeout -s KILL 120 "$TM" --jobdir "$T/c" --simulate 10 -n 4 --sim-task-time 0.01 \
    >"$T/c.sim2.log" 2>&1 || fail "the second harness exited $?"
wait $jm || fail "job c exited $?"
[ "$(cat "$T/c.out")" = "$(bench_checksum $n)" ] || fail "c printed '$(cat "$T/c.out")'"
# (every loss came back: a re-attach, as in b)
[ "$(json "$T/c/report.json" "[d['counters'][c] for c in ('tm_joins', 'tm_leaves')] +
                               [d['counters']['tm_losses'] - d['counters']['tm_reattaches']]")" = \
  "[$((k + 10)), $k, 0]" ] || fail "c's counts: $(json "$T/c/report.json" "d['counters']")"

# e. More TMs than a STATUS document lists (not under a sanitizer: 1,050
# CURVE handshakes take it minutes).
if ! sanitized; then
    k=1050 n=20000
    start_jm e --journal off --tm-timeout 60 "$MODS/bench.so" -n $n
    jm=$JM_PID
    "$TM" --jobdir "$T/e" --simulate $k -n 1 --sim-task-time 1 >"$T/e.sim.log" 2>&1 &
    sim=$!
    PIDS="$PIDS $sim"
    wait_for "[ \"\$(live e \"d['tms_alive']\")\" = $k ] 2>/dev/null" 90 "$k virtual TMs to join"
    start_relay e e.relay "$(free_port)"
    relay=$RELAY_PID
    wait_for "[ \"\$(live e \"d['tms_alive']\")\" = $((k + 1)) ] 2>/dev/null" 30 "the relay to join"
    [ "$(live e "[d['tms_listed'], len(d['tms']), [t['pid'] for t in d['tms'] if t.get('relay')]]")" = \
      "[1000, 1000, [$relay]]" ] || fail "e: the live view: $(json "$T/e.status" "[d['tms_alive'], d['tms_listed'], len(d['tms'])]")"
    "$top_builddir/tools/spits-status" --jobdir "$T/e" >"$T/e.status.txt" || fail "e: spits-status failed"
    grep -q "task managers: $((k + 1)) alive" "$T/e.status.txt" &&
        grep -q "($((k + 1 - 1000)) more not listed" "$T/e.status.txt" ||
        fail "e: spits-status: $(head -12 "$T/e.status.txt")"
    wait $sim || fail "e: the harness exited $?"
    wait $jm || fail "job e exited $?"
    wait $relay || fail "e: the relay exited $?"
    [ "$(cat "$T/e.out")" = "$(bench_checksum $n)" ] || fail "e printed '$(cat "$T/e.out")'"
fi

# d. Options.
bad() {
    local want=$1; shift
    out=$("$TM" --jobdir "$T/none" "$@" 2>&1); rc=$?
    [ $rc = 2 ] && case $out in *"$want"*) true ;; *) false ;; esac ||
        fail "spits-tm $*: exit $rc, '$out'"
}
bad "--simulate wants a number from 1 to 3500, not '0'" --simulate 0
bad "--simulate wants a number from 1 to 3500, not '9999'" --simulate 9999
bad "--sim-task-time, --sim-churn and --sim-kill need --simulate K" --sim-churn 1
bad "--sim-kill wants a percentage from 0 to 100, not '101'" --simulate 2 --sim-kill 101
bad "--simulate runs virtual workers: it takes no --isolate" --simulate 2 --isolate
bad "--sim-task-time wants seconds (at least 0.001), not '0'" --simulate 2 --sim-task-time 0
bad "--sim-task-time wants seconds (at least 0.001), not '1e-10'" --simulate 2 --sim-task-time 1e-10
echo ok
