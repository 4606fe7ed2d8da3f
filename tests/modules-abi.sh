#!/bin/bash
# Two-phase spits_main (workers see each phase's argv), the SPITS 2.0
# metrics variant (host and big-endian), and a C++ module.
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
echo ok
