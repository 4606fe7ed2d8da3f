#!/bin/bash
# run-serial.sh - spits-run --serial runs a module in one process and one
# thread, and prints what a distributed run of the same module and
# arguments prints (the example modules' commits do not depend on the
# order results arrive in: pi keeps partial sums by task number, primes
# and bench add integers); what workers print goes to stderr, prefixed, in
# both; --keep-going commits the rest in both; a failed task, a missing or incomplete module
# and options it has no use for each get one line and their exit status;
# and under valgrind it is clean.
. "$top_srcdir/tests/lib.sh"

# serial NAME ARGS...: spits-run --serial, its stdout in $T/NAME.s, stderr
# in $T/NAME.serr, exit status in $rc
serial() {
    local name=$1; shift
    rc=0
    # (the braces' 2>/dev/null keeps bash's "Segmentation fault" out of the log)
    { timeout -s KILL 60 "$RUN" --serial "$@" >"$T/$name.s" 2>"$T/$name.serr"; } 2>/dev/null ||
        rc=$?
}

# same NAME EXPECTED MODULE ARGS...: --serial and a distributed run (two
# task managers of two workers) print the same bytes, EXPECTED.
same() {
    local name=$1 want=$2; shift 2
    serial "$name" "$@"
    [ $rc = 0 ] || fail "$name --serial exited $rc: $(cat "$T/$name.serr")"
    timeout -s KILL 120 "$RUN" -q --tms 2 -n 2 "$@" >"$T/$name.d" 2>"$T/$name.derr" ||
        fail "$name distributed exited $?: $(cat "$T/$name.derr")"
    cmp -s "$T/$name.s" "$T/$name.d" ||
        fail "$name: --serial printed '$(cat "$T/$name.s")', the distributed run '$(cat "$T/$name.d")'"
    [ "$(cat "$T/$name.s")" = "$want" ] ||
        fail "$name printed '$(cat "$T/$name.s")', not '$want'"
    [ ! -s "$T/$name.serr" ] || fail "$name --serial wrote to stderr: $(cat "$T/$name.serr")"
    echo "$name: '$want' from both"
}

# pi's digits depend on how the compiler rounds; both runs use the same
# code, so they must agree to the last digit, and be near pi.
serial pi0 "$MODS/pi.so" 100000 10
pi=$(sed -n 's/^pi = //p' "$T/pi0.s")
"$PY" -c "import math, sys; sys.exit(abs(float('$pi') - math.pi) > 1e-10)" ||
    fail "pi --serial printed '$(cat "$T/pi0.s")'"
same pi "pi = $pi" "$MODS/pi.so" 100000 10
# No job dir, temporary or not, and nothing left behind.
mkdir "$T/here"
(cd "$T/here" && TMPDIR=$T/here timeout -s KILL 60 "$RUN" --serial "$MODS/pi.so" 1000 3) \
    >"$T/here.out" 2>&1 || fail "pi --serial in an empty dir: $(cat "$T/here.out")"
[ -z "$(ls -A "$T/here")" ] || fail "--serial left $(ls -A "$T/here") behind"
same primes "primes below 100000: 9592" "$MODS/primes.so" 100000 10
same bench "$(bench_checksum 300)" "$MODS/bench.so" -n 300 -t 64 -r 32
# Two phases through spits_main: the second's workers get its own argv.
same twophase "twophase: squares=42925 cubes=1625625 total=1668550" \
    "$TMODS/twophase.so" 50

# Workers that print: their lines go to stderr, each after "spits-run:
# module stdout: " (a TM's after "spits-tm: module stdout: "), and both
# stdouts are commit_job's line alone.
serial chatty "$TMODS/chatty.so" 50
[ $rc = 0 ] || fail "chatty --serial exited $rc: $(cat "$T/chatty.serr")"
timeout -s KILL 120 "$RUN" -q -n 2 "$TMODS/chatty.so" 50 >"$T/chatty.d" 2>"$T/chatty.derr" ||
    fail "chatty distributed exited $?"
[ "$(cat "$T/chatty.s")" = "chatty: sum=1275" ] && cmp -s "$T/chatty.s" "$T/chatty.d" ||
    fail "chatty: --serial printed '$(head -3 "$T/chatty.s")', the distributed run '$(head -3 "$T/chatty.d")'"
for w in s:spits-run d:spits-tm; do
    f=$T/chatty.${w%%:*}err p="^${w#*:}: module stdout: worker: "
    [ "$(grep -c "${p}chunk [0-9]*$" "$f")" = 49 ] && grep -q "${p}no newline hereworker: chunk 1$" "$f" ||
        fail "chatty: the workers' lines on ${w#*:}'s stderr: $(head -3 "$f")"
done
[ "$(grep -vc "^spits-run: module stdout: " "$T/chatty.serr")" = 0 ] || fail "chatty --serial: $(cat "$T/chatty.serr")"
echo "chatty: 50 worker lines on stderr, prefixed, in both runs; stdout the same"

