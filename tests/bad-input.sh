#!/bin/bash
# Bad modules, options, endpoints and job dirs: one line naming the
# problem, a non-zero exit, never a crash or a hang.
. "$(dirname "$0")/lib.sh"

# expect RC PHRASE COMMAND...: exit status RC and one stderr line with PHRASE
expect() {
    local want=$1 phrase=$2; shift 2
    timeout 30 "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc = "$want" ] || fail "$* exited $rc, not $want: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" = 1 ] || fail "$* printed $(wc -l <"$T/err") lines: $(cat "$T/err")"
    grep -q -- "$phrase" "$T/err" || fail "$* said '$(cat "$T/err")', not '$phrase'"
}

echo "not a module" >"$T/text.so"
touch "$T/file"
J="--jobdir $T/jd --bind tcp://127.0.0.1:0"
expect 1 "legacy byte-array" "$JM" $J "$TMODS/legacy.so"
expect 1 "missing required symbol spits_worker_run" "$JM" $J "$TMODS/nosym.so"
grep -q "nosym.so" "$T/err" || fail "the missing-symbol message does not name the file"
expect 1 "not a SPITS module" "$JM" $J "$TMODS/notspits.so"
expect 1 "cannot load module" "$JM" $J "$T/missing.so"
expect 1 "text.so: not a shared object (no ELF header)" "$JM" $J "$T/text.so"
expect 1 "file: not a shared object (the file is empty)" "$JM" $J "$T/file"
# Read from the ELF symbol table before dlopen, so an unresolved symbol
# (a helper library the runtime lacks) does not hide what the module is.
expect 1 "legacyext.so: legacy byte-array" "$JM" $J "$TMODS/legacyext.so"
expect 1 "notspitsext.so: not a SPITS module" "$JM" $J "$TMODS/notspitsext.so"
# A module whose helper, found through its run path $ORIGIN, is missing,
# no ELF file, or lacks the DT_SONAME the module needs (which is how the
# loader matches the module's DT_NEEDED to the helper loaded first).
for d in nohelper badhelper nosoname; do
    mkdir -p "$T/$d" && cp "$TMODS/originmod.so" "$T/$d/" || fail "cannot copy originmod.so"
done
cp "$T/text.so" "$T/badhelper/libspitsorigin_helper.so"
cp "$TMODS/libspitsorigin_other.so" "$T/nosoname/libspitsorigin_helper.so"
expect 1 "module $T/nohelper/originmod.so: libspitsorigin_helper.so: cannot open shared object file" \
    "$JM" $J "$T/nohelper/originmod.so"
expect 1 "module $T/badhelper/originmod.so: its helper $T/badhelper/libspitsorigin_helper.so (found through its .ORIGIN run path): file too short$" \
    "$JM" $J "$T/badhelper/originmod.so"
expect 1 "module $T/nosoname/originmod.so: its helper $T/nosoname/libspitsorigin_helper.so, found through its .ORIGIN run path, has no DT_SONAME libspitsorigin_helper.so; relink the helper with -Wl,-soname,libspitsorigin_helper.so" \
    "$JM" $J "$T/nosoname/originmod.so"
# A module cut short (a copy that died half-way) made the loader fault.
for cut in 1000 5000 12000; do
    head -c $cut "$MODS/pi.so" >"$T/cut.so"
    expect 1 "cut.so: truncated or damaged module" "$JM" $J "$T/cut.so"
    expect 1 "cut.so: truncated or damaged module" "$RUN" -q "$T/cut.so"
done
expect 1 "not writable\|cannot create job dir" "$JM" --jobdir "$T/file/sub" "$MODS/pi.so"
expect 1 "cannot bind" "$JM" --jobdir "$T/jd" --bind tcp://300.1.1.1:0 "$MODS/pi.so"
# Ports out of range were once taken modulo 65536; inproc:// never reachable.
for port in 99999 70000 -1 x; do
    expect 2 "error: --bind tcp://127.0.0.1:$port: '$port' is not a port (1-65535, or 0 or \* for any free one)" \
        "$JM" --jobdir "$T/jd" --bind "tcp://127.0.0.1:$port" "$MODS/pi.so"
done
expect 2 "error: --bind inproc://x is inside this one process, where no task manager can reach it" \
    "$JM" --jobdir "$T/jd" --bind inproc://x "$MODS/pi.so"
expect 2 "error: --bind udp://127.0.0.1:5 is not tcp://HOST:PORT or ipc://PATH" \
    "$JM" --jobdir "$T/jd" --bind udp://127.0.0.1:5 "$MODS/pi.so"
