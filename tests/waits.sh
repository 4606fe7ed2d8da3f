#!/bin/bash
# waits.sh - a wait says what it waits for, and a job manager that is
# gone is named as gone: a TM on a job dir that does not exist (yet) says
# so a second in, and again every $SPITS_WAIT_REPEAT_S (a minute unless
# set); a JM no TM joined says, once, how to start one; when the JM is
# killed, its TM and spits-status say that its process is gone and that
# spits-jm --resume continues the job; a TM stopped while its job ended
# is told, once resumed, that the job is over.
. "$(dirname "$0")/lib.sh"
ST=$top_builddir/tools/spits-status
host=$(hostname)

# A mistyped job dir: the first line a second in, then every second.
SPITS_WAIT_REPEAT_S=1 timeout -s KILL 30 "$TM" --jobdir "$T/TYPO" --wait 3.5 \
    >"$T/typo.log" 2>&1 && fail "a TM with no job dir exited 0"
[ "$(sed -n 1p "$T/typo.log")" = "spits-tm: waiting up to 4 s for the job manager: the job dir $T/TYPO does not exist (yet)" ] ||
    fail "first line: $(cat "$T/typo.log")"
[ "$(grep -c "^spits-tm: still waiting for the job manager ([0-9] s of 4 s): the job dir $T/TYPO does not exist (yet)\$" "$T/typo.log")" = 2 ] ||
    fail "repeated lines: $(cat "$T/typo.log")"
tail -1 "$T/typo.log" | grep -qx "spits-tm: error: no jm.json appeared in $T/TYPO within 4 s" ||
    fail "last line: $(cat "$T/typo.log")"
# The dir exists, jm.json does not.
mkdir -m 700 "$T/empty"
timeout -s KILL 30 "$TM" --jobdir "$T/empty" --wait 1.5 >"$T/empty.log" 2>&1
[ "$(sed -n 1p "$T/empty.log")" = "spits-tm: waiting up to 2 s for the job manager: no jm.json in $T/empty yet (spits-jm --jobdir $T/empty writes it)" ] ||
    fail "empty dir: $(cat "$T/empty.log")"

# A JM no TM joins: after 10 s, once, how to start one (the dir absolute).
start_jm job "$MODS/bench.so" -n 200 -s 1000 -G "$T/gate"
wait_for "grep -q 'no task manager has joined' $T/job.jm.log" 20 "the JM's hint"
[ "$(grep 'no task manager' "$T/job.jm.log")" = "spits-jm: no task manager has joined in 10 s; start one with: spits-tm --jobdir $T/job" ] ||
    fail "hint: $(cat "$T/job.jm.log")"
# The JM killed mid-job: gone, and resumable (its journal is in the dir).
start_tm job tm -n 2 --reconnect-timeout 2; tm=$TM_PID
wait_for "grep -q joined $T/job.jm.log" 30 "the TM to join"
wait_for "[ \"\$(committed job)\" = 199 ]" 60 "all but the gated task to commit"
jm=$(json "$T/job/jm.json" "d['pid']")   # (JM_PID is its timeout's)
kill -9 $jm
touch "$T/gate"   # (the worker running the gated task finishes)
wait $tm && fail "the TM exited 0 after its JM was killed"
gone="its process (spits-jm pid $jm on $host) is gone; spits-jm --resume --jobdir $T/job continues the job"
grep -q "^spits-tm: error: lost the job manager at tcp://127.0.0.1:[0-9]*: silent for 2 s; $gone\$" "$T/tm.log" ||
    fail "TM: $(cat "$T/tm.log")"
out=$("$ST" --jobdir "$T/job" 2>&1); rc=$?
[ $rc = 1 ] && [ "$out" = "spits-status: error: job $(json "$T/job/jm.json" "d['job_id']"): no job manager answers; $gone" ] ||
    fail "spits-status: $rc $out"

# A TM stopped (SIGSTOP) longer than its --reconnect-timeout, while the JM
# counts it lost (so it sends it no END) and the job ends on the other
# TM: resumed, it finds the job over in report.json and exits 0, instead
# of calling the JM lost.
start_jm end --tm-timeout 2 --heartbeat 0.5 "$MODS/bench.so" -n 400 -s 20000
start_tm end end.stopped -n 1 --reconnect-timeout 2; stopped=$TM_PID
start_tm end end.other -n 1; other=$TM_PID
wait_for "[ \"\$(tm_done end $stopped)\" -ge 1 ] 2>/dev/null" 30 "the TM to be stopped to run a task"
kill -STOP $stopped
wait_for "grep -q 'TM .*:$stopped lost (silent for' $T/end.jm.log" 30 "the JM to lose the stopped TM"
wait $JM_PID || fail "the job with a stopped TM: spits-jm exited $?"
wait $other || fail "the other TM exited $?"
sleep 2.5   # (past the stopped TM's --reconnect-timeout, had it not been already)
kill -CONT $stopped
wait $stopped || fail "the TM resumed after its job ended exited $?: $(tail -2 "$T/end.stopped.log")"
tail -1 "$T/end.stopped.log" | grep -qx "spits-tm: job $(json "$T/end/report.json" "d['job_id']") is over (report.json written)" ||
    fail "the resumed TM said: $(tail -3 "$T/end.stopped.log")"
echo PASS
