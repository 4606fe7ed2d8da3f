#!/bin/bash
# layers.sh - the programs' files depend downward only: tools/layers finds
# no call circle among the built objects of each directory in ACYCLIC,
# and it does find the one in a two-file fixture (so this check can fail).
# And no file of theirs is over 800 lines outside its self-test.
. "$(dirname "$0")/lib.sh"
# (what this checks is the same in every build: the plain check's run is it)
sanitized && { echo "SKIP: a sanitizer build (the plain build's check runs this)"; exit 77; }

layers=$top_srcdir/tools/layers
cc=${MUT_CC:-cc}

# The fixture: a and b call each other, c calls a, and another program's
# object (automake's "other-" prefix) calls a too, which is not its own:
# it is checked apart and adds no edge.
mkdir -p "$T/fix"
cat >"$T/a.c" <<'EOF'
int fix_b(int);
int fix_a(int n) { return n > 0 ? fix_b(n - 1) : 0; }
EOF
cat >"$T/b.c" <<'EOF'
int fix_a(int);
int fix_b(int n) { return n > 0 ? fix_a(n - 1) : 1; }
EOF
cat >"$T/c.c" <<'EOF'
int fix_a(int);
int fix_c(void) { return fix_a(3); }
EOF
cat >"$T/d.c" <<'EOF'
int fix_a(int);
int fix_d(void) { return fix_a(4); }
EOF
for f in a b c; do
    $cc -c -o "$T/fix/prog-$f.o" "$T/$f.c" || fail "cannot compile the fixture's $f.c"
done
$cc -c -o "$T/fix/other-d.o" "$T/d.c" || fail "cannot compile the fixture's d.c"

"$layers" "$T/fix" >"$T/fix.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "tools/layers exits $rc on a circle, not 1: $(cat "$T/fix.out")"
cat >"$T/fix.want" <<EOF
== $T/fix (other): 1 files
layer 0: d
no cycle in $T/fix (other)
== $T/fix (prog): 3 files
a -> b
b -> a
c -> a
cycle in $T/fix (prog): a b
EOF
diff "$T/fix.want" "$T/fix.out" >"$T/fix.diff" || fail "tools/layers on the fixture: $(cat "$T/fix.diff")"

# A known circle is named and passes; one that is not exactly it fails.
out=$("$layers" -q -k b,a "$T/fix") || fail "tools/layers -k b,a still fails: $out"
[ "$out" = "known cycle in $T/fix (prog): a b" ] || fail "tools/layers -k b,a says: $out"
"$layers" -q -k a,b,c "$T/fix" >/dev/null && fail "tools/layers -k a,b,c passes a circle of a and b"
"$layers" -q "$T/nothing" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "tools/layers on a missing directory exits $rc, not 2"

# The directories whose files must have no circle: every program's and
# module's, and the libraries they share.
ACYCLIC="jobmanager taskmanager serving libspits tools modules"

for d in $ACYCLIC; do
    out=$("$layers" -q "$top_builddir/$d" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || fail "$d has a call circle (tools/layers $d): $out"
    [ -z "$out" ] || fail "$d: tools/layers says: $out"
done
# No file of the programs and libraries is over MAX_LINES lines outside
# its SPITS_SELFTEST sections (one concern per file): every .c under
# SIZED. tests/ is out of scope (test programs, fuzz harnesses and
# fixtures are not the product). The count itself is checked on a
# fixture, so that this check can fail.
MAX_LINES=800
SIZED="jobmanager taskmanager libspits serving modules tools"

# code_lines FILE: its lines outside "#ifdef SPITS_SELFTEST" ... its
# matching "#endif" (nested conditionals inside a section included).
code_lines() {
    awk '!in_st && /^#ifdef SPITS_SELFTEST/ { in_st = 1; depth = 0 }
         in_st { if ($0 ~ /^#[ \t]*if/) depth++
                 else if ($0 ~ /^#[ \t]*endif/ && --depth == 0) in_st = 0
                 next }
         { n++ }
         END { print n + 0 }' "$1"
}
{ seq 1 10; echo "#ifdef SPITS_SELFTEST"; echo "#if 1"; seq 1 5; echo "#endif"; echo "#endif"
  seq 1 3; echo "#ifdef SPITS_SELFTEST"; echo "#endif"; } >"$T/sized.c"
[ "$(code_lines "$T/sized.c")" = 13 ] ||
    fail "code_lines counts $(code_lines "$T/sized.c") lines of the fixture's code, not 13"

over=
while IFS= read -r -d '' f; do
    n=$(code_lines "$f")
    [ "$n" -le $MAX_LINES ] || over="$over ${f#"$top_srcdir"/} ($n)"
done < <(cd "$top_srcdir" && for d in $SIZED; do find "$top_srcdir/$d" -name '*.c' -print0; done)
[ -z "$over" ] || fail "over $MAX_LINES lines outside SPITS_SELFTEST:$over"
echo "layers: ok"