expect 2 "error: --bind tcp://127.0.0.1:99999: '99999' is not a port" \
    "$RUN" --bind tcp://127.0.0.1:99999 "$MODS/pi.so"
expect 2 "error: --connect tcp://127.0.0.1:0: '0' is not a port (1-65535)" \
    "$TM" --connect tcp://127.0.0.1:0 --insecure
[ -e "$T/jd/journal" ] && fail "a refused --bind left a journal"
expect 2 "unknown option" "$JM" --frobnicate "$MODS/pi.so"
expect 2 "no MODULE" "$JM" $J
expect 2 "max-copies" "$JM" $J --max-copies 0 "$MODS/pi.so"
expect 2 "^spits-jm: error: --io-threads wants a number from 1 to 64, not '0'" "$JM" $J --io-threads 0 "$MODS/pi.so"
expect 2 "^spits-jm: error: --io-threads wants a number from 1 to 64, not '65'" "$JM" $J --io-threads 65 "$MODS/pi.so"
# (megabytes meant as bytes: under 64 MiB, only 0 is taken)
for v in 4000 -1 67108863 1G; do
    expect 2 "^spits-jm: error: --memory-limit wants 0 (none) or a number of bytes from 67108864 (64 MiB), not '$v'" \
        "$JM" $J --memory-limit "$v" "$MODS/pi.so"
done
expect 2 "--journal wants on or off, not 'maybe'" "$JM" $J --journal maybe "$MODS/pi.so"
expect 2 "give no ARGS" "$JM" $J --resume "$MODS/pi.so" 100
mkdir "$T/fresh"
expect 1 "has no journal: there is no job to resume" "$JM" --jobdir "$T/fresh" --resume
mkdir -p "$T/junk" && echo "garbage garbage" >"$T/junk/journal"
expect 1 "junk/journal is not a spits journal" "$JM" --jobdir "$T/junk" --resume
expect 1 "not a spits journal; remove" "$JM" --jobdir "$T/junk" --bind tcp://127.0.0.1:0 "$MODS/pi.so"
printf 'SPITSJN' >"$T/junk/journal"
expect 1 "too short to hold a job" "$JM" --jobdir "$T/junk" --resume
expect 2 "workers" "$TM" --jobdir "$T/jd" --workers 0
expect 2 "workers" "$TM" --jobdir "$T/jd" --workers abc
expect 2 "jobdir" "$TM"
expect 2 "--task-timeout needs --isolate" "$TM" --jobdir "$T/jd" --task-timeout 5
expect 2 "--task-timeout wants seconds" "$TM" --jobdir "$T/jd" --isolate --task-timeout soon
expect 2 "--drain-timeout wants seconds" "$TM" --jobdir "$T/jd" --drain-timeout -1
expect 2 "not for use by hand" "$TM" --worker-child
expect 2 "--end-time wants +SEC, epoch seconds, YYYY-MM-DDTHH:MM:SS or none, not 'tomorrow'" "$TM" --jobdir "$T/jd" --end-time tomorrow
expect 2 "--progress-interval wants seconds" "$JM" $J --progress-interval x "$MODS/pi.so"
expect 2 "workers" "$RUN" --workers -3 "$MODS/pi.so"
expect 2 "--task-timeout needs --isolate" "$RUN" --task-timeout 3 "$MODS/pi.so"
# spits-run refuses what its JM or TMs would, before it starts anything
# (it used to print a TM's usage, then "every task manager failed").
mkdir -p "$T/runtmp"
TMPDIR=$T/runtmp expect 2 "^spits-tm: error: --prefetch wants a number from 0 to 1048576, not '-1'" \
    "$RUN" --prefetch -1 "$MODS/pi.so"
TMPDIR=$T/runtmp expect 2 "^spits-tm: error: --task-timeout wants seconds (at least 0.001), not 'abc'" \
    "$RUN" --task-timeout abc --isolate "$MODS/pi.so"
TMPDIR=$T/runtmp expect 2 "^spits-jm: error: --max-copies wants a number from 1 to 8, not '0'" \
    "$RUN" --max-copies 0 "$MODS/pi.so"
