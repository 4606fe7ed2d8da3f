#!/bin/bash
# spits-parallel under faults: a task manager killed with SIGKILL in the
# middle of a 2,000-command sweep loses no output and doubles none;
# --resume-failed runs exactly the failed commands again; --halt now
# stops at once; exit statuses are GNU parallel's.
. "$(dirname "$0")/lib.sh"

SP=$top_builddir/tools/spits-parallel
export SPITS_CMD_MODULE=$MODS/cmd.so
cd "$T" || fail "no $T"
mkdir marks
touch marks/7 marks/1000 marks/1999

# The sweep: a JM on its own (--jobdir) and two TMs of ours; three
# commands fail (their mark file exists).
timeout -s KILL 120 "$SP" -k --jobdir "$T/sweep" --bind tcp://127.0.0.1:0 --joblog jl \
    'sleep 0.005; echo "line {}"; [ ! -e marks/{} ]' ::: $(seq 2000) >out 2>sp.log &
SP_PID=$!
PIDS="$PIDS $SP_PID"
start_tm sweep tm1 -n 2
TM1=$TM_PID
start_tm sweep tm2 -n 2
wait_for "[ -s jl ] && [ \$(wc -l <jl) -gt 300 ]" 60 "300 commands to be logged"
kill -9 "$TM1"
logged_at_kill=$(($(wc -l <jl) - 1))
[ "$logged_at_kill" -lt 2000 ] || fail "the sweep ended before the TM was killed"
wait "$SP_PID"
rc=$?
[ "$rc" = 3 ] || fail "the sweep exited $rc, not 3 (three failed commands): $(tail -3 sp.log)"
seq 2000 | sed 's/^/line /' >want
cmp -s out want || fail "the sweep's output is not every line once in order: $(diff want out | head -5)"
[ "$(awk 'NR > 1' jl | wc -l)" = 2000 ] || fail "the joblog has $(awk 'NR > 1' jl | wc -l) lines, not 2000"
[ "$(awk -F '\t' 'NR > 1 { print $1 }' jl | sort -n | uniq | wc -l)" = 2000 ] ||
    fail "the joblog does not have each of 2000 commands once"
[ "$(awk -F '\t' 'NR > 1 && $7 != 0 { print $1 }' jl | sort -n | tr '\n' ' ')" = "7 1000 1999 " ] ||
    fail "the joblog's failures: $(awk -F '\t' 'NR > 1 && $7 != 0' jl)"
# The killed TM held commands it never answered: they ran elsewhere.
lost=$(json "$T/sweep/report.json" "[t['sent'] - t['done'] for t in d['tms'] if t['pid'] == $TM1][0]")
[ "$lost" -gt 0 ] || fail "the killed TM held no command (sent - done = $lost)"

# The job manager killed with SIGKILL mid-sweep, then spits-jm --resume:
# the two lives' outputs together are every line once, in order (the
# module notes what it wrote, so the journal's replay writes nothing
# twice), and so is the joblog.
timeout -s KILL 120 "$SP" -k --jobdir "$T/rj" --bind tcp://127.0.0.1:0 --joblog rj.jl \
    'sleep 0.01; echo "line {}"' ::: $(seq 300) >rj.out 2>rj.log &
SP_PID=$!
PIDS="$PIDS $SP_PID"
start_tm rj rtm1 -n 2
wait_for "[ -s rj.out ] && [ \$(wc -l <rj.out) -gt 60 ]" 60 "60 lines of output"
kill -9 "$(json "$T/rj/jm.json" "d['pid']")"
kill -9 "$TM_PID"
wait "$SP_PID"
rc=$?
[ "$rc" = 255 ] || fail "spits-parallel whose JM was killed exited $rc, not 255"
[ "$(wc -l <rj.out)" -lt 300 ] || fail "the sweep ended before its JM was killed"
timeout -s KILL 120 "$JM" -q --resume --jobdir "$T/rj" >>rj.out 2>rj2.log &
JM_PID=$!
PIDS="$PIDS $JM_PID"
start_tm rj rtm2 -n 2
wait "$JM_PID"
rc=$?
[ "$rc" = 0 ] || fail "the resumed JM exited $rc: $(tail -3 rj2.log)"
seq 300 | sed 's/^/line /' | cmp -s - rj.out || fail "output across the JM's lives: $(seq 300 | sed 's/^/line /' | diff - rj.out | head -5)"
[ "$(awk -F '\t' 'NR > 1 { print $1 }' rj.jl | sort -n | uniq | wc -l)" = 300 ] &&
    [ "$(wc -l <rj.jl)" = 301 ] || fail "the joblog across the JM's lives has $(wc -l <rj.jl) lines"

