#!/bin/bash
# spits-jm --joblog FILE: one GNU parallel joblog line per resolved task
# of any module: committed ones with Exitval 0 (commit_pit's value when
# it failed), a poison task with its worker's return code; appended to
# by a second job, under one header.
. "$(dirname "$0")/lib.sh"

start_jm j --joblog "$T/jl" --max-attempts 2 "$TMODS/faulty.so" 30 fail=7 commitfail=10
start_tm j tm -n 2
wait $JM_PID
rc=$?
[ $rc = 3 ] || fail "spits-jm exited $rc, not 3 (task 7 failed)"
[ "$(head -1 "$T/jl")" = "$(printf 'Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand')" ] ||
    fail "joblog header: $(head -1 "$T/jl")"
host=$(json "$T/j/report.json" "d['tms'][0]['host']")
# Seq, Host, Send, Receive, Exitval, Signal, Command of each task, by Seq
got=$(awk -F '\t' 'NR > 1 { print $1, $2, $5, $6, $7, $8, $9 }' "$T/jl" | sort -n)
want=$(for i in $(seq 0 29); do
    case $i in
        7) echo "$i $host 8 0 1 0 phase 1" ;;          # the worker returned 1
        9 | 19 | 29) echo "$i $host 8 8 1 0 phase 1" ;;  # commit_pit returned 1
        *) echo "$i $host 8 8 0 0 phase 1" ;;
    esac
done)
[ "$got" = "$want" ] || fail "joblog lines: $(diff <(echo "$want") <(echo "$got") | head -6)"
now=$(date +%s)
awk -F '\t' -v now="$now" 'NR > 1 && !($3 ~ /^[0-9]+\.[0-9][0-9][0-9]$/ && $3 > now - 300 &&
    $3 <= now + 1 && $4 ~ /^ *[0-9]+\.[0-9][0-9][0-9]$/ && length($4) >= 10) { exit 1 }' "$T/jl" ||
    fail "joblog times: $(sed -n 2p "$T/jl")"

# Through spits-run, appending: 20 more lines, no second header.
out=$(timeout 120 "$RUN" -q -n 2 --joblog "$T/jl" "$MODS/pi.so" 200000 20) || fail "pi exited $?"
[ "$(grep -c '^Seq' "$T/jl")" = 1 ] || fail "a second header"
[ "$(awk -F '\t' 'NR > 31 && $5 == 24 && $6 == 16 && $7 == 0 { n++ } END { print n }' "$T/jl")" = 20 ] ||
    fail "pi's joblog lines: $(tail -2 "$T/jl")"

# A joblog that cannot be written: one line, nothing run.
"$JM" --jobdir "$T/k" --bind tcp://127.0.0.1:0 --joblog "$T/no/such/dir/jl" "$MODS/pi.so" \
    >/dev/null 2>"$T/k.err"
rc=$?
[ $rc = 1 ] && grep -q "cannot open the joblog $T/no/such/dir/jl" "$T/k.err" ||
    fail "an unwritable joblog: exit $rc, $(cat "$T/k.err")"
echo ok
