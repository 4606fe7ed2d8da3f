#!/bin/bash
# mutants.sh - does the scheduler's self-test catch bugs? Each mutation in
# mutants.list is applied to a copy of jobmanager/scheduler.c, built with
# a small driver that runs jm_sched_selftest, and run: the self-test must
# fail (or crash, or hang past MUT_TIMEOUT seconds) for every mutant, and
# pass on the unmutated copy. A mutation whose lines no longer match
# scheduler.c exactly once fails the test, so the list cannot rot.
#
#   mutants.sh [NAME...]     (no NAME: every mutant in the list)
#
# It builds plain binaries of its own (no sanitizer: they only need to
# fail), with the compiler and include flags the build exports (MUT_CC,
# MUT_CFLAGS, MUT_LIBS from tests/Makefile.am), into $T.
. "$top_srcdir/tests/lib.sh"

# The mutants are plain builds whatever the tree's build: a sanitizer
# stage would only repeat the plain stage's run, slower.
if sanitized; then
    echo "SKIP: the mutants are built without sanitizers; the plain build's check runs them"
    exit 77
fi

LIST=$top_srcdir/tests/mutants.list
SRC=$top_srcdir/jobmanager/scheduler.c
read -r -a CC <<<"${MUT_CC:-cc}"      # (may be a command and flags)
read -r -a XFLAGS <<<"${MUT_CFLAGS:-}"
read -r -a LIBS <<<"${MUT_LIBS:--lsodium -lm}"
TIMEOUT=${MUT_TIMEOUT:-20}
FLAGS=(-O0 -w -pthread -I"$top_srcdir/jobmanager" -I"$top_srcdir/serving" -I"$top_srcdir/libspits" "${XFLAGS[@]}")

# mutate NAME: scheduler.c with mutant NAME applied, on stdout; a line
# naming the problem on stderr and status 1 if NAME is not in the list
# once, or a hunk of it does not match the scheduler's code (the lines
# before its self-test) exactly once, or changes nothing.
mutate() {
    awk -v name="$1" -v list="$LIST" '
    function bad(msg) { print "mutants.list: " name ": " msg > "/dev/stderr"; err = 1; exit 1 }
    FNR == NR {
        if ($0 ~ /^= /) { mine = substr($0, 3) == name; found += mine; st = ""; next }
        if ($0 ~ /^#/ || $0 == "") { st = ""; next }
        if ($0 !~ /^[-+]/) { if (mine) bad("line " FNR " is not \"= NAME\", \"-\" or \"+\""); next }
        if (!mine) next
        if ($0 ~ /^-/) {
            if (st != "-") { h++; nold[h] = nnew[h] = 0 }
            old[h, ++nold[h]] = substr($0, 2); st = "-"
        } else {
            if (st == "") bad("line " FNR ": a \"+\" line with no \"-\" line before it")
            new[h, ++nnew[h]] = substr($0, 2); st = "+"
        }
        next
    }
    { src[++n] = $0; if (!limit && $0 == "#ifdef SPITS_SELFTEST") limit = n }
    END {
        if (err) exit 1
        if (found != 1) bad("named " found " times in " list)
        if (!h) bad("no lines to change")
        if (!limit) bad("no \"#ifdef SPITS_SELFTEST\" line in scheduler.c")
        for (k = 1; k <= h; k++) {
            same = nold[k] == nnew[k]
            for (j = 1; same && j <= nold[k]; j++) same = old[k, j] == new[k, j]
            if (same) bad("hunk " k " changes nothing")
            at = 0; hits = 0
            for (i = 1; i + nold[k] - 1 < limit; i++) {
                for (j = 1; j <= nold[k] && src[i + j - 1] == old[k, j]; j++) ;
                if (j > nold[k]) { hits++; at = i }
            }
            if (hits != 1)
                bad("hunk " k " (\"" old[k, 1] "\") matches " hits " times in scheduler.c, not once")
            m = 0
            for (i = 1; i < at; i++) out[++m] = src[i]
            for (j = 1; j <= nnew[k]; j++) out[++m] = new[k, j]
            for (i = at + nold[k]; i <= n; i++) out[++m] = src[i]
            limit += nnew[k] - nold[k]
            n = m
            for (i = 1; i <= n; i++) src[i] = out[i]
        }
        for (i = 1; i <= n; i++) print src[i]
    }' "$LIST" "$SRC"
}

# build DIR: DIR/scheduler.c with the driver into DIR/selftest.
build() {
    "${CC[@]}" "${FLAGS[@]}" -DSPITS_SELFTEST -o "$1/selftest" "$T/driver.c" "$1/scheduler.c" \
        "$T"/deps/*.o "${LIBS[@]}" >"$1/build.log" 2>&1
}

# run DIR: the self-test's status (124: timed out).
run() {
    timeout -s KILL "$TIMEOUT" "$1/selftest" >"$1/run.log" 2>&1
    local rc=$?
    [ $rc = 137 ] && rc=124
    return $rc
}

if [ $# -gt 0 ]; then
    names=("$@")
else
    mapfile -t names < <(sed -n 's/^= //p' "$LIST")
fi
[ ${#names[@]} -gt 0 ] || fail "no mutants in $LIST"

# What scheduler.c links against, built once.
mkdir -p "$T/deps" "$T/orig"
cat >"$T/driver.c" <<'EOF'
#include "scheduler.h"
int main(void) { return jm_sched_selftest() == 0 ? 0 : 1; }
EOF
for f in jobmanager/lateness.c jobmanager/retryq.c jobmanager/taskpool.c libspits/ring.c libspits/util.c libspits/selfexe.c; do
    "${CC[@]}" "${FLAGS[@]}" -c -o "$T/deps/$(basename "$f" .c).o" "$top_srcdir/$f" \
        >"$T/deps/build.log" 2>&1 || { cat "$T/deps/build.log"; fail "cannot build $f"; }
done

# Sanity: the unmutated scheduler builds, and passes its self-test.
cp "$SRC" "$T/orig/scheduler.c"
build "$T/orig" || { cat "$T/orig/build.log"; fail "the unmutated scheduler.c does not build"; }
run "$T/orig" || { tail -5 "$T/orig/run.log"; fail "the unmutated scheduler.c fails its self-test"; }
echo "unmutated: passes"

killed=0 survived=0 broken=0
for name in "${names[@]}"; do
    d=$T/m-$name
    mkdir -p "$d"
    if ! mutate "$name" >"$d/scheduler.c"; then
        broken=$((broken + 1))
        continue
    fi
    if ! build "$d"; then
        echo "$name: does not build"
        sed 's/^/    /' "$d/build.log" | head -5
        broken=$((broken + 1))
        continue
    fi
    run "$d"
    rc=$?
    if [ $rc = 0 ]; then
        echo "$name: SURVIVED"
        survived=$((survived + 1))
    else
        how=$(grep -m1 'selftest' "$d/run.log" | sed 's/.*scheduler\.c:[0-9]*: //' | cut -c1-100)
        [ $rc = 124 ] && how="timed out after ${TIMEOUT}s"
        [ $rc -gt 128 ] && [ $rc != 124 ] && how="signal $((rc - 128))"
        echo "$name: killed (${how:-exit $rc})"
        killed=$((killed + 1))
    fi
    rm -f "$d/selftest"
done
echo "mutants: ${#names[@]}, killed $killed, survived $survived, broken $broken"
[ $broken = 0 ] || fail "$broken mutant(s) no longer apply to scheduler.c or do not build (mutants.list)"
[ $survived = 0 ] || fail "$survived mutant(s) survived the scheduler's self-test"
exit 0
