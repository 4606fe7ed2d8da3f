#!/bin/bash
# A module that breaks the rules of its interface: a huge file that is no
# module (refused from its headers, without reading it all), bad pushes
# (an error naming the module function), more than one push in a call, or
# next_task return values other than 0 and 1 (a warning once a job, or an
# error for what cannot be right), and a module path that is not UTF-8.
. "$(dirname "$0")/lib.sh"

# (MISUSE_SO: the test module, when the runtime under test lacks it)
MISUSE=${MISUSE_SO:-$TMODS/misuse.so}
[ -f "$MISUSE" ] || fail "no test module $MISUSE"

# run MODE [RUN-OPTIONS...]: spits-run of misuse.so 10 MODE 3 in job dir
# $T/MODE; RC its exit status, $T/MODE.out and $T/MODE.err what it printed
run() {
    local mode=$1; shift
    rm -rf "${T:?}/$mode"
    timeout 60 "$RUN" -n 2 -d "$T/$mode" "$@" "$MISUSE" 10 "$mode" 3 \
        >"$T/$mode.out" 2>"$T/$mode.err"
    RC=$?
}

# errors MODE: the error lines it printed
errors() {
    grep ': error: ' "$T/$1.err"
}

report() {
    json "$T/$1/report.json" "$2"
}

# --- a huge file is refused from its headers ---------------------------
# Sparse 10 GB files: no ELF header, and pi.so's headers pointing past the
# end of the file (its program headers, its section headers, a segment).
printf 'junk' >"$T/junk.so"
"$PY" - "$MODS/pi.so" "$T" <<'PY' || fail "cannot make the test files"
import struct, sys
src, t = open(sys.argv[1], 'rb').read(), sys.argv[2]
def make(name, off, value):
    b = bytearray(src)
    if off is None:              # the first PT_LOAD's p_filesz
        off = struct.unpack('<Q', b[32:40])[0] + 32
    b[off:off + 8] = struct.pack('<Q', value)
    with open('%s/%s.so' % (t, name), 'wb') as f:
        f.write(b)
make('phoff', 32, 1 << 62)
make('shoff', 40, (10 << 30) - 64)
make('segment', None, 1 << 50)
PY
for f in junk phoff shoff segment; do
    truncate -s 10G "$T/$f.so" || fail "cannot make a sparse file"
