#!/bin/bash
# Every crash named. A module that segfaults in the JM (next_task,
# commit_pit, commit_job): spits-jm's last line names the signal, the
# module function and the task, DIR/crash.json says the same, spits-status
# shows it, and spits-run keeps its temporary job dir and says where. A
# worker that segfaults a TM without --isolate: the TM's last line names
# it and the tasks its workers ran, the JM says the TM was killed by
# SIGSEGV (not "disconnected") and where in the module's source, and at the
# first such crash it says that --isolate would have kept the TM (with
# which the job then ends, exit 3). Under spits-run the failed job's
# temporary dir is kept with the TMs' crash reports, which name the
# function, the task, the module's offset and the source line. A module
# that calls exit() from spits_main after run() returned SPITS_RUN_FAILED
# (a failed or an interrupted phase) still gets a report.json, with the
# status it had and exit() code; one that calls exit() in next_task while
# a phase runs ends spits-run non-zero, the exit named.
. "$(dirname "$0")/lib.sh"

# crashy.so is this test's own module: the build's, or $CRASHY (to run
# the test against an older build's programs).
CRASHY=${CRASHY:-$TMODS/crashy.so}
[ -f "$CRASHY" ] || fail "no $CRASHY (make -C tests check TESTS= builds it)"
F=$TMODS/faulty.so
ulimit -c 0   # (the crashes are the point: no core files)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_abort=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }handle_segv=0 handle_abort=0"
# CRASH_CASES: which of the cases below to run (all of them).
CASES=" ${CRASH_CASES:-1 2 3 4 5 6 7} "
on() { [[ "$CASES" == *" $1 "* ]]; }
# at FILE.c PATTERN: ", at FILE.c:LINE", LINE the one after the line
# PATTERN matches in tests/modules/FILE.c (where the module faults), when
# addr2line is there to say it; else nothing.
at() {
    command -v addr2line >/dev/null || return 0
    local n
    n=$(grep -n -- "$2" "$top_srcdir/tests/modules/$1" | head -1 | cut -d: -f1)
    echo ", at $1:$((n + 1))"
}
HINT="task 7 crashed a worker thread, and with it its task manager: with --isolate (spits-tm --isolate, spits-run --isolate) only that worker's process would have died, and the task manager would have gone on"

# 1. commit_pit segfaults, under spits-run with a temporary job dir.
if on 1; then
mkdir "$T/tmp"
TMPDIR=$T/tmp timeout -s KILL 120 "$RUN" -n 2 "$CRASHY" 50 jmsegv=commit_pit:17 \
    >"$T/run.out" 2>"$T/run.log"
rc=$?
[ $rc = 139 ] || fail "spits-run exited $rc, not 139"
dir=$(ls -d "$T"/tmp/spits-run-* 2>/dev/null)
[ -n "$dir" ] && [ -d "$dir" ] || fail "the temporary job dir was removed"
grep -qx "spits-run: error: the job manager died of SIGSEGV; job dir kept: $dir (spits-status --jobdir $dir says where it crashed)" \
    "$T/run.log" || fail "spits-run does not say where the job dir is: $(tail -3 "$T/run.log")"
grep -qx "spits-jm: error: killed by SIGSEGV (segmentation fault) in the module's spits_committer_commit_pit, task 17; details in $dir/crash.json" \
    "$T/run.log" || fail "the JM's crash is not named: $(grep spits-jm "$T/run.log" | tail -3)"
c=$dir/crash.json
[ "$(json "$c" "(d['status'], d['program'], d['signal'], d['signo'], d['function'], d['task'], d['sender_pid'], d['running'])")" \
    = "('crashed', 'spits-jm', 'SIGSEGV', 11, 'spits_committer_commit_pit', 17, None, [])" ] \
    || fail "crash.json: $(cat "$c")"
id=$(json "$dir/jm.json" "d['job_id']")
[ "$(json "$c" "d['job_id']")" = "$id" ] || fail "crash.json's job id"
"$top_builddir/tools/spits-status" --jobdir "$dir" >"$T/status.out" 2>"$T/status.log" \
    || fail "spits-status exited $? on a crashed job: $(cat "$T/status.log")"
src=$(json "$c" "d.get('source', '')")
[ -z "$src" ] || [ ", at ${src##*/}" = "$(at faulty.c "c->jmsegv == id)")" ] || fail "crash.json's source: $src"
if command -v addr2line >/dev/null; then
    [ -n "$src" ] || fail "crash.json has no source line: $(cat "$c")"
fi
[ "$(cat "$T/status.out")" = "job $id crashed: its job manager (spits-jm pid $(json "$c" "d['pid']") on $(json "$c" "d['host']")) was killed by SIGSEGV in the module's spits_committer_commit_pit, task 17${src:+, at ${src##*/}}; no report.json (details in $c)" ] \
    || fail "spits-status says: $(cat "$T/status.out" "$T/status.log")"
"$top_builddir/tools/spits-status" --jobdir "$dir" --json >"$T/status.json" || fail "spits-status --json"
[ "$(json "$T/status.json" "(d['status'], d['task'])")" = "('crashed', 17)" ] || fail "spits-status --json: $(cat "$T/status.json")"

