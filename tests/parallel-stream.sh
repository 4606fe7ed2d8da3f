#!/bin/bash
# spits-parallel streams its input: a command starts as soon as its
# arguments exist, a pipe that never ends works, and memory and disk are
# bounded by what is in flight, not by the size of the input: 2^40
# combinations start at once, and a stop leaves nothing behind.
. "$(dirname "$0")/lib.sh"

SP=$top_builddir/tools/spits-parallel
export SPITS_CMD_MODULE=$MODS/cmd.so
cd "$T" || fail "no $T"
mkdir tmp
export TMPDIR=$T/tmp

# hwm PID: the process's peak resident size, in kB
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
# sp_of PID: spits-parallel under timeout PID
sp_of() { pgrep -P "$1" -x spits-parallel; }
# jm_of PID: the job manager under spits-parallel PID (through spits-run)
jm_of() { pgrep -f "spits-jm .*$TMPDIR/spits-parallel-" | head -1; }

# The first line's command runs while the input's next line is not
# written yet: the writer waits for a's output (30 s at most: a
# sanitizer's JM and TMs start slowly) before it writes b.
(echo a
 for _ in $(seq 300); do [ -s out ] && break; sleep 0.1; done
 cp out out.before-b; echo b) |
    timeout -s KILL 60 "$SP" -j 2 echo >out 2>err.log
rc=$?
[ "$rc" = 0 ] || fail "a streamed input: exit $rc: $(cat err.log)"
[ "$(cat out.before-b)" = a ] || fail "a was not printed within 30 s, before b came: '$(cat out.before-b)'"
[ "$(sort out | tr '\n' ' ')" = "a b " ] || fail "a streamed input printed: $(cat out)"

# --line-buffer: a line is printed as the command writes it, an
# unfinished one only when it ends; with -k the oldest command's lines
# as they come and the later ones' after it. The commands look at the
# outputs 2 s after their first line, while they run.
timeout -s KILL 60 "$SP" --lb ::: 'echo a; printf b; sleep 2; cp lb.out lb.before; echo c' \
    >lb.out 2>lb.err &
LB=$!
timeout -s KILL 60 "$SP" -j 2 -k --lb ::: 'echo a; sleep 2; cp lbk.out lbk.before; echo a2' 'echo b' \
    >lbk.out 2>lbk.err
rc=$?
wait "$LB" || fail "--lb: exit $?: $(cat lb.err)"
[ "$rc" = 0 ] || fail "--lb -k: exit $rc: $(cat lbk.err)"
[ "$(cat lb.before)" = a ] || fail "--lb: 2 s into the command, it had printed '$(cat lb.before)'"
[ "$(tr '\n' ' ' <lb.out)" = "a bc " ] || fail "--lb printed: $(cat lb.out)"
[ "$(cat lbk.before)" = a ] || fail "--lb -k: 2 s into the command, it had printed '$(cat lbk.before)'"
[ "$(tr '\n' ' ' <lbk.out)" = "a a2 b " ] || fail "--lb -k printed: $(cat lbk.out)"
# Long lines (several frames) of three commands at once come out whole;
# each run of a command that --retries runs again prints its lines.
"$SP" -j 3 --lb 'for i in 1 2 3; do head -c 30000 /dev/zero | tr "\0" {}; echo; done' ::: x y z |
    awk '{ bad += length($0) != 30000 || $0 !~ ("^" substr($0, 1, 1) "+$") } END { print NR, bad + 0 }' \
    >lbl.out
[ "$(cat lbl.out)" = "9 0" ] || fail "--lb long lines: $(cat lbl.out) (lines, not whole)"
"$SP" -j 1 --lb --retries 2 --tag 'echo try; exit 1' ::: a >lbr.out 2>lbr.err
rc=$?
[ "$rc" = 1 ] && [ "$(tr '\t\n' ': ' <lbr.out)" = "a:try a:try " ] ||
    fail "--lb --retries 2: exit $rc, printed $(cat lbr.out) $(cat lbr.err)"

# The input options stream too: --header : takes stdin's first line,
# -N2 each two records, --colsep their columns, :::+ a source linked to
# stdin; the first command runs before the rest of the input is written.
(echo 'x y'; echo 'a b'; echo 'c d'; sleep 3; cp opts.out opts.before; echo 'e f') |
    timeout -s KILL 60 "$SP" -k -N2 --header : --colsep ' ' echo {y}{x}{z} {5}{4}{6} \
        :::: - :::+ z L1 L2 L3 >opts.out 2>opts.err
rc=$?
[ "$rc" = 0 ] || fail "streamed input options: exit $rc: $(cat opts.err)"
[ "$(cat opts.before)" = "baL1 dcL2" ] || fail "streamed -N2 ran late: '$(cat opts.before)'"
[ "$(cat opts.out | tr '\n' '|')" = "baL1 dcL2|feL3|" ] ||
    fail "streamed input options printed: $(cat opts.out)"

# An input that fails after the job started (a NUL byte): the commands
# read before it run, one line says why, the status is 255.
(echo a; printf 'b\0c\n'; echo d) | timeout -s KILL 60 "$SP" -j 2 echo >nul.out 2>nul.err
rc=$?
[ "$rc" = 255 ] || fail "a NUL byte in a streamed input: exit $rc, not 255"
[ "$(cat nul.out)" = a ] || fail "a NUL byte in a streamed input: printed $(cat nul.out)"
[ "$(wc -l <nul.err)" = 1 ] && grep -q 'the input source - has a NUL byte' nul.err ||
    fail "a NUL byte in a streamed input said: $(cat nul.err)"