# --resume-failed (the marks gone): exactly those three run again.
rm marks/*
timeout -s KILL 60 "$SP" -k --joblog jl --resume-failed -j 2 \
    'sleep 0.005; echo "line {}"; [ ! -e marks/{} ]' ::: $(seq 2000) >out2 2>sp2.log
rc=$?
[ "$rc" = 0 ] || fail "--resume-failed exited $rc: $(cat sp2.log)"
printf 'line 7\nline 1000\nline 1999\n' | cmp -s - out2 || fail "--resume-failed printed: $(head -5 out2)"
[ "$(awk -F '\t' 'NR > 2001 { print $1 "/" $7 }' jl | sort -n | tr '\n' ' ')" = "7/0 1000/0 1999/0 " ] ||
    fail "--resume-failed appended: $(awk 'NR > 2001' jl)"
[ "$(grep -c '^Seq' jl)" = 1 ] || fail "the joblog has more than one header"
# And again: nothing left to run.
timeout -s KILL 60 "$SP" --joblog jl --resume-failed 'echo {}' ::: $(seq 2000) >out3 2>&1 ||
    fail "a third run exited $?"
[ ! -s out3 ] && [ "$(wc -l <jl)" = 2004 ] || fail "a third run ran: $(head -3 out3)"

# --halt now,fail=1: the sleeping commands are killed at once; the
# status is the failed command's exit value.
start=$(date +%s)
timeout -s KILL 60 "$SP" -k -j 2 --halt now,fail=1 'sleep {}; echo {}; exit 5' ::: 0.5 29.71 29.71 29.71 \
    >halt.out 2>halt.log
rc=$?
[ "$rc" = 5 ] || fail "--halt now,fail=1 exited $rc, not 5: $(cat halt.log)"
[ "$(cat halt.out)" = 0.5 ] || fail "--halt now printed: $(cat halt.out)"
[ $(($(date +%s) - start)) -lt 25 ] || fail "--halt now waited for the running commands"
pgrep -f 'sleep 29.71' >/dev/null && fail "a command halted now is still running"

# --timeout: killed, GNU parallel's -1 and signal 15 in the joblog.
timeout -s KILL 60 "$SP" --timeout 0.5 --joblog jt 'sleep {}' ::: 0 30 >/dev/null 2>t.log
rc=$?
[ "$rc" = 1 ] || fail "--timeout exited $rc, not 1"
[ "$(awk -F '\t' 'NR > 1 { print $1 "/" $7 "/" $8 }' jt | sort | tr '\n' ' ')" = "1/0/0 2/-1/15 " ] ||
    fail "--timeout's joblog: $(cat jt)"
grep -q 'timed out' t.log || fail "--timeout said nothing: $(cat t.log)"

# --output-cap: over it, the command is killed and fails, with a reason.
timeout -s KILL 60 "$SP" --output-cap 1000 'head -c {} /dev/zero' ::: 10 100000 >cap.out 2>cap.log
rc=$?
[ "$rc" = 1 ] || fail "--output-cap exited $rc, not 1"
grep -q 'passed the cap of 1000 bytes' cap.log || fail "--output-cap said: $(cat cap.log)"

# More than 100 failures: 101. A bad option: 255 and one line.
seq 150 | timeout -s KILL 60 "$SP" -j 2 false >/dev/null 2>&1
rc=$?
[ "$rc" = 101 ] || fail "150 failed commands: exit $rc, not 101"
"$SP" --bogus echo ::: a >bad.out 2>bad.log
rc=$?
[ "$rc" = 255 ] || fail "a bad option: exit $rc, not 255"
[ "$(wc -l <bad.log)" = 1 ] && grep -q "unknown option '--bogus'" bad.log ||
    fail "a bad option said: $(cat bad.log)"
"$SP" --halt sometimes echo ::: a >bad.out 2>bad.log
[ $? = 255 ] && [ "$(wc -l <bad.log)" = 1 ] || fail "a bad --halt: $(cat bad.log)"
# GNU parallel's features not here are refused, not run wrong.
"$SP" echo {%} ::: a >bad.out 2>bad.log
[ $? = 255 ] && [ "$(wc -l <bad.log)" = 1 ] && [ ! -s bad.out ] || fail "{%}: $(cat bad.log)"
"$SP" --pipe cat <bad.log >bad.out 2>bad.log2
[ $? = 255 ] && [ "$(wc -l <bad.log2)" = 1 ] || fail "--pipe: $(cat bad.log2)"
echo ok
