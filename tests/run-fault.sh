#!/bin/bash
# spits-run when a fork fails (fault.so: the Nth fork fails with EAGAIN, as
# at a process limit): one line naming it, a bounded exit, and never a
# signal to a pid <= 0 (kill(-1, ...) would reach every process of the
# user). Not run against the previous release: there it did exactly that.
. "$(dirname "$0")/lib.sh"

FAULT=$top_builddir/tests/.libs/fault.so
[ -f "$FAULT" ] || fail "no $FAULT"
# ASan's runtime wants to be the first library; the preload comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# spits-run forks twice to check options, then the JM (3), then each TM.
# A sentinel in our own process group must survive whatever happens.
sleep 120 &
sentinel=$!
PIDS="$PIDS $sentinel"

# 1. The JM's fork fails: exit 1 at once, naming it; no JM, no TM.
mkdir -p "$T/tmp1"
TMPDIR=$T/tmp1 LD_PRELOAD=$FAULT SPITS_FAULT_FORK=3 timeout 30 "$RUN" -q -n 2 \
    "$MODS/pi.so" 1000 >"$T/a.out" 2>"$T/a.err"
rc=$?
[ $rc = 1 ] || fail "spits-run exited $rc when the JM's fork failed: $(cat "$T/a.err")"
grep -q "^spits-run: error: cannot start .*spits-jm: fork: Resource temporarily unavailable$" "$T/a.err" \
    || fail "it said: $(cat "$T/a.err")"
[ "$(wc -l <"$T/a.err")" = 1 ] || fail "more than one line: $(cat "$T/a.err")"
[ -z "$(ls "$T/tmp1")" ] || fail "its temporary job dir was left: $(ls "$T/tmp1")"
kill -0 $sentinel || fail "a process of the user was signalled"

# 2. The only TM's fork fails: the job is stopped, exit non-zero, bounded.
LD_PRELOAD=$FAULT SPITS_FAULT_FORK=4 timeout 60 "$RUN" -q -n 2 --jobdir "$T/b" \
    "$MODS/pi.so" 1000 >"$T/b.out" 2>"$T/b.err"
rc=$?
[ $rc = 1 ] || fail "spits-run exited $rc when its only TM's fork failed: $(cat "$T/b.err")"
grep -q "cannot start .*spits-tm: fork: Resource temporarily unavailable" "$T/b.err" \
    || fail "it said: $(cat "$T/b.err")"
grep -q "every task manager failed; stopping the job" "$T/b.err" || fail "it said: $(cat "$T/b.err")"
[ "$(json "$T/b/report.json" "d['status']")" = interrupted ] || fail "report: $(cat "$T/b/report.json")"
kill -0 $sentinel || fail "a process of the user was signalled"

# 2b. The only TM exits 0 with work left (/bin/true for spits-tm): the
# job is stopped, exit 1, one line saying how to resume; the job dir kept.
SPITS_TM=/bin/true timeout 60 "$RUN" -q --jobdir "$T/o" "$MODS/pi.so" 1000 >"$T/o.out" 2>"$T/o.err"
rc=$?
[ $rc = 1 ] || fail "spits-run whose only TM exited 0 exited $rc: $(cat "$T/o.err")"
[ "$(grep -c 'spits-run: error' "$T/o.err")" = 1 ] &&
    grep -q "every task manager has exited with work left; stopping the job: resume it with spits-run --resume --jobdir $T/o" "$T/o.err" ||
    fail "it said: $(cat "$T/o.err")"
[ "$(json "$T/o/report.json" "d['status']")" = interrupted ] || fail "report: $(cat "$T/o/report.json")"

# 2c. The same with a TM that joined from elsewhere: the job is its, and
# runs to the end (spits-run asks the JM before it stops the job). That
# TM must join within the 3 s spits-run waits for one, which a
# sanitizer's TM on a loaded machine may not: 10 s there.
orphan=3
sanitized && orphan=10
SPITS_RUN_ORPHAN_S=$orphan SPITS_TM=/bin/true timeout 60 "$RUN" -q --jobdir "$T/x" "$MODS/pi.so" 1000000000 100 \
    >"$T/x.out" 2>"$T/x.err" &
X_PID=$!
PIDS="$PIDS $X_PID"
start_tm x xtm -n 1
wait "$X_PID"
rc=$?
[ $rc = 0 ] && grep -q '^pi = 3.14' "$T/x.out" || fail "with a TM from elsewhere: exit $rc: $(cat "$T/x.err")"

# 3. One TM of two fails to fork: the other runs the job to the end.
LD_PRELOAD=$FAULT SPITS_FAULT_FORK=4 timeout 60 "$RUN" -q -n 2 --tms 2 \
    "$MODS/pi.so" 1000 >"$T/c.out" 2>"$T/c.err"
rc=$?
[ $rc = 0 ] || fail "spits-run exited $rc with one TM of two: $(cat "$T/c.err")"
grep -q "^pi = 3.14" "$T/c.out" || fail "no result: $(cat "$T/c.out")"
kill -0 $sentinel || fail "a process of the user was signalled"
echo ok