[ -z "$(ls -A "$T/runtmp")" ] || fail "spits-run made a job dir for options it refused: $(ls "$T/runtmp")"
expect 1 "no job manager answered at tcp://127.0.0.1:1" "$TM" --connect tcp://127.0.0.1:1 --insecure --wait 2
expect 2 "--connect needs --key-file FILE" "$TM" --connect tcp://127.0.0.1:1
expect 2 "give --key-file or --insecure, not both" "$TM" --connect tcp://127.0.0.1:1 --insecure --key-file "$T/file"
expect 1 "key file $T/file is open to others (mode 0644)" "$TM" --connect tcp://127.0.0.1:1 --key-file "$T/file" --wait 1
cp "$T/file" "$T/empty.key" && chmod 600 "$T/empty.key"
expect 1 "key file $T/empty.key: " "$TM" --connect tcp://127.0.0.1:1 --key-file "$T/empty.key" --wait 1
expect 2 "--max-task-bytes wants a number" "$JM" $J --max-task-bytes 0 "$MODS/pi.so"
expect 1 "cannot read key file $T/nojob/tm.key" "$JM" --jobdir "$T/nojob" --export-key "$T/k.key"
expect 1 "no jm.json appeared" "$TM" --jobdir "$T/empty" --wait 1
mkdir -p "$T/broken" && echo '{"version": 1' >"$T/broken/jm.json"
expect 1 "jm.json" "$TM" --jobdir "$T/broken" --wait 1
mkdir -p "$T/open" && chmod 0777 "$T/open"
expect 1 "job dir $T/open is world-writable (mode 0777): refusing it" "$JM" --jobdir "$T/open" "$MODS/pi.so"
cp "$T/broken/jm.json" "$T/open/jm.json" && chmod 0775 "$T/open"
expect 1 "is group-writable" "$TM" --jobdir "$T/open" --wait 1
# A module overwritten in place (cp of another build) while its job runs:
# the JM and the TM, and --isolate's worker processes started after the
# cp, run the private copy they loaded, and the job's answer is exact.
# Task n-1 holds the job open at the gate (-G) until the cp is done; with
# --isolate it times out once first, so a new worker process starts.
overwrite_job() {
    local name=$1 n=40; shift
    cp "$MODS/bench.so" "$T/$name.so" && mkdir -p "$T/$name.marks"
    start_jm $name --max-attempts 5 "$T/$name.so" -n $n -G "$T/$name.gate" -M "$T/$name.marks"
    local jm=$JM_PID
    start_tm $name $name.tm "$@"
    local tm=$TM_PID
    wait_for "[ -e $T/$name.marks/started-$((n - 1)) ]" 60 "the last task to start"
    cp "$MODS/pi.so" "$T/$name.so" || fail "cannot overwrite the module"
    case " $* " in *" --isolate "*)
        wait_for "grep -q 'task $((n - 1)) ran past --task-timeout' $T/$name.tm.log" 60 \
            "the time-out";;
    esac
    touch "$T/$name.gate"
    wait $jm || fail "the job whose module was overwritten exited $?"
    [ "$(cat "$T/$name.out")" = "$(bench_checksum $n)" ] || fail "printed '$(cat "$T/$name.out")'"
    wait $tm || fail "the TM of the overwritten module exited $?"
}
overwrite_job cp-threads -n 2
overwrite_job cp-isolate -n 1 --isolate --task-timeout 2
# A committer whose commit_pit fails for every 10th result: the first 10
# failures are named, later ones only counted; the summary line and
# report.json count them all; exit 4 (status "commit-errors") unless
# --commit-errors=ignore.
# commit_errors NAME N RC STATUS ARGS...: faulty N commitfail=10 through
# spits-run (ARGS are spits-run's options); checks the exit status, the
# named lines, the summary line and report.json.
commit_errors() {
    local name=$1 n=$2 want=$3 status=$4 e=$(($2 / 10)); shift 4
    timeout 120 "$RUN" -n 2 -d "$T/$name" "$@" "$TMODS/faulty.so" $n commitfail=10 \
        >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    [ $rc = "$want" ] || fail "$name exited $rc, not $want: $(tail -3 "$T/$name.err")"
    [ "$(cat "$T/$name.out")" = "faulty: $((n - e)) tasks, sum $((n * (n + 1) / 2 - 5 * e * (e + 1)))" ] \
        || fail "$name printed '$(cat "$T/$name.out")'"
    [ "$(grep -c "warning: commit_pit returned 1 for task [0-9]* of phase 1\$" "$T/$name.err")" = 10 ] \
        || fail "$name: not 10 named commit_pit lines: $(grep -c commit_pit "$T/$name.err")"
    grep -Eq "^spits-jm: job [0-9a-f]{32} $status: 1 phase\(s\), $n task\(s\) committed, $e commit error\(s\), 0 failed, " \
        "$T/$name.err" || fail "$name summary: $(grep ' phase(s), ' "$T/$name.err")"
    [ "$(json "$T/$name/report.json" "(d['status'], d['exit_code'], d['counters']['commit_errors'], d['phases'][0]['commit_errors'])")" = \
        "('$status', $want, $e, $e)" ] || fail "$name report: $(json "$T/$name/report.json" "d['status'], d['counters']")"
}
commit_errors cf100 100 4 commit-errors
[ "$(grep -o 'for task [0-9]* ' "$T/cf100.err" | sort -k3n | tr -d '\n')" = \
    "$(for i in $(seq 9 10 99); do printf 'for task %d ' $i; done)" ] \
    || fail "the named tasks are not 9, 19, ..., 99: $(grep commit_pit "$T/cf100.err")"
