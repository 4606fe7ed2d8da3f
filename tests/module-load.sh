#!/bin/bash
# Module mistakes named at load, each in one exact line with exit status
# 1: C++ names without extern "C", a variable where a function must be,
# every missing required function; and the current (2021) SPITS 2.0
# metrics-reading interface read back into report.json.
# NEW_TMODS: where this test's own modules are (default: the tree's), so
# that an older runtime can be tried against them.
. "$(dirname "$0")/lib.sh"
NEW_TMODS=${NEW_TMODS:-$TMODS}

# refused MODULE MESSAGE: the JM refuses MODULE saying exactly
# "spits-jm: error: NEW_TMODS/MODULE.so: MESSAGE"
refused() {
    local mod=$NEW_TMODS/$1.so
    timeout 10 "$JM" --jobdir "$T/jd" --bind tcp://127.0.0.1:0 "$mod" >"$T/out" 2>"$T/err"
    local rc=$?
    [ $rc = 1 ] || fail "$1 exited $rc, not 1: $(cat "$T/err")"
    [ "$(cat "$T/err")" = "spits-jm: error: $mod: $2" ] \
        || fail "$1: said '$(cat "$T/err")', not '$2'"
}

refused cxxbad 'its spits_* functions have C++ (mangled) names (spits_job_manager_new, spits_job_manager_next_task, ...): declare them extern "C"'
refused cxxpart 'its spits_* functions have C++ (mangled) names (spits_worker_run): declare them extern "C"'
refused datasym 'spits_worker_run is a variable (an ELF data symbol), not a function: define it as the function spits.h declares'
refused workeronly 'missing required symbols spits_job_manager_new, spits_job_manager_next_task, spits_committer_new, spits_committer_commit_pit and spits_committer_commit_job'
refused nocommitjob 'missing required symbols spits_worker_new and spits_committer_commit_job'
refused nosym 'missing required symbol spits_worker_run'

# The 2021 interface: every metric by name, its JSON type from the
# module's type (int, float, string, bytes: their size), its newest value
# (step and ratio hold several; results was set 100 times in a ring of
# 10, whose history starts at its oldest kept value, 91), and null for
# one with no value yet.
out=$(timeout 120 "$RUN" -q -n 2 --jobdir "$T/m21" "$NEW_TMODS/metrics21.so" 300) || fail "metrics21 exited $?"
[ "$out" = "metrics21: sum=$(( 300 * 301 / 2 ))" ] || fail "metrics21 printed '$out'"
m="{'blob': {'bytes': 3}, 'buffer_size': 10, 'idle': None, 'ratio': 0.25, 'results': 100, 'step': 3, 'variant': 'metrics21'}"
got=$(json "$T/m21/report.json" "sorted((d['phases'][0]['metrics'] or {}).items())")
[ "$got" = "[('committer', $m), ('job_manager', $m)]" ] \
    || fail "metrics21's metrics in report.json: $got"
echo ok