# A pipe that never ends (tail -f): lines run as they are appended; a
# SIGTERM stops the job, and no temporary file is left.
: >log
tail -f log | timeout -s KILL 60 "$SP" -j 2 echo got {} >tail.out 2>tail.err &
SP_PID=$!
PIDS="$PIDS $SP_PID"
echo one >>log
wait_for "grep -q '^got one$' tail.out" 30 "the first line of tail -f to run"
echo two >>log
wait_for "grep -q '^got two$' tail.out" 30 "a line appended later to run"
kill -TERM "$SP_PID"
wait "$SP_PID"
echo three >>log        # (tail -f ends on its next write)
[ -z "$(ls tmp)" ] || fail "a stopped tail -f job left $(ls tmp) behind"

# 2^40 combinations: commands start at once and the combinations are
# made as they are needed: after a few seconds the job dir, and the
# processes' memory, stay small; a SIGTERM leaves nothing behind.
srcs=""
for i in $(seq 40); do srcs="$srcs ::: a b"; done
# The memory bounds: a sanitizer's runtime keeps freed memory in
# quarantine (ASan: up to 256 MiB) and shadows the rest, so its bound is
# looser; the plain build's check holds the real one.
sp_max=65536 jm_max=262144
sanitized && sp_max=524288 jm_max=1048576
# shellcheck disable=SC2086
timeout -s KILL 60 "$SP" -k -j 2 echo $srcs >huge.out 2>huge.err &
SP_PID=$!
PIDS="$PIDS $SP_PID"
wait_for "[ \$(wc -l <huge.out) -ge 4 ]" 30 "the first 4 of 2^40 commands"
sleep 1
[ "$(head -1 huge.out)" = "$(printf 'a %.0s' $(seq 39))a" ] &&
    [ "$(sed -n 2p huge.out)" = "$(printf 'a %.0s' $(seq 39))b" ] ||
    fail "2^40: the first lines are $(head -2 huge.out)"
used=$(du -sk tmp | cut -f1)
[ "$used" -lt 2048 ] || fail "2^40: the temporary directory holds $used kB"
jm=$(jm_of)
[ -n "$jm" ] || fail "2^40: no job manager found"
sp_kb=$(hwm "$(sp_of "$SP_PID")")
jm_kb=$(hwm "$jm")
[ "${sp_kb:-0}" -gt 0 ] && [ "$sp_kb" -lt "$sp_max" ] || fail "2^40: spits-parallel's peak RSS is ${sp_kb} kB"
[ "${jm_kb:-0}" -gt 0 ] && [ "$jm_kb" -lt "$jm_max" ] || fail "2^40: the job manager's peak RSS is ${jm_kb} kB"
kill -TERM "$SP_PID"
wait "$SP_PID"
rc=$?
[ "$rc" = 255 ] || fail "2^40 stopped by SIGTERM: exit $rc, not 255: $(tail -2 huge.err)"
wait_for "[ -z \"\$(ls tmp)\" ]" 10 "the temporary directory to be removed"
kill -0 "$jm" 2>/dev/null && fail "2^40: the job manager outlived spits-parallel"

# A long streamed input: spits-parallel reads it as the job takes it,
# so a 10-million-line input neither fills its memory nor the disk.
seq 10000000 | timeout -s KILL 60 "$SP" -j 2 true >/dev/null 2>long.err &
SP_PID=$!
PIDS="$PIDS $SP_PID"
wait_for "[ -n \"\$(jm_of)\" ]" 30 "the job manager of a long input"
sleep 1
sp_kb=$(hwm "$(sp_of "$SP_PID")")
[ "${sp_kb:-0}" -gt 0 ] && [ "$sp_kb" -lt "$sp_max" ] || fail "a long input: spits-parallel's peak RSS is ${sp_kb} kB"
used=$(du -sk tmp | cut -f1)
[ "$used" -lt 2048 ] || fail "a long input: the temporary directory holds $used kB"
kill -TERM "$SP_PID"
wait "$SP_PID"
rc=$?
[ "$rc" = 255 ] || fail "a long input stopped by SIGTERM: exit $rc, not 255: $(tail -2 long.err)"
wait_for "[ -z \"\$(ls tmp)\" ]" 10 "the temporary directory to be removed"

# --jobdir, its job manager killed while the input is still open:
# spits-jm --resume reads again what the first life had read (its spool),
# writes nothing twice, and says in one line that the rest of the input
# went with spits-parallel.
printf '1\n2\n' >rin
tail -f rin | timeout -s KILL 60 "$SP" -k --jobdir "$T/j" --bind tcp://127.0.0.1:0 echo \
    >rj.out 2>rj.err &
SP_PID=$!
PIDS="$PIDS $SP_PID"
start_tm j rtm -n 2
wait_for "[ \$(wc -l <rj.out) -ge 2 ]" 30 "the first two lines of a streamed --jobdir job"
kill -9 "$(json "$T/j/jm.json" "d['pid']")"
wait "$SP_PID"
rc=$?
echo 3 >>rin            # (tail -f ends on its next write)
[ "$rc" = 255 ] || fail "spits-parallel whose JM was killed exited $rc, not 255"
timeout -s KILL 30 "$JM" -q --resume --jobdir "$T/j" >rj2.out 2>rj2.err
rc=$?
[ "$rc" != 0 ] || fail "a JM resumed without the rest of its input exited 0"
[ ! -s rj2.out ] || fail "the resumed JM wrote again: $(cat rj2.out)"
grep -q 'ended without its end mark after 2 task(s)' rj2.err ||
    fail "the resumed JM said: $(cat rj2.err)"
echo ok
