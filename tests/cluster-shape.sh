#!/bin/bash
# tools/bench/cluster-shape.sh, without its measuring (tools/spits-check's
# bench stage runs that, --quick):
#   a. bad arguments: one line naming the problem, exit 2; --help exits 0
#   b. its model's checksum of the bench module's tasks (computed apart
#      from the module, to judge every job exact) is the module's own
#   c. a row run several times stands once, as its run of the median
#      ratio, naming every run's ratio; a run without figures fails it
. "$(dirname "$0")/lib.sh"
# (what this checks is the same in every build: the plain check's run is it)
sanitized && { echo "SKIP: a sanitizer build (the plain build's check runs this)"; exit 77; }
shape=$top_srcdir/tools/bench/cluster-shape.sh
model=$top_srcdir/tools/bench/cluster-shape.py

# a. Bad arguments, then --help.
for case in "--bogus:cluster-shape: unknown argument '--bogus' (see --help)" \
    "--json:cluster-shape: --json needs a FILE" \
    "--json $T/no/dir/x.json:cluster-shape: cannot write $T/no/dir/x.json"; do
    args=${case%%:*} want=${case#*:}
    # shellcheck disable=SC2086
    bash "$shape" $args >"$T/a.out" 2>"$T/a.err"
    rc=$?
    [ $rc = 2 ] || fail "'$args' exited $rc, not 2"
    [ "$(cat "$T/a.err")" = "$want" ] || fail "'$args' said: $(cat "$T/a.err")"
    [ ! -s "$T/a.out" ] || fail "'$args' printed $(cat "$T/a.out")"
done
bash "$shape" --help >"$T/help" 2>&1 || fail "--help exited $?"
grep -q '^Usage: cluster-shape.sh \[--quick\] \[--json FILE\] \[--no-check\]$' "$T/help" ||
    fail "--help: $(head -5 "$T/help")"
"$PY" "$model" nonsense >/dev/null 2>&1
[ $? = 2 ] || fail "cluster-shape.py with a bad command did not exit 2"

# b. The model's checksum against a real job's.
start_jm b --journal off "$MODS/bench.so" -n 1000
jm=$JM_PID
timeout -s KILL 60 "$TM" -q --jobdir "$T/b" -n 2 --wait 30 || fail "the TM exited $?"
wait $jm || fail "the JM exited $?"
[ "$(cat "$T/b.out")" = "$("$PY" "$model" checksum 1000)" ] ||
    fail "the job printed '$(cat "$T/b.out")', the model '$("$PY" "$model" checksum 1000)'"

# c. The model's median of runs (a pure function of the rows).
"$PY" - "$model" >"$T/c.out" 2>&1 <<'PY' || fail "median_runs: $(cat "$T/c.out")"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("shape", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
rows = [("joins", "a", 90.0, "joins/s", 100.0, "n1"),
        ("scale", "s", 5.0, "tasks/s", 5.0, "s1"),
        ("joins", "a", 130.0, "joins/s", 100.0, "n2"),
        ("joins", "a", 100.0, "joins/s", 80.0, "n3"),
        ("bw", "b", 1.0, "MB/s", 2.0, "b1"),
        ("bw", "b", None, "", None, "no figures")]
for r in m.median_runs(rows):
    print(r)
PY
cat >"$T/c.want" <<'WANT'
('joins', 'a', 100.0, 'joins/s', 80.0, 'n3; the median of 3 runs (ratios 0.90, 1.25, 1.30)')
('scale', 's', 5.0, 'tasks/s', 5.0, 's1')
('bw', 'b', None, '', None, 'no figures')
WANT
diff "$T/c.want" "$T/c.out" >&2 || fail "median_runs gave the rows above"
echo "ok"
