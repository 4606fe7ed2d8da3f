#!/bin/bash
# spits-tm --isolate: a task that segfaults, aborts, exits or hangs costs
# only its worker process. A task that crashes once is retried and the
# result is exact; one that crashes (or times out) every attempt is a
# poison task: named in report.json and on stderr, spits-jm exits 3, every
# other task is committed, commit_job is not called. No worker process is
# left behind.
. "$(dirname "$0")/lib.sh"

F=$TMODS/faulty.so
# The crashes are the point here: under a sanitizer build, let them be
# real signals instead of sanitizer reports.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_abort=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }handle_segv=0 handle_abort=0"
# sum of id+1 over 0..n-1, minus the ids given
sum_but() { local n=$1 s; shift; s=$((n * (n + 1) / 2)); for i in "$@"; do s=$((s - i - 1)); done; echo $s; }
# Each TM runs with SPITS_TEST_TAG=NAME in its environment, which its
# worker processes inherit: orphans are re-parented, but still found.
# workers_of NAME: the pids of NAME's worker processes.
workers_of() {
    local p
    for p in $(pgrep -f -- '--worker-child'); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SPITS_TEST_TAG=$1" && echo "$p"
    done
}
# no_children NAME: once NAME's TM has exited, none of its workers is left.
no_children() {
    wait_for "[ -z \"\$(workers_of $1)\" ]" 5 "the worker processes of $1 to go"
}

# 1. Crashes once: retried, exact.
mkdir -p "$T/marks"
start_jm once "$F" 200 "once=17:$T/marks"
jm=$JM_PID
SPITS_TEST_TAG=once start_tm once once.tm -n 2 --isolate
tm=$TM_PID
wait $jm || fail "the crash-once job exited $?"
[ "$(cat "$T/once.out")" = "faulty: 200 tasks, sum $(sum_but 200)" ] || fail "printed '$(cat "$T/once.out")'"
grep -q "task 17 crashed its worker process (signal 11, Segmentation fault); a new one takes over" \
    "$T/once.tm.log" || fail "the crash is not named"
[ "$(json "$T/once/report.json" "d['counters']['crashed']")" = 1 ] || fail "crashed counter"
wait $tm || fail "the TM exited $?"
no_children once

# 2. Segfaults every time, with two TMs: a poison task. Each task takes
# 10 ms, so that the job outlasts the second TM's join (its worker
# processes start first): a TM that never joined a job that failed waits
# for its --resume.
start_jm segv "$F" 100 segv=42 sleep=10000
jm=$JM_PID
SPITS_TEST_TAG=segv1 start_tm segv segv.tm1 -n 2 --isolate; t1=$TM_PID
SPITS_TEST_TAG=segv2 start_tm segv segv.tm2 -n 2 --isolate; t2=$TM_PID
wait $jm; rc=$?
[ $rc = 3 ] || fail "the poison job exited $rc, not 3"
r=$T/segv/report.json
[ "$(json $r "[(f['phase'], f['task'], f['reason']) for f in d['failed_tasks']]")" = "[(1, 42, 'crashed')]" ] \
    || fail "failed_tasks $(json $r "d['failed_tasks']")"
[ "$(json $r "(d['counters']['committed'], d['counters']['crashed'])")" = "(99, 3)" ] \
    || fail "counters $(json $r "d['counters']")"
grep -q "task 42 of phase 1 failed (last run: crashed)" "$T/segv.jm.log" || fail "the JM does not name the poison task"
grep -q "task 42 of phase 1: 3 run(s), the last crashed; giving up on it (poison task)" "$T/segv.jm.log" \
    || fail "no poison line"
[ -s "$T/segv.out" ] && fail "commit_job ran despite a poison task"
wait $t1 || fail "TM 1 exited $?"
wait $t2 || fail "TM 2 exited $?"
no_children segv1; no_children segv2

# 3. Hangs: --task-timeout kills it, twice, then it is poison.
start_jm hang --max-attempts 2 "$F" 50 hang=7
jm=$JM_PID
SPITS_TEST_TAG=hang start_tm hang hang.tm -n 2 --isolate --task-timeout 2; tm=$TM_PID
# (the check can fail: while the job runs, its workers are found)
wait_for "[ -n \"\$(workers_of hang)\" ]" 30 "the worker processes of hang"
wait $jm; rc=$?
[ $rc = 3 ] || fail "the hanging job exited $rc, not 3"
[ "$(json "$T/hang/report.json" "[(f['task'], f['reason']) for f in d['failed_tasks']]")" = "[(7, 'timeout')]" ] \
    || fail "failed_tasks $(json "$T/hang/report.json" "d['failed_tasks']")"
[ "$(json "$T/hang/report.json" "(d['counters']['committed'], d['counters']['timed_out'])")" = "(49, 2)" ] \
    || fail "hang counters"
grep -q "task 7 ran past --task-timeout (2.0 s); its worker process was killed" "$T/hang.tm.log" \
    || fail "the timeout is not named"
wait $tm || fail "the TM exited $?"
no_children hang

# 4. abort() and exit() in a worker, one attempt each: both poison, rest exact.
start_jm ae --max-attempts 1 "$F" 60 abort=3 exit=4
jm=$JM_PID
SPITS_TEST_TAG=ae start_tm ae ae.tm -n 2 --isolate; tm=$TM_PID
wait $jm; rc=$?
[ $rc = 3 ] || fail "abort/exit job exited $rc"
[ "$(json "$T/ae/report.json" "sorted((f['task'], f['reason']) for f in d['failed_tasks'])")" = \
    "[(3, 'crashed'), (4, 'crashed')]" ] || fail "abort/exit failed_tasks"
grep -q "task 3 crashed its worker process (signal 6, Aborted)" "$T/ae.tm.log" || fail "abort not named"
grep -q "task 4 crashed its worker process (exit status 3)" "$T/ae.tm.log" || fail "exit not named"
[ "$(json "$T/ae/report.json" "d['counters']['committed']")" = 58 ] || fail "abort/exit committed"
wait $tm || fail "the TM exited $?"
no_children ae

# 5. Threads (the default): the crash takes the whole TM down, as README
# says; the JM would requeue its tasks on other TMs.
start_jm thr "$F" 50 segv=5
jm=$JM_PID
start_tm thr thr.tm -n 2; tm=$TM_PID
wait $tm; rc=$?
[ $rc = 139 ] || fail "a segfaulting worker thread: the TM exited $rc, not 139"
kill -TERM "$(json "$T/thr/jm.json" "d['pid']")"
wait $jm
echo ok
