#!/bin/bash
# The job dir and its journal when things go wrong around the job: the
# journal's disk fills up mid-job (the JM stops, saying so, and --resume
# finishes the job exactly once there is room); a module that exit()s in
# spits_job_manager_new (a rerun in the same dir just works); a second JM
# on a dir whose JM is running (refused, naming the running job, and the
# job is unharmed); --resume of a job dir that does not exist (refused,
# creating nothing).
. "$(dirname "$0")/lib.sh"

# one_line FILE TEXT: FILE is exactly the line TEXT
one_line() {
    [ "$(cat "$1")" = "$2" ] || fail "$1 is not the one line '$2': $(cat "$1")"
}

# 1. The journal's disk fills up: a file size limit (ulimit -f, in KiB;
# SIGXFSZ ignored so that write fails with EFBIG) makes a write short and
# the next one fail. The JM stops with one line, writes report.json, and
# leaves only complete, synced records: --resume (no limit) completes the
# job with every task committed exactly once (bench fails commit_job on a
# task seen twice or missing; the checksum is computed independently).
n=400
(trap '' XFSZ; ulimit -f 300
 exec timeout -s KILL 120 "$JM" --jobdir "$T/full" --bind tcp://127.0.0.1:0 \
     --heartbeat 0.2 "$MODS/bench.so" -n $n -r 4000) >"$T/full.out" 2>"$T/full.jm.log" &
jm=$!
PIDS="$PIDS $jm"
start_tm full full.tm -n 2
wait $jm; rc=$?
[ $rc = 1 ] || fail "the JM with a full journal disk exited $rc, not 1"
grep '^spits-jm: error: ' "$T/full.jm.log" >"$T/full.errors"
one_line "$T/full.errors" "spits-jm: error: journal write failed: File too large ($T/full/journal); job stopped: once that is fixed, spits-jm --resume --jobdir $T/full continues it"
[ -s "$T/full.out" ] && fail "the stopped job printed '$(cat "$T/full.out")'"
[ "$(json "$T/full/report.json" "(d['status'], d['exit_code'])")" = "('error', 1)" ] \
    || fail "report after the full disk: $(json "$T/full/report.json" "(d['status'], d['exit_code'])")"
[ "$(stat -c %s "$T/full/journal")" -le $((300 * 1024)) ] || fail "the journal outgrew the limit"
timeout -s KILL 120 "$JM" --resume --jobdir "$T/full" --bind tcp://127.0.0.1:0 \
    --heartbeat 0.2 >"$T/full.out2" 2>"$T/full.jm2.log" &
jm=$!
PIDS="$PIDS $jm"
# (A TM that saw the stopped job's report.json would take the job as over.)
wait_for "grep -q 'resuming job' $T/full.jm2.log" 30 "the resume to start"
start_tm full full.tm2 -n 2
wait $jm || fail "the resumed job exited $?"
[ "$(cat "$T/full.out2")" = "$(bench_checksum $n)" ] || fail "resumed: '$(cat "$T/full.out2")'"
grep -q "torn tail" "$T/full.jm2.log" && fail "the failed write left a torn tail"
[ "$(json "$T/full/report.json" "(d['status'], d['counters']['committed'], d['counters']['commit_errors'], d['phases'][0]['replayed'] > 0)")" = "('ok', $n, 0, True)" ] \
    || fail "resumed report: $(json "$T/full/report.json" "(d['status'], d['counters'])")"

# 1b. The same on a real full filesystem: a 256 KiB tmpfs (needs root;
# skipped with a message otherwise). report.json is on the same full disk;
# once the tmpfs is grown, --resume completes the job exactly.
mkdir "$T/fs"
if mount -t tmpfs -o size=256k,mode=0700 tmpfs "$T/fs" 2>/dev/null; then
    trap 'umount -l "$T/fs"; cleanup' EXIT
    start_jm fs/job --heartbeat 0.2 "$MODS/bench.so" -n $n -r 4000
    jm=$JM_PID
    start_tm fs/job fs.tm -n 2
    wait $jm; rc=$?
    [ $rc = 1 ] || fail "the JM on a full tmpfs exited $rc, not 1"
    grep '^spits-jm: error: ' "$T/fs/job.jm.log" >"$T/fs.errors"
    [ "$(head -1 "$T/fs.errors")" = "spits-jm: error: journal write failed: No space left on device ($T/fs/job/journal); job stopped: once that is fixed, spits-jm --resume --jobdir $T/fs/job continues it" ] \
        || fail "full tmpfs: $(cat "$T/fs.errors")"
    # (Whether report.json fits depends on what cutting the journal back
    # freed: either it is written, or a second line says why not.)
    if [ "$(wc -l <"$T/fs.errors")" = 1 ]; then
        [ "$(json "$T/fs/job/report.json" "d['status']")" = error ] || fail "full tmpfs: report.json"
    else
        [ "$(sed 1d "$T/fs.errors")" = "spits-jm: error: cannot write $T/fs/job/report.json: No space left on device" ] \
            || fail "full tmpfs, after the journal line: $(cat "$T/fs.errors")"
    fi
    mount -o remount,size=8m "$T/fs" || fail "cannot grow the tmpfs"
    timeout -s KILL 120 "$JM" --resume --jobdir "$T/fs/job" --bind tcp://127.0.0.1:0 \
        --heartbeat 0.2 >"$T/fs.out2" 2>"$T/fs.jm2.log" &
    jm=$!
    PIDS="$PIDS $jm"
    wait_for "grep -q 'resuming job' $T/fs.jm2.log" 30 "the resume on the tmpfs to start"
    start_tm fs/job fs.tm2 -n 2
    wait $jm || fail "the resumed job on the tmpfs exited $?"
    [ "$(cat "$T/fs.out2")" = "$(bench_checksum $n)" ] || fail "resumed on tmpfs: '$(cat "$T/fs.out2")'"
    grep -q "torn tail" "$T/fs.jm2.log" && fail "the full tmpfs left a torn tail"
    [ "$(json "$T/fs/job/report.json" "(d['status'], d['counters']['committed'], d['phases'][0]['replayed'] > 0)")" = "('ok', $n, True)" ] \
        || fail "resumed report on tmpfs: $(json "$T/fs/job/report.json" "(d['status'], d['counters'])")"