# --keep-going: the failed task named, commit_job run without it, exit 3;
# the same stdout as a distributed run.
serial kg --keep-going "$TMODS/faulty.so" 20 fail=4
[ $rc = 3 ] && [ "$(cat "$T/kg.s")" = "faulty: 19 tasks, sum 205" ] ||
    fail "--keep-going --serial: exit $rc, printed '$(cat "$T/kg.s")': $(cat "$T/kg.serr")"
[ "$(cat "$T/kg.serr")" = "spits-run: error: phase 1: task 4 failed: spits_worker_run returned 1; commit_job runs without it (--keep-going)" ] ||
    fail "--keep-going --serial said: $(cat "$T/kg.serr")"
rc=0
timeout -s KILL 120 "$RUN" -q --keep-going --max-attempts 1 "$TMODS/faulty.so" 20 fail=4 \
    >"$T/kg.d" 2>"$T/kg.derr" || rc=$?
[ $rc = 3 ] && cmp -s "$T/kg.s" "$T/kg.d" ||
    fail "--keep-going distributed: exit $rc, printed '$(cat "$T/kg.d")': $(cat "$T/kg.derr")"
echo "--keep-going: exit 3 and '$(cat "$T/kg.s")' from both"

# commit_pit failing for every third result: exit status 4, as spits-jm's,
# unless --commit-errors=ignore; what commit_job prints is the same.
serial commitfail "$TMODS/faulty.so" 10 commitfail=3
[ $rc = 4 ] || fail "commit errors: --serial exited $rc, not 4"
[ "$(grep -c "warning: commit_pit returned 1 for task [258] of phase 1" "$T/commitfail.serr")" = 3 ] ||
    fail "commit errors: --serial said '$(cat "$T/commitfail.serr")'"
rc=0
timeout -s KILL 120 "$RUN" -q "$TMODS/faulty.so" 10 commitfail=3 >"$T/commitfail.d" 2>/dev/null || rc=$?
[ $rc = 4 ] && cmp -s "$T/commitfail.s" "$T/commitfail.d" ||
    fail "commit errors: distributed exit $rc, '$(cat "$T/commitfail.d")'; --serial '$(cat "$T/commitfail.s")'"
serial ignored --commit-errors=ignore "$TMODS/faulty.so" 10 commitfail=3
[ $rc = 0 ] && cmp -s "$T/ignored.s" "$T/commitfail.s" ||
    fail "--commit-errors=ignore: --serial exited $rc, printed '$(cat "$T/ignored.s")'"
echo "commit errors: exit status 4 (0 with --commit-errors=ignore), '$(cat "$T/commitfail.s")'"

# One process, one thread, no socket: looked at while the last task's
# run waits for its gate (bench -G).
mkdir "$T/marks"
"$RUN" --serial "$MODS/bench.so" -n 5 -M "$T/marks" -G "$T/gate" >"$T/gated.s" 2>"$T/gated.serr" &
pid=$!
PIDS="$PIDS $pid"
wait_for '[ -e "$T/marks/started-4" ]' 30 "the gated run's last task"
threads=$(ls /proc/$pid/task | wc -l)
sockets=$(ls -l /proc/$pid/fd | grep -c 'socket:') || true
children=$(pgrep -P $pid | wc -l) || true
touch "$T/gate"
wait $pid || fail "the gated run exited $?: $(cat "$T/gated.serr")"
# (ThreadSanitizer starts its background thread at a program's first
# pthread_create, which --serial never calls: 1 there too)
[ "$threads $sockets $children" = "1 0 0" ] ||
    fail "--serial ran $threads thread(s), with $sockets socket(s) and $children child process(es)"
[ "$(cat "$T/gated.s")" = "$(bench_checksum 5)" ] || fail "the gated run printed '$(cat "$T/gated.s")'"
[ "$(ls "$T/marks" | tr '\n' ' ')" = "started-0 started-1 started-2 started-3 started-4 " ] ||
    fail "the gated run started $(ls "$T/marks")"
echo "one thread, no socket, no child process"

# expect NAME STATUS LINE: the run exited STATUS, printed nothing on
# stdout, and LINE is all of its stderr.
expect() {
    [ $rc = "$2" ] || fail "$1: exit status $rc, not $2 ($(cat "$T/$1.serr"))"
    [ ! -s "$T/$1.s" ] || fail "$1 printed '$(cat "$T/$1.s")'"
    [ "$(cat "$T/$1.serr")" = "$3" ] || fail "$1 said '$(cat "$T/$1.serr")', not '$3'"
}
serial taskfail "$MODS/bench.so" -n 10 -f 3
expect taskfail 3 "spits-run: error: phase 1: task 3 failed: spits_worker_run returned 1: task 3 fails on purpose (-f); commit_job not called"
# A crash kills the process (so gdb stops right there) and is named.
# (ASan leaves the signal to spits's handler, as in crash-names.sh)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" serial crash "$TMODS/faulty.so" 10 segv=4
expect crash 139 "spits-run: error: killed by SIGSEGV (segmentation fault) in the module's spits_worker_run, task 4"
serial nomodule
expect nomodule 2 "spits-run: error: no MODULE given (see spits-run --help)"
serial missing "$T/none.so"
expect missing 1 "spits-run: error: cannot load module $T/none.so: No such file or directory"
serial partial "$TMODS/workeronly.so"
expect partial 1 "spits-run: error: $TMODS/workeronly.so: missing required symbols spits_job_manager_new, spits_job_manager_next_task, spits_committer_new, spits_committer_commit_pit and spits_committer_commit_job"
serial tms --tms 2 "$MODS/pi.so"
expect tms 2 "spits-run: error: --serial runs no job manager or task manager, so --tms does not apply (see spits-run --help)"
echo "failures and bad input: one line each, exit statuses 3, 139, 2, 1, 1, 2"

