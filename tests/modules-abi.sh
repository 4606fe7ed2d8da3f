#!/bin/bash
# Two-phase spits_main (workers see each phase's argv), the SPITS 2.0
# metrics variant (host and big-endian), a C++ module, and a module that
# finds its helper library through its run path $ORIGIN.
. "$(dirname "$0")/lib.sh"

n=50
sq=$(( n * (n + 1) * (2 * n + 1) / 6 ))
cu=$(( (n * (n + 1) / 2) ** 2 ))
out=$(timeout 120 "$RUN" -q -n 2 --tms 2 "$TMODS/twophase.so" $n) || fail "twophase exited $?"
[ "$out" = "twophase: squares=$sq cubes=$cu total=$((sq + cu))" ] || fail "twophase printed '$out'"

# metrics20be writes its metrics big-endian, as the published 2.0 headers do.
for mod in metrics20 metrics20be; do
    out=$(timeout 120 "$RUN" -q -n 2 --jobdir "$T/$mod" "$TMODS/$mod.so" 300) || fail "$mod exited $?"
    [ "$out" = "metrics20: sum=$(( 300 * 301 / 2 ))" ] || fail "$mod printed '$out'"
    # Its metrics, read back from the job manager and committer instances.
    m="{'buffer_size': 10, 'ratio': 0.25, 'variant': '$mod'}"
    [ "$(json "$T/$mod/report.json" "sorted(d['phases'][0]['metrics'].items())")" = \
        "[('committer', $m), ('job_manager', $m)]" ] \
        || fail "$mod's metrics in report.json: $(json "$T/$mod/report.json" "d['phases'][0]['metrics']")"
done

out=$(timeout 120 "$RUN" -q -n 2 "$TMODS/cxxmod.so" 40) || fail "cxxmod exited $?"
[ "$out" = "cxxmod: sum=$(( 40 * 41 * 81 / 6 ))" ] || fail "cxxmod printed '$out'"

# originmod.so needs libspitsorigin_helper.so, next to it, through its run
# path $ORIGIN alone; the JM (spits_main, committer) and the TM's workers
# (threads, or --isolate worker processes) all call the helper. Named
# through a symbolic link elsewhere, $ORIGIN is still the directory of its
# real path, where the helper is.
on=30
want="originmod: sum=$(( 3 * on * (on + 1) / 2 + on )) via originhelper"
mkdir -p "$T/link" && ln -s "$TMODS/originmod.so" "$T/link/originmod.so"
# origin_job NAME MODULE TM-ARGS...
origin_job() {
    local name=$1 mod=$2; shift 2
    start_jm $name "$mod" $on
    local jm=$JM_PID
    start_tm $name $name.tm "$@"
    local tm=$TM_PID
    wait $jm || fail "$name: the JM exited $?"
    [ "$(cat "$T/$name.out")" = "$want" ] || fail "$name printed '$(cat "$T/$name.out")'"
    wait $tm || fail "$name: the TM exited $?"
}
origin_job origin-threads "$TMODS/originmod.so" -n 2
origin_job origin-isolate "$TMODS/originmod.so" -n 2 --isolate
origin_job origin-link "$T/link/originmod.so" -n 1 --isolate
echo ok