else
    echo "SKIP (1b): cannot mount a tmpfs (not root?): the full-disk case ran with ulimit -f only"
fi

# 2. A module that exit()s in spits_job_manager_new leaves a journal with
# no commit: that is no job, and a rerun in the same dir replaces it.
timeout -s KILL 60 "$JM" --jobdir "$T/ctor" --bind tcp://127.0.0.1:0 \
    "$TMODS/faulty.so" 20 jm-exit >/dev/null 2>"$T/ctor.jm0.log"
rc=$?
[ $rc = 1 ] || fail "the module's exit(1) gave $rc"
grep -q "faulty: jm-exit" "$T/ctor.jm0.log" || fail "the module did not exit in its constructor"
[ -e "$T/ctor/journal" ] || fail "no journal left to test against"
start_jm ctor --heartbeat 0.2 "$TMODS/faulty.so" 20
jmc=$JM_PID
start_tm ctor ctor.tm -n 2
wait $jmc || fail "the rerun after the module's exit exited $?"
[ "$(cat "$T/ctor.out")" = "faulty: 20 tasks, sum 210" ] || fail "rerun printed '$(cat "$T/ctor.out")'"
grep -q "replacing the journal of job [0-9a-f]*, which committed nothing" "$T/ctor.jm.log" \
    || fail "the replaced journal was not reported"

# 3. A second JM on a dir whose JM is running is refused: one line naming
# the running job, its pid, host and endpoint, and nothing about removing
# files. (-G: the job cannot end before the gate opens.)
start_jm busy --heartbeat 0.2 "$MODS/bench.so" -n 50 -s 1000 -G "$T/busy.gate"
jmb=$JM_PID
start_tm busy busy.tm -n 2
wait_for "[ -s $T/busy/jm.json ]" 30 "the running job's jm.json"
id=$(json "$T/busy/jm.json" "d['job_id']")
msg="spits-jm: error: job dir $T/busy is in use: job $id is running there (spits-jm pid $(json "$T/busy/jm.json" "d['pid']") on $(json "$T/busy/jm.json" "d['host']"), endpoint $(json "$T/busy/jm.json" "d['endpoint']")); spits-status --jobdir $T/busy shows its progress"
"$JM" --jobdir "$T/busy" --bind tcp://127.0.0.1:0 "$MODS/bench.so" -n 5 >"$T/busy.2.out" 2>"$T/busy.2.log"
rc=$?
[ $rc = 1 ] || fail "a second JM on a running job exited $rc"
one_line "$T/busy.2.log" "$msg"
"$JM" --resume --jobdir "$T/busy" --bind tcp://127.0.0.1:0 >"$T/busy.3.out" 2>"$T/busy.3.log"
rc=$?
[ $rc = 1 ] || fail "a second JM with --resume on a running job exited $rc"
one_line "$T/busy.3.log" "$msg"
[ "$(json "$T/busy/jm.json" "d['job_id']")" = "$id" ] || fail "the refused JM touched jm.json"
touch "$T/busy.gate"
wait $jmb || fail "the running job exited $? after the refused JMs"
[ "$(cat "$T/busy.out")" = "$(bench_checksum 50)" ] || fail "the running job printed '$(cat "$T/busy.out")'"

# 4. --resume of a job dir that does not exist creates nothing.
"$JM" --resume --jobdir "$T/nodir/job" >/dev/null 2>"$T/nodir.log"
rc=$?
[ $rc = 1 ] || fail "--resume of a missing job dir exited $rc"
one_line "$T/nodir.log" "spits-jm: error: no job dir $T/nodir/job to resume"
[ -e "$T/nodir" ] && fail "--resume created $T/nodir"
echo ok
