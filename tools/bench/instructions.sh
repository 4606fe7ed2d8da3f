#!/usr/bin/env bash
# tools/bench/instructions.sh - the runtime's instructions per task on the
# empty-task path, counted by callgrind (repeatable where wall time is
# not). Runs N empty bench tasks (default 100000) through spits-jm and one
# spits-tm (2 workers, --insecure so the count is the runtime's, not
# libsodium's) with every process under callgrind, and prints the total
# instructions of each divided by N. tools/bench/budget-check compares
# them with the budgets in tools/bench/budgets.
#
#   instructions.sh [N [BYTES [curve|insecure [tasks|results [direct|relay]]]]]
#
# With BYTES, the tasks (or, with results, their results; tasks are then
# 8 bytes) have that many bytes, and each process's instructions per byte
# moved are printed too (with curve, libsodium's encryption is counted as
# well, as the data path then takes it). With relay, the TM reaches the JM
# through a relay (spits-tm --serve, under callgrind too, printed as
# "relay"); the run fails unless the JM saw the relay join and nothing
# else.
#
# SPITS_IR_JM_OPTS and SPITS_IR_TM_OPTS add options to spits-jm and
# spits-tm (split on spaces; tools/bench/budget-check uses them to take
# timing-dependent choices out of the counts).
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
n=${1:-100000}
bytes=${2:-8}
sec=--insecure
[ "${3:-}" = curve ] && sec=
size=(-t "$bytes")
[ "${4:-tasks}" = results ] && size=(-r "$bytes")
w=$(mktemp -d "${TMPDIR:-/tmp}/spits-ir.XXXXXX")
trap '[ -n "${SPITS_IR_KEEP:-}" ] || rm -rf "$w"' EXIT
cg=(valgrind --tool=callgrind --callgrind-out-file="$w/cg.%p")
read -r -a jm_opts <<<"${SPITS_IR_JM_OPTS:-}"
read -r -a tm_opts <<<"${SPITS_IR_TM_OPTS:-}"
"${cg[@]}" "$root/jobmanager/spits-jm" -q $sec "${jm_opts[@]}" --journal off --jobdir "$w/job" \
    --bind tcp://127.0.0.1:0 "$root/modules/.libs/bench.so" -n "$n" "${size[@]}" >"$w/out" 2>"$w/jm.log" &
jm=$!
via=()
if [ "${5:-direct}" = relay ]; then
    "${cg[@]}" "$root/taskmanager/spits-tm" $sec --jobdir "$w/job" --wait 120 \
        --serve tcp://127.0.0.1:0 >"$w/relay.log" 2>&1 &
    relay=$!
    # (its endpoint, once it serves: 120 s at most under callgrind)
    tries=0
    until ep=$(grep -o 'serving task managers at tcp:[^ ]*' "$w/relay.log" | head -1) ||
        [ $((tries += 1)) -gt 1200 ]; do
        sleep 0.1
    done
    ep=${ep##* at }
    [ -n "$ep" ] || { echo "instructions.sh: the relay does not serve: $(tail -2 "$w/relay.log")" >&2; exit 1; }
    via=(--via "$ep")
fi
"${cg[@]}" "$root/taskmanager/spits-tm" -q $sec --jobdir "$w/job" -n 2 --wait 120 "${tm_opts[@]}" \
    "${via[@]}" >"$w/tm.log" 2>&1 &
tm=$!
wait $jm
wait $tm
if [ ${#via[@]} -gt 0 ]; then
    wait $relay
    python3 - "$w/job/report.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
if r["counters"]["tm_joins"] != 1 or not all(t.get("relay") for t in r["tms"]):
    sys.exit("instructions.sh: the JM saw %d join(s), not the relay alone"
             % r["counters"]["tm_joins"])
PY
fi
for f in "$w"/cg.*; do
    cmd=$(sed -n 's/^cmd: //p' "$f" | awk '{print $1}')
    grep -q '^cmd: .* --serve ' "$f" && cmd=relay
    ir=$(sed -n 's/^summary: //p' "$f")
    awk -v c="$(basename "$cmd")" -v ir="$ir" -v n="$n" -v b="$bytes" \
        'BEGIN { printf "%-12s %12d instructions, %8.1f per task", c, ir, ir / n
                 if (b > 8) printf ", %.3f per byte", ir / n / b
                 printf "\n" }'
done
