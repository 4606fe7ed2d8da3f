#!/bin/bash
# tools/bench/cluster-shape.sh, without its measuring (tools/spits-check's
# bench stage runs that, --quick):
#   a. bad arguments: one line naming the problem, exit 2; --help exits 0
#   b. its model's checksum of the bench module's tasks (computed apart
#      from the module, to judge every job exact) is the module's own
. "$(dirname "$0")/lib.sh"
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
echo "ok"
