#!/bin/bash
# mutants.sh - do the serving engine's self-tests catch bugs? Each
# mutation in mutants.list is applied to a copy of the file it names (the
# scheduler, serving/scheduler.c, and the other parts of serving/: credit,
# joins, liveness, peertab..., and libspits/hashtab.c, the table peertab
# builds on), built with a small driver that runs that
# file's self-test, and run: the self-test must fail (or crash, or hang
# past MUT_TIMEOUT seconds) for every mutant, and pass on each unmutated
# file. A mutation whose lines no longer match its file exactly once
# fails the test, so the list cannot rot.
#
#   mutants.sh [NAME...]     (no NAME: every mutant in the list)
#
# It builds plain binaries of its own (no sanitizer: they only need to
# fail), with the compiler and include flags the build exports (MUT_CC,
# MUT_CFLAGS, MUT_LIBS from tests/Makefile.am), into $T: every file of
# serving/ is compiled once with its self-test, and each mutant links
# against those but the one it replaces, and the build's libspits.
. "$top_srcdir/tests/lib.sh"

# The mutants are plain builds whatever the tree's build: a sanitizer
# stage would only repeat the plain stage's run, slower.
if sanitized; then
    echo "SKIP: the mutants are built without sanitizers; the plain build's check runs them"
    exit 77
fi

LIST=$top_srcdir/tests/mutants.list
read -r -a CC <<<"${MUT_CC:-cc}"      # (may be a command and flags)
read -r -a XFLAGS <<<"${MUT_CFLAGS:-}"
read -r -a LIBS <<<"${MUT_LIBS:--lsodium -lm}"
TIMEOUT=${MUT_TIMEOUT:-20}
FLAGS=(-O0 -w -pthread -I"$top_srcdir/serving" -I"$top_srcdir/libspits" "${XFLAGS[@]}")

# targets: a line per mutant, "NAME FILE SELFTEST UNIT": the file its
# hunks apply to, the self-test that must catch it, and the .c file
# built from it (FILE itself, or for a header the .c that holds its
# self-test). The list's "@ FILE SELFTEST [UNIT]" lines set them for the
# mutants after them.
targets() {
    awk '/^@ / { file = $2; fn = $3; unit = NF > 3 ? $4 : $2; next }
         /^= / { print substr($0, 3), file, fn, unit }' "$LIST"
}

