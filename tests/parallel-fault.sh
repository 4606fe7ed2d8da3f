#!/bin/bash
# spits-parallel under faults: a task manager killed with SIGKILL in the
# middle of an 800-command sweep loses no output and doubles none;
# --resume-failed runs exactly the failed commands again; --halt now
# stops at once; exit statuses are GNU parallel's.
. "$(dirname "$0")/lib.sh"

SP=$top_builddir/tools/spits-parallel
export SPITS_CMD_MODULE=$MODS/cmd.so
cd "$T" || fail "no $T"
mkdir marks
touch marks/7 marks/400 marks/799

# The sweep: a JM on its own (--jobdir) and two TMs of ours; three
# commands fail (their mark file exists).
timeout -s KILL 120 "$SP" -k --jobdir "$T/sweep" --bind tcp://127.0.0.1:0 --joblog jl \
    'sleep 0.005; echo "line {}"; [ ! -e marks/{} ]' ::: $(seq 800) >out 2>sp.log &
SP_PID=$!
PIDS="$PIDS $SP_PID"
start_tm sweep tm1 -n 2
TM1=$TM_PID
start_tm sweep tm2 -n 2
wait_for "[ -s jl ] && [ \$(wc -l <jl) -gt 150 ]" 60 "150 commands to be logged"
kill -9 "$TM1"
logged_at_kill=$(($(wc -l <jl) - 1))
[ "$logged_at_kill" -lt 800 ] || fail "the sweep ended before the TM was killed"
wait "$SP_PID"
rc=$?
[ "$rc" = 3 ] || fail "the sweep exited $rc, not 3 (three failed commands): $(tail -3 sp.log)"
seq 800 | sed 's/^/line /' >want
cmp -s out want || fail "the sweep's output is not every line once in order: $(diff want out | head -5)"
[ "$(awk 'NR > 1' jl | wc -l)" = 800 ] || fail "the joblog has $(awk 'NR > 1' jl | wc -l) lines, not 800"
[ "$(awk -F '\t' 'NR > 1 { print $1 }' jl | sort -n | uniq | wc -l)" = 800 ] ||
    fail "the joblog does not have each of 800 commands once"
[ "$(awk -F '\t' 'NR > 1 && $7 != 0 { print $1 }' jl | sort -n | tr '\n' ' ')" = "7 400 799 " ] ||
    fail "the joblog's failures: $(awk -F '\t' 'NR > 1 && $7 != 0' jl)"
# The killed TM held commands it never answered: they ran elsewhere.
lost=$(json "$T/sweep/report.json" "[t['sent'] - t['done'] for t in d['tms'] if t['pid'] == $TM1][0]")
[ "$lost" -gt 0 ] || fail "the killed TM held no command (sent - done = $lost)"

# The job manager killed with SIGKILL mid-sweep, then spits-jm --resume:
# the two lives' outputs together are every line once, in order (the
# module notes what it wrote, so the journal's replay writes nothing
# twice, and cuts what it wrote without a note), and so is the joblog.
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
# As if the kill came between a command's writes and its note in
# parallel.tasks.done: output that no note covers, which the resumed
# life cuts (it writes that command again).
printf 'line 9999 cut sh' >>rj.out
printf '9999\t:\t1' >>rj.jl
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
    'sleep 0.005; echo "line {}"; [ ! -e marks/{} ]' ::: $(seq 800) >out2 2>sp2.log
rc=$?
[ "$rc" = 0 ] || fail "--resume-failed exited $rc: $(cat sp2.log)"
printf 'line 7\nline 400\nline 799\n' | cmp -s - out2 || fail "--resume-failed printed: $(head -5 out2)"
[ "$(awk -F '\t' 'NR > 801 { print $1 "/" $7 }' jl | sort -n | tr '\n' ' ')" = "7/0 400/0 799/0 " ] ||
    fail "--resume-failed appended: $(awk 'NR > 801' jl)"
[ "$(grep -c '^Seq' jl)" = 1 ] || fail "the joblog has more than one header"
# And again: nothing left to run.
timeout -s KILL 60 "$SP" --joblog jl --resume-failed 'echo {}' ::: $(seq 800) >out3 2>&1 ||
    fail "a third run exited $?"
[ ! -s out3 ] && [ "$(wc -l <jl)" = 804 ] || fail "a third run ran: $(head -3 out3)"

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

# --timeout: killed, GNU parallel's -1 and signal 15 in the joblog. (3 s:
# 'sleep 0' must never reach it, on a loaded machine as well)
timeout -s KILL 60 "$SP" --timeout 3 --joblog jt 'sleep {}' ::: 0 30 >/dev/null 2>t.log
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
[ "$(wc -l <bad.log)" = 1 ] && grep -q "option '--bogus' is not supported" bad.log ||
    fail "a bad option said: $(cat bad.log)"
