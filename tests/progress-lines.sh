#!/bin/bash
# progress-lines.sh - what the live view says can be trusted: tasks
# prefetched by a TM are queued, not running (2 workers run 2, however
# many they hold), in spits-status and the plain progress line; results
# stuck behind a slow journal sync are named as waiting for the disk; a
# poison task names the code its worker returned, its module's words
# on why (spits_worker_error) and its host, in the
# JM's log, report.json, report.html, the joblog and spits-status.
. "$(dirname "$0")/lib.sh"
ST=$top_builddir/tools/spits-status
FAULT=$top_builddir/tests/.libs/fault.so
# ASan's runtime wants to be the first library; the preload comes first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
host=$(hostname)

# 1. 2 workers, 40 prefetched: 2 running, the rest queued.
start_jm pre --progress-interval 1 "$MODS/bench.so" -n 400 -s 200000
start_tm pre tm -n 2 --prefetch 40
wait_for "grep -q joined $T/pre.jm.log" 30 "the TM to join"
# (asked again until one snapshot shows it: the TM's row counts what its
# last STATS said runs, and a worker may be between two tasks when that
# is sent, as under TSan)
wait_for "[ \"\$(live pre \"(d['tasks']['running'], d['tasks']['queued'] >= 30,
                             [(t['busy'], t['queued'] == t['held'] - 2) for t in d['tms']])\")\" = \
           '(2, True, [(2, True)])' ]" 30 \
    "2 running and the rest queued, in the totals and the TM's row: $(cat "$T/pre.status" 2>/dev/null)"
# (and spits-status's table, asked again for the same reason)
table_ok() {
    "$ST" --jobdir "$T/pre" >"$T/pre.table" &&
        grep -Eq "^  tasks: [0-9]+ of 400 committed \([0-9.]+%\), 0 failed, 2 running, [0-9]+ queued, 0 re-sent, 0 duplicates\$" "$T/pre.table"
}
wait_for table_ok 10 "spits-status's table to say 2 running (pre.table has the last)"
wait_for "grep -q 'progress: phase 1 .* 2 running' $T/pre.jm.log" 10 "a progress line"
# (results not committed yet are named, and why when the committer syncs
# the journal: seen under ThreadSanitizer, whose committer lags)
grep 'progress:' "$T/pre.jm.log" | grep -Ev '^spits-jm: progress: phase 1 \[[#.]{20}\] [0-9]+/400 [0-9.]+% [0-9]+ tasks/s ETA [0-9?:]+, 1 TM\(s\), [0-2] running, [0-9]+ queued(, [1-9][0-9]* to commit( \(waiting for the disk\))?)?$' &&
    fail "a progress line of another form: $(grep progress: "$T/pre.jm.log")"
kill $TM_PID

# 2. The journal's sync takes 8 s: results wait for the disk, and say so.
LD_PRELOAD=$FAULT SPITS_FAULT_FSYNC_MS=8000 timeout -s KILL 120 "$JM" --jobdir "$T/disk" \
    --bind tcp://127.0.0.1:0 --progress-interval 0.5 "$MODS/bench.so" -n 3000 -s 1000 \
    >"$T/disk.out" 2>"$T/disk.jm.log" &
PIDS="$PIDS $!"
start_tm disk dtm -n 2
wait_for "grep -q 'to commit (waiting for the disk)' $T/disk.jm.log" 60 "the line saying the disk"
wait_for "[ \"\$(live disk \"d['tasks']['waiting_for_disk'] is True and d['tasks']['uncommitted'] > 0\")\" = True ]" 30 \
    "STATUS to say the disk"
wait_for "\"$ST\" --jobdir $T/disk >$T/disk.table && grep -q 'waiting for the disk' $T/disk.table" 30 \
    "spits-status to say the disk"
grep -Eq "^  [0-9]+ result\(s\) received, not committed yet: waiting for the disk \(the journal's sync\)\$" \
    "$T/disk.table" || fail "spits-status: $(cat "$T/disk.table")"
kill $TM_PID

# 3. A poison task: the code its worker returned (1) and where.
start_jm bad --joblog "$T/bad.jl" "$MODS/bench.so" -n 100 -f 42
start_tm bad btm -n 2
wait $JM_PID; rc=$?
[ $rc = 3 ] || fail "spits-jm exited $rc, not 3"
grep -qx "spits-jm: error: task 42 of phase 1 failed (last run: failed) on $host, where the worker returned 1: task 42 fails on purpose (-f)" "$T/bad.jm.log" ||
    fail "the JM's line: $(grep 'task 42' "$T/bad.jm.log")"
[ "$(json "$T/bad/report.json" "[(f['task'], f['reason'], f['return_code'], f['error'], f['host']) for f in d['failed_tasks']]")" = \
    "[(42, 'failed', 1, 'task 42 fails on purpose (-f)', '$host')]" ] || fail "report failed_tasks: $(json "$T/bad/report.json" "d['failed_tasks']")"
grep -q "<tr class=\"failed-task\"><td class=\"n\">1</td><td class=\"n\">42</td><td>failed</td><td class=\"n\">1</td><td>task 42 fails on purpose (-f)</td><td>$host</td></tr>" \
    "$T/bad/report.html" || fail "report.html: $(grep failed-task "$T/bad/report.html")"
[ "$(awk -F '\t' '$1 == 42 { print $7 "|" $9 }' "$T/bad.jl")" = "1|phase 1: task 42 fails on purpose (-f)" ] ||
    fail "the joblog's line of task 42: $(grep '^42' "$T/bad.jl")"
"$ST" --jobdir "$T/bad" | grep -qx "  failed: task 42 of phase 1, failed on $host, the worker returned 1: task 42 fails on purpose (-f)" ||
    fail "spits-status: $("$ST" --jobdir "$T/bad")"
echo PASS