fi

# 2. next_task segfaults making task 5, and commit_job (no task).
if on 2; then
for c in next_task:5 commit_job:0; do
    name=${c%%:*}
    start_jm $name "$CRASHY" 20 "jmsegv=$c"
    jm=$JM_PID
    start_tm $name $name.tm -n 1
    wait $jm; rc=$?
    [ $rc = 139 ] || fail "$name: spits-jm exited $rc, not 139"
    case $name in
    next_task) want="spits_job_manager_next_task, task 5"; task=5 ;;
    commit_job) want="spits_committer_commit_job"; task=None ;;
    esac
    grep -qx "spits-jm: error: killed by SIGSEGV (segmentation fault) in the module's $want; details in $T/$name/crash.json" \
        "$T/$name.jm.log" || fail "$name: not named: $(tail -2 "$T/$name.jm.log")"
    [ "$(json "$T/$name/crash.json" "(d['signal'], d['task'])")" = "('SIGSEGV', $task)" ] \
        || fail "$name: crash.json: $(cat "$T/$name/crash.json")"
done

fi

# 3. A worker segfaults on task 7, without --isolate: two TMs die of it,
# one after the other; then a TM with --isolate makes it a poison task.
if on 3; then
start_jm tmcrash "$F" 30 segv=7 sleep=20000
jm=$JM_PID
for k in 1 2; do
    start_tm tmcrash tmcrash.tm$k -n 2
    tm=$TM_PID
    wait $tm; rc=$?
    [ $rc = 139 ] || fail "TM $k exited $rc, not 139"
    line=$(tail -1 "$T/tmcrash.tm$k.log")
    [[ "$line" =~ ^"spits-tm: error: killed by SIGSEGV (segmentation fault) in the module's spits_worker_run, task 7; its workers were running task(s) "([0-9, ]+)"; details in $T/tmcrash/crashes/"[^/]+-$tm$ ]] \
        || fail "TM $k's last line: $line"
    [[ ", ${BASH_REMATCH[1]}," == *", 7,"* ]] || fail "TM $k's running tasks lack 7: $line"
    cf=$(ls "$T"/tmcrash/crashes/*-$tm)
    [ "$(json "$cf" "(d['program'], d['pid'], d['signal'], d['function'], d['task'], 7 in d['running'])")" \
        = "('spits-tm', $tm, 'SIGSEGV', 'spits_worker_run', 7, True)" ] || fail "TM $k's crash file: $(cat "$cf")"
    wait_for "grep -q ':$tm lost' $T/tmcrash.jm.log" 30 "the JM to lose TM $k"
    grep -Fq "TM $(json "$cf" "d['host']"):$tm lost (killed by SIGSEGV in the module's spits_worker_run, task 7$(at faulty.c "if (id == c->segv)")); " \
        "$T/tmcrash.jm.log" || fail "the JM's line for TM $k: $(grep ":$tm lost" "$T/tmcrash.jm.log")"
    # (at the first crash already)
    [ "$(grep -c "crashed a worker thread" "$T/tmcrash.jm.log")" = 1 ] || fail "no --isolate hint once after TM $k"
done
grep -qx "spits-jm: warning: $HINT" "$T/tmcrash.jm.log" || fail "the hint: $(grep 'worker thread' "$T/tmcrash.jm.log")"
start_tm tmcrash tmcrash.iso -n 2 --isolate
tm=$TM_PID
wait $jm; rc=$?
[ $rc = 3 ] || fail "with --isolate the job exited $rc, not 3"
grep -q "task 7 crashed its worker process (signal 11, Segmentation fault); a new one takes over" \
    "$T/tmcrash.iso.log" || fail "--isolate's own line changed"
grep -q "killed by" "$T/tmcrash.iso.log" && fail "an --isolate worker's crash was named as the TM's"
[ "$(json "$T/tmcrash/report.json" "[(f['task'], f['reason']) for f in d['failed_tasks']]")" = "[(7, 'crashed')]" ] \
    || fail "failed_tasks: $(json "$T/tmcrash/report.json" "d['failed_tasks']")"
wait $tm || fail "the --isolate TM exited $?"

fi

# 4. exit() in spits_main after a failed phase: report.json says "failed"
# and the module's exit code.
if on 4; then
start_jm exitfail --max-attempts 1 "$CRASHY" 20 fail=4 exit-on-fail=7
jm=$JM_PID
start_tm exitfail exitfail.tm -n 2
wait $jm; rc=$?
[ $rc = 7 ] || fail "exit-on-fail: spits-jm exited $rc, not 7"
[ "$(cat "$T/exitfail.out")" = "faulty: phase 1 failed" ] || fail "exit-on-fail printed: $(cat "$T/exitfail.out")"
r=$T/exitfail/report.json
[ -f "$r" ] || fail "no report.json after exit() in spits_main"
[ "$(json "$r" "(d['status'], d['exit_code'], d['module_exit'], d['resumable'], [(f['task'], f['reason']) for f in d['failed_tasks']])")" \
    = "('failed', 7, True, True, [(4, 'failed')])" ] || fail "report after exit(): $(cat "$r")"
grep -qx "spits-jm: the module called exit(7) in spits_main; the job ends there" "$T/exitfail.jm.log" \
    || fail "the exit is not said: $(tail -3 "$T/exitfail.jm.log")"
wait $TM_PID || fail "the TM exited $? after the module's exit()"

fi

# 5. exit() in spits_main after an interrupted phase (SIGTERM).
if on 5; then
start_jm exitint "$CRASHY" 100000 sleep=2000 exit-on-fail=9
jm=$JM_PID
start_tm exitint exitint.tm -n 2
tm=$TM_PID
wait_for "[ \"\$(tm_done exitint $tm)\" -ge 2 ] 2>/dev/null" 30 "some commits (exitint)"
kill -TERM "$(json "$T/exitint/jm.json" "d['pid']")"
wait $jm; rc=$?
[ $rc = 9 ] || fail "interrupted: spits-jm exited $rc, not 9"
[ "$(json "$T/exitint/report.json" "(d['status'], d['exit_code'], d['module_exit'], d['resumable'])")" \
    = "('interrupted', 9, True, True)" ] || fail "report after SIGTERM and exit(): $(cat "$T/exitint/report.json" 2>&1)"
wait $tm || fail "the TM exited $? after the module's exit()"
fi

# 6. exit() in next_task while the phase runs, under spits-run: the exit
# is named, with its function and task, and the status is never 0 (the
# module's code, or 1 for exit(0)); there is no report.json.
if on 6; then
for code in 0 7; do
    timeout -s KILL 60 "$RUN" -q -n 2 --jobdir "$T/jmexit$code" "$F" 20 jmexit=5:$code \
        >/dev/null 2>"$T/jmexit$code.log"
    rc=$?
    [ $rc = $(( code ? code : 1 )) ] || fail "exit($code) in next_task: spits-run exited $rc"
    [ "$(grep -c . "$T/jmexit$code.log")" = 1 ] && grep -qx "spits-jm: error: the module called exit($code) in spits_job_manager_next_task, task 5 while a phase was running: the job ends there with no report.json (only an exit() from spits_main itself, between phases, gets one)" \
        "$T/jmexit$code.log" || fail "exit($code) in next_task said: $(cat "$T/jmexit$code.log")"
    [ ! -e "$T/jmexit$code/report.json" ] || fail "exit($code) in next_task left a report.json"
done
fi

# 7. Under spits-run, a worker thread segfaults two TMs (task 7): the job
# fails, its temporary dir is kept and named, the hint comes at the first
# crash, and the crash reports there say where.
if on 7; then
mkdir "$T/tmp7"
TMPDIR=$T/tmp7 timeout -s KILL 60 "$RUN" -n 2 --tms 2 "$F" 30 segv=7 >"$T/r7.out" 2>"$T/r7.log"
rc=$?
[ $rc = 139 ] || fail "spits-run exited $rc, not 139 (every TM failed, the last by SIGSEGV): $(tail -3 "$T/r7.log")"
dir=$(ls -d "$T"/tmp7/spits-run-* 2>/dev/null)
[ -n "$dir" ] && [ -d "$dir/crashes" ] || fail "the temporary job dir was removed"
grep -qx "spits-run: error: the job failed (exit status 139); job dir kept: $dir (its report.json and crashes/; spits-status --jobdir $dir)" \
    "$T/r7.log" || fail "spits-run does not say where the job dir is: $(tail -3 "$T/r7.log")"
[ "$(grep -c "^spits-jm: warning: $HINT$" "$T/r7.log")" = 1 ] || fail "the hint: $(grep 'worker thread' "$T/r7.log")"
# the line of each TM's crash, then the hint, in that order
first=$(grep -n "killed by SIGSEGV" "$T/r7.log" | head -1 | cut -d: -f1)
hint=$(grep -n "crashed a worker thread" "$T/r7.log" | cut -d: -f1)
[ "$first" -lt "$hint" ] || fail "the hint came before the crash: $(cat "$T/r7.log")"
n=0 resolved=0
for cf in "$dir"/crashes/*; do
    n=$((n + 1))
    [ "$(json "$cf" "(d['function'], d['task'], d['module_file'], d['module_offset'][:2], d['address'][:2])")" \
        = "('spits_worker_run', 7, '$F', '0x', '0x')" ] || fail "crash report $cf: $(cat "$cf")"
    src=$(json "$cf" "d.get('source', '')")
    if [ -n "$src" ]; then
        [ ", at ${src##*/}" = "$(at faulty.c "if (id == c->segv)")" ] || fail "$cf: source $src"
        [ "$(json "$cf" "d['source_function']")" = spits_worker_run ] || fail "$cf: $(cat "$cf")"
        resolved=$((resolved + 1))
    fi
done
[ $n -ge 1 ] || fail "no crash report in $dir/crashes"
if command -v addr2line >/dev/null; then
    [ $resolved -ge 1 ] || fail "no crash report names its source line: $(cat "$dir"/crashes/*)"
fi
fi
echo PASS
