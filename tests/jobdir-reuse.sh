#!/bin/bash
# A job dir used again: after a finished job, a new run replaces it (its
# TMs never leave on the old report), and after a stopped one, a new TM
# waits for spits-jm --resume instead of calling the job over, and
# spits-run --resume continues it.
. "$(dirname "$0")/lib.sh"

seq 1 1000 >"$T/in.txt"
expect=$("$PY" -c "
s = sum(k*k for k in range(1, 1001)); c = sum(k**3 for k in range(1, 1001))
print('filetasks: squares=%d total=%d' % (s, s + c))")
MOD=$TMODS/filetasks.so

# 1. spits-run on the same --jobdir three times: each run is a new job that
# finishes (before: the second hung, its TM gone on the first's report).
ids=""
for i in 1 2 3; do
    timeout 60 "$RUN" --jobdir "$T/a" -n 2 "$MOD" "$T/in.txt" 0 >"$T/a$i.out" 2>"$T/a$i.log"
    rc=$?
    [ $rc = 0 ] || fail "run $i in a used job dir exited $rc: $(tail -3 "$T/a$i.log")"
    [ "$(cat "$T/a$i.out")" = "$expect" ] || fail "run $i printed '$(cat "$T/a$i.out")'"
    grep -q "is already over" "$T/a$i.log" && fail "run $i's TM read the old report"
    ids="$ids $(json "$T/a/report.json" "d['job_id']")"
done
[ "$(echo $ids | tr ' ' '\n' | sort -u | wc -l)" = 3 ] || fail "three runs, job ids$ids"

# 2. A TM started by hand on a finished job (no JM coming): exits 0 at once.
timeout 20 "$TM" --jobdir "$T/a" --wait 15 >"$T/over.log" 2>&1
rc=$?
[ $rc = 0 ] || fail "a TM on a finished job exited $rc"
grep -q "job .* is already over" "$T/over.log" || fail "TM on a finished job said: $(cat "$T/over.log")"

# 3. SIGTERM of the JM: report.json says resumable. A TM started now waits
# (before: it exited 0 at once, "job ... is over"), and joins the resumed JM.
start_jm b -v --heartbeat 0.2 "$MOD" "$T/in.txt" 4000
jm=$JM_PID
start_tm b b.tm1 -n 2
wait_for "grep -q 'phase 1 starts' $T/b.jm.log" 30 "phase 1 of b"
wait_for "[ \$(stat -c %s $T/b/journal) -gt 4000 ]" 30 "results in b's journal"
kill -TERM "$(json "$T/b/jm.json" "d['pid']")"
wait $jm
rc=$?
[ $rc = 143 ] || fail "SIGTERM: spits-jm exited $rc"
[ "$(json "$T/b/report.json" "d['resumable']")" = True ] || fail "report.json not resumable"
"$TM" --jobdir "$T/b" --wait 30 --reconnect-timeout 30 -n 2 >"$T/b.tm2.log" 2>&1 &
tm2=$!
PIDS="$PIDS $tm2"
sleep 2.5
kill -0 $tm2 2>/dev/null || fail "a new TM left a job waiting for --resume: $(cat "$T/b.tm2.log")"
timeout -s KILL 120 "$JM" --resume --jobdir "$T/b" --bind tcp://127.0.0.1:0 \
    --heartbeat 0.2 >"$T/b.out2" 2>"$T/b.jm2.log"
rc=$?
[ $rc = 0 ] || fail "the resumed job exited $rc"
[ "$(cat "$T/b.out2")" = "$expect" ] || fail "resumed output '$(cat "$T/b.out2")'"
grep -q "joined job" "$T/b.tm2.log" || fail "the waiting TM never joined: $(cat "$T/b.tm2.log")"
[ "$(json "$T/b/report.json" "[t['pid'] for t in d['tms']]")" = "[$tm2]" ] \
    || fail "the resumed JM's TMs: $(json "$T/b/report.json" "d['tms']")"
wait $tm2 || fail "the waiting TM exited $?"

# 4. The same TM, when no resume comes within its --wait: exit 1, naming
# the wait (never 0, never a hang).
start_jm c -v --heartbeat 0.2 "$MOD" "$T/in.txt" 4000
jm=$JM_PID
start_tm c c.tm1 -n 2
wait_for "grep -q 'phase 1 starts' $T/c.jm.log" 30 "phase 1 of c"
kill -TERM "$(json "$T/c/jm.json" "d['pid']")"
wait $jm
timeout 30 "$TM" --jobdir "$T/c" --wait 3 -n 2 >"$T/c.tm2.log" 2>&1
rc=$?
[ $rc = 1 ] || fail "a TM waiting for a resume that never came exited $rc: $(cat "$T/c.tm2.log")"
grep -q "no job manager answered at .* within 3 s" "$T/c.tm2.log" || fail "it said: $(cat "$T/c.tm2.log")"
# 5. spits-run --resume: a job spits-run ran in --jobdir, stopped by
# SIGTERM, is continued by spits-run --resume with its own TMs, exactly.
"$RUN" -q -n 2 --jobdir "$T/d" "$MOD" "$T/in.txt" 4000 >"$T/d.out" 2>"$T/d.err" &
run=$!
PIDS="$PIDS $run"
wait_for "[ -s $T/d/journal ] && [ \$(stat -c %s $T/d/journal) -gt 4000 ]" 30 "results in d's journal"
kill -TERM $run
wait $run; rc=$?
[ $rc = 143 ] || fail "spits-run exited $rc after SIGTERM"
[ "$(json "$T/d/report.json" "d['resumable']")" = True ] || fail "d is not resumable"
timeout 120 "$RUN" -q -n 2 --resume --jobdir "$T/d" >"$T/d.out2" 2>"$T/d.err2"
rc=$?
[ $rc = 0 ] || fail "spits-run --resume exited $rc: $(tail -3 "$T/d.err2")"
[ "$(cat "$T/d.out2")" = "$expect" ] || fail "spits-run --resume printed '$(cat "$T/d.out2")'"
[ "$(json "$T/d/report.json" "(d['resumed'], d['status'])")" = "(True, 'ok')" ] || fail "d: not resumed ok"
# Its options: --resume wants the job dir, and no module arguments.
timeout 10 "$RUN" --resume "$MOD" >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && [ "$(cat "$T/e")" = "spits-run: error: --resume needs the job's --jobdir DIR (see spits-run --help)" ] ||
    fail "--resume without --jobdir: exit $rc, '$(cat "$T/e")'"
timeout 10 "$RUN" --resume --jobdir "$T/d" "$MOD" x y >"$T/o" 2>"$T/e"; rc=$?
[ $rc = 2 ] && grep -q "give at most MODULE" "$T/e" || fail "--resume with arguments: exit $rc, '$(cat "$T/e")'"
echo "ok"