done
big() {
    local f=$1 phrase=$2 start end
    start=$(date +%s%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -o "$T/$f.rss" -f %M timeout 10 "$JM" --jobdir "$T/jd-$f" \
            --bind tcp://127.0.0.1:0 "$T/$f.so" >/dev/null 2>"$T/$f.err"
    else
        timeout 10 "$JM" --jobdir "$T/jd-$f" --bind tcp://127.0.0.1:0 "$T/$f.so" \
            >/dev/null 2>"$T/$f.err"
    fi
    local rc=$?
    end=$(date +%s%N)
    [ $rc = 1 ] || fail "$f.so: spits-jm exited $rc, not 1 (124: still reading it after 10 s)"
    [ "$(wc -l <"$T/$f.err")" = 1 ] || fail "$f.so: $(cat "$T/$f.err")"
    grep -qF "spits-jm: error: $T/$f.so: $phrase" "$T/$f.err" ||
        fail "$f.so: said '$(cat "$T/$f.err")', not '$phrase'"
    [ $(((end - start) / 1000000)) -lt 3000 ] || fail "$f.so took $(((end - start) / 1000000)) ms"
    if [ -s "$T/$f.rss" ]; then
        [ "$(tail -1 "$T/$f.rss")" -lt 65536 ] || fail "$f.so: $(tail -1 "$T/$f.rss") KiB resident"
    fi
}
big junk "not a shared object (no ELF header); give the module's .so file"
big phoff "truncated or damaged module (the program headers end past the file's 10737418240 bytes)"
big shoff "truncated or damaged module (the section headers end past the file's 10737418240 bytes)"
big segment "truncated or damaged module (segment 0 ends at byte 1125899906842624, past the file's 10737418240 bytes)"
rm -f "$T"/junk.so "$T"/phoff.so "$T"/shoff.so "$T"/segment.so

# --- bad pushes: an error naming the function --------------------------
# In next_task and commit_job: the JM stops with one line, exit 1 and a
# report.json saying "error" (commit_job had run: its output is there).
for c in "jm-null:spits_job_manager_next_task pushed NULL with size 100 (task 3)" \
         "jm-neg:spits_job_manager_next_task pushed a negative size (-5) (task 3)" \
         "jm-ret=-3:spits_job_manager_next_task returned -3 (task 3): only 1 (a task pushed) and 0 (no more tasks) mean anything" \
         "final-null:spits_committer_commit_job pushed NULL with size 100; the final result is lost" \
         "final-neg:spits_committer_commit_job pushed a negative size (-5); the final result is lost" \
         "final-huge:spits_committer_commit_job pushed 4294967296 bytes, over the journal's record size (4294967295); the final result is lost"; do
    mode=${c%%:*} line="spits-jm: error: phase 1: ${c#*:}"
    run "$mode"
    [ $RC = 1 ] || fail "$mode: spits-run exited $RC, not 1: $(cat "$T/$mode.err")"
    [ "$(errors "$mode")" = "$line" ] || fail "$mode: errors '$(errors "$mode")', not '$line'"
    [ "$(report "$mode" "d['status']")" = error ] || fail "$mode: report status"
done
[ "$(report jm-null "d['counters']['committed']")" = 3 ] || fail "jm-null: tasks before task 3 not committed"
[ "$(cat "$T/final-null.out")" = "misuse: 10 tasks, sum 100" ] || fail "final-null: commit_job printed '$(cat "$T/final-null.out")'"
# In a worker, threads or --isolate: that run fails, so the task fails
# every attempt (exit 3, named in report.json), as other failed runs do.
for iso in "" --isolate; do
    for c in "w-null:spits_worker_run pushed NULL with size 100" \
             "w-neg:spits_worker_run pushed a negative size (-5)"; do
        mode=${c%%:*} phrase=${c#*:}
        run "$mode" $iso
        [ $RC = 3 ] || fail "$mode $iso: spits-run exited $RC, not 3: $(cat "$T/$mode.err")"
        grep -qF "$phrase" "$T/$mode.err" || fail "$mode $iso: nothing says '$phrase': $(cat "$T/$mode.err")"
        grep -qF "spits-jm: error: task 3 of phase 1 failed (last run: failed)" "$T/$mode.err" ||
            fail "$mode $iso: the failed task is not named"
        [ "$(report "$mode" "[f['task'] for f in d['failed_tasks']]")" = "[3]" ] ||
            fail "$mode $iso: report failed_tasks"
    done
done

# --- more than one push in a call: the last is kept, warned once --------
# misuse pushes 1000000+id first and id last, so the sum is 100 only if
# every call's last push is the one kept.
warnings() {
    grep -c "$2" "$T/$1.err"
}
for c in "jm-twice:spits-jm: warning: spits_job_manager_next_task pushed 2 times in one call (task 0): only the last push is kept" \
         "w-twice:spits-tm: warning: spits_worker_run pushed 2 times in one call (task " \
         "final-twice:spits-jm: warning: spits_committer_commit_job pushed 2 times in one call (phase 1): only the last push is kept"; do
    mode=${c%%:*} phrase=${c#*:}
    run "$mode"
    [ $RC = 0 ] || fail "$mode: spits-run exited $RC: $(cat "$T/$mode.err")"
    [ "$(cat "$T/$mode.out")" = "misuse: 10 tasks, sum 100" ] || fail "$mode printed '$(cat "$T/$mode.out")'"
    [ "$(warnings "$mode" "pushed 2 times in one call")" = 1 ] || fail "$mode: not warned exactly once: $(cat "$T/$mode.err")"
    grep -qF "$phrase" "$T/$mode.err" || fail "$mode: no '$phrase': $(cat "$T/$mode.err")"
done
[ "$(report jm-twice "d['counters']['extra_pushes'], d['phases'][0]['extra_pushes']['spits_job_manager_next_task']")" = "10 10" ] ||
    fail "jm-twice: report.json does not count 10 extra pushes"
[ "$(report final-twice "d['counters']['extra_pushes'], d['phases'][0]['extra_pushes']['spits_committer_commit_job']")" = "1 1" ] ||
    fail "final-twice: report.json does not count 1 extra push"
[ "$(report w-twice "d['status']")" = ok ] || fail "w-twice: report status"

# --- next_task's other misuse that modules may mean: a warning ---------
for c in "jm-nopush:spits-jm: warning: spits_job_manager_next_task returned 1 without pushing (task 3): an empty task is made:misuse: 10 tasks, sum 93" \
         "jm-ret=7:spits-jm: warning: spits_job_manager_next_task returned 7 (task 3): taken as 1 (a task pushed):misuse: 10 tasks, sum 100" \
         "jm-ret=0:spits-jm: warning: spits_job_manager_next_task pushed a task and returned 0 (no more tasks): that last push is dropped:misuse: 3 tasks, sum 9"; do
    mode=${c%%:*} rest=${c#*:}
    phrase=${rest%:misuse*} out=misuse${rest##*:misuse}
    run "$mode"
    [ $RC = 0 ] || fail "$mode: spits-run exited $RC: $(cat "$T/$mode.err")"
    [ "$(cat "$T/$mode.out")" = "$out" ] || fail "$mode printed '$(cat "$T/$mode.out")', not '$out'"
    [ "$(grep -c ': warning: ' "$T/$mode.err")" = 1 ] || fail "$mode: not one warning: $(cat "$T/$mode.err")"
    grep -qF "$phrase" "$T/$mode.err" || fail "$mode: no '$phrase': $(cat "$T/$mode.err")"
done

# --- a module path that is not UTF-8 ------------------------------------
bad=$(printf "$T/p\xffi.so")
cp "$MODS/pi.so" "$bad" || fail "cannot copy pi.so"
timeout 30 "$JM" --jobdir "$T/jd-utf8" --bind tcp://127.0.0.1:0 "$bad" >/dev/null 2>"$T/utf8.err"
rc=$?
[ $rc = 1 ] || fail "a non-UTF-8 module path: exit $rc"
[ "$(wc -l <"$T/utf8.err")" = 1 ] || fail "a non-UTF-8 module path: $(cat "$T/utf8.err")"
grep -qF "spits-jm: error: the module path $bad is not valid UTF-8: the job's files (jm.json, journal, report.json) are JSON" \
    "$T/utf8.err" || fail "a non-UTF-8 module path: said '$(cat "$T/utf8.err")'"
echo ok