"$SP" -X2 echo ::: a >bad.out 2>bad.log
[ $? = 255 ] && [ "$(wc -l <bad.log)" = 1 ] && grep -q "option '-X' is not supported" bad.log ||
    fail "-X2 said: $(cat bad.log)"
"$SP" --halt sometimes echo ::: a >bad.out 2>bad.log
[ $? = 255 ] && [ "$(wc -l <bad.log)" = 1 ] || fail "a bad --halt: $(cat bad.log)"
# --line-buffer with what it cannot go with: one line naming it.
for o in "--jobdir $T/lbj" "--results lbr" "--max-copies 2"; do
    "$SP" --lb $o echo ::: a >bad.out 2>bad.log
    [ $? = 255 ] && [ "$(wc -l <bad.log)" = 1 ] && [ ! -s bad.out ] &&
        grep -q -- "--line-buffer does not go with ${o% *}" bad.log || fail "--lb $o: $(cat bad.log)"
done
[ ! -e "$T/lbj" ] && [ ! -e lbr ] || fail "a refused --lb made its directories"
# GNU parallel's features not here are refused, not run wrong.
"$SP" echo '{= s/a/b/ =}' ::: a >bad.out 2>bad.log
[ $? = 255 ] && [ "$(wc -l <bad.log)" = 1 ] && [ ! -s bad.out ] || fail "{= =}: $(cat bad.log)"
"$SP" --pipe cat <bad.log >bad.out 2>bad.log2
[ $? = 255 ] && [ "$(wc -l <bad.log2)" = 1 ] || fail "--pipe: $(cat bad.log2)"
# Where commands run: a --jobdir job carries the submitter's directory
# and environment (--env: only those named); its TM, started elsewhere
# with another environment, runs them there, keeping its own others.
# Meanwhile a second spits-parallel on the busy job dir is refused before
# it writes anything, to the job dir or to the joblog.
mkdir sub
(cd sub && MYVAR=fromshell OTHER=shell-other timeout -s KILL 60 "$SP" -k --env MYVAR \
    --env OTHER2 --jobdir "$T/ej" --bind tcp://127.0.0.1:0 --joblog "$T/ej.jl" \
    'echo "cwd=$(pwd) MYVAR=$MYVAR OTHER=$OTHER"' ::: 1 >"$T/ej.out" 2>"$T/ej.log") &
SP_PID=$!
PIDS="$PIDS $SP_PID"
wait_for "[ -s ej/jm.json ]" 30 "the job manager of ej"
# (parallel.tasks is the FIFO the running sweep feeds: its identity is
# compared, not its bytes, which reading would take from the JM)
stat -c '%i %F' ej/parallel.tasks ej/parallel.env >ej.tasks
cp ej.jl ej.jl0
"$SP" --jobdir "$T/ej" --joblog "$T/ej.jl" echo ::: x >busy.out 2>busy.log
rc=$?
[ "$rc" = 255 ] && [ "$(wc -l <busy.log)" = 1 ] && grep -q "job dir $T/ej is in use" busy.log ||
    fail "a busy --jobdir: exit $rc: $(cat busy.log)"
[ "$(stat -c '%i %F' ej/parallel.tasks ej/parallel.env)" = "$(cat ej.tasks)" ] &&
    grep -q fifo ej.tasks && cmp -s ej.jl0 ej.jl ||
    fail "a refused spits-parallel wrote into the busy job dir or its joblog"
(cd / && MYVAR=fromtm OTHER=tm-other "$TM" --jobdir "$T/ej" --wait 30 >"$T/ejtm.log" 2>&1) &
PIDS="$PIDS $!"
wait "$SP_PID" || fail "the --jobdir job exited $?: $(cat ej.log)"
[ "$(cat ej.out)" = "cwd=$T/sub MYVAR=fromshell OTHER=tm-other 1" ] ||
    fail "a --jobdir command ran in the wrong place: $(cat ej.out)"
[ "$(awk -F '\t' 'NR == 2 { print $2 }' ej.jl)" = "$(hostname)" ] ||
    fail "a --jobdir run's joblog Host is not the TM's: $(sed -n 2p ej.jl)"
[ "$(stat -c %a ej)" = 700 ] || fail "the job dir is mode $(stat -c %a ej), not 700"
# A --workdir missing where the command runs fails it, never runs it
# elsewhere: a line in stderr and the joblog.
timeout -s KILL 60 "$SP" --wd "$T/missing" --joblog wd.jl 'pwd; echo ran' ::: 1 >wd.out 2>wd.log
rc=$?
[ "$rc" = 1 ] && [ ! -s wd.out ] && grep -q "cannot run the command in $T/missing on" wd.log ||
    fail "a missing --workdir: exit $rc: $(cat wd.out wd.log)"