grep -q "in all\|so far" "$T/cf100.err" && fail "a count line with nothing unnamed: $(cat "$T/cf100.err")"
commit_errors cf100i 100 0 ok --commit-errors=ignore
# 100 failures: 10 named, the rest in count lines, the last of them the total.
commit_errors cf1000 1000 4 commit-errors
[ "$(grep 'commit_pit failed' "$T/cf1000.err" | tail -1)" = \
    "spits-jm: warning: commit_pit failed for 100 result(s) of phase 1 in all (only the first 10 are named)" ] \
    || fail "no final count: $(grep commit_pit "$T/cf1000.err" | tail -3)"
# Failures spread over 10 s (one worker, 100 ms a task, every commit_pit
# failing): 10 named, then a count line at most every 5 s (at least one, as
# the last 90 fail over 9 s), then the total.
timeout 120 "$RUN" -n 1 -d "$T/cfslow" "$TMODS/faulty.so" 100 commitfail=1 sleep=100000 \
    >"$T/cfslow.out" 2>"$T/cfslow.err"
rc=$?
[ $rc = 4 ] || fail "cfslow exited $rc: $(tail -3 "$T/cfslow.err")"
[ "$(grep -c "warning: commit_pit returned 1 for task" "$T/cfslow.err")" = 10 ] \
    || fail "cfslow: not 10 named lines: $(grep commit_pit "$T/cfslow.err")"
so_far=$(sed -n 's/^spits-jm: warning: commit_pit has failed for \([0-9]*\) result(s) of phase 1 so far (only the first 10 are named)$/\1/p' \
    "$T/cfslow.err" | tr '\n' ' ')
[ "$(grep -c "commit_pit has failed" "$T/cfslow.err")" = "$(echo $so_far | wc -w)" ] &&
    "$PY" -c "import sys; c = [int(x) for x in sys.argv[1:]]; sys.exit(not (c and 10 < c[0] and c == sorted(set(c)) and c[-1] <= 100))" $so_far \
    || fail "cfslow count lines: $(grep 'commit_pit has failed' "$T/cfslow.err")"
[ "$(grep 'commit_pit' "$T/cfslow.err" | tail -1)" = \
    "spits-jm: warning: commit_pit failed for 100 result(s) of phase 1 in all (only the first 10 are named)" ] \
    || fail "cfslow: no final count: $(grep commit_pit "$T/cfslow.err" | tail -3)"
expect 2 "--commit-errors wants fail or ignore, not 'maybe'" "$JM" $J --commit-errors=maybe "$MODS/pi.so"
# spits-bench's -o, checked before any workload runs: a directory, a
# device that takes nothing, a directory that does not exist (which it
# does not make), no file at all.
B=$top_srcdir/tools/spits-bench
mkdir "$T/benchdir"
expect 2 "^spits-bench: -o $T/benchdir is a directory: give a file name\$" "$B" -o "$T/benchdir"
expect 2 "^spits-bench: -o /dev/full cannot be written: No space left on device\$" "$B" -o /dev/full
expect 2 "^spits-bench: -o $T/none/x.json: no directory $T/none\$" "$B" -o "$T/none/x.json"
[ ! -e "$T/none" ] || fail "spits-bench -o made $T/none"
expect 2 "^spits-bench: -o needs a file name (see --help)\$" "$B" -o
[ -z "$(ls "$T/benchdir")" ] || fail "spits-bench -o DIR wrote into it"
# A module that refuses its arguments: the JM reports it, exits non-zero.
timeout 60 "$RUN" -q "$MODS/pi.so" notanumber >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pi with a bad argument did not exit 1"
grep -q "bad STEPS" "$T/err" || fail "the module's own message was lost"
echo ok