# A worker's exit(5): status 5 under --serial and distributed (there its
# TM exits 5 and, with every TM gone, spits-run ends with that status).
serial wexit "$TMODS/faulty.so" 10 exit=4 exitcode=5
[ $rc = 5 ] || fail "a worker's exit(5): --serial exited $rc"
rc=0
timeout -s KILL 60 "$RUN" -q -n 2 "$TMODS/faulty.so" 10 exit=4 exitcode=5 >/dev/null 2>"$T/wexit.derr" || rc=$?
[ $rc = 5 ] || fail "a worker's exit(5): the distributed run exited $rc: $(cat "$T/wexit.derr")"
echo "a worker's exit(5): status 5 from both"

# --joblog: the lines spits-jm writes, field for field but the times
# (each run appends under its own header); a failed task's line is there
# too, with the worker's return code, and nothing after it.
for mode in s d; do
    rc=0 how=(--serial)
    [ $mode = d ] && how=(--tms 2 -n 2)
    timeout -s KILL 60 "$RUN" -q "${how[@]}" \
        --joblog "$T/pi.jl$mode" "$MODS/pi.so" 200000 20 >/dev/null 2>"$T/pi.jl$mode.err" || rc=$?
    [ $rc = 0 ] || fail "pi --joblog ($mode) exited $rc: $(cat "$T/pi.jl$mode.err")"
done
fields() { awk -F '\t' '{ print $1, $2, $5, $6, $7, $8, $9 }' "$1" | sort -n; }
[ "$(fields "$T/pi.jls")" = "$(fields "$T/pi.jld")" ] && [ "$(wc -l <"$T/pi.jls")" = 21 ] ||
    fail "--serial's joblog is not the distributed one's: $(diff <(fields "$T/pi.jld") <(fields "$T/pi.jls") | head -4)"
awk -F '\t' 'NR > 1 && !($3 ~ /^[0-9]+\.[0-9][0-9][0-9]$/ && $4 ~ /^ *[0-9]+\.[0-9][0-9][0-9]$/) { exit 1 }' \
    "$T/pi.jls" || fail "--serial's joblog times: $(sed -n 2p "$T/pi.jls")"
serial jlfail --joblog "$T/fail.jl" "$TMODS/faulty.so" 30 fail=7 commitfail=5
[ $rc = 3 ] || fail "--serial --joblog with task 7 failing exited $rc"
# (commit_pit fails for task 4, the worker for task 7)
[ "$(fields "$T/fail.jl" | grep -v "^Seq " | tr '\n' ';')" = "$(for i in 0 1 2 3 4 5 6 7; do
    printf '%s %s 8 %s %s 0 phase 1;' $i "$(hostname)" $([ $i = 7 ] && echo 0 || echo 8) \
        $([ $i = 4 ] || [ $i = 7 ] && echo 1 || echo 0); done)" ] ||
    fail "--serial --joblog with a failed task: $(cat "$T/fail.jl")"
echo "--joblog: spits-jm's lines from --serial too"

# valgrind: no invalid access, no definite leak, the exact answers (not
# in a sanitizer build, whose runtime valgrind cannot run).
if ! command -v valgrind >/dev/null; then
    echo "NOTE: valgrind is not installed: the memcheck runs are skipped"
elif sanitized; then
    echo "NOTE: a sanitizer build: the memcheck runs are skipped"
else
    for m in "twophase $TMODS/twophase.so 50" "bench $MODS/bench.so -n 40 -f 7"; do
        set -- $m
        name=vg-$1; shift
        rc=0
        timeout -s KILL 120 valgrind -q --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite "$RUN" --serial "$@" \
            >"$T/$name.s" 2>"$T/$name.serr" || rc=$?
        case $name in
            vg-twophase) [ $rc = 0 ] && [ "$(cat "$T/$name.s")" = "$(cat "$T/twophase.s")" ] ;;
            vg-bench) [ $rc = 3 ] && [ ! -s "$T/$name.s" ] ;;
        esac || fail "$name under valgrind: exit $rc, printed '$(cat "$T/$name.s")': $(cat "$T/$name.serr")"
        echo "$name: clean under valgrind (exit $rc)"
    done
    grep -q "task 7 failed" "$T/vg-bench.serr" || fail "vg-bench: $(cat "$T/vg-bench.serr")"
    [ "$(grep -c . "$T/vg-bench.serr")" = 1 ] || fail "valgrind reported: $(cat "$T/vg-bench.serr")"
fi
echo ok