# mutate NAME FILE: FILE with mutant NAME applied, on stdout; a line
# naming the problem on stderr and status 1 if NAME is not in the list
# once, or a hunk of it does not match FILE's code (the lines before its
# self-test, or all of a file without one) exactly once, or changes
# nothing.
mutate() {
    awk -v name="$1" -v list="$LIST" -v file="$2" '
    function bad(msg) { print "mutants.list: " name ": " msg > "/dev/stderr"; err = 1; exit 1 }
    FNR == NR {
        if ($0 ~ /^= /) { mine = substr($0, 3) == name; found += mine; st = ""; next }
        if ($0 ~ /^[#@]/ || $0 == "") { st = ""; next }
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
        if (!limit) limit = n + 1      # (a file with no self-test: all code)
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
                bad("hunk " k " (\"" old[k, 1] "\") matches " hits " times in " file ", not once")
            m = 0
            for (i = 1; i < at; i++) out[++m] = src[i]
            for (j = 1; j <= nnew[k]; j++) out[++m] = new[k, j]
            for (i = at + nold[k]; i <= n; i++) out[++m] = src[i]
            limit += nnew[k] - nold[k]
            n = m
            for (i = 1; i <= n; i++) src[i] = out[i]
        }
        for (i = 1; i <= n; i++) print src[i]
    }' "$LIST" "$top_srcdir/$2"
}

# build DIR FILE FN UNIT: DIR/$(basename FILE) (the mutated copy) with
# the driver of FN into DIR/selftest, against every object but UNIT's. A
# header is found in DIR first, and UNIT is compiled with it.
build() {
    local d=$1 file=$2 fn=$3 unit=$4 src
    src=$d/$(basename "$file")
    if [ "$file" != "$unit" ]; then   # (a header: its .c beside it)
        src=$d/$(basename "$unit")
        cp "$top_srcdir/$unit" "$src"
    fi
    "${CC[@]}" -I"$d" "${FLAGS[@]}" -DSPITS_SELFTEST -o "$d/selftest" "$T/driver-$fn.c" "$src" \
        "$T/deps-$(basename "$unit" .c).a" "$LIBSPITS" "${LIBS[@]}" >"$d/build.log" 2>&1
}

# run DIR: the self-test's status (124: timed out).
run() {
    timeout -s KILL "$TIMEOUT" "$1/selftest" >"$1/run.log" 2>&1
    local rc=$?
    [ $rc = 137 ] && rc=124
    return $rc
}

declare -A FILE FN UNIT
all=()
while read -r name file fn unit; do
    [ -n "${FILE[$name]:-}" ] && fail "mutants.list: $name is named twice"
    FILE[$name]=$file FN[$name]=$fn UNIT[$name]=$unit
    all+=("$name")
done < <(targets)
if [ $# -gt 0 ]; then
    names=("$@")
else
    names=("${all[@]}")
fi
[ ${#names[@]} -gt 0 ] || fail "no mutants in $LIST"
for name in "${names[@]}"; do
    [ -n "${FILE[$name]:-}" ] || fail "mutants.list: no mutant $name"
    [ -n "${FN[$name]}" ] && [ -f "$top_srcdir/${FILE[$name]}" ] && [ -f "$top_srcdir/${UNIT[$name]}" ] ||
        fail "mutants.list: $name: its \"@ FILE SELFTEST [UNIT]\" line names no file or self-test"
done

# What the mutants link against: each file of serving/ with its
# self-test, built once, in an archive per unit mutated without it; and
# the build's libspits with its self-tests (libtool's static archive).
LIBSPITS=$top_builddir/libspits/.libs/libspits-test.a
[ -f "$LIBSPITS" ] || fail "no $LIBSPITS: build the tree first (make)"
mkdir -p "$T/deps"
for f in "$top_srcdir"/serving/*.c; do
    "${CC[@]}" "${FLAGS[@]}" -DSPITS_SELFTEST -c -o "$T/deps/$(basename "$f" .c).o" "$f" \
        >"$T/deps/build.log" 2>&1 || { cat "$T/deps/build.log"; fail "cannot build $f"; }
done
mapfile -t units < <(for n in "${names[@]}"; do echo "${UNIT[$n]}"; done | sort -u)
for unit in "${units[@]}"; do
    u=$(basename "$unit" .c)
    (cd "$T/deps" && ar rcs "../deps-$u.a" $(ls ./*.o | grep -v "^\./$u\.o\$")) ||
        fail "cannot archive the objects but $u.o"
done

# Sanity: each file mutated builds unmutated, and passes its self-test.
mapfile -t files < <(for n in "${names[@]}"; do echo "${FILE[$n]} ${FN[$n]} ${UNIT[$n]}"; done | sort -u)
for line in "${files[@]}"; do
    read -r file fn unit <<<"$line"
    [ -f "$T/driver-$fn.c" ] ||
        printf 'int %s(void);\nint main(void) { return %s() == 0 ? 0 : 1; }\n' "$fn" "$fn" \
            >"$T/driver-$fn.c"
    d=$T/orig-$(basename "$file")
    mkdir -p "$d"
    cp "$top_srcdir/$file" "$d/"
    build "$d" "$file" "$fn" "$unit" || { cat "$d/build.log"; fail "the unmutated $file does not build"; }
    run "$d" || { tail -5 "$d/run.log"; fail "the unmutated $file fails $fn"; }
    echo "unmutated $file: passes $fn"
done

killed=0 survived=0 broken=0
for name in "${names[@]}"; do
    d=$T/m-$name
    mkdir -p "$d"
    if ! mutate "$name" "${FILE[$name]}" >"$d/$(basename "${FILE[$name]}")"; then
        broken=$((broken + 1))
        continue
    fi
    if ! build "$d" "${FILE[$name]}" "${FN[$name]}" "${UNIT[$name]}"; then
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
        how=$({ grep -m1 -E '\.[ch]:[0-9]+: ' "$d/run.log" || grep -m1 'selftest' "$d/run.log"; } |
              sed 's/.*\.[ch]:[0-9]*: //' | cut -c1-100)
        [ $rc = 124 ] && how="timed out after ${TIMEOUT}s"
        [ $rc -gt 128 ] && [ $rc != 124 ] && how="signal $((rc - 128))"
        echo "$name: killed (${how:-exit $rc})"
        killed=$((killed + 1))
    fi
    rm -f "$d/selftest"
done
echo "mutants: ${#names[@]}, killed $killed, survived $survived, broken $broken"
[ $broken = 0 ] || fail "$broken mutant(s) no longer apply to their file or do not build (mutants.list)"
[ $survived = 0 ] || fail "$survived mutant(s) survived their file's self-test"
exit 0