[ "$(awk -F '\t' 'NR == 2 { print $7 }' wd.jl)" = 126 ] || fail "a missing --workdir's joblog: $(cat wd.jl)"
mkdir wd
[ "$(cd / && "$SP" --workdir "$T/wd" 'pwd; : {}' ::: 1)" = "$T/wd" ] || fail "--workdir is not where it ran"

# Killed with SIGKILL: its job and running commands stop within seconds
# (not their 20 s), no command starts
# after, and its temporary dirs go.
mkdir kmarks ktmp
TMPDIR=$T/ktmp "$SP" -j 2 'touch kmarks/{}; sleep 20' ::: $(seq 8) >/dev/null 2>&1 &
K_PID=$!
PIDS="$PIDS $K_PID"
wait_for "[ -n \"\$(ls kmarks)\" ]" 30 "a command to start"
kill -9 "$K_PID"
wait_for "! pgrep -f 'touch kmarks' >/dev/null && ! pgrep -f '$T/ktmp' >/dev/null" 15 \
    "the killed job's processes to end"
started=$(ls kmarks | wc -l)
sleep 1
[ "$(ls kmarks | wc -l)" = "$started" ] && [ "$started" -le 4 ] ||
    fail "commands started after the kill: $(ls kmarks | tr '\n' ' ')"
wait_for "[ -z \"\$(ls ktmp)\" ]" 10 "the temporary dirs to go: $(ls ktmp)"

# A joblog whose last line was cut off: ended there with a warning, the
# next line not glued on; that command runs again, the others do not.
printf 'Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n' >cut.jl
printf '1\t:\t1.000\t     0.000\t0\t2\t0\t0\techo 1\n2\t:\t1.0' >>cut.jl
timeout -s KILL 60 "$SP" -k --resume --joblog cut.jl echo ::: 1 2 3 >cut.out 2>cut.log
rc=$?
[ "$rc" = 0 ] && [ "$(cat cut.out | tr '\n' ' ')" = "2 3 " ] || fail "a cut-off joblog: exit $rc: $(cat cut.out cut.log)"
[ "$(wc -l <cut.log)" = 1 ] && grep -q "cut-off line" cut.log || fail "a cut-off joblog said: $(cat cut.log)"
[ "$(awk -F '\t' 'NR > 3 && NF == 9 { print $1 }' cut.jl | sort | tr '\n' ' ')" = "2 3 " ] &&
    [ "$(sed -n 3p cut.jl)" = "$(printf '2\t:\t1.0')" ] || fail "the repaired joblog: $(cat cut.jl)"

# Refused at start, in one line: an --output-cap no result can carry,
# --tms with --jobdir, --resume with a joblog that is a directory.
for args in "--output-cap 2000000000" "--tms 2 --jobdir $T/tj" "--resume --joblog $T"; do
    "$SP" $args echo ::: a >bad.out 2>bad.log
    rc=$?
    [ $rc = 255 ] && [ "$(wc -l <bad.log)" = 1 ] && [ ! -s bad.out ] || fail "$args: exit $rc: $(cat bad.log)"
done

# Its only TM gone with commands left (/bin/true for spits-tm): the job
# ends, 255 and one line, not a wait for ever.
SPITS_TM=/bin/true timeout -s KILL 60 "$SP" echo ::: a >orph.out 2>orph.log
rc=$?
[ $rc = 255 ] && [ "$(wc -l <orph.log)" = 1 ] && grep -q "every task manager has exited with work left" orph.log ||
    fail "a job whose TM left: exit $rc: $(cat orph.log)"

# A full disk under the joblog and --results (a small tmpfs; root only):
# exit 255 and one line, not 0 and a line per command.
if [ "$(id -u)" = 0 ] && mkdir full && mount -t tmpfs -o size=64k tmpfs full 2>/dev/null; then
    head -c 61440 /dev/zero >full/fill
    timeout -s KILL 60 "$SP" --joblog full/jl echo ::: $(seq 150) >/dev/null 2>full.log
    rc=$?
    rm -f full/jl
    timeout -s KILL 60 "$SP" --results full/res 'echo {}' ::: $(seq 150) >/dev/null 2>full2.log
    rc2=$?
    umount full
    [ "$rc" = 255 ] && [ "$(wc -l <full.log)" = 1 ] || fail "a full joblog: exit $rc: $(head -3 full.log)"
    [ "$rc2" = 255 ] && [ "$(wc -l <full2.log)" = 1 ] || fail "full --results: exit $rc2: $(head -3 full2.log)"
fi
echo ok
